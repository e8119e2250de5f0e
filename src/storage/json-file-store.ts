// The embedded default store: JSON files under DATA_DIR (DESIGN §6), one durable document per file,
// group-committed. The process holds the DATA_DIR lock for as long as the store is open.
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { AppError } from '../errors.js';
import { planPut, planReconcile, planWithdraw } from '../registry/ownership.js';
import { AgentResource, type ReconcileResult } from '../schemas/resource.js';
import { AppendLog } from './append-log.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { DurableDocument, type BatchObserver, type DocumentCodec, type JournalCodec } from './durable-document.js';
import { nodeFileSystem, sweepTempFiles, type FileSystemSeam } from './durable-file.js';
import { JournalCorruptError, journalPathFor, readJournal } from './journal.js';
import { OverlayMap, type RecordMap } from './overlay-map.js';
import type { AuditEntry, MachineRecord, RegistryStore } from './store.js';

export const RESOURCES_FILE = path.join('agent-resources', 'resources.json');
export const MACHINES_FILE = 'machines.json';
export const AUDIT_FILE = 'audit.jsonl';
const RESOURCES_FILE_VERSION = 1;
const MACHINES_FILE_VERSION = 1;

/** A data file that cannot be used: the start stops and the file is left as it is. */
export class StoreFileError extends Error {
  constructor(readonly file: string, reason: string) {
    super(`${file}: ${reason}. The file was left unchanged; fix or restore it, then start again.`);
    this.name = 'StoreFileError';
  }
}

interface ResourcesState {
  /** Committed: a Map; in a mutation's draft: an OverlayMap over it. */
  resources: RecordMap<AgentResource>;
}
interface MachinesState {
  machines: Map<string, MachineRecord>;
}

const checkResource = Compile(AgentResource);

const sortedValues = <T>(map: RecordMap<T>): T[] =>
  [...map.keys()].sort().map((k) => map.get(k)!);

/** One journaled change of resources.json: a record stored (created or replaced) or an ID withdrawn. */
type ResourceChange = { put: AgentResource } | { withdraw: string };

/**
 * resources.json is journaled: a batch appends its changes (`{put}` / `{withdraw}`) to
 * `resources.json.journal` instead of rewriting the whole catalogue; drafts are overlays, not copies.
 */
const resourcesCodec: JournalCodec<ResourcesState> = {
  clone: (s) => ({ resources: new OverlayMap(s.resources as Map<string, AgentResource>) }),
  serialize: (s) =>
    JSON.stringify({ schemaVersion: RESOURCES_FILE_VERSION, state: { resources: sortedValues(s.resources) } }) + '\n',
  changes: (draft) =>
    (draft.resources as OverlayMap<AgentResource>).changes().map(([id, record]): ResourceChange => (record ? { put: record } : { withdraw: id })),
  apply(state, changes) {
    for (const change of changes as ResourceChange[]) {
      if (change !== null && typeof change === 'object' && 'put' in change && checkResource.Check(change.put)) {
        state.resources.set(change.put.id, Object.freeze(change.put));
      } else if (change !== null && typeof change === 'object' && 'withdraw' in change && typeof change.withdraw === 'string') {
        state.resources.delete(change.withdraw);
      } else {
        throw new Error('holds an invalid change');
      }
    }
  },
};

const machinesCodec: DocumentCodec<MachinesState> = {
  clone: (s) => ({ machines: new Map(s.machines) }),
  serialize: (s) =>
    JSON.stringify({ schemaVersion: MACHINES_FILE_VERSION, state: { machines: sortedValues(s.machines) } }, null, 2) + '\n',
};

/** Reads a versioned `{schemaVersion, state}` file; `undefined` when it does not exist yet. */
export async function readVersionedFile(file: string, version: number): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new StoreFileError(file, 'does not parse as JSON');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new StoreFileError(file, 'is not a JSON object');
  const { schemaVersion, state } = doc as { schemaVersion?: unknown; state?: unknown };
  if (typeof schemaVersion !== 'number') throw new StoreFileError(file, 'has no numeric schemaVersion');
  if (schemaVersion > version) {
    throw new StoreFileError(file, `has schemaVersion ${schemaVersion}, newer than this version of the service understands (${version})`);
  }
  if (schemaVersion !== version) throw new StoreFileError(file, `has unknown schemaVersion ${schemaVersion} (expected ${version})`);
  if (state === null || typeof state !== 'object' || Array.isArray(state)) throw new StoreFileError(file, 'has no state object');
  return state as Record<string, unknown>;
}

