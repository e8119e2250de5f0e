// `npm run import -- --data-dir DIR`: copies a JSON DATA_DIR into the PostgreSQL database named by
// DATABASE_URL. The DATA_DIR is read through the JSON store itself (so its lock keeps a running JSON
// service out, and its files are migrated and validated as at a start). The database must be empty or
// hold an earlier import; everything is written in one transaction, and only what differs is written, so
// re-running the same import changes nothing. The record revisions, their holds and the drift notices come
// from the JSON store's state too (docs/decisions/record-digest.md), so a thread launched on a record replaced
// since keeps reading what it was launched with.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { aliasKey, profileRevision } from '../../profiles/profile-rules.js';
import { AUDIT_FILE, JsonFileStore } from '../json-file-store.js';
import { logFilesOldestFirst } from '../append-log.js';
import type { AuditEntry } from '../../registry/store.js';
import type { StoredResource } from '../../schemas/resource.js';
import { PostgresStore } from './postgres-store.js';
import { indexUnindexedResources } from './resources.js';
import { LARGE_ROW_COUNT, silentProgress, type Progress } from '../../progress.js';
import { escapeControlCharactersDeep } from '../../text/control-characters.js';

export interface ImportCounts {
  resources: number;
  machines: number;
  profiles: number;
  registryStateKeys: number;
  workloads: number;
  auditEntries: number;
  /** Kept revisions of records (withdrawn ones' included). */
  revisions: number;
  /** Revisions a workload or profile pins. */
  revisionHolds: number;
  /** What each launched thread was last told its pin drifted to. */
  driftNotices: number;
}

export interface ImportReport {
  /** What the DATA_DIR holds. */
  found: ImportCounts;
  /** Rows inserted or changed by this run (all zero when re-run on the same DATA_DIR). */
  written: ImportCounts;
}

export class ImportRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImportRefusedError';
  }
}

/** The audit log's entries, oldest first: the rotated files (audit.N.jsonl ... audit.1.jsonl), then audit.jsonl. */
async function readAudit(dataDir: string): Promise<AuditEntry[]> {
  let text = '';
  for (const file of await logFilesOldestFirst(path.join(dataDir, AUDIT_FILE))) {
    text += await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    });
    if (!text.endsWith('\n')) text += '\n';
  }
  // A torn line (a crash mid-append) was never acknowledged: skip it.
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => {
      try {
        const e = JSON.parse(line) as AuditEntry;
        // Escaped as the store writes them (text holds no NUL), so a re-import compares like with like.
        return typeof e.at === 'string' && typeof e.actor === 'string' ? [escapeControlCharactersDeep(e) as AuditEntry] : [];
      } catch {
        return [];
      }
    });
}

/** The content columns of `resources` and `resource_revisions` (the digest is the database's or the revision's). */
function contentColumns(records: readonly StoredResource[]) {
  return [
    records.map((x) => x.id),
    records.map((x) => x.provider),
    records.map((x) => x.schemaVersion),
    records.map((x) => x.name),
    records.map((x) => (x.schemaVersion === 1 ? x.description : null)),
    records.map((x) => (x.schemaVersion === 1 ? x.instructions : null)),
    records.map((x) => (x.schemaVersion === 2 ? x.sourceContent : null)),
    records.map((x) => x.displayName ?? null),
    records.map((x) => x.userContent ?? ''),
    records.map((x) => (x.schemaVersion === 2 ? (x.sourceRevision ?? null) : null)),
  ];
}

const sameEntry = (
  row: { at: string; actor: string; action: string; object_id: string; outcome: string } | undefined,
  e: AuditEntry | undefined,
) =>
  row !== undefined &&
  e !== undefined &&
  row.at === e.at &&
  row.actor === e.actor &&
  row.action === e.action &&
  row.object_id === e.id &&
  row.outcome === e.outcome;

/**
 * How many of `audit` (oldest first) an earlier import copied. The log only grows at its end, but rotation
 * may since have deleted its oldest files: the entries an earlier import copied are then a suffix of the
 * imported rows that starts at `audit[0]`. Each imported row equal to `audit[0]` is a candidate start,
 * earliest first; the first whose run of imported rows (that row to the last one) ends with the entry at
 * the same position in `audit` is taken. No candidate: `audit` begins after everything imported (its
 * overlap was rotated away), so none of it was copied.
 */
