// Workload records as JSON files, one per canvas: `workloads/<canvasId>.json` =
// `{schemaVersion: 1, state: {workloads: [...]}}` sorted by threadId, so a launch rewrites one small file.
// Every file is read at start (a file that does not parse stops the start); each canvas has its own
// group-committed durable document, created on its first launch.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { AppError } from '../errors.js';
import { SLUG_ID_PATTERN } from '../schemas/common.js';
import { WorkloadRecord } from '../schemas/workload.js';
import { DurableDocument, type BatchObserver, type DocumentCodec } from './durable-document.js';
import { sweepTempFiles, type FileSystemSeam } from './durable-file.js';
import { StoreFileError } from './store-file-error.js';
import { readVersionedFile } from './versioned-file.js';

export const WORKLOADS_DIR = 'workloads';
const WORKLOADS_FILE_VERSION = 1;
const checkWorkload = Compile(WorkloadRecord);
const canvasFileName = new RegExp(SLUG_ID_PATTERN.replace('$', '\\.json$'));

interface CanvasState {
  workloads: Map<string, WorkloadRecord>;
}

const codec: DocumentCodec<CanvasState> = {
  clone: (s) => ({ workloads: new Map(s.workloads) }),
  serialize: (s) =>
    JSON.stringify(
      { schemaVersion: WORKLOADS_FILE_VERSION, state: { workloads: [...s.workloads.keys()].sort().map((k) => s.workloads.get(k)) } },
      null,
      2,
    ) + '\n',
};

/** A stored v1 record written before resources were pinned has no `resourceIds`: it reads as `[]`. */
export function readWorkload(file: string, entry: unknown): WorkloadRecord {
  const spec = (entry as { spec?: Record<string, unknown> } | null)?.spec;
  const upgraded = spec && typeof spec === 'object' && !('resourceIds' in spec) ? { ...(entry as object), spec: { ...spec, resourceIds: [] } } : entry;
  if (!checkWorkload.Check(upgraded)) throw new StoreFileError(file, 'holds an invalid workload record');
  return Object.freeze(upgraded);
}

export class JsonWorkloadFiles {
  readonly #canvases = new Map<string, DurableDocument<CanvasState>>();
  #closed = false;

  private constructor(
    private readonly dir: string,
    private readonly fs: FileSystemSeam,
    private readonly observe: BatchObserver | undefined,
  ) {}

  static async open(dataDir: string, fs: FileSystemSeam, observe?: BatchObserver): Promise<JsonWorkloadFiles> {
    const dir = path.join(dataDir, WORKLOADS_DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await sweepTempFiles(dir);
    const files = new JsonWorkloadFiles(dir, fs, observe);
    for (const name of (await readdir(dir)).sort()) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(dir, name);
      if (!canvasFileName.test(name)) throw new StoreFileError(file, 'is not named after a canvas ID');
      const canvasId = name.slice(0, -'.json'.length);
      const state = await readVersionedFile(file, WORKLOADS_FILE_VERSION);
      const list = state?.workloads;
      if (!Array.isArray(list)) throw new StoreFileError(file, 'state.workloads is not an array');
      const workloads = new Map<string, WorkloadRecord>();
      for (const entry of list) {
        const record = readWorkload(file, entry);
        if (record.canvasId !== canvasId) throw new StoreFileError(file, `holds a workload of canvas ${record.canvasId}`);
        workloads.set(record.threadId, record);
      }
      files.#canvases.set(canvasId, files.#document(canvasId, { workloads }));
    }
    return files;
  }

  #document(canvasId: string, state: CanvasState): DurableDocument<CanvasState> {
    return new DurableDocument(path.join(this.dir, `${canvasId}.json`), state, codec, this.fs, this.observe, 'workloads');
  }

  /** Canvases with a workloads file, sorted. */
  canvasIds(): string[] {
    return [...this.#canvases.keys()].sort();
  }

  async list(canvasId: string): Promise<readonly WorkloadRecord[]> {
    const state = this.#canvases.get(canvasId)?.state;
    return state ? [...state.workloads.keys()].sort().map((k) => state.workloads.get(k)!) : [];
  }

  async get(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.#canvases.get(canvasId)?.state.workloads.get(threadId);
  }

  realize(record: WorkloadRecord): Promise<{ workload: WorkloadRecord; created: boolean }> {
    let doc = this.#canvases.get(record.canvasId);
    if (!doc && !this.#closed) {
      doc = this.#document(record.canvasId, { workloads: new Map() });
      this.#canvases.set(record.canvasId, doc);
    }
    if (!doc) return Promise.reject(new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.'));
    const frozen = Object.freeze(record);
    return doc.update<{ workload: WorkloadRecord; created: boolean }>((draft) => {
      const existing = draft.workloads.get(record.threadId);
      if (existing) return { result: { workload: existing, created: false }, changed: false };
      draft.workloads.set(record.threadId, frozen);
      return { result: { workload: frozen, created: true }, changed: true };
    });
  }

  /** Waits for every canvas's queued writes; later launches are refused (503). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#canvases.values()].map((doc) => doc.close()));
  }
}