function recordList(file: string, state: Record<string, unknown> | undefined, key: string): unknown[] {
  if (!state) return [];
  const list = state[key];
  if (!Array.isArray(list)) throw new StoreFileError(file, `state.${key} is not an array`);
  return list;
}

async function loadResources(file: string): Promise<ResourcesState> {
  const resources = new Map<string, AgentResource>();
  for (const entry of recordList(file, await readVersionedFile(file, RESOURCES_FILE_VERSION), 'resources')) {
    if (!checkResource.Check(entry)) throw new StoreFileError(file, `holds an invalid resource record (${JSON.stringify((entry as { id?: unknown })?.id ?? null)})`);
    if (resources.has(entry.id)) throw new StoreFileError(file, `holds resource ${entry.id} twice`);
    resources.set(entry.id, Object.freeze(entry));
  }
  return { resources };
}

/** resources.json with its journal replayed (and compacted into it when the journal held anything). */
async function openResources(file: string, fs: FileSystemSeam, observe: BatchObserver | undefined, tuning: { maxBatch?: number }) {
  const state = await loadResources(file);
  try {
    return await DurableDocument.openJournaled(file, state, resourcesCodec, fs, observe, undefined, tuning);
  } catch (err) {
    if (err instanceof JournalCorruptError) throw new StoreFileError(err.file, err.message.slice(path.basename(err.file).length + 1));
    if (err instanceof Error && err.message === 'holds an invalid change') throw new StoreFileError(journalPathFor(file), err.message);
    throw err;
  }
}

/**
 * The resources as stored durably (the versioned file with its journal replayed), read without opening
 * the store: for tests and tools that look at a DATA_DIR from outside.
 */
export async function readStoredResources(dataDir: string): Promise<AgentResource[]> {
  const file = path.join(dataDir, RESOURCES_FILE);
  const state = await loadResources(file);
  for (const changes of (await readJournal(journalPathFor(file))).batches) resourcesCodec.apply(state, changes);
  return sortedValues(state.resources);
}

function isMachineRecord(v: unknown): v is MachineRecord {
  const m = v as MachineRecord;
  return (
    typeof m === 'object' && m !== null &&
    typeof m.machineId === 'string' && typeof m.tokenDigest === 'string' && /^[0-9a-f]{64}$/.test(m.tokenDigest) &&
    typeof m.enrolledAt === 'string' && (m.revokedAt === undefined || typeof m.revokedAt === 'string')
  );
}

async function loadMachines(file: string): Promise<MachinesState> {
  const machines = new Map<string, MachineRecord>();
  for (const entry of recordList(file, await readVersionedFile(file, MACHINES_FILE_VERSION), 'machines')) {
    if (!isMachineRecord(entry)) throw new StoreFileError(file, 'holds an invalid machine record');
    machines.set(entry.machineId, Object.freeze(entry));
  }
  return { machines };
}

export interface JsonFileStoreOptions {
  dataDir: string;
  /** File-system seam for fault injection in tests. */
  fs?: FileSystemSeam;
  observeBatch?: BatchObserver;
  /** Most updates per durable write (default unlimited); see DurableDocumentOptions. */
  maxBatch?: number;
}

export class JsonFileStore implements RegistryStore {
  private constructor(
    private readonly lock: DataDirLock,
    private readonly resources: DurableDocument<ResourcesState>,
    private readonly machines: DurableDocument<MachinesState>,
    private readonly audit: AppendLog,
    private machinesByDigest: Map<string, MachineRecord>,
  ) {}

