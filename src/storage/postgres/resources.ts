// The PostgreSQL store's resources: the rows and their mapping to records, the ownership rule as ONE
// conditional upsert (src/registry/ownership.ts decides; this statement applies it inside the database, for
// the group-committed registrations and the reconcile alike), reads, withdrawal, the owner's
// customization, the whole-set reconcile, and the revision the catalogue caches follow.
import { AppError } from '../../errors.js';
import { carryOwnerFields, conflictError, planReconcile, planWithdraw, sameRecord } from '../../registry/ownership.js';
import type { RecordUsage } from '../../registry/record-quota.js';
import { withOwnerFields, type CustomizationPatch } from '../../registry/resource-versions.js';
import type { AuditIntent, FindRequest, FoundResource, Registered } from '../../registry/store.js';
import type { ReconcileResult, StoredResource } from '../../schemas/resource.js';
import { noteDigest, type ResourceRevision } from '../../registry/record-digest.js';
import { reconcileEntries } from '../../audit/audit-trail.js';
import { insertAudit, type AuditRetention } from './audit.js';
import { MAX_ATTEMPTS, type PgDatabase, type Queryable } from './database.js';
import type { OpOutcome } from './group-commit.js';
import {
  findResources,
  indexUnindexed,
  SEARCH_BEGIN,
  SEARCH_WALK,
  SearchFactsCache,
  scopeStatistics,
  sourceVectorSql,
  sourceWords,
  wordsText,
  type ScopeStatistics,
  type SearchWalkTuning,
} from './resource-search.js';

/** How long the planner's statistics (a scope's size, for a search's plan) are used before being read again. */
const STATISTICS_TTL_MS = 60_000;

interface ResourceRow {
  id: string;
  provider: string;
  schema_version: number;
  name: string;
  description: string | null;
  instructions: string | null;
  source_content: string | null;
  source_revision: string | null;
  display_name: string | null;
  user_content: string;
  imported: boolean;
  digest: string;
}

const RESOURCE_COLUMNS =
  'id, provider, schema_version, name, description, instructions, source_content, source_revision, display_name, user_content, imported, digest';
/** The columns a provider writes (the owner's display_name and user_content are never among them). */
const SOURCE_COLUMNS = 'id, provider, schema_version, name, description, instructions, source_content, source_revision';

/** The record of a row, its digest the one the database stored with the write. */
function resourceOf(row: Omit<ResourceRow, 'imported'> & { imported?: boolean }): StoredResource {
  return noteDigest(recordOf(row), row.digest);
}

function recordOf(row: Omit<ResourceRow, 'imported'> & { imported?: boolean }): StoredResource {
  // The order of the record as the JSON store keeps it, so catalogue bodies read the same.
  const owner = {
    ...(row.display_name === null ? {} : { displayName: row.display_name }),
    userContent: row.user_content,
    ...(row.imported ? { imported: true as const } : {}),
  };
  if (row.schema_version === 2) {
    const source = row.source_revision === null ? {} : { sourceRevision: row.source_revision };
    return withOwnerFields(
      {
        schemaVersion: 2,
        id: row.id,
        name: row.name,
        provider: row.provider,
        sourceContent: row.source_content!,
        userContent: '',
        ...source,
      },
      owner,
    );
  }
  return withOwnerFields(
    {
      schemaVersion: 1,
      id: row.id,
      name: row.name,
      provider: row.provider,
      description: row.description!,
      instructions: row.instructions!,
    },
    owner,
  );
}

interface RevisionRow extends Omit<ResourceRow, 'imported'> {
  created_at: Date;
  seq: string;
}

const REVISION_COLUMNS =
  'id, provider, schema_version, name, description, instructions, source_content, source_revision, display_name, user_content, digest, created_at, seq';

function revisionOf(row: RevisionRow): ResourceRevision {
  return {
    id: row.id,
    digest: row.digest,
    provider: row.provider,
    createdAt: row.created_at.toISOString(),
    seq: Number(row.seq),
    record: Object.freeze(resourceOf(row)),
  };
}

/** The provider's columns of a record, in SOURCE_COLUMNS order. */
function sourceValues(r: StoredResource): [string, string, number, string, string | null, string | null, string | null, string | null] {
  return r.schemaVersion === 2
    ? [r.id, r.provider, 2, r.name, null, null, r.sourceContent, r.sourceRevision ?? null]
    : [r.id, r.provider, 1, r.name, r.description, r.instructions, null, null];
}

