// The PostgreSQL store (docs/postgresql.md): the RegistryStore interface over a pg pool, for several replicas on one
// database. Every rule is enforced inside the database: ownership by a conditional upsert (no row back
// means 409), reconcile in one transaction, the first realization of a thread by its primary key, profile
// If-Match by a conditional write on the revision column, aliases by a unique index. A write is
// acknowledged only after its COMMIT. Registrations and audit appends are group-committed: those that
// arrive while a batch transaction runs are queued and run together in the next one, as a bounded number
// of statements over arrays (see runOps), with one COMMIT and, through the triggers, one notification per
// batch. Replicas learn of each other's changes through LISTEN/NOTIFY (see change-listener.ts), which
// drives resourcesRevision() and so the catalogue caches.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_AUDIT_MAX_ROWS } from '../../config.js';
import { AppError } from '../../errors.js';
import { aliasKey, planDelete, planUpdate, profileRevision, type ProfileChanges } from '../../profiles/profile-rules.js';
import { carryOwnerFields, conflictError, planReconcile, planWithdraw, sameRecord, type PutOutcome } from '../../registry/ownership.js';
import { withOwnerFields, type CustomizationPatch } from '../../registry/resource-versions.js';
import type { AgentProfile } from '../../schemas/profile.js';
import { escapeControlCharactersDeep, findControlCharacter } from '../../text/control-characters.js';
import type { ReconcileResult, StoredResource } from '../../schemas/resource.js';
import type { WorkloadRecord } from '../../schemas/workload.js';
import type { BatchObserver } from '../durable-document.js';
import type { AuditEntry, AuditIntent, MachineRecord, ProfileEntry, Registered, RegistryStore } from '../../registry/store.js';
import { realizedEntry, reconcileEntries } from '../../audit/audit-trail.js';
import { ChangeListener } from './change-listener.js';
import { PgEventFeed } from './event-feed.js';
import type { ChangeFeed, EventDraft } from '../../registry/events.js';
import { DEFAULT_EVENTS_RETAIN_COUNT, DEFAULT_EVENTS_RETAIN_DAYS } from '../../config.js';
import { migrate, type MigrationReport } from './migrations.js';
import { DatabaseUnavailableError, isUnavailable, storageUnavailable } from './pg-errors.js';
import { currentTraceContext, inSharedSpan, type TraceContext } from '../../tracing/spans.js';

export interface PostgresStoreOptions {
  databaseUrl: string;
  /** Most pooled connections of this process (default 10). */
  poolSize?: number;
  /** Told about listener disconnects and reconnects, and idle-client errors (no secrets in them). */
  log?: (level: 'warn' | 'info', message: string, err?: unknown) => void;
  /** Told when migrations were applied at open. */
  onMigrated?: (report: MigrationReport) => void;
  /** Told after each batch transaction (label `postgres`): its size, duration and outcome. */
  observeBatch?: BatchObserver;
  /** Most operations one batch transaction may cover (default 64). 1 turns group commit off. */
  maxBatch?: number;
  /** Most rows the audit table keeps, the newest (AUDIT_MAX_ROWS; default DEFAULT_AUDIT_MAX_ROWS); 0 keeps every row. */
  auditMaxRows?: number;
  /** The change log's retention (EVENTS_RETAIN_COUNT, EVENTS_RETAIN_DAYS). */
  eventRetention?: { retainCount: number; retainDays: number };
}

/** Audit rows written between two trims of the table: a tenth of the bound, at most this many. */
const MAX_AUDIT_ROWS_BETWEEN_TRIMS = 1_000;

/** Default for PostgresStoreOptions.maxBatch: bounds how long a batch holds its row locks. */
const DEFAULT_MAX_BATCH = 64;

/** Batches of one process in flight at once: one running its statements while the previous one commits. */
const MAX_BATCHES_IN_FLIGHT = 2;

/**
 * An operation group-committed in a batch transaction: a registration (with its audit entry when `audit` is
 * set, written in the same transaction once its outcome is known), or one call's audit entries. A
 * registration's value is a `Registered`; an audit append's is undefined.
 */
type BatchOp = { kind: 'put'; record: StoredResource; audit?: AuditIntent } | { kind: 'audit'; entries: readonly AuditEntry[] };