  /** Takes the DATA_DIR lock, sweeps leftover temp files, and loads every file (or refuses to start). */
  static async open(options: JsonFileStoreOptions): Promise<JsonFileStore> {
    const { dataDir } = options;
    const fs = options.fs ?? nodeFileSystem;
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const lock = await lockDataDir(dataDir);
    try {
      const resourcesPath = path.join(dataDir, RESOURCES_FILE);
      await mkdir(path.dirname(resourcesPath), { recursive: true, mode: 0o700 });
      for (const dir of [dataDir, path.dirname(resourcesPath)]) await sweepTempFiles(dir);
      const machinesPath = path.join(dataDir, MACHINES_FILE);
      const tuning = options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch };
      const resources = await openResources(resourcesPath, fs, options.observeBatch, tuning);
      const machines = new DurableDocument(machinesPath, await loadMachines(machinesPath), machinesCodec, fs, options.observeBatch, undefined, tuning);
      const audit = await AppendLog.open(path.join(dataDir, AUDIT_FILE));
      return new JsonFileStore(lock, resources, machines, audit, indexByDigest(machines.state.machines));
    } catch (err) {
      await lock.release();
      throw err;
    }
  }

  async listResources(): Promise<readonly AgentResource[]> {
    return sortedValues(this.resources.state.resources);
  }

  async getResource(id: string): Promise<AgentResource | undefined> {
    return this.resources.state.resources.get(id);
  }

  async resourcesRevision(): Promise<string> {
    return String(this.resources.revision);
  }

  putResource(record: AgentResource) {
    const frozen = Object.freeze({ ...record });
    return this.resources.update((draft) => {
      const outcome = planPut(draft.resources.get(record.id), frozen);
      if (outcome !== 'unchanged') draft.resources.set(record.id, frozen);
      return { result: outcome, changed: outcome !== 'unchanged' };
    });
  }

  withdrawResource(provider: string, id: string) {
    return this.resources.update((draft) => {
      planWithdraw(draft.resources.get(id), provider, id);
      draft.resources.delete(id);
      return { result: undefined, changed: true };
    });
  }

  reconcileResources(provider: string, records: readonly AgentResource[], dryRun: boolean) {
    return this.resources.update<ReconcileResult>((draft) => {
      const owned = [...draft.resources.values()].filter((r) => r.provider === provider).map((r) => r.id);
      const plan = planReconcile((id) => draft.resources.get(id), owned, provider, records);
      const changed = !dryRun && plan.created.length + plan.replaced.length + plan.withdrawn.length > 0;
      if (changed) {
        for (const id of plan.withdrawn) draft.resources.delete(id);
        for (const record of records) draft.resources.set(record.id, Object.freeze({ ...record }));
      }
      return { result: { dryRun, ...plan }, changed };
    });
  }

  async listMachines(): Promise<readonly MachineRecord[]> {
    return sortedValues(this.machines.state.machines);
  }

  async getMachine(machineId: string): Promise<MachineRecord | undefined> {
    return this.machines.state.machines.get(machineId);
  }

  async findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined> {
    return this.machinesByDigest.get(digest);
  }

  async enrollMachine(record: MachineRecord): Promise<void> {
    await this.machines.update((draft) => {
      const existing = draft.machines.get(record.machineId);
      if (existing && !existing.revokedAt) {
        throw new AppError('machine_exists', `Machine ${record.machineId} is already enrolled; revoke it first to issue a new token.`, { machineId: record.machineId });
      }
      draft.machines.set(record.machineId, Object.freeze({ ...record }));
      return { result: undefined, changed: true };
    });
    this.machinesByDigest = indexByDigest(this.machines.state.machines);
  }

  async revokeMachine(machineId: string, revokedAt: string): Promise<void> {
    await this.machines.update((draft) => {
      const existing = draft.machines.get(machineId);
      if (!existing || existing.revokedAt) throw new AppError('machine_not_found', `No enrolled machine ${machineId}.`, { machineId });
      draft.machines.set(machineId, Object.freeze({ ...existing, revokedAt }));
      return { result: undefined, changed: true };
    });
    this.machinesByDigest = indexByDigest(this.machines.state.machines);
  }

  appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    return this.audit.append(entries);
  }

  async close(): Promise<void> {
    await this.resources.close();
    await this.audit.close();
    await this.lock.release();
  }
}

function indexByDigest(machines: Map<string, MachineRecord>): Map<string, MachineRecord> {
  const index = new Map<string, MachineRecord>();
  for (const m of machines.values()) if (!m.revokedAt) index.set(m.tokenDigest, m);
  return index;
}