// The statements run on every write are named (prepared once per pooled connection, then only bound and
// executed): parsing and planning them was a fifth to a third of their time in the database (EXPLAIN
// ANALYZE of a 13-row upsert: planning 0.09–0.17 ms, execution 0.36–0.42 ms).

/**
 * The ownership rule as one statement for records of distinct IDs: each row written only when the ID is
 * free, or already the record's provider's and different; the owner's columns are left as they are.
 * Returns the IDs written, each with whether it was created and the record as stored. An ID missing from
 * the answer is held by another provider, or is the provider's own record exactly as given.
 */
async function upsertResources(
  client: Queryable,
  records: readonly StoredResource[],
): Promise<Map<string, { created: boolean; stored: StoredResource }>> {
  const values = records.map((r) => [...sourceValues(r), ...sourceWords(r)] as const);
  const { rows } = await client.query<ResourceRow & { created: boolean }>({
    name: 'arr_put_resources',
    text: `INSERT INTO resources AS r (${SOURCE_COLUMNS}, search_source)
     SELECT u.id, u.provider, u.schema_version, u.name, u.description, u.instructions, u.source_content, u.source_revision,
       ${sourceVectorSql('u.k', 'u.s', 'u.b')}
     FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
       AS u(id, provider, schema_version, name, description, instructions, source_content, source_revision, k, s, b)
     ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, name = EXCLUDED.name,
       description = EXCLUDED.description, instructions = EXCLUDED.instructions, source_content = EXCLUDED.source_content,
       source_revision = EXCLUDED.source_revision, search_source = EXCLUDED.search_source, updated_at = now()
     WHERE r.provider = EXCLUDED.provider
       AND (r.schema_version, r.name, r.description, r.instructions, r.source_content, r.source_revision)
           IS DISTINCT FROM (EXCLUDED.schema_version, EXCLUDED.name, EXCLUDED.description, EXCLUDED.instructions,
             EXCLUDED.source_content, EXCLUDED.source_revision)
     RETURNING ${RESOURCE_COLUMNS}, (xmax = 0) AS created`,
    values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => values.map((v) => v[i])),
  });
  return new Map(rows.map((r) => [r.id, { created: r.created, stored: resourceOf(r) }]));
}

async function readResources(db: Queryable, ids: readonly string[]): Promise<Map<string, StoredResource>> {
  const { rows } = await db.query<ResourceRow>({
    name: 'arr_read_resources',
    text: `SELECT ${RESOURCE_COLUMNS} FROM resources WHERE id = ANY($1::text[])`,
    values: [ids],
  });
  return new Map(rows.map((row) => [row.id, resourceOf(row)]));
}

async function readResource(db: Queryable, id: string): Promise<StoredResource | undefined> {
  const { rows } = await db.query<ResourceRow>({
    name: 'arr_read_resource',
    text: `SELECT ${RESOURCE_COLUMNS} FROM resources WHERE id = $1`,
    values: [id],
  });
  return rows[0] && resourceOf(rows[0]);
}

/**
 * The registrations of a batch on `client` (inside its transaction), a bounded number of statements
 * whatever their number: the records through the conditional upsert, and the holders of the IDs that wrote
 * nothing read in one more statement (409 or `unchanged`). The k-th write of one ID goes into the k-th
 * upsert (a statement may change a row only once), so the writes of one ID keep their arrival order. Each
 * value is a `Registered` carrying the record as stored (from the upsert's RETURNING, or the holders read
 * for `unchanged`): no read-back after the COMMIT. A refusal is that registration's outcome; a database
 * error throws. Answers the outcomes in the order of `records`, and whether a row changed.
 */