async function alreadyImported(client: pg.Client, audit: AuditEntry[]): Promise<number> {
  const first = audit[0];
  if (first === undefined) return 0;
  type Row = { seq: string; at: string; actor: string; action: string; object_id: string; outcome: string };
  const { rows: last } = await client.query<Row>(`SELECT * FROM audit_log WHERE source = 'import' ORDER BY seq DESC LIMIT 1`);
  if (last.length === 0) return 0;
  const { rows: candidates } = await client.query<{ seq: string; n: string }>(
    `SELECT c.seq, (SELECT count(*) FROM audit_log a WHERE a.source = 'import' AND a.seq >= c.seq) AS n
       FROM audit_log c
      WHERE c.source = 'import' AND c.at = $1 AND c.actor = $2 AND c.action = $3 AND c.object_id = $4 AND c.outcome = $5
      ORDER BY c.seq`,
    [first.at, first.actor, first.action, first.id, first.outcome],
  );
  for (const { n } of candidates) {
    const copied = Number(n);
    if (copied <= audit.length && sameEntry(last[0], audit[copied - 1])) return copied;
  }
  return 0;
}

export async function importJsonDataDir(dataDir: string, databaseUrl: string, reporter: Progress = silentProgress): Promise<ImportReport> {
  const json = await JsonFileStore.open({ dataDir });
  let snapshot;
  let audit;
  try {
    snapshot = await json.snapshot();
    audit = await readAudit(dataDir);
  } finally {
    await json.close();
  }

  const byKey = new Map<string, string[]>();
  for (const { profile } of snapshot.profiles)
    byKey.set(aliasKey(profile.alias), [...(byKey.get(aliasKey(profile.alias)) ?? []), profile.id]);
  const duplicates = [...byKey.values()].filter((ids) => ids.length > 1);
  if (duplicates.length > 0) {
    throw new ImportRefusedError(
      `Profiles share an alias (ignoring case), which the database does not allow: ${duplicates.map((ids) => ids.join(' and ')).join('; ')}. Rename one of each pair through the JSON-backed service, then import again.`,
    );
  }

  const { state, ...top } = snapshot.registryDocument as { state?: Record<string, unknown> } & Record<string, unknown>;
  const { profiles: _profiles, ...otherState } = state ?? {};
  delete top.schemaVersion;
  const stateRows: [string, unknown][] = [
    ...Object.entries(otherState),
    ...(Object.keys(top).length > 0 ? [['$document', top] as [string, unknown]] : []),
  ];

  const { holds, notices } = snapshot.revisions;
  // Oldest first across every ID, as the JSON store numbered them: the database numbers them again in this
  // order, so the newest-first listing and the retention's order stay the same.
  const revisions = [...snapshot.revisions.revisions].sort((a, b) => a.seq - b.seq);

  // Migrates the database (under the advisory lock) exactly as a service start would.
  await (await PostgresStore.open({ databaseUrl, poolSize: 1 })).close();

  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'agent-resource-registry-import' });
  await client.connect();
  try {
    const rows =
      snapshot.resources.length +
      snapshot.machines.length +
      snapshot.profiles.length +
      stateRows.length +
      snapshot.workloads.length +
      audit.length +
      revisions.length +
      holds.length +
      notices.length;
    // A bar (on a terminal) only when there is enough to wait for.
    const progress = rows >= LARGE_ROW_COUNT ? reporter : silentProgress;
    progress.stage('importing into PostgreSQL', rows, 'rows');
    await client.query('BEGIN');
    // One import at a time, and no service write can slip between the emptiness check and the copy.
    await client.query(
      `LOCK TABLE resources, machines, profiles, registry_state, workloads, audit_log, json_imports, resource_revisions, revision_holds,
         drift_notices IN EXCLUSIVE MODE`,
    );
    const { rows: previous } = await client.query('SELECT 1 FROM json_imports LIMIT 1');
    if (previous.length === 0) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM resources) + (SELECT count(*) FROM machines) + (SELECT count(*) FROM profiles)
              + (SELECT count(*) FROM workloads) + (SELECT count(*) FROM registry_state) AS n`,
      );
      if (Number(rows[0]!.n) > 0) {
        throw new ImportRefusedError(
          'The database already holds registry data that did not come from an import; import only into an empty database.',
        );
      }
    }

    const written: ImportCounts = {
      resources: 0,
      machines: 0,
      profiles: 0,
      registryStateKeys: 0,
      workloads: 0,
      auditEntries: 0,
      revisions: 0,
      revisionHolds: 0,
      driftNotices: 0,
    };
    // The drift notices before the records: the drift trigger reads them, so a record the JSON store changed
    // since an earlier import does not tell a workload again what the JSON store told it already.
    written.driftNotices =
      (
        await client.query(
          `INSERT INTO drift_notices AS t (resource_id, holder, told) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
         ON CONFLICT (resource_id, holder) DO UPDATE SET told = EXCLUDED.told WHERE t.told IS DISTINCT FROM EXCLUDED.told`,
          [notices.map((n) => n.id), notices.map((n) => n.holder), notices.map((n) => n.told)],
        )
      ).rowCount ?? 0;
    progress.advance(notices.length);
    const r = snapshot.resources;
    written.resources =
      (
        await client.query(
          `INSERT INTO resources AS t (id, provider, schema_version, name, description, instructions, source_content, display_name, user_content,
             source_revision, imported)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
           $10::text[], $11::boolean[])
         ON CONFLICT (id) DO UPDATE SET provider = EXCLUDED.provider, schema_version = EXCLUDED.schema_version, name = EXCLUDED.name,
           description = EXCLUDED.description, instructions = EXCLUDED.instructions, source_content = EXCLUDED.source_content,
           display_name = EXCLUDED.display_name, user_content = EXCLUDED.user_content, source_revision = EXCLUDED.source_revision,
           imported = EXCLUDED.imported, updated_at = now(), search_source = NULL
         WHERE (t.provider, t.schema_version, t.name, t.description, t.instructions, t.source_content, t.display_name, t.user_content,
             t.source_revision, t.imported)
           IS DISTINCT FROM (EXCLUDED.provider, EXCLUDED.schema_version, EXCLUDED.name, EXCLUDED.description, EXCLUDED.instructions,
             EXCLUDED.source_content, EXCLUDED.display_name, EXCLUDED.user_content, EXCLUDED.source_revision, EXCLUDED.imported)`,
          [...contentColumns(r), r.map((x) => x.imported === true)],
        )
      ).rowCount ?? 0;
    await indexUnindexedResources(client);
    progress.advance(r.length);
    // The revisions after the records, whose trigger has just kept each current content as a revision of
    // now: it takes the JSON store's time and place in the order. One already imported keeps its place.
    written.revisions =
      (
        await client.query(
          `INSERT INTO resource_revisions AS t (id, provider, schema_version, name, description, instructions, source_content,
             display_name, user_content, source_revision, digest, created_at, seq)
         SELECT id, provider, schema_version, name, description, instructions, source_content, display_name, user_content,
             source_revision, digest, created_at, nextval('resource_revisions_seq_seq')
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
             $10::text[], $11::text[], $12::timestamptz[]) WITH ORDINALITY AS u(id, provider, schema_version, name, description,
             instructions, source_content, display_name, user_content, source_revision, digest, created_at, n)
          ORDER BY n
         ON CONFLICT (id, digest) DO UPDATE SET created_at = EXCLUDED.created_at, seq = EXCLUDED.seq
         WHERE t.created_at IS DISTINCT FROM EXCLUDED.created_at`,
          [...contentColumns(revisions.map((v) => v.record)), revisions.map((v) => v.digest), revisions.map((v) => v.createdAt)],
        )
      ).rowCount ?? 0;
    progress.advance(revisions.length);
    // The holds after the records: a first import's records tell no workload of a drift (the JSON store did).
    written.revisionHolds =
      (
        await client.query(
          `INSERT INTO revision_holds AS t (resource_id, holder, digest) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
         ON CONFLICT (resource_id, holder) DO UPDATE SET digest = EXCLUDED.digest WHERE t.digest IS DISTINCT FROM EXCLUDED.digest`,
          [holds.map((h) => h.id), holds.map((h) => h.holder), holds.map((h) => h.digest)],
        )
      ).rowCount ?? 0;
    progress.advance(holds.length);
    const m = snapshot.machines;
    written.machines =
      (
        await client.query(
          `INSERT INTO machines AS t (machine_id, token_digest, enrolled_at, revoked_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
         ON CONFLICT (machine_id) DO UPDATE SET token_digest = EXCLUDED.token_digest, enrolled_at = EXCLUDED.enrolled_at, revoked_at = EXCLUDED.revoked_at
         WHERE (t.token_digest, t.enrolled_at, t.revoked_at) IS DISTINCT FROM (EXCLUDED.token_digest, EXCLUDED.enrolled_at, EXCLUDED.revoked_at)`,
          [m.map((x) => x.machineId), m.map((x) => x.tokenDigest), m.map((x) => x.enrolledAt), m.map((x) => x.revokedAt ?? null)],
        )
      ).rowCount ?? 0;
    progress.advance(m.length);
    const p = snapshot.profiles.map((e) => e.profile);
    written.profiles =
      (
        await client.query(
          `INSERT INTO profiles AS t (id, alias_key, revision, record)
         SELECT id, alias_key, revision, record::json FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(id, alias_key, revision, record)
         ON CONFLICT (id) DO UPDATE SET alias_key = EXCLUDED.alias_key, revision = EXCLUDED.revision, record = EXCLUDED.record
         WHERE t.revision IS DISTINCT FROM EXCLUDED.revision`,
          [p.map((x) => x.id), p.map((x) => aliasKey(x.alias)), p.map((x) => profileRevision(x)), p.map((x) => JSON.stringify(x))],
        )
      ).rowCount ?? 0;
    progress.advance(p.length);
    written.registryStateKeys =
      (
        await client.query(
          `INSERT INTO registry_state AS t (key, value) SELECT key, value::jsonb FROM unnest($1::text[], $2::text[]) AS u(key, value)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value WHERE t.value IS DISTINCT FROM EXCLUDED.value`,
          [stateRows.map(([k]) => k), stateRows.map(([, v]) => JSON.stringify(v))],
        )
      ).rowCount ?? 0;
    progress.advance(stateRows.length);
    const w = snapshot.workloads;
    written.workloads =
      (
        await client.query(
          `INSERT INTO workloads (canvas_id, thread_id, record)
         SELECT canvas_id, thread_id, record::json FROM unnest($1::text[], $2::text[], $3::text[]) AS u(canvas_id, thread_id, record)
         ON CONFLICT DO NOTHING`,
          [w.map((x) => x.canvasId), w.map((x) => x.threadId), w.map((x) => JSON.stringify(x))],
        )
      ).rowCount ?? 0;
    progress.advance(w.length);
    const fresh = audit.slice(await alreadyImported(client, audit));
    if (fresh.length > 0) {
      await client.query(
        `INSERT INTO audit_log (at, actor, action, object_id, outcome, source)
         SELECT at, actor, action, object_id, outcome, 'import' FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(at, actor, action, object_id, outcome)`,
        [
          fresh.map((e) => e.at),
          fresh.map((e) => e.actor),
          fresh.map((e) => e.action),
          fresh.map((e) => e.id),
          fresh.map((e) => e.outcome),
        ],
      );
    }
    written.auditEntries = fresh.length;
    progress.advance(audit.length);
    progress.done();
    const found: ImportCounts = {
      resources: r.length,
      machines: m.length,
      profiles: p.length,
      registryStateKeys: stateRows.length,
      workloads: w.length,
      auditEntries: audit.length,
      revisions: revisions.length,
      revisionHolds: holds.length,
      driftNotices: notices.length,
    };
    // Recorded when it wrote anything (or is the first): a re-run on the same DATA_DIR leaves no trace.
    if (previous.length === 0 || Object.values(written).some((n) => n > 0)) {
      await client.query('INSERT INTO json_imports (data_dir, counts) VALUES ($1, $2)', [
        path.resolve(dataDir),
        JSON.stringify({ found, written }),
      ]);
    }
    await client.query('COMMIT');
    return { found, written };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.end();
  }
}
