// The PostgreSQL store (docs/postgresql.md): the RegistryStore interface over a pg pool, for several replicas on one
// database. Every rule is enforced inside the database: ownership by a conditional upsert (no row back
// means 409), reconcile in one transaction, the first realization of a thread by its primary key, profile
// If-Match by a conditional write on the revision column, aliases by a unique index. A write is
// acknowledged only after its COMMIT. Registrations and audit appends are group-committed (group-commit.ts):
// those that arrive while a batch transaction runs are queued and run together in the next one, as a
// bounded number of statements over arrays (see runOps), with one COMMIT and, through the triggers, one
// notification per batch. Replicas learn of each other's changes through LISTEN/NOTIFY (see
// change-listener.ts), which drives resourcesRevision() and so the catalogue caches. This class composes
// the aggregates: resources.ts, profiles.ts, machines.ts, workloads.ts, audit.ts and event-feed.ts.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { DEFAULT_AUDIT_MAX_ROWS, DEFAULT_EVENTS_RETAIN_COUNT, DEFAULT_EVENTS_RETAIN_DAYS } from '../../config.js';
import type { ProfileChanges } from '../../profiles/profile-rules.js';
import type { PutOutcome } from '../../registry/ownership.js';
import type { RecordUsage } from '../../registry/record-quota.js';
import type { ResourceRevision } from '../../registry/record-digest.js';
import type { CustomizationPatch } from '../../registry/resource-versions.js';
import type { AgentProfile } from '../../schemas/profile.js';
import type { ReconcileResult, StoredResource } from '../../schemas/resource.js';
import type { WorkloadRecord } from '../../schemas/workload.js';
import type { BatchObserver } from '../durable-document.js';
import type {
  AuditEntry,
  AuditIntent,
  FindRequest,
  FoundResource,
  MachineRecord,
  ProfileEntry,
  Registered,
  RegistryStore,
} from '../../registry/store.js';
import type { ChangeFeed, EventDraft } from '../../registry/events.js';
import { AuditRetention, insertAudit } from './audit.js';
import { ChangeListener } from './change-listener.js';
import { openPool, PgDatabase, type PoolLog, type Queryable } from './database.js';
import { PgEventFeed } from './event-feed.js';
import { GroupCommit, type BatchRun } from './group-commit.js';
import { PgMachines } from './machines.js';
import { migrate, type MigrationReport } from './migrations.js';
import { DatabaseUnavailableError } from './pg-errors.js';
import { PgProfiles, rekeyAliasesAtOpen } from './profiles.js';
import { indexUnindexedResources, PgResources, registerResources } from './resources.js';
import type { SearchWalkTuning } from './resource-search.js';
import { PgWorkloads } from './workloads.js';
import type { PinMove } from '../../workloads/pin-move.js';

export interface PostgresStoreOptions {
  databaseUrl: string;
  /** Most pooled connections of this process (default 10). */
  poolSize?: number;
  /** Told about listener disconnects and reconnects, and idle-client errors (no secrets in them). */
  log?: PoolLog;
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
  /** How far a search reads the scope in page order before it ranks every match (tests choose less). */
  searchWalk?: SearchWalkTuning;
}

/** Default for PostgresStoreOptions.maxBatch: bounds how long a batch holds its row locks. */
const DEFAULT_MAX_BATCH = 64;

/**
 * An operation group-committed in a batch transaction: a registration (with its audit entry when `audit` is
 * set, written in the same transaction once its outcome is known), or one call's audit entries. A
 * registration's value is a `Registered`; an audit append's is undefined.
 */
type BatchOp = { kind: 'put'; record: StoredResource; audit?: AuditIntent } | { kind: 'audit'; entries: readonly AuditEntry[] };

/** What one run of a batch's statements gave: besides each outcome, whether a resource row changed. */
interface BatchResult extends BatchRun {
  resourcesChanged: boolean;
  /** Audit rows the batch inserted. */
  auditRows: number;
}

/**
 * The statements of a batch on `client` (inside its transaction), a bounded number whatever its size: the
 * registrations (resources.ts `registerResources`), then every audit entry in one insert: the appended
 * ones and those of the registrations stored, with the outcome each got. A refusal is that operation's
 * outcome; a database error throws (the caller rolls back, the audit rows with the rest).
 */
async function runOps(client: Queryable, ops: readonly BatchOp[]): Promise<BatchResult> {
  const puts = ops.flatMap((op, index) => (op.kind === 'put' ? [{ index, record: op.record }] : []));
  const registered = await registerResources(
    client,
    puts.map((p) => p.record),
  );
  const outcomes: BatchResult['outcomes'] = ops.map(() => ({ ok: true, value: undefined }));
  puts.forEach((p, i) => (outcomes[p.index] = registered.outcomes[i]!));
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
  return { outcomes, resourcesChanged: registered.changed, auditRows: audit.length };
}