export async function registerResources(
  client: Queryable,
  records: readonly StoredResource[],
): Promise<{ outcomes: OpOutcome[]; changed: boolean }> {
  const outcomes: OpOutcome[] = [];
  const rounds: { index: number; record: StoredResource }[][] = [];
  const writesOf = new Map<string, number>();
  records.forEach((record, index) => {
    const k = writesOf.get(record.id) ?? 0;
    writesOf.set(record.id, k + 1);
    (rounds[k] ??= []).push({ index, record });
  });
  let changed = false;
  for (const round of rounds) {
    // In ID order, so concurrent batches (and reconciles) take their row locks in one order.
    let pending = round.sort((a, b) => (a.record.id < b.record.id ? -1 : 1));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt === MAX_ATTEMPTS) {
        for (const p of pending) {
          const err = new AppError(
            'storage_unavailable',
            `Resource ${p.record.id} is changing too often to store this change; retry later.`,
          );
          outcomes[p.index] = { ok: false, err };
        }
        break;
      }
      const written = await upsertResources(
        client,
        pending.map((p) => p.record),
      );
      const missing = pending.filter((p) => !written.has(p.record.id));
      for (const p of pending) {
        const row = written.get(p.record.id);
        if (row)
          outcomes[p.index] = {
            ok: true,
            value: { outcome: row.created ? 'created' : 'replaced', record: row.stored } satisfies Registered,
          };
      }
      if (written.size > 0) changed = true;
      pending = [];
      if (missing.length === 0) break;
      // No row back: held by another provider (409), or the caller's own identical record.
      const holders = await readResources(
        client,
        missing.map((p) => p.record.id),
      );
      for (const p of missing) {
        const held = holders.get(p.record.id);
        if (held && held.provider !== p.record.provider) {
          outcomes[p.index] = { ok: false, err: conflictError([{ id: held.id, provider: held.provider }]) };
        } else if (held && sameRecord(held, carryOwnerFields(held, p.record))) {
          outcomes[p.index] = { ok: true, value: { outcome: 'unchanged', record: held } satisfies Registered };
        } else {
          pending.push(p); // withdrawn or changed between the two statements: again
        }
      }
    }
  }
  return { outcomes, changed };
}

/** Fills the search vectors of rows that have none (at start, after an import). */
export function indexUnindexedResources(client: Queryable): Promise<number> {
  return indexUnindexed<ResourceRow>(client, RESOURCE_COLUMNS, resourceOf);
}

/** `recordBytes` in SQL over a row of `resources` or `resource_revisions`. */
const PROVIDER_BYTES = `octet_length(id) + octet_length(name) + COALESCE(octet_length(description), 0)
  + COALESCE(octet_length(instructions), 0) + COALESCE(octet_length(source_content), 0)`;

export class PgResources {
  /** Local revision of the resources: bumped by this replica's commits and by every notification. */
  #counter = 0;

  constructor(
    private readonly db: PgDatabase,
    private readonly audit: AuditRetention,
    /** Prefixes the revision, so two stores (or two starts) never share one. */
    private readonly epoch: string,
    private readonly searchWalk: SearchWalkTuning = SEARCH_WALK,
  ) {}

  /** The set of resources changed (a commit here, or any replica's notification). */
  changed(): void {
    this.#counter++;
  }

  /**
   * Served from this replica's view, not a query. While notifications may be missed (`listening` false),
   * every call returns a new value, so caches rebuild from the database until they arrive again.
   */
  revision(listening: boolean): string {
    if (!listening) this.#counter++;
    return `${this.epoch}:${this.#counter}`;
  }