interface BatchJob {
  op: BatchOp;
  /** The trace context of the request that queued it (undefined without traces). */
  trace: TraceContext | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** What one run of a batch's statements gave: each job's outcome, and whether a resource row changed. */
interface BatchResult {
  outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[];
  resourcesChanged: boolean;
  /** Audit rows the batch inserted. */
  auditRows: number;
}

/** How often a conditional write is retried when the row it read changed under it (optimistic loop). */
const MAX_ATTEMPTS = 20;

interface ResourceRow {
  id: string;
  provider: string;
  schema_version: number;
  name: string;
  description: string | null;
  instructions: string | null;
  source_content: string | null;
  display_name: string | null;
  user_content: string;
  imported: boolean;
}

const RESOURCE_COLUMNS =
  'id, provider, schema_version, name, description, instructions, source_content, display_name, user_content, imported';
/** The columns a provider writes (the owner's display_name and user_content are never among them). */
const SOURCE_COLUMNS = 'id, provider, schema_version, name, description, instructions, source_content';

function resourceOf(row: ResourceRow): StoredResource {
  // The order of the record as the JSON store keeps it, so catalogue bodies read the same.
  const owner = {
    ...(row.display_name === null ? {} : { displayName: row.display_name }),
    userContent: row.user_content,
    ...(row.imported ? { imported: true as const } : {}),
  };
  if (row.schema_version === 2) {
    return withOwnerFields(
      { schemaVersion: 2, id: row.id, name: row.name, provider: row.provider, sourceContent: row.source_content!, userContent: '' },
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

/** The provider's columns of a record, in SOURCE_COLUMNS order. */
function sourceValues(r: StoredResource): [string, string, number, string, string | null, string | null, string | null] {
  return r.schemaVersion === 2
    ? [r.id, r.provider, 2, r.name, null, null, r.sourceContent]
    : [r.id, r.provider, 1, r.name, r.description, r.instructions, null];
}

interface MachineRow {
  machine_id: string;
  token_digest: string;
  enrolled_at: string;
  revoked_at: string | null;
}

function machineOf(row: MachineRow): MachineRecord {
  return {
    machineId: row.machine_id,
    tokenDigest: row.token_digest,
    enrolledAt: row.enrolled_at,
    ...(row.revoked_at === null ? {} : { revokedAt: row.revoked_at }),
  };
}

function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === constraint;
}

type Queryable = Pick<pg.PoolClient, 'query'>;

/**
 * `profiles.alias_key` is computed by code (`aliasKey`); when the rule changes (it became a look-alike
 * skeleton), rows written under the old rule are re-keyed here at start, in one transaction under the
 * migration advisory lock's neighbour (a transaction-level advisory lock), so replicas starting together
 * do it once. A row whose new key clashes with another's keeps its old key (the service starts; the
 * capability projection reports the `alias_collision`; a write that keeps its alias keeps that key) and is
 * named in the log with the profile it clashes with.
 *
 * The records are read as their stored JSON text and parsed here, not with `record->>'alias'`: an older
 * version stored profiles with a NUL (`\u0000`) in customData or metadata, which PostgreSQL's JSON operators
 * cannot turn into text, and one such row failed every replica's start. Such a row is reported
 * (`withControlCharacters`: it is served as stored, and a change to it is held to today's rules); a row
 * whose alias cannot be read at all (`unreadable`) keeps its key.
 */
export async function rekeyAliases(
  client: pg.PoolClient,
): Promise<{ updated: number; clashing: Array<{ id: string; with: string }>; unreadable: string[]; withControlCharacters: string[] }> {
  await client.query('BEGIN');
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('arr_rekey_aliases'))");
    const { rows: stored } = await client.query<{ id: string; record: string; alias_key: string }>(
      'SELECT id, record::text AS record, alias_key FROM profiles ORDER BY id COLLATE "C" FOR UPDATE',
    );
    const unreadable: string[] = [];
    const withControlCharacters: string[] = [];
    const rows: { id: string; alias: string; alias_key: string }[] = [];
    for (const row of stored) {
      let record: unknown;
      try {
        record = JSON.parse(row.record);
      } catch {
        record = undefined;
      }
      const alias = (record as { alias?: unknown } | undefined)?.alias;
      if (typeof alias !== 'string') {
        unreadable.push(row.id);
        continue;
      }
      if (findControlCharacter(record) !== undefined) withControlCharacters.push(row.id);
      rows.push({ id: row.id, alias, alias_key: row.alias_key });
    }
    const stale = rows.filter((r) => aliasKey(r.alias) !== r.alias_key);
    // Key -> the profile holding it (a row whose alias cannot be read holds the key it has).
    const taken = new Map(
      [...stored.filter((r) => unreadable.includes(r.id)), ...rows.filter((r) => !stale.includes(r))].map((r) => [r.alias_key, r.id]),
    );
    let updated = 0;
    const clashing: Array<{ id: string; with: string }> = [];
    // Park the stale rows on keys no alias can have (a control character), so a row may move onto a key
    // another stale row is leaving.
    if (stale.length > 0) {
      await client.query('UPDATE profiles SET alias_key = chr(1) || id WHERE id = ANY($1::text[])', [stale.map((r) => r.id)]);
    }
    for (const row of stale) {
      const key = aliasKey(row.alias);
      const holder = taken.get(key);
      if (holder !== undefined) {
        // Back on its old key when that is still free, else it stays parked (unique, never matching).
        if (!taken.has(row.alias_key)) {
          await client.query('UPDATE profiles SET alias_key = $2 WHERE id = $1', [row.id, row.alias_key]);
          taken.set(row.alias_key, row.id);
        }
        clashing.push({ id: row.id, with: holder });
        continue;
      }
      await client.query('UPDATE profiles SET alias_key = $2 WHERE id = $1', [row.id, key]);
      taken.set(key, row.id);
      updated++;
    }
    await client.query('COMMIT');
    return { updated, clashing, unreadable, withControlCharacters };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** Longest a readiness probe waits for the database before answering "not ready". */
const READINESS_TIMEOUT_MS = 2_000;

export class PostgresStore implements RegistryStore {
  readonly #pool: pg.Pool;
  readonly #listener: ChangeListener;
  /** Local revision of the resources: bumped by this replica's commits and by every notification. */
  #resourcesCounter = 0;
  /** Backend process IDs of this store's pooled connections: their changes were counted at commit. */
  readonly #ownBackends: Set<number>;
  readonly #epoch = randomBytes(6).toString('base64url');
  #closed = false;
  readonly #observe: BatchObserver | undefined;
  readonly #maxBatch: number;
  /** Group commit: jobs waiting for the next batch, and the batch running now (one at a time). */
  #queue: BatchJob[] = [];
  #running: Promise<void> | undefined;
  readonly #log: NonNullable<PostgresStoreOptions['log']>;
  /** Audit retention: the bound, the rows written since the last trim, and the trim running now. */
  readonly #auditMaxRows: number;
  readonly #auditTrimEvery: number;
  #auditSinceTrim = 0;
  #trimming: Promise<void> | undefined;
  #trimAgain = false;
  readonly #events: PgEventFeed;

  private constructor(pool: pg.Pool, listener: ChangeListener, ownBackends: Set<number>, options: PostgresStoreOptions) {
    this.#ownBackends = ownBackends;
    this.#pool = pool;
    this.#listener = listener;
    this.#observe = options.observeBatch;
    this.#maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
    this.#log = options.log ?? (() => undefined);
    this.#auditMaxRows = options.auditMaxRows ?? DEFAULT_AUDIT_MAX_ROWS;
    this.#auditTrimEvery = Math.max(1, Math.min(MAX_AUDIT_ROWS_BETWEEN_TRIMS, Math.floor(this.#auditMaxRows / 10)));
    this.#events = new PgEventFeed(
      (sql, params) => this.#query(sql, params),
      options.eventRetention ?? { retainCount: DEFAULT_EVENTS_RETAIN_COUNT, retainDays: DEFAULT_EVENTS_RETAIN_DAYS },
      (message, err) => this.#log('warn', message, err),
    );
  }

  /** The change log, written by the tables' triggers in each writing transaction (migration 5). */
  get events(): ChangeFeed {
    return this.#events;
  }

  recordEvents(drafts: readonly EventDraft[]): Promise<void> {
    if (drafts.length === 0) return Promise.resolve();
    // One statement, so one transaction: the events are numbered together at its commit (migration 5).
    return this.#guard(async () => {
      await this.#query(
        'SELECT arr_event(d.type, d.kind, d.id, d.provider) FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS d(type, kind, id, provider)',
        [
          drafts.map((d) => d.type),
          drafts.map((d) => d.subject.kind),
          drafts.map((d) => d.subject.id),
          drafts.map((d) => d.subject.provider ?? null),
        ],
      );
    });
  }

  /** Counts audit rows written; trims the table once enough were written since the last trim. */
  #auditWritten(rows: number): void {
    if (this.#auditMaxRows === 0 || rows === 0) return;
    this.#auditSinceTrim += rows;
    if (this.#auditSinceTrim >= this.#auditTrimEvery) this.#trimAudit();
  }

  /**
   * Deletes the audit rows older than the newest auditMaxRows, off the write path (no acknowledgement waits
   * for it). By sequence number: the rows above max(seq) - auditMaxRows are at most auditMaxRows (numbers
   * a rolled-back insert took are gaps), found through the primary key without counting the table. Every
   * replica trims; their deletes overlap harmlessly. A failure is logged, and the next trim catches up.
   */
  #trimAudit(): void {
    if (this.#auditMaxRows === 0 || this.#closed) return;
    if (this.#trimming) {
      this.#trimAgain = true;
      return;
    }
    this.#auditSinceTrim = 0;
    this.#trimming = this.#query('DELETE FROM audit_log WHERE seq <= (SELECT max(seq) FROM audit_log) - $1', [this.#auditMaxRows])
      .then(
        () => undefined,
        (err: unknown) => this.#log('warn', 'trimming the audit table to AUDIT_MAX_ROWS failed; the next trim catches up', err),
      )
      .finally(() => {
        this.#trimming = undefined;
        if (this.#trimAgain) {
          this.#trimAgain = false;
          this.#trimAudit();
        }
      });
  }

  /** Connects, migrates under the advisory lock (or refuses a newer schema), and starts listening. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const log = options.log ?? (() => undefined);
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      application_name: 'agent-resource-registry',
    });
    // An idle client losing its connection must not crash the process; the next checkout reconnects.
    pool.on('error', (err) => log('warn', 'an idle database connection failed', err));
    const ownBackends = new Set<number>();
    pool.on('connect', (client) => {
      // The pool listens for errors only while a client is idle: a connection lost while checked out (a
      // crash or failover mid-transaction) emits `error` with no listener, which would end the process. The
      // query in flight fails on its own (503); this listener only keeps the error from being unhandled.
      client.on('error', (err) => log('warn', 'a database connection in use failed', err));
      const pid = (client as pg.PoolClient & { processID?: number }).processID;
      if (typeof pid === 'number') {
        ownBackends.add(pid);
        client.once('end', () => ownBackends.delete(pid));
      }
    });
    let listener: ChangeListener | undefined;
    try {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw new DatabaseUnavailableError(err);
      }
      try {
        const report = await migrate(client);
        if (report.applied.length > 0) options.onMigrated?.(report);
        const rekeyed = await rekeyAliases(client);
        if (rekeyed.updated > 0 || rekeyed.clashing.length > 0) {
          const clashes = rekeyed.clashing.map((c) => `${c.id} (clashes with ${c.with})`).join(', ');
          log(
            'warn',
            `re-keyed ${rekeyed.updated} profile aliases under the current alias rule${clashes ? `; kept the old key of ${clashes}: both are kept, new look-alikes are refused (rename one)` : ''}`,
          );
        }
        // IDs only: the values may be anything an older version accepted, secrets included.
        for (const id of rekeyed.withControlCharacters) {
          log(
            'warn',
            `table profiles, row ${id}: holds a control character an older version accepted (customData or metadata); served as stored; replace its customData or metadata to clear it`,
          );
        }
        for (const id of rekeyed.unreadable) {
          log('warn', `table profiles, row ${id}: its record has no readable alias; left as stored (its alias key is unchanged)`);
        }
      } finally {
        client.release();
      }
      // eslint-disable-next-line prefer-const -- the listener's callback reads it, and the store needs the listener first
      let store: PostgresStore | undefined;
      listener = new ChangeListener(options.databaseUrl, (table, pid) => store?.onChange(table, pid), log);
      store = new PostgresStore(pool, listener, ownBackends, options);
      await store.#events.load().catch((err: unknown) => {
        throw new DatabaseUnavailableError(err);
      });
      await listener.start().catch((err: unknown) => {
        throw new DatabaseUnavailableError(err);
      });
      // A table grown past the bound (an older version kept every row) is trimmed now, not at the next write.
      store.#trimAudit();
      return store;
    } catch (err) {
      await listener?.close();
      await pool.end().catch(() => undefined);
      throw err;
    }
  }

  /** A change announced by any replica (`undefined`: notifications may have been missed). */
  private onChange(table: string | undefined, processId: number | undefined): void {
    // Every replica's commits, this one's included, reach the subscribers through the change log.
    if (table === undefined || table === 'events') this.#events.refresh();
    if (processId !== undefined && this.#ownBackends.has(processId)) return;
    if (table === undefined || table === 'resources') this.#resourcesCounter++;
  }

  /** Runs one store operation, mapping a lost or refused database connection to 503. */
  async #guard<T>(op: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.');
    try {
      return await op();
    } catch (err) {
      if (isUnavailable(err)) throw storageUnavailable(err);
      throw err;
    }
  }

  /** A pooled connection; any failure to get one (refused, not accepting, timed out) is 503. */
  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw storageUnavailable(err);
    }
  }

  async #query<R extends pg.QueryResultRow>(sql: string | pg.QueryConfig, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    const client = await this.#connect();
    let failed: unknown;
    try {
      return await client.query<R>(typeof sql === 'string' ? { text: sql, values: params } : sql);
    } catch (err) {
      failed = err;
      throw err;
    } finally {
      // A connection that failed is not handed out again.
      client.release(failed !== undefined && isUnavailable(failed) ? (failed as Error) : undefined);
    }
  }

  /** For the read helpers below. */
  get #db(): Queryable {
    return { query: ((sql: string | pg.QueryConfig, params?: unknown[]) => this.#query(sql, params)) as Queryable['query'] };
  }

  /** One transaction on one pooled client: COMMIT before returning, ROLLBACK on any error. */
  async #transaction<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    const client = await this.#connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Group commit: queues `op` for the next batch transaction, together with the operations queued beside
   * it, and settles only after that transaction's COMMIT (or its failure). A domain refusal (AppError)
   * rejects its own operation and leaves the others; any other error rolls the batch back, and each of its
   * operations is then run again in a transaction of its own, so one bad operation fails alone.
   */
  #batched<T>(op: BatchOp): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, trace: currentTraceContext(), resolve, reject });
      this.#running ??= this.#drain();
    });
  }

  /**
   * Runs batches until the queue is empty and the last one has committed. A batch whose statements have
   * run waits only for its COMMIT (the WAL flush): operations queued by then start the next batch at once,
   * on another connection, so one batch's statements overlap the previous one's flush. The earlier batch
   * holds the row locks of every ID it wrote until its COMMIT, so a later write of the same ID waits for it
   * inside the database: the writes of one ID still commit in arrival order. At most two batches are in
   * flight: one running its statements, one committing.
   */
  async #drain(): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    try {
      for (;;) {
        if (this.#queue.length === 0 || inFlight.size >= MAX_BATCHES_IN_FLIGHT) {
          if (inFlight.size === 0) break;
          await Promise.race(inFlight); // a batch finished; operations may have queued meanwhile
          continue;
        }
        let statementsRan!: () => void;
        const ran = new Promise<void>((resolve) => (statementsRan = resolve));
        const jobs = this.#queue.splice(0, this.#maxBatch);
        const batch: Promise<void> = inSharedSpan(
          'postgres batch',
          { 'db.system.name': 'postgresql', 'db.operation.batch.size': jobs.length },
          jobs.map((j) => j.trace),
          () => this.#runBatch(jobs, statementsRan),
        ).finally(() => {
          inFlight.delete(batch);
          statementsRan();
        });
        inFlight.add(batch);
        await ran;
      }
    } finally {
      this.#running = undefined;
    }
  }

  /** `statementsRan` is called once the batch only waits for its COMMIT (at the latest when it settles). */
  async #runBatch(jobs: BatchJob[], statementsRan: () => void): Promise<void> {
    const started = performance.now();
    const observe = (ok: boolean) =>
      this.#observe?.({ label: 'postgres', operations: jobs.length, durationMs: performance.now() - started, ok });
    let client: pg.PoolClient;
    try {
      client = await this.#connect();
    } catch (err) {
      for (const job of jobs) job.reject(err);
      observe(false);
      return;
    }
    let broken: Error | undefined;
    let result: BatchResult | undefined;
    let aborted: unknown;
    try {
      await client.query('BEGIN');
      try {
        result = await runOps(
          client,
          jobs.map((j) => j.op),
        );
      } catch (err) {
        aborted = err; // a database error, not a refusal: nothing of the batch may commit
      }
      if (aborted === undefined) statementsRan();
      await client.query(aborted === undefined ? 'COMMIT' : 'ROLLBACK');
    } catch (err) {
      // BEGIN, COMMIT or ROLLBACK failed: the connection is not handed out again.
      broken = err instanceof Error ? err : new Error(String(err));
      if (aborted === undefined) aborted = err;
      if (isUnavailable(err)) {
        // The COMMIT's outcome is unknown: every operation of the batch answers 503 (retrying is safe).
        client.release(broken);
        for (const job of jobs) job.reject(storageUnavailable(err));
        observe(false);
        return;
      }
    }
    client.release(broken);
    if (aborted === undefined && result) {
      if (result.resourcesChanged) this.#resourcesCounter++;
      this.#auditWritten(result.auditRows);
      observe(true);
      settle(jobs, result);
      return;
    }
    observe(false);
    // Rolled back, nothing of it stored: each operation alone, in its own transaction.
    for (const job of jobs) {
      try {
        const alone = await this.#transaction((c) => runOps(c, [job.op]));
        if (alone.resourcesChanged) this.#resourcesCounter++;
        this.#auditWritten(alone.auditRows);
        settle([job], alone);
      } catch (err) {
        job.reject(err);
      }
    }
  }

  listResources(): Promise<readonly StoredResource[]> {
    return this.#guard(async () => {
      const { rows } = await this.#query<ResourceRow>(`SELECT ${RESOURCE_COLUMNS} FROM resources ORDER BY id COLLATE "C"`);
      return rows.map(resourceOf);
    });
  }

  getResource(id: string): Promise<StoredResource | undefined> {
    return this.#guard(() => readResource(this.#db, id));
  }

  /**
   * Served from this replica's view, not a query: it changes on every commit here and on every change
   * notification from any replica. While the listener is disconnected (notifications may be missed),
   * every call returns a new value, so caches rebuild from the database until it is back.
   */
  resourcesRevision(): string {
    if (!this.#listener.connected) this.#resourcesCounter++;
    return `${this.#epoch}:${this.#resourcesCounter}`;
  }

  putResource(record: StoredResource): Promise<PutOutcome> {
    return this.#guard(async () => (await this.#batched<Registered>({ kind: 'put', record })).outcome);
  }

  /** Batched like putResource; the audit row goes into the same transaction, so one COMMIT serves both. */
  registerResource(record: StoredResource, audit: AuditIntent): Promise<Registered> {
    return this.#guard(() => this.#batched<Registered>({ kind: 'put', record, audit }));
  }

  withdrawResource(provider: string, id: string): Promise<void> {
    return this.#guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const { rowCount } = await this.#query('DELETE FROM resources WHERE id = $1 AND provider = $2', [id, provider]);
        if (rowCount) {
          this.#resourcesCounter++;
          return;
        }
        const held = await readResource(this.#db, id);
        planWithdraw(held, provider, id); // throws 404 or 409
      }
      throw new AppError('storage_unavailable', `Resource ${id} is changing too often; retry later.`);
    });
  }

  customizeResource(id: string, patch: CustomizationPatch): Promise<StoredResource> {
    return this.#guard(async () => {
      const { rows } = await this.#query<ResourceRow>(
        `UPDATE resources SET display_name = CASE WHEN $2 THEN $3 ELSE display_name END,
           user_content = COALESCE($4, user_content), imported = COALESCE($5, imported), updated_at = now()
         WHERE id = $1 RETURNING ${RESOURCE_COLUMNS}`,
        [id, patch.displayName !== undefined, patch.displayName ?? null, patch.userContent ?? null, patch.imported ?? null],
      );
      if (rows.length === 0) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
      this.#resourcesCounter++;
      return resourceOf(rows[0]!);
    });
  }

  reconcileResources(provider: string, incoming: readonly StoredResource[], dryRun: boolean): Promise<ReconcileResult> {
    return this.#reconcile(provider, incoming, dryRun);
  }

  /** The audit rows go into the reconcile's transaction: one COMMIT for the change and its entries. */
  async reconcileResourcesAudited(
    provider: string,
    incoming: readonly StoredResource[],
    audit: AuditIntent,
  ): Promise<{ result: ReconcileResult }> {
    return { result: await this.#reconcile(provider, incoming, false, audit) };
  }

  #reconcile(provider: string, incoming: readonly StoredResource[], dryRun: boolean, audit?: AuditIntent): Promise<ReconcileResult> {
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
    if (dryRun) return this.#guard(async () => ({ dryRun, ...(await planOn(this.#db, false)) }));
    return this.#guard(async () => {
      let auditRows = 0;
      const result = await this.#transaction(async (client) => {
        // Reconciles of one provider run one after another, so each sees the set the previous one left.
        await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('arr-reconcile:' || $1, 0))`, [provider]);
        const plan = await planOn(client, true);
        if (plan.withdrawn.length > 0) {
          await client.query('DELETE FROM resources WHERE provider = $1 AND id = ANY($2::text[])', [provider, plan.withdrawn]);
        }
        const writes = records.filter((r) => !plan.unchanged.includes(r.id));
        if (writes.length > 0) {
          // The same conditional upsert as a single put, for the whole set: an ID another provider took
          // after the read above comes back missing, and the whole transaction rolls back.
          const { rows } = await client.query<{ id: string }>(
            `INSERT INTO resources AS r (${SOURCE_COLUMNS})
             SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
             ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, name = EXCLUDED.name,
               description = EXCLUDED.description, instructions = EXCLUDED.instructions,
               source_content = EXCLUDED.source_content, updated_at = now()
             WHERE r.provider = EXCLUDED.provider
             RETURNING id`,
            [0, 1, 2, 3, 4, 5, 6].map((i) => writes.map((r) => sourceValues(r)[i])),
          );
          if (rows.length !== writes.length) {
            const written = new Set(rows.map((r) => r.id));
            const lost = writes.filter((r) => !written.has(r.id)).map((r) => r.id);
            const holders = await client.query<{ id: string; provider: string }>(
              'SELECT id, provider FROM resources WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C"',
              [lost],
            );
            throw conflictError(holders.rows.map((h) => ({ id: h.id, provider: h.provider })));
          }
        }
        const result = { dryRun, ...plan };
        if (audit) {
          const entries = reconcileEntries(result, audit);
          await insertAudit(client, entries);
          auditRows = entries.length;
        }
        return result;
      });
      this.#auditWritten(auditRows);
      if (result.created.length + result.replaced.length + result.withdrawn.length > 0) this.#resourcesCounter++;
      return result;
    });
  }

  listMachines(): Promise<readonly MachineRecord[]> {
    return this.#guard(async () => {
      const { rows } = await this.#query<MachineRow>('SELECT * FROM machines ORDER BY machine_id COLLATE "C"');
      return rows.map(machineOf);
    });
  }

  getMachine(machineId: string): Promise<MachineRecord | undefined> {
    return this.#guard(async () => {
      const { rows } = await this.#query<MachineRow>('SELECT * FROM machines WHERE machine_id = $1', [machineId]);
      return rows[0] && machineOf(rows[0]);
    });
  }

  findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined> {
    return this.#guard(async () => {
      const { rows } = await this.#query<MachineRow>('SELECT * FROM machines WHERE token_digest = $1 AND revoked_at IS NULL', [digest]);
      return rows[0] && machineOf(rows[0]);
    });
  }

  enrollMachine(record: MachineRecord): Promise<void> {
    return this.#guard(async () => {
      // New, or re-enrolment of a revoked machine; an active one returns no row.
      const { rowCount } = await this.#query(
        `INSERT INTO machines (machine_id, token_digest, enrolled_at, revoked_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (machine_id) DO UPDATE SET token_digest = EXCLUDED.token_digest, enrolled_at = EXCLUDED.enrolled_at,
           revoked_at = EXCLUDED.revoked_at
         WHERE machines.revoked_at IS NOT NULL`,
        [record.machineId, record.tokenDigest, record.enrolledAt, record.revokedAt ?? null],
      );
      if (!rowCount) {
        throw new AppError('machine_exists', `Machine ${record.machineId} is already enrolled; revoke it first to issue a new token.`, {
          machineId: record.machineId,
        });
      }
    });
  }

  revokeMachine(machineId: string, revokedAt: string): Promise<void> {
    return this.#guard(async () => {
      const { rowCount } = await this.#query('UPDATE machines SET revoked_at = $2 WHERE machine_id = $1 AND revoked_at IS NULL', [
        machineId,
        revokedAt,
      ]);
      if (!rowCount) throw new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });
    });
  }

  rotateMachineToken(machineId: string, tokenDigest: string): Promise<void> {
    return this.#guard(async () => {
      const { rowCount } = await this.#query('UPDATE machines SET token_digest = $2 WHERE machine_id = $1 AND revoked_at IS NULL', [
        machineId,
        tokenDigest,
      ]);
      if (!rowCount) throw new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });
    });
  }

  revokeCanvasTokens(canvasId: string, revokedBefore: string): Promise<void> {
    return this.#guard(async () => {
      // ISO times in one format compare as text; the cut-off only moves forward.
      await this.#query(
        `INSERT INTO canvas_token_revocations (canvas_id, revoked_before) VALUES ($1, $2)
         ON CONFLICT (canvas_id) DO UPDATE SET revoked_before = EXCLUDED.revoked_before
         WHERE canvas_token_revocations.revoked_before < EXCLUDED.revoked_before`,
        [canvasId, revokedBefore],
      );
    });
  }

  canvasTokensRevokedBefore(canvasId: string): Promise<string | undefined> {
    return this.#guard(async () => {
      const { rows } = await this.#query<{ revoked_before: string }>(
        'SELECT revoked_before FROM canvas_token_revocations WHERE canvas_id = $1',
        [canvasId],
      );
      return rows[0]?.revoked_before;
    });
  }

  listProfiles(): Promise<readonly ProfileEntry[]> {
    return this.#guard(async () => {
      const { rows } = await this.#query<{ record: AgentProfile; revision: string }>(
        'SELECT record, revision FROM profiles ORDER BY id COLLATE "C"',
      );
      return rows.map((r) => ({ profile: r.record, revision: r.revision }));
    });
  }

  getProfile(id: string): Promise<ProfileEntry | undefined> {
    return this.#guard(() => readProfile(this.#db, id));
  }

  getTeamState(): Promise<{ members: unknown; configs: unknown }> {
    return this.#guard(async () => {
      const { rows } = await this.#query<{ key: string; value: unknown }>(
        "SELECT key, value FROM registry_state WHERE key IN ('members', 'configs')",
      );
      const byKey = new Map(rows.map((r) => [r.key, r.value]));
      return { members: byKey.get('members'), configs: byKey.get('configs') };
    });
  }

  createProfile(profile: AgentProfile): Promise<ProfileEntry> {
    return this.#guard(async () => {
      const revision = profileRevision(profile);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        try {
          await this.#query('INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4::json)', [
            profile.id,
            aliasKey(profile.alias),
            revision,
            JSON.stringify(profile),
          ]);
          return { profile, revision };
        } catch (err) {
          if (isUniqueViolation(err, 'profiles_pkey')) throw new AppError('internal_error', `Profile ID ${profile.id} was assigned twice.`);
          if (!isUniqueViolation(err, 'profiles_alias_key_idx')) throw err;
          await this.#throwAliasConflict(profile.alias);
        }
      }
      throw new AppError('storage_unavailable', 'Profiles are changing too often to store this change; retry later.');
    });
  }

  updateProfile(
    id: string,
    changes: ProfileChanges,
    expectedRevisions?: readonly string[],
    expectedRevision?: number,
  ): Promise<ProfileEntry & { changed: boolean }> {
    return this.#guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await readProfile(this.#db, id);
        // Existence, If-Match, expectedRevision and kind, in the order a client expects; the alias rule is
        // the unique index.
        const { next, changed } = planUpdate([], current?.profile, id, changes, expectedRevisions, expectedRevision);
        if (!changed) return { ...current!, changed: false };
        const revision = profileRevision(next);
        try {
          // Written only if the row is still the revision the checks ran on (its digest covers the integer
          // revision): If-Match and expectedRevision in the same step. An
          // unchanged alias keeps its stored key (a namesake from an earlier alias rule keeps its old one).
          const key = next.alias === current!.profile.alias ? null : aliasKey(next.alias);
          const { rowCount } = await this.#query(
            'UPDATE profiles SET alias_key = COALESCE($3, alias_key), revision = $4, record = $5::json WHERE id = $1 AND revision = $2',
            [id, current!.revision, key, revision, JSON.stringify(next)],
          );
          if (rowCount) return { profile: next, revision, changed: true };
        } catch (err) {
          if (!isUniqueViolation(err, 'profiles_alias_key_idx')) throw err;
          await this.#throwAliasConflict(next.alias);
        }
      }
      throw new AppError('storage_unavailable', `Profile ${id} is changing too often to store this change; retry later.`);
    });
  }

  deleteProfile(id: string, expectedRevisions?: readonly string[]): Promise<void> {
    return this.#guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await readProfile(this.#db, id);
        planDelete(current?.profile, id, expectedRevisions);
        const { rowCount } = await this.#query('DELETE FROM profiles WHERE id = $1 AND revision = $2', [id, current!.revision]);
        if (rowCount) return;
      }
      throw new AppError('storage_unavailable', `Profile ${id} is changing too often to store this change; retry later.`);
    });
  }

  /** Throws 409 naming the profile that holds `alias`; returns when none does any more (retry). */
  async #throwAliasConflict(alias: string): Promise<void> {
    const { rows } = await this.#query<{ id: string }>('SELECT id FROM profiles WHERE alias_key = $1', [aliasKey(alias)]);
    if (rows[0]) {
      throw new AppError(
        'alias_conflict',
        `Alias ${JSON.stringify(alias)} is already used by profile ${rows[0].id} (aliases ignore case).`,
        {
          field: '/alias',
          id: rows[0].id,
        },
      );
    }
  }

  listWorkloads(canvasId: string): Promise<readonly WorkloadRecord[]> {
    return this.#guard(async () => {
      const { rows } = await this.#query<{ record: WorkloadRecord }>(
        'SELECT record FROM workloads WHERE canvas_id = $1 ORDER BY thread_id COLLATE "C"',
        [canvasId],
      );
      return rows.map((r) => r.record);
    });
  }

  getWorkload(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.#guard(async () => {
      const { rows } = await this.#query<{ record: WorkloadRecord }>(
        'SELECT record FROM workloads WHERE canvas_id = $1 AND thread_id = $2',
        [canvasId, threadId],
      );
      return rows[0]?.record;
    });
  }

  realizeWorkload(record: WorkloadRecord, audit?: AuditIntent): Promise<{ workload: WorkloadRecord; created: boolean }> {
    return this.#guard(async () => {
      const entry = audit && realizedEntry(record, audit);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        // The primary key picks exactly one winner across replicas; the others read the winner's record.
        // The winner's audit row is inserted by the same statement (one commit), only when its row was.
        const inserted = entry
          ? await this.#query(
              `WITH won AS (
                 INSERT INTO workloads (canvas_id, thread_id, record) VALUES ($1, $2, $3::json) ON CONFLICT DO NOTHING RETURNING 1
               )
               INSERT INTO audit_log (at, actor, action, object_id, outcome) SELECT $4, $5, $6, $7, $8 FROM won`,
              [record.canvasId, record.threadId, JSON.stringify(record), entry.at, entry.actor, entry.action, entry.id, entry.outcome],
            )
          : await this.#query('INSERT INTO workloads (canvas_id, thread_id, record) VALUES ($1, $2, $3::json) ON CONFLICT DO NOTHING', [
              record.canvasId,
              record.threadId,
              JSON.stringify(record),
            ]);
        if (inserted.rowCount) {
          if (entry) this.#auditWritten(1);
          return { workload: record, created: true };
        }
        const existing = await this.#query<{ record: WorkloadRecord }>(
          'SELECT record FROM workloads WHERE canvas_id = $1 AND thread_id = $2',
          [record.canvasId, record.threadId],
        );
        if (existing.rows[0]) return { workload: existing.rows[0].record, created: false };
      }
      throw new AppError('storage_unavailable', 'The workload could not be stored; retry later.');
    });
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.#guard(() => this.#batched<void>({ kind: 'audit', entries }));
  }

  /** One round trip to the database, bounded so a hung connection attempt answers "no" in time. */
  async isAvailable(): Promise<boolean> {
    if (this.#closed) return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), READINESS_TIMEOUT_MS);
    });
    const probe = this.#query('SELECT 1').then(
      () => true,
      () => false,
    );
    try {
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Operations already queued still commit (or fail) before the pool closes.
    await this.#running;
    this.#trimAgain = false;
    await this.#trimming;
    await this.#listener.close();
    await this.#events.close();
    await this.#pool.end();
  }
}

function settle(jobs: readonly BatchJob[], result: BatchResult): void {
  jobs.forEach((job, i) => {
    const outcome = result.outcomes[i]!;
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(outcome.err);
  });
}

// The batch's statements are named (prepared once per pooled connection, then only bound and executed):
// they run on every write, and parsing and planning them was a fifth to a third of their time in the
// database (EXPLAIN ANALYZE of a 13-row upsert: planning 0.09–0.17 ms, execution 0.36–0.42 ms).

/**
 * The statements of a batch on `client` (inside its transaction), a bounded number whatever its size: the
 * registrations as one conditional upsert over arrays (the ownership rule for every row at once: a row is
 * written only when its ID is free or already the caller's and different), the holders of the IDs that
 * wrote nothing read in one more statement (409 or `unchanged`), and every audit entry in one insert: the
 * appended ones and those of the registrations stored, with the outcome each got. The k-th write of one ID
 * in the batch goes into the k-th upsert (a statement may change a row only once), so the writes of one ID
 * keep their arrival order. Each registration's value carries the record as stored (from the upsert's
 * RETURNING, or the holders read for `unchanged`): no read-back after the COMMIT. A refusal is that
 * operation's outcome; a database error throws (the caller rolls back, the audit rows with the rest).
 */
async function runOps(client: Queryable, ops: readonly BatchOp[]): Promise<BatchResult> {
  const outcomes: BatchResult['outcomes'] = [];
  const rounds: { index: number; record: StoredResource }[][] = [];
  const writesOf = new Map<string, number>();
  ops.forEach((op, index) => {
    if (op.kind === 'audit') {
      outcomes[index] = { ok: true, value: undefined };
      return;
    }
    const k = writesOf.get(op.record.id) ?? 0;
    writesOf.set(op.record.id, k + 1);
    (rounds[k] ??= []).push({ index, record: op.record });
  });
  let resourcesChanged = false;
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
      if (written.size > 0) resourcesChanged = true;
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
  // In arrival order: appended entries as they came, a registration's entry with the outcome it got.
  const audit: AuditEntry[] = [];
  ops.forEach((op, index) => {
    const outcome = outcomes[index]!;
    if (op.kind === 'audit') audit.push(...op.entries);
    else if (op.audit && outcome.ok) {
      const { at, actor, action } = op.audit;
      audit.push({ at, actor, action, id: op.record.id, outcome: (outcome.value as Registered).outcome });
    }
  });
  await insertAudit(client, audit);
  return { outcomes, resourcesChanged, auditRows: audit.length };
}

/**
 * Audit entries in one statement (none: no statement). Every string is escaped of control characters first:
 * text and jsonb hold no NUL, and an entry may carry what a client sent (a path, an ID), so a `%00` must not
 * fail the insert (and with it the change it records); the escape keeps it visible.
 */
async function insertAudit(client: Queryable, entries: readonly AuditEntry[]): Promise<void> {
  const audit = entries.map((e) => escapeControlCharactersDeep(e) as AuditEntry);
  if (audit.length > 0) {
    await client.query({
      name: 'arr_append_audit',
      text: `INSERT INTO audit_log (at, actor, action, object_id, outcome, details)
       SELECT at, actor, action, object_id, outcome, details::jsonb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS e(at, actor, action, object_id, outcome, details)`,
      values: [
        audit.map((e) => e.at),
        audit.map((e) => e.actor),
        audit.map((e) => e.action),
        audit.map((e) => e.id),
        audit.map((e) => e.outcome),
        audit.map((e) => (e.details === undefined ? null : JSON.stringify(e.details))),
      ],
    });
  }
}

/**
 * The ownership rule as one statement for records of distinct IDs: each row written only when the ID is
 * free or already the record's provider's (and different); the owner's columns are left as they are.
 * Returns the IDs written, each with whether it was created and the record as stored.
 */
async function upsertResources(
  client: Queryable,
  records: readonly StoredResource[],
): Promise<Map<string, { created: boolean; stored: StoredResource }>> {
  const values = records.map(sourceValues);
  const { rows } = await client.query<ResourceRow & { created: boolean }>({
    name: 'arr_put_resources',
    text: `INSERT INTO resources AS r (${SOURCE_COLUMNS})
     SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
     ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, name = EXCLUDED.name,
       description = EXCLUDED.description, instructions = EXCLUDED.instructions,
       source_content = EXCLUDED.source_content, updated_at = now()
     WHERE r.provider = EXCLUDED.provider
       AND (r.schema_version, r.name, r.description, r.instructions, r.source_content)
           IS DISTINCT FROM (EXCLUDED.schema_version, EXCLUDED.name, EXCLUDED.description, EXCLUDED.instructions, EXCLUDED.source_content)
     RETURNING ${RESOURCE_COLUMNS}, (xmax = 0) AS created`,
    values: [0, 1, 2, 3, 4, 5, 6].map((i) => values.map((v) => v[i])),
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

async function readProfile(db: Queryable, id: string): Promise<ProfileEntry | undefined> {
  const { rows } = await db.query<{ record: AgentProfile; revision: string }>('SELECT record, revision FROM profiles WHERE id = $1', [id]);
  return rows[0] && { profile: rows[0].record, revision: rows[0].revision };
}