export class PostgresStore implements RegistryStore {
  readonly #db: PgDatabase;
  readonly #listener: ChangeListener;
  /** Backend process IDs of this store's pooled connections: their changes were counted at commit. */
  readonly #ownBackends: Set<number>;
  readonly #audit: AuditRetention;
  readonly #batches: GroupCommit<BatchOp, BatchResult>;
  readonly #events: PgEventFeed;
  readonly #resources: PgResources;
  readonly #profiles: PgProfiles;
  readonly #machines: PgMachines;
  readonly #workloads: PgWorkloads;

  private constructor(db: PgDatabase, listener: ChangeListener, ownBackends: Set<number>, options: PostgresStoreOptions) {
    const log = options.log ?? (() => undefined);
    this.#db = db;
    this.#listener = listener;
    this.#ownBackends = ownBackends;
    this.#audit = new AuditRetention(db, options.auditMaxRows ?? DEFAULT_AUDIT_MAX_ROWS, log);
    this.#events = new PgEventFeed(
      (sql, params) => db.query(sql, params),
      options.eventRetention ?? { retainCount: DEFAULT_EVENTS_RETAIN_COUNT, retainDays: DEFAULT_EVENTS_RETAIN_DAYS },
      (message, err) => log('warn', message, err),
    );
    this.#resources = new PgResources(db, this.#audit, randomBytes(6).toString('base64url'), options.searchWalk);
    this.#profiles = new PgProfiles(db);
    this.#machines = new PgMachines(db);
    this.#workloads = new PgWorkloads(db, this.#audit);
    this.#batches = new GroupCommit(db, {
      maxBatch: Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH),
      ...(options.observeBatch ? { observe: options.observeBatch } : {}),
      run: runOps,
      committed: (result) => {
        if (result.resourcesChanged) this.#resources.changed();
        this.#audit.written(result.auditRows);
      },
    });
  }

  /** Connects, migrates under the advisory lock (or refuses a newer schema), and starts listening. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const log = options.log ?? (() => undefined);
    const { pool, ownBackends } = openPool(options, log);
    const db = new PgDatabase(pool);
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
        await rekeyAliasesAtOpen(client, log);
        await indexUnindexedResources(client);
      } finally {
        client.release();
      }
      // eslint-disable-next-line prefer-const -- the listener's callback reads it, and the store needs the listener first
      let store: PostgresStore | undefined;
      listener = new ChangeListener(options.databaseUrl, (table, pid) => store?.onChange(table, pid), log);
      store = new PostgresStore(db, listener, ownBackends, options);
      await store.#events.load().catch((err: unknown) => {
        throw new DatabaseUnavailableError(err);
      });
      await listener.start().catch((err: unknown) => {
        throw new DatabaseUnavailableError(err);
      });
      // A table grown past the bound (an older version kept every row) is trimmed now, not at the next write.
      store.#audit.trim();
      return store;
    } catch (err) {
      await listener?.close();
      await db.end().catch(() => undefined);
      throw err;
    }
  }

  /** A change announced by any replica (`undefined`: notifications may have been missed). */
  private onChange(table: string | undefined, processId: number | undefined): void {
    // Every replica's commits, this one's included, reach the subscribers through the change log.
    if (table === undefined || table === 'events') this.#events.refresh();
    if (processId !== undefined && this.#ownBackends.has(processId)) return;
    if (table === undefined || table === 'resources') this.#resources.changed();
  }

  /** The change log, written by the tables' triggers in each writing transaction (migration 5). */
  get events(): ChangeFeed {
    return this.#events;
  }

  recordEvents(drafts: readonly EventDraft[]): Promise<void> {
    if (drafts.length === 0) return Promise.resolve();
    return this.#db.guard(() => this.#events.record(drafts));
  }

  listResources(): Promise<readonly StoredResource[]> {
    return this.#resources.list();
  }

  findResources(request: FindRequest): Promise<readonly FoundResource[]> {
    return this.#resources.find(request, this.resourcesRevision());
  }

  getResource(id: string): Promise<StoredResource | undefined> {
    return this.#resources.get(id);
  }

  /**
   * Served from this replica's view, not a query: it changes on every commit here and on every change
   * notification from any replica. While the listener is disconnected (notifications may be missed),
   * every call returns a new value, so caches rebuild from the database until it is back.
   */
  resourcesRevision(): string {
    return this.#resources.revision(this.#listener.connected);
  }

  putResource(record: StoredResource): Promise<PutOutcome> {
    return this.#db.guard(async () => (await this.#batches.submit<Registered>({ kind: 'put', record })).outcome);
  }

  /** Batched like putResource; the audit row goes into the same transaction, so one COMMIT serves both. */
  registerResource(record: StoredResource, audit: AuditIntent): Promise<Registered> {
    return this.#db.guard(() => this.#batches.submit<Registered>({ kind: 'put', record, audit }));
  }

  recordUsage(provider: string): Promise<RecordUsage> {
    return this.#resources.usage(provider);
  }

  withdrawResource(provider: string, id: string): Promise<void> {
    return this.#resources.withdraw(provider, id);
  }

  customizeResource(id: string, patch: CustomizationPatch): Promise<StoredResource> {
    return this.#resources.customize(id, patch);
  }

  reconcileResources(provider: string, incoming: readonly StoredResource[], dryRun: boolean): Promise<ReconcileResult> {
    return this.#resources.reconcile(provider, incoming, dryRun);
  }

  /** The audit rows go into the reconcile's transaction: one COMMIT for the change and its entries. */
  async reconcileResourcesAudited(
    provider: string,
    incoming: readonly StoredResource[],
    audit: AuditIntent,
  ): Promise<{ result: ReconcileResult }> {
    return { result: await this.#resources.reconcile(provider, incoming, false, audit) };
  }

  listRevisions(id: string): Promise<readonly ResourceRevision[]> {
    return this.#resources.revisions(id);
  }

  getRevision(id: string, digest: string): Promise<ResourceRevision | undefined> {
    return this.#resources.readRevision(id, digest);
  }

  holdRevisions(holder: string, holds: readonly { id: string; digest: string }[]): Promise<void> {
    return this.#resources.hold(holder, holds);
  }

  listMachines(): Promise<readonly MachineRecord[]> {
    return this.#machines.list();
  }

  getMachine(machineId: string): Promise<MachineRecord | undefined> {
    return this.#machines.get(machineId);
  }

  findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined> {
    return this.#machines.findByTokenDigest(digest);
  }

  enrollMachine(record: MachineRecord): Promise<void> {
    return this.#machines.enroll(record);
  }

  revokeMachine(machineId: string, revokedAt: string): Promise<void> {
    return this.#machines.revoke(machineId, revokedAt);
  }

  rotateMachineToken(machineId: string, tokenDigest: string): Promise<void> {
    return this.#machines.rotateToken(machineId, tokenDigest);
  }

  revokeCanvasTokens(canvasId: string, revokedBefore: string): Promise<void> {
    return this.#machines.revokeCanvasTokens(canvasId, revokedBefore);
  }

  canvasTokensRevokedBefore(canvasId: string): Promise<string | undefined> {
    return this.#machines.canvasTokensRevokedBefore(canvasId);
  }

  listProfiles(): Promise<readonly ProfileEntry[]> {
    return this.#profiles.list();
  }

  getProfile(id: string): Promise<ProfileEntry | undefined> {
    return this.#profiles.get(id);
  }

  getTeamState(): Promise<{ members: unknown; configs: unknown }> {
    return this.#profiles.teamState();
  }

  createProfile(profile: AgentProfile): Promise<ProfileEntry> {
    return this.#profiles.create(profile);
  }

  updateProfile(
    id: string,
    changes: ProfileChanges,
    expectedRevisions?: readonly string[],
    expectedRevision?: number,
  ): Promise<ProfileEntry & { changed: boolean }> {
    return this.#profiles.update(id, changes, expectedRevisions, expectedRevision);
  }

  deleteProfile(id: string, expectedRevisions?: readonly string[]): Promise<void> {
    return this.#profiles.delete(id, expectedRevisions);
  }

  listWorkloads(canvasId: string): Promise<readonly WorkloadRecord[]> {
    return this.#workloads.list(canvasId);
  }

  getWorkload(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.#workloads.get(canvasId, threadId);
  }

  realizeWorkload(record: WorkloadRecord, audit?: AuditIntent): Promise<{ workload: WorkloadRecord; created: boolean }> {
    return this.#workloads.realize(record, audit);
  }

  movePin(move: PinMove, next: (current: WorkloadRecord) => WorkloadRecord, audit: AuditIntent): Promise<WorkloadRecord> {
    return this.#workloads.movePin(move, next, audit);
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.#db.guard(() => this.#batches.submit<void>({ kind: 'audit', entries }));
  }

  /** One round trip to the database, bounded so a hung connection attempt answers "no" in time. */
  isAvailable(): Promise<boolean> {
    return this.#db.isAvailable();
  }

  async close(): Promise<void> {
    if (this.#db.closed) return;
    this.#db.markClosed();
    // Operations already queued still commit (or fail) before the pool closes.
    await this.#batches.settled();
    await this.#audit.close();
    await this.#listener.close();
    await this.#events.close();
    await this.#db.end();
  }
}