  list(): Promise<readonly StoredResource[]> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<ResourceRow>(`SELECT ${RESOURCE_COLUMNS} FROM resources ORDER BY id COLLATE "C"`);
      return rows.map(resourceOf);
    });
  }

  /** The planner's statistics of the table, read again once they are a minute old. */
  #statistics: { at: number; stats: Promise<ScopeStatistics> } | undefined;

  #scopeStatistics(): Promise<ScopeStatistics> {
    const now = Date.now();
    if (!this.#statistics || now - this.#statistics.at > STATISTICS_TTL_MS) {
      const stats = scopeStatistics(this.db.pooled);
      this.#statistics = { at: now, stats };
      stats.catch(() => {
        if (this.#statistics?.stats === stats) this.#statistics = undefined;
      });
    }
    return this.#statistics.stats;
  }

  /** What searches learned of their words since the last change. */
  readonly #facts = new SearchFactsCache();

  /** `revision`: the store's resources revision now, before the search's snapshot is taken. */
  find(request: FindRequest, revision: string): Promise<readonly FoundResource[]> {
    if (!request.terms || request.terms.length === 0) {
      return this.db.guard(() => findResources<ResourceRow>(this.db.pooled, RESOURCE_COLUMNS, resourceOf, request));
    }
    return this.db.guard(async () => {
      try {
        const facts = this.#facts.at(revision);
        const statistics = await this.#scopeStatistics();
        return await this.db.transaction(
          (client) =>
            findResources<ResourceRow>(client, RESOURCE_COLUMNS, resourceOf, request, { walk: this.searchWalk, statistics, facts }),
          SEARCH_BEGIN,
        );
      } catch (err) {
        if ((err as { code?: unknown }).code === '57014') {
          throw new AppError('search_too_broad', 'The search matches too much to rank in time; add a word or a longer one.', {
            field: '/q',
          });
        }
        throw err;
      }
    });
  }

  /**
   * The provider's records and their bytes: the sum `recordBytes` (src/registry/record-quota.ts) takes, in
   * SQL over the provider's index (`octet_length` is UTF-8 bytes in a UTF-8 database), plus its pinned
   * history as `heldHistoryBytes` defines it: held revisions of the provider, each distinct text of an ID
   * once, none that is the text its current record carries.
   */
  usage(provider: string): Promise<RecordUsage> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<{ count: string; bytes: string; pinned: string }>({
        name: 'arr_record_usage',
        text: `WITH held AS (
             SELECT DISTINCT v.id, v.name, v.description, v.instructions, v.source_content
             FROM resource_revisions v
             WHERE v.provider = $1
               AND EXISTS (SELECT 1 FROM revision_holds h WHERE h.resource_id = v.id AND h.digest = v.digest)
               AND NOT EXISTS (SELECT 1 FROM resources r WHERE r.id = v.id AND r.provider = v.provider AND r.name = v.name
                 AND r.description IS NOT DISTINCT FROM v.description AND r.instructions IS NOT DISTINCT FROM v.instructions
                 AND r.source_content IS NOT DISTINCT FROM v.source_content)
           )
           SELECT (SELECT count(*) FROM resources WHERE provider = $1) AS count,
             (SELECT COALESCE(sum(${PROVIDER_BYTES}), 0) FROM resources WHERE provider = $1) AS bytes,
             (SELECT COALESCE(sum(${PROVIDER_BYTES}), 0) FROM held) AS pinned`,
        values: [provider],
      });
      const pinnedBytes = Number(rows[0]!.pinned);
      return { count: Number(rows[0]!.count), bytes: Number(rows[0]!.bytes) + pinnedBytes, pinnedBytes };
    });
  }

  get(id: string): Promise<StoredResource | undefined> {
    return this.db.guard(() => readResource(this.db.pooled, id));
  }

  withdraw(provider: string, id: string): Promise<void> {
    return this.db.guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const { rowCount } = await this.db.query('DELETE FROM resources WHERE id = $1 AND provider = $2', [id, provider]);
        if (rowCount) {
          this.changed();
          return;
        }
        const held = await readResource(this.db.pooled, id);
        planWithdraw(held, provider, id); // throws 404 or 409
      }
      throw new AppError('storage_unavailable', `Resource ${id} is changing too often; retry later.`);
    });
  }

  customize(id: string, patch: CustomizationPatch): Promise<StoredResource> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<ResourceRow>(
        `UPDATE resources SET display_name = CASE WHEN $2 THEN $3 ELSE display_name END,
           user_content = COALESCE($4, user_content), imported = COALESCE($5, imported), updated_at = now(),
           search_display = CASE WHEN $2 THEN setweight(to_tsvector('simple', $6), 'A') ELSE search_display END,
           search_notes = CASE WHEN $4::text IS NULL THEN search_notes ELSE setweight(to_tsvector('simple', $7), 'C') END
         WHERE id = $1 RETURNING ${RESOURCE_COLUMNS}`,
        [
          id,
          patch.displayName !== undefined,
          patch.displayName ?? null,
          patch.userContent ?? null,
          patch.imported ?? null,
          wordsText(patch.displayName ?? ''),
          wordsText(patch.userContent ?? ''),
        ],
      );
      if (rows.length === 0) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
      this.changed();
      return resourceOf(rows[0]!);
    });
  }

  /** The kept revisions of `id`, newest first (the trigger of migration 7 keeps them with each write). */
  revisions(id: string): Promise<ResourceRevision[]> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<RevisionRow>({
        name: 'arr_read_revisions',
        text: `SELECT ${REVISION_COLUMNS} FROM resource_revisions WHERE id = $1 ORDER BY seq DESC`,
        values: [id],
      });
      return rows.map(revisionOf);
    });
  }

  readRevision(id: string, digest: string): Promise<ResourceRevision | undefined> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<RevisionRow>({
        name: 'arr_read_revision',
        text: `SELECT ${REVISION_COLUMNS} FROM resource_revisions WHERE id = $1 AND digest = $2`,
        values: [id, digest],
      });
      return rows[0] && revisionOf(rows[0]);
    });
  }

  /** Holds the revisions for `holder` (moving an earlier hold of the same ID), in one statement. */
  hold(holder: string, holds: readonly { id: string; digest: string }[]): Promise<void> {
    if (holds.length === 0) return Promise.resolve();
    return this.db.guard(async () => {
      await this.db.query({
        name: 'arr_hold_revisions',
        text: `INSERT INTO revision_holds (resource_id, holder, digest)
          SELECT r, $1, d FROM unnest($2::text[], $3::text[]) AS h(r, d)
          ON CONFLICT (resource_id, holder) DO UPDATE SET digest = EXCLUDED.digest
          WHERE revision_holds.digest IS DISTINCT FROM EXCLUDED.digest`,
        values: [holder, holds.map((h) => h.id), holds.map((h) => h.digest)],
      });
    });
  }

  /** The whole-set reconcile in one transaction; with `audit`, its entries are inserted in that transaction. */
  reconcile(provider: string, incoming: readonly StoredResource[], dryRun: boolean, audit?: AuditIntent): Promise<ReconcileResult> {
    const ids = incoming.map((r) => r.id);
    let records: readonly StoredResource[] = incoming;
    const planOn = async (client: Queryable, lock: boolean) => {
      const { rows } = await client.query<ResourceRow>(
        `SELECT ${RESOURCE_COLUMNS} FROM resources WHERE provider = $1 OR id = ANY($2::text[]) ORDER BY id COLLATE "C"${lock ? ' FOR UPDATE' : ''}`,
        [provider, ids],
      );
      const current = new Map(rows.map((row) => [row.id, resourceOf(row)]));
      const owned = rows.filter((r) => r.provider === provider).map((r) => r.id);
      records = incoming.map((r) => carryOwnerFields(current.get(r.id), r));
      return planReconcile((id) => current.get(id), owned, provider, records); // throws 409 on any conflict
    };
    if (dryRun) return this.db.guard(async () => ({ dryRun, ...(await planOn(this.db.pooled, false)) }));
    return this.db.guard(async () => {
      let auditRows = 0;
      const result = await this.db.transaction(async (client) => {
        // Reconciles of one provider run one after another, so each sees the set the previous one left.
        await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('arr-reconcile:' || $1, 0))`, [provider]);
        const plan = await planOn(client, true);
        if (plan.withdrawn.length > 0) {
          await client.query('DELETE FROM resources WHERE provider = $1 AND id = ANY($2::text[])', [provider, plan.withdrawn]);
        }
        const writes = records.filter((r) => !plan.unchanged.includes(r.id));
        if (writes.length > 0) {
          // The conditional upsert of a registration, for the whole set. The rows read above are locked, so
          // an ID missing from its answer is one created since: by another provider (409; the whole
          // transaction rolls back), or by this provider exactly as listed (nothing left to write).
          const written = await upsertResources(client, writes);
          const lost = writes.filter((r) => !written.has(r.id)).map((r) => r.id);
          const holders = lost.length > 0 ? await readResources(client, lost) : new Map<string, StoredResource>();
          const taken = lost.flatMap((id) => {
            const held = holders.get(id);
            return held && held.provider !== provider ? [{ id, provider: held.provider }] : [];
          });
          if (taken.length > 0) throw conflictError(taken.sort((a, b) => (a.id < b.id ? -1 : 1)));
        }
        const result = { dryRun, ...plan };
        if (audit) {
          const entries = reconcileEntries(result, audit);
          await insertAudit(client, entries);
          auditRows = entries.length;
        }
        return result;
      });
      this.audit.written(auditRows);
      if (result.created.length + result.replaced.length + result.withdrawn.length > 0) this.changed();
      return result;
    });
  }
}
