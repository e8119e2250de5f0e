// The embedded default store: JSON files under DATA_DIR (docs/data-files.md), one durable document per file,
// group-committed. The process holds the DATA_DIR lock for as long as the store is open.
import { constants as fsConstants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors.js';
import { DEFAULT_EVENTS_RETAIN_COUNT, DEFAULT_EVENTS_RETAIN_DAYS } from '../config.js';
import type { JsonObject } from '../migrations/profile-v1.js';
import { migrateRegistryFile, type RegistryMigrationReport } from '../migrations/registry-migration.js';
import { planCreate, planDelete, planUpdate, type ProfileChanges } from '../profiles/profile-rules.js';
import { carryOwnerFields, planPut, planReconcile, planWithdraw, type PutOutcome } from '../registry/ownership.js';
import { heldHistoryBytes, usageOf, type RecordUsage } from '../registry/record-quota.js';
import type { AgentProfile } from '../schemas/profile.js';
import type { ReconcileResult, StoredResource } from '../schemas/resource.js';
import { applyCustomization, type CustomizationPatch } from '../registry/resource-versions.js';
import { AppendLog, type RotationOptions } from './append-log.js';
import { backupControl, type BackupControlEvents } from './backup-control.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { DurableDocument, type BatchObserver } from './durable-document.js';
import { nodeFileSystem, sweepTempFiles, type FileSystemSeam } from './durable-file.js';
import { JsonWorkloadFiles } from './json-workload-files.js';
import { PreparedRecords } from './prepared-records.js';
import type { WorkloadRecord } from '../schemas/workload.js';
import type {
  AuditEntry,
  AuditIntent,
  FindRequest,
  FoundResource,
  MachineRecord,
  ProfileEntry,
  Registered,
  RegistryStore,
} from '../registry/store.js';
import { realizedEntry, reconcileEntries, repinnedEntry } from '../audit/audit-trail.js';
import { checkPinMove, type PinMove } from '../workloads/pin-move.js';
import { DataDirError, StoreFileError } from './store-file-error.js';
import { sortedValues } from './overlay-map.js';
import { EVENTS_FILE, JsonEventLog, recordCheck, type CheckedDraft, type RetentionOptions } from './event-log.js';
import type { ChangeEventType, ChangeFeed, ChangeSubject, EventDraft } from '../registry/events.js';
import { openResources, RESOURCES_FILE, type ResourcesState } from './json-resources-file.js';
import {
  driftOf,
  heldRevisions,
  holdRevisions,
  holdsAll,
  keepRevisions,
  listRevisionsOf,
  releaseHold,
  revisionKey,
  revisionsSnapshot,
  type RevisionsSnapshot,
} from './json-revisions.js';
import { digestOf, workloadHolder, type ResourceRevision } from '../registry/record-digest.js';
import { indexByDigest, loadMachines, MACHINES_FILE, machinesCodec, type MachinesState } from './json-machines-file.js';
import { entryOf, loadRegistry, REGISTRY_FILE, registryCodec, type RegistryState } from './json-registry-file.js';

export { openResources, readStoredRecords, readStoredResources, RESOURCES_FILE } from './json-resources-file.js';
export { MACHINES_FILE, REGISTRY_FILE };
export const AUDIT_FILE = 'audit.jsonl';
export { EVENTS_FILE };
/** Default retention of the change log (EVENTS_RETAIN_COUNT, EVENTS_RETAIN_DAYS). */
export const DEFAULT_EVENT_RETENTION: RetentionOptions = {
  retainCount: DEFAULT_EVENTS_RETAIN_COUNT,
  retainDays: DEFAULT_EVENTS_RETAIN_DAYS,
};
/** Present in a backup's temp directory until the backup is complete (src/storage/backup.ts). */
export const INCOMPLETE_BACKUP_MARKER = 'BACKUP-INCOMPLETE';

/** Refuses a DATA_DIR that is an interrupted backup (it holds INCOMPLETE_BACKUP_MARKER): DataDirError. */
export async function assertNotIncompleteBackup(dataDir: string): Promise<void> {
  if (
    await access(path.join(dataDir, INCOMPLETE_BACKUP_MARKER)).then(
      () => true,
      () => false,
    )
  ) {
    throw new DataDirError(
      dataDir,
      `holds ${INCOMPLETE_BACKUP_MARKER}: it is a backup that was interrupted before it was complete; take the backup again`,
    );
  }
}

export { DataDirError, StoreFileError };

export interface JsonStoreSnapshot {
  resources: readonly StoredResource[];
  machines: readonly MachineRecord[];
  profiles: readonly ProfileEntry[];
  /** The registry document around the profiles (its `state.profiles` is not kept up to date here). */
  registryDocument: JsonObject;
  workloads: readonly WorkloadRecord[];
  /** The kept revisions (by ID, oldest first), the holds on them and the drift notices (docs/decisions/record-digest.md). */
  revisions: RevisionsSnapshot;
}

export interface JsonFileStoreOptions {
  dataDir: string;
  /** File-system seam for fault injection in tests. */
  fs?: FileSystemSeam;
  observeBatch?: BatchObserver;
  /** Told when the registry file was migrated at open (the backup and the steps applied). */
  onRegistryMigrated?: (report: RegistryMigrationReport) => void;
  /** Told when resources.json first became v2 and its v1 bytes were kept in this backup file. */
  onResourcesBackedUp?: (backupFile: string) => void;
  /** Most updates per durable write (default unlimited); see DurableDocumentOptions. */
  maxBatch?: number;
  /** Size-based rotation of audit.jsonl (default: none). */
  auditRotation?: RotationOptions;
  /** Told about each online backup (src/storage/backup-control.ts). */
  onBackup?: BackupControlEvents['onBackup'];
  /** Longest pause an online backup may hold (default MAX_BACKUP_PAUSE_MS); tests shorten it. */
  maxBackupPauseMs?: number;
  /** Compact the workloads journal once it holds this many bytes (default WORKLOADS_COMPACT_AT_BYTES). */
  workloadsCompactAtBytes?: number;
  /** Told when a canvas's workload file, read on first access, does not load (its requests then answer 503). */
  onWorkloadFileUnreadable?: (err: StoreFileError, canvasId: string) => void;
  /** How many change events, and how old, the change log keeps (default DEFAULT_EVENT_RETENTION). */
  eventRetention?: RetentionOptions;
  /** The clock of the change log's times (tests move it past the retention). */
  now?: () => Date;
}

/** One event of a change, with the digest of its object as the change leaves it. */
const ev = (type: ChangeEventType, subject: ChangeSubject, record: unknown): CheckedDraft => ({
  type,
  subject,
  check: recordCheck(record),
});
const resourceSubject = (id: string, provider: string): ChangeSubject => ({ kind: 'resource', id, provider });

/** The revision holds of workloads' pins, in one durable write of the resources document (none when all are held). */
async function holdWorkloadPins(resources: DurableDocument<ResourcesState>, records: readonly WorkloadRecord[]): Promise<void> {
  const due = records
    .map((r) => ({ holder: workloadHolder(r.canvasId, r.threadId), pins: r.spec.resourcePins ?? [] }))
    .filter(({ holder, pins }) => !holdsAll(resources.state, holder, pins));
  if (due.length === 0) return;
  const now = new Date().toISOString();
  await resources.update((draft) => {
    let changed = false;
    for (const { holder, pins } of due) changed = holdRevisions(draft, holder, pins, (id) => draft.resources.get(id), now) || changed;
    return { result: undefined, changed };
  });
}

export class JsonFileStore implements RegistryStore {
  private constructor(
    private readonly lock: DataDirLock,
    private readonly resources: DurableDocument<ResourcesState>,
    private readonly machines: DurableDocument<MachinesState>,
    private readonly registry: DurableDocument<RegistryState>,
    private readonly workloads: JsonWorkloadFiles,
    private readonly audit: AppendLog,
    private machinesByDigest: Map<string, MachineRecord>,
    private readonly eventLog: JsonEventLog,
  ) {}

  /** The change log (docs/events.md). */
  get events(): ChangeFeed {
    return this.eventLog;
  }

  recordEvents(drafts: readonly EventDraft[]): Promise<void> {
    return this.eventLog.append(drafts);
  }

  /** Takes the DATA_DIR lock, sweeps leftover temp files, and loads every file (or refuses to start). */
  static async open(options: JsonFileStoreOptions): Promise<JsonFileStore> {
    const { dataDir } = options;
    const fs = options.fs ?? nodeFileSystem;
    await mkdir(dataDir, { recursive: true, mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      // The operator's mistakes, said in one line (the server prints StoreFileError without a stack).
      if (err.code === 'EEXIST' || err.code === 'ENOTDIR')
        throw new DataDirError(dataDir, 'is a file, not a directory (or a parent of it is a file); point DATA_DIR at a directory');
      if (err.code === 'EACCES' || err.code === 'EPERM' || err.code === 'EROFS')
        throw new DataDirError(dataDir, `cannot be created or written (${err.code}); choose a directory this user may write`);
      throw err;
    });
    await access(dataDir, fsConstants.W_OK | fsConstants.X_OK).catch((err: NodeJS.ErrnoException) => {
      throw new DataDirError(dataDir, `is not writable by this user (${err.code}); fix its owner or mode, or choose another directory`);
    });
    await assertNotIncompleteBackup(dataDir);
    const lock = await lockDataDir(dataDir);
    // What is open so far, closed again if a later file refuses to load (no handle left to the GC).
    const opened: { close(): Promise<void> }[] = [];
    try {
      const resourcesPath = path.join(dataDir, RESOURCES_FILE);
      const registryPath = path.join(dataDir, REGISTRY_FILE);
      for (const file of [resourcesPath, registryPath]) await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      for (const dir of [dataDir, path.dirname(resourcesPath), path.dirname(registryPath)]) await sweepTempFiles(dir);
      // Migrate before loading: a refused file stops the start here, untouched.
      const migrated = await migrateRegistryFile(registryPath, { fs });
      if (migrated.changed) options.onRegistryMigrated?.(migrated);
      const machinesPath = path.join(dataDir, MACHINES_FILE);
      const eventLog = await JsonEventLog.read(
        path.join(dataDir, EVENTS_FILE),
        options.eventRetention ?? DEFAULT_EVENT_RETENTION,
        options.now,
        fs,
      );
      const tuning = { ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }), events: eventLog };
      const resources = await openResources(resourcesPath, fs, options.observeBatch, tuning, options.onResourcesBackedUp);
      opened.push(resources);
      const machines = new DurableDocument(
        machinesPath,
        await loadMachines(machinesPath),
        machinesCodec,
        fs,
        options.observeBatch,
        undefined,
        tuning,
      );
      const registry = new DurableDocument(
        registryPath,
        loadRegistry(migrated),
        registryCodec,
        fs,
        options.observeBatch,
        undefined,
        tuning,
      );
      // Opened before the workloads: a launch's audit entry rides on its journal line and is recovered from it.
      const audit = await AppendLog.open(path.join(dataDir, AUDIT_FILE), options.auditRotation);
      opened.push(audit);
      const workloads = await JsonWorkloadFiles.open(
        dataDir,
        fs,
        options.observeBatch,
        options.workloadsCompactAtBytes,
        options.onWorkloadFileUnreadable,
        eventLog,
        { carry: (entries) => audit.appendCarried(entries), sync: () => audit.sync(), recover: (entries) => audit.recoverCarried(entries) },
        (records) => holdWorkloadPins(resources, records),
      );
      opened.push(workloads);
      // The batches a crash left undecided are decided against the state just loaded, before any write.
      await eventLog.recover(async (subject) => {
        switch (subject.kind) {
          case 'resource':
            return recordCheck(resources.state.resources.get(subject.id));
          case 'machine':
            return recordCheck(machines.state.machines.get(subject.id));
          case 'profile':
            return recordCheck(registry.state.profiles.get(subject.id));
          case 'workload': {
            const slash = subject.id.indexOf('/');
            return recordCheck(await workloads.get(subject.id.slice(0, slash), subject.id.slice(slash + 1)));
          }
          case 'job':
            return null; // a job's events carry no check (see JsonEventLog.append)
        }
      });
      opened.push(eventLog);
      const store = new JsonFileStore(
        lock,
        resources,
        machines,
        registry,
        workloads,
        audit,
        indexByDigest(machines.state.machines),
        eventLog,
      );
      lock.serve(
        backupControl(store, {
          ...(options.onBackup ? { onBackup: options.onBackup } : {}),
          ...(options.maxBackupPauseMs !== undefined ? { maxPauseMs: options.maxBackupPauseMs } : {}),
        }),
      );
      return store;
    } catch (err) {
      for (const doc of opened.reverse()) await doc.close().catch(() => undefined);
      await lock.release();
      throw err;
    }
  }

  /** Sorted lists of each document, built once per revision (resources: per change of records, not of holds) and frozen. */
  readonly #lists = new Map<object, { revision: number; list: readonly unknown[] }>();

  #listOf<T>(doc: { readonly revision: number }, build: () => T[], revision = doc.revision): readonly T[] {
    const cached = this.#lists.get(doc);
    if (cached && cached.revision === revision) return cached.list as readonly T[];
    const list = Object.freeze(build());
    this.#lists.set(doc, { revision, list });
    return list;
  }

  listResources(): Promise<readonly StoredResource[]> {
    const state = this.resources.state;
    return Promise.resolve(this.#listOf(this.resources, () => sortedValues(state.resources), state.index!.changes));
  }

  async findResources(request: FindRequest): Promise<readonly FoundResource[]> {
    if (request.terms?.length) await this.resources.state.index!.current(); // a publish's words first, in their own turns
    return this.resources.state.index!.find(request);
  }

  getResource(id: string): Promise<StoredResource | undefined> {
    return Promise.resolve(this.resources.state.resources.get(id));
  }

  resourcesRevision(): string {
    return String(this.resources.revision);
  }

  async putResource(record: StoredResource): Promise<PutOutcome> {
    return (await this.#put(record)).outcome;
  }

  async registerResource(record: StoredResource, audit: AuditIntent): Promise<Registered> {
    const { outcome, stored } = await this.#put(record);
    // Two files cannot change atomically: the registration is durable first, then its line is appended,
    // in the order (and with the bytes) the audit trail always wrote them.
    const entry: AuditEntry = { at: audit.at, actor: audit.actor, action: audit.action, id: record.id, outcome };
    return { outcome, record: stored, ...(await this.#appendAfterChange([entry])) };
  }

  async reconcileResourcesAudited(provider: string, records: readonly StoredResource[], audit: AuditIntent) {
    const result = await this.reconcileResources(provider, records, false);
    return { result, ...(await this.#appendAfterChange(reconcileEntries(result, audit))) };
  }

  /** The audit entries of a change already durable: a failure to append them is returned, not thrown. */
  async #appendAfterChange(entries: readonly AuditEntry[]): Promise<{ auditError?: unknown }> {
    if (entries.length === 0) return {};
    try {
      await this.audit.append(entries);
      return {};
    } catch (err) {
      return { auditError: err };
    }
  }

  #put(record: StoredResource): Promise<{ outcome: PutOutcome; stored: StoredResource }> {
    return this.resources.update<{ outcome: PutOutcome; stored: StoredResource }>((draft) => {
      const existing = draft.resources.get(record.id);
      const stored = Object.freeze(carryOwnerFields(existing, { ...record }));
      const outcome = planPut(existing, stored);
      if (outcome === 'unchanged') return { result: { outcome, stored: existing! }, changed: false };
      draft.resources.set(record.id, stored);
      keepRevisions(draft, existing, stored, this.#now());
      const type = outcome === 'created' ? 'resource.created' : 'resource.replaced';
      const events = [
        ev(type, resourceSubject(record.id, stored.provider), stored),
        ...driftOf(draft, record.id, stored.provider, existing, stored),
      ];
      return { result: { outcome, stored }, changed: true, events };
    });
  }

  customizeResource(id: string, patch: CustomizationPatch) {
    return this.resources.update((draft) => {
      const existing = draft.resources.get(id);
      if (!existing) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
      const { record, changed } = applyCustomization(existing, patch);
      const stored = changed ? Object.freeze(record) : existing;
      if (!changed) return { result: stored, changed };
      draft.resources.set(id, stored);
      keepRevisions(draft, existing, stored, this.#now());
      const events = [
        ev('resource.customized', resourceSubject(id, stored.provider), stored),
        ...driftOf(draft, id, stored.provider, existing, stored),
      ];
      return { result: stored, changed, events };
    });
  }

  withdrawResource(provider: string, id: string) {
    return this.resources.update((draft) => {
      const existing = draft.resources.get(id);
      planWithdraw(existing, provider, id);
      draft.resources.delete(id);
      keepRevisions(draft, existing, undefined, this.#now());
      const events = [
        ev('resource.withdrawn', resourceSubject(id, provider), undefined),
        ...driftOf(draft, id, provider, existing, undefined),
      ];
      return { result: undefined, changed: true, events };
    });
  }

  async reconcileResources(provider: string, incoming: readonly StoredResource[], dryRun: boolean) {
    const prepared = await PreparedRecords.of((id) => this.resources.state.resources.get(id), dryRun ? [] : incoming);
    return this.resources.update<ReconcileResult>((draft) => {
      const owned = [...draft.resources.values()].filter((r) => r.provider === provider).map((r) => r.id);
      const records = incoming.map((r) => prepared.recordFor(draft.resources.get(r.id), r));
      const plan = planReconcile((id) => draft.resources.get(id), owned, provider, records);
      const changed = !dryRun && plan.created.length + plan.replaced.length + plan.withdrawn.length > 0;
      if (!changed) return { result: { dryRun, ...plan }, changed };
      const now = this.#now();
      const drift: CheckedDraft[] = [];
      for (const id of plan.withdrawn) {
        const previous = draft.resources.get(id);
        keepRevisions(draft, previous, undefined, now);
        draft.resources.delete(id);
        drift.push(...driftOf(draft, id, provider, previous, undefined));
      }
      // An unchanged record keeps its stored object: nothing of it is journaled, indexed or kept again.
      const unchanged = new Set(plan.unchanged);
      for (const record of records) {
        const previous = draft.resources.get(record.id);
        if (previous !== undefined && unchanged.has(record.id)) continue;
        draft.resources.set(record.id, Object.freeze(record));
        keepRevisions(draft, previous, record, now);
        drift.push(...driftOf(draft, record.id, provider, previous, record));
      }
      const events = [
        ...plan.created.map((id) => ev('resource.created', resourceSubject(id, provider), draft.resources.get(id))),
        ...plan.replaced.map((id) => ev('resource.replaced', resourceSubject(id, provider), draft.resources.get(id))),
        ...plan.withdrawn.map((id) => ev('resource.withdrawn', resourceSubject(id, provider), undefined)),
        ...drift,
      ];
      return { result: { dryRun, ...plan }, changed, events };
    });
  }

  /** The time of a revision kept now. */
  readonly #now = (): string => new Date().toISOString();

  readonly #openedAt = new Date().toISOString();

  listRevisions(id: string): Promise<readonly ResourceRevision[]> {
    const state = this.resources.state;
    return Promise.resolve(listRevisionsOf(state, id, state.resources.get(id), this.#openedAt));
  }

  async getRevision(id: string, digest: string): Promise<ResourceRevision | undefined> {
    const state = this.resources.state;
    const kept = state.revisions.get(revisionKey(id, digest));
    if (kept) return kept;
    return (await this.listRevisions(id)).find((r) => r.digest === digest);
  }

  async holdRevisions(holder: string, holds: readonly { id: string; digest: string }[]): Promise<void> {
    if (holds.length === 0) return;
    await this.resources.update((draft) => {
      const changed = holdRevisions(draft, holder, holds, (id) => draft.resources.get(id), this.#now());
      return { result: undefined, changed };
    });
  }

  listMachines(): Promise<readonly MachineRecord[]> {
    return Promise.resolve(this.#listOf(this.machines, () => sortedValues(this.machines.state.machines)));
  }

  getMachine(machineId: string): Promise<MachineRecord | undefined> {
    return Promise.resolve(this.machines.state.machines.get(machineId));
  }

  findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined> {
    return Promise.resolve(this.machinesByDigest.get(digest));
  }

  async enrollMachine(record: MachineRecord): Promise<void> {
    await this.machines.update((draft) => {
      const existing = draft.machines.get(record.machineId);
      if (existing && !existing.revokedAt) {
        throw new AppError('machine_exists', `Machine ${record.machineId} is already enrolled; revoke it first to issue a new token.`, {
          machineId: record.machineId,
        });
      }
      const stored = Object.freeze({ ...record });
      draft.machines.set(record.machineId, stored);
      return { result: undefined, changed: true, events: [ev('machine.enrolled', { kind: 'machine', id: record.machineId }, stored)] };
    });
    this.machinesByDigest = indexByDigest(this.machines.state.machines);
  }

  async revokeMachine(machineId: string, revokedAt: string): Promise<void> {
    await this.machines.update((draft) => {
      const existing = draft.machines.get(machineId);
      if (!existing || existing.revokedAt) throw new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });
      const stored = Object.freeze({ ...existing, revokedAt });
      draft.machines.set(machineId, stored);
      return { result: undefined, changed: true, events: [ev('machine.revoked', { kind: 'machine', id: machineId }, stored)] };
    });
    this.machinesByDigest = indexByDigest(this.machines.state.machines);
  }

  async rotateMachineToken(machineId: string, tokenDigest: string): Promise<void> {
    await this.machines.update((draft) => {
      const existing = draft.machines.get(machineId);
      if (!existing || existing.revokedAt) throw new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });
      const stored = Object.freeze({ ...existing, tokenDigest });
      draft.machines.set(machineId, stored);
      return { result: undefined, changed: true, events: [ev('machine.rotated', { kind: 'machine', id: machineId }, stored)] };
    });
    this.machinesByDigest = indexByDigest(this.machines.state.machines);
  }

  async revokeCanvasTokens(canvasId: string, revokedBefore: string): Promise<void> {
    await this.machines.update((draft) => {
      const current = draft.canvasRevocations.get(canvasId);
      if (current !== undefined && current >= revokedBefore) return { result: undefined, changed: false };
      draft.canvasRevocations.set(canvasId, revokedBefore);
      return { result: undefined, changed: true };
    });
  }

  canvasTokensRevokedBefore(canvasId: string): Promise<string | undefined> {
    return Promise.resolve(this.machines.state.canvasRevocations.get(canvasId));
  }

  listProfiles(): Promise<readonly ProfileEntry[]> {
    return Promise.resolve(this.#listOf(this.registry, () => sortedValues(this.registry.state.profiles).map(entryOf)));
  }

  getProfile(id: string): Promise<ProfileEntry | undefined> {
    const profile = this.registry.state.profiles.get(id);
    return Promise.resolve(profile && entryOf(profile));
  }

  async createProfile(profile: AgentProfile): Promise<ProfileEntry> {
    const frozen = Object.freeze({ ...profile });
    await this.registry.update((draft) => {
      planCreate(draft.profiles.values(), frozen, (id) => draft.profiles.has(id));
      draft.profiles.set(frozen.id, frozen);
      return { result: undefined, changed: true, events: [ev('profile.created', { kind: 'profile', id: frozen.id }, frozen)] };
    });
    return entryOf(frozen);
  }

  updateProfile(id: string, changes: ProfileChanges, expectedRevisions?: readonly string[], expectedRevision?: number) {
    return this.registry.update<ProfileEntry & { changed: boolean }>((draft) => {
      const { next, changed } = planUpdate(
        draft.profiles.values(),
        draft.profiles.get(id),
        id,
        changes,
        expectedRevisions,
        expectedRevision,
      );
      const frozen = changed ? Object.freeze(next) : next;
      if (!changed) return { result: { ...entryOf(frozen), changed }, changed };
      draft.profiles.set(id, frozen);
      return { result: { ...entryOf(frozen), changed }, changed, events: [ev('profile.updated', { kind: 'profile', id }, frozen)] };
    });
  }

  deleteProfile(id: string, expectedRevisions?: readonly string[]): Promise<void> {
    return this.registry.update((draft) => {
      planDelete(draft.profiles.get(id), id, expectedRevisions);
      draft.profiles.delete(id);
      return { result: undefined, changed: true, events: [ev('profile.deleted', { kind: 'profile', id }, undefined)] };
    });
  }

  getTeamState(): Promise<{ members: unknown; configs: unknown }> {
    const state = this.registry.state.doc.state as JsonObject | undefined;
    return Promise.resolve({ members: state?.members, configs: state?.configs });
  }

  listWorkloads(canvasId: string): Promise<readonly WorkloadRecord[]> {
    return this.workloads.list(canvasId);
  }

  getWorkload(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.workloads.get(canvasId, threadId);
  }

  realizeWorkload(record: WorkloadRecord, audit?: AuditIntent): Promise<{ workload: WorkloadRecord; created: boolean }> {
    return this.workloads.realize(record, audit && realizedEntry(record, audit));
  }

  /** Pin moves of one thread, one after the other (this process is the only writer of DATA_DIR). */
  readonly #moving = new Map<string, Promise<unknown>>();

  movePin(move: PinMove, next: (current: WorkloadRecord) => WorkloadRecord, audit: AuditIntent): Promise<WorkloadRecord> {
    const key = `${move.canvasId}/${move.threadId}`;
    const run = (this.#moving.get(key) ?? Promise.resolve()).catch(() => undefined).then(() => this.#movePin(move, next, audit));
    this.#moving.set(key, run);
    void run
      .finally(() => {
        if (this.#moving.get(key) === run) this.#moving.delete(key);
      })
      .catch(() => undefined);
    return run;
  }

  /**
   * Three durable writes, each safe to crash after: (1) the new revision is held under a transient holder
   * (the old pin stays held), (2) the workload, its audit entry and its event in one journal line, (3) the
   * workload's hold moved to the new revision and the transient one released. A crash keeps too much, never too little.
   */
  async #movePin(move: PinMove, next: (current: WorkloadRecord) => WorkloadRecord, audit: AuditIntent): Promise<WorkloadRecord> {
    const current = await this.workloads.get(move.canvasId, move.threadId);
    if (!current) {
      throw new AppError('workload_not_found', `No workload for thread ${move.threadId} of canvas ${move.canvasId}.`, {
        canvasId: move.canvasId,
        threadId: move.threadId,
      });
    }
    const recordDigest = () => {
      const record = this.resources.state.resources.get(move.id);
      return record && digestOf(record);
    };
    checkPinMove(current, move, recordDigest());
    const holder = workloadHolder(move.canvasId, move.threadId);
    const transient = `${holder} moving`;
    await this.resources.update((draft) => {
      const record = draft.resources.get(move.id);
      checkPinMove(current, move, record && digestOf(record));
      return { result: undefined, changed: holdRevisions(draft, transient, [{ id: move.id, digest: move.to }], () => record, this.#now()) };
    });
    try {
      return await this.workloads.replace(
        move.canvasId,
        move.threadId,
        (stored) => {
          checkPinMove(stored, move, recordDigest());
          return next(stored);
        },
        repinnedEntry(move, audit),
      );
    } finally {
      // Settle the holds on what the workload pins now, whatever the outcome of (2).
      const pinned = (await this.workloads.get(move.canvasId, move.threadId).catch(() => undefined))?.spec.resourcePins?.find(
        (p) => p.id === move.id,
      )?.digest;
      await this.resources
        .update((draft) => {
          let changed =
            pinned !== undefined && holdRevisions(draft, holder, [{ id: move.id, digest: pinned }], () => undefined, this.#now());
          changed = releaseHold(draft, transient, move.id) || changed;
          return { result: undefined, changed };
        })
        .catch(() => undefined); // the transient hold stays: too much kept, never too little
    }
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    return this.audit.append(entries);
  }

  isAvailable(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Everything this store holds besides the audit log, for `npm run import` into PostgreSQL. */
  async snapshot(): Promise<JsonStoreSnapshot> {
    const workloads: WorkloadRecord[] = [];
    for (const canvasId of this.workloads.canvasIds()) workloads.push(...(await this.workloads.list(canvasId)));
    return {
      resources: await this.listResources(),
      machines: await this.listMachines(),
      profiles: await this.listProfiles(),
      registryDocument: this.registry.state.doc,
      workloads,
      revisions: revisionsSnapshot(this.resources.state),
    };
  }

  /**
   * Pauses every durable write (an online backup): resolves once the writes under way have finished, so
   * the files hold exactly the committed state, the same instant for all of them; writes queue until the
   * returned function is called.
   */
  async pauseWrites(): Promise<() => void> {
    // The workloads first: a compaction of theirs under way may still write revision holds (the resources').
    await this.workloads.pause();
    const parts: { pause(): Promise<void>; resume(): void }[] = [this.workloads, this.resources, this.machines, this.registry];
    await Promise.all(parts.slice(1).map((p) => p.pause()));
    // The audit log after the documents: a workloads compaction under way makes the entries it folds
    // durable in the audit log (`sync`) before it ends.
    await this.audit.pause();
    parts.push(this.audit);
    // The change log last: a document's batch under way waits for its events to be written before it ends.
    await this.eventLog.pause();
    parts.push(this.eventLog);
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      for (const p of parts) p.resume();
    };
  }

  /** Waits for every queued write of every file, then the audit log, then releases the DATA_DIR lock. */
  async close(): Promise<void> {
    // The workloads first: their compaction at close may still write revision holds (the resources').
    await this.workloads.close();
    await Promise.all([this.resources.close(), this.machines.close(), this.registry.close()]);
    await this.eventLog.close();
    await this.audit.close();
    await this.lock.release();
  }

  /** The provider's records and their bytes (src/registry/record-quota.ts), from the committed document. */
  recordUsage(provider: string): Promise<RecordUsage> {
    const { state } = this.resources;
    const pinned = heldHistoryBytes(provider, heldRevisions(state), (id) => state.resources.get(id));
    return Promise.resolve(
      usageOf(
        [...state.resources.values()].filter((r) => r.provider === provider),
        pinned,
      ),
    );
  }
}
