// Workload records as JSON files, one per canvas: `workloads/<canvasId>.json` =
// `{schemaVersion: 1, state: {workloads: [...]}}` sorted by threadId. Every file is read at start (a file
// that does not parse stops the start). A launch does not rewrite its canvas file: every canvas shares one
// group-committed journal, `workloads/workloads.journal` (one line per batch, fdatasync'ed before the batch
// is acknowledged), replayed over the canvas files at start and compacted into them (only the canvases it
// touched) at start, at close and once it passes WORKLOADS_COMPACT_AT_BYTES. That last compaction runs beside
// the launches: it writes the canvases due at its start, then swaps the journal for the lines appended
// meanwhile (DurableDocument's background compaction). One document for all canvases keeps the
// first-realization check atomic with its record across canvases.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { AppError } from '../errors.js';
import { SLUG_ID_PATTERN } from '../schemas/common.js';
import { WorkloadRecord } from '../schemas/workload.js';
import { DurableDocument, type BatchObserver, type JournalCodec } from './durable-document.js';
import { sweepTempFiles, writeFileDurably, type FileSystemSeam } from './durable-file.js';
import { JournalCorruptError, journalPathFor } from './journal.js';
import { StoreFileError } from './store-file-error.js';
import { readVersionedFile } from './versioned-file.js';

export const WORKLOADS_DIR = 'workloads';
const WORKLOADS_FILE_VERSION = 1;
const checkWorkload = Compile(WorkloadRecord);
const canvasFileName = new RegExp(SLUG_ID_PATTERN.replace('$', '\\.json$'));

/** The journal is `workloads/workloads.journal` (the name the crash test's unsafe seam recognizes). */
const JOURNAL_BASE = 'workloads';
/** Compact once the journal holds this many bytes (~1,500 launches). */
export const WORKLOADS_COMPACT_AT_BYTES = 1024 * 1024;
/** Canvas files written at once by a compaction. */
const COMPACT_PARALLEL = 16;

interface WorkloadsState {
  /** Committed records by canvas, then thread. A draft shares it read-only. */
  canvases: Map<string, Map<string, WorkloadRecord>>;
  /** Canvases whose file may lack a committed record (their records are in the journal), not yet being compacted. */
  dirty: Set<string>;
  /** In a mutation's draft only: the records it added, by `canvasId/threadId`. */
  added?: Map<string, WorkloadRecord>;
}

const threadKey = (canvasId: string, threadId: string) => `${canvasId}/${threadId}`;

function serializeCanvas(workloads: readonly WorkloadRecord[]): string {
  const sorted = [...workloads].sort((a, b) => (a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0));
  return (
    JSON.stringify(
      { schemaVersion: WORKLOADS_FILE_VERSION, state: { workloads: sorted } },
      null,
      2,
    ) + '\n'
  );
}

function workloadsCodec(dir: string, fs: FileSystemSeam): JournalCodec<WorkloadsState> {
  const journalFile = journalPathFor(path.join(dir, JOURNAL_BASE));
  return {
    clone: (s) => ({ canvases: s.canvases, dirty: s.dirty, added: new Map() }),
    serialize: () => {
      throw new Error('workloads are written per canvas (compact)');
    },
    changes: (draft) => [...draft.added!.values()],
    apply(state, changes) {
      for (const change of changes) {
        const record = readWorkload(journalFile, change);
        if (!canvasFileName.test(`${record.canvasId}.json`)) throw new StoreFileError(journalFile, 'holds an invalid workload record');
        let canvas = state.canvases.get(record.canvasId);
        if (!canvas) state.canvases.set(record.canvasId, (canvas = new Map()));
        // The first realization of a thread is its only record; a replayed line the canvas file already holds is the same record.
        if (!canvas.has(record.threadId)) canvas.set(record.threadId, record);
        state.dirty.add(record.canvasId);
      }
    },
    beginCompaction(state) {
      // The canvases due now leave `dirty`; a batch committed while they are written marks its canvases
      // dirty again, for the next compaction (its records are in the journal's kept tail until then). Each
      // file is written as the canvas is now: its records are never removed or replaced, only added, so
      // the first `size` records in insertion order are exactly today's, whatever is committed meanwhile.
      const due = new Map<string, { workloads: Map<string, WorkloadRecord>; size: number }>();
      for (const canvasId of state.dirty) {
        const workloads = state.canvases.get(canvasId)!;
        due.set(canvasId, { workloads, size: workloads.size });
      }
      state.dirty.clear();
      return {
        async write() {
          let bytes = 0;
          let failure: { err: unknown } | undefined;
          const pending = [...due.keys()];
          // Every worker stops at the first failure, and all have finished before the write returns or
          // throws: no write of an older state can land after a later compaction's.
          const worker = async () => {
            for (let canvasId = pending.pop(); canvasId !== undefined && !failure; canvasId = pending.pop()) {
              const { workloads, size } = due.get(canvasId)!;
              const text = serializeCanvas([...workloads.values()].slice(0, size));
              try {
                await writeFileDurably(path.join(dir, `${canvasId}.json`), text, fs);
              } catch (err) {
                failure ??= { err };
                return;
              }
              due.delete(canvasId);
              bytes += Buffer.byteLength(text);
            }
          };
          await Promise.all(Array.from({ length: COMPACT_PARALLEL }, worker));
          if (failure) throw failure.err;
          return bytes;
        },
        abandon() {
          for (const canvasId of due.keys()) state.dirty.add(canvasId);
        },
      };
    },
  };
}

/** A stored v1 record written before resources were pinned has no `resourceIds`: it reads as `[]`. */
export function readWorkload(file: string, entry: unknown): WorkloadRecord {
  const spec = (entry as { spec?: Record<string, unknown> } | null)?.spec;
  const upgraded = spec && typeof spec === 'object' && !('resourceIds' in spec) ? { ...(entry as object), spec: { ...spec, resourceIds: [] } } : entry;
  if (!checkWorkload.Check(upgraded)) throw new StoreFileError(file, 'holds an invalid workload record');
  return Object.freeze(upgraded);
}

export class JsonWorkloadFiles {
  #closed = false;

  private constructor(private readonly doc: DurableDocument<WorkloadsState>) {}

  static async open(
    dataDir: string,
    fs: FileSystemSeam,
    observe?: BatchObserver,
    compactAtBytes: number = WORKLOADS_COMPACT_AT_BYTES,
  ): Promise<JsonWorkloadFiles> {
    const dir = path.join(dataDir, WORKLOADS_DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await sweepTempFiles(dir);
    const state: WorkloadsState = { canvases: new Map(), dirty: new Set() };
    for (const name of (await readdir(dir)).sort()) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(dir, name);
      if (!canvasFileName.test(name)) throw new StoreFileError(file, 'is not named after a canvas ID');
      const canvasId = name.slice(0, -'.json'.length);
      const stored = await readVersionedFile(file, WORKLOADS_FILE_VERSION);
      const list = stored?.workloads;
      if (!Array.isArray(list)) throw new StoreFileError(file, 'state.workloads is not an array');
      const workloads = new Map<string, WorkloadRecord>();
      for (const entry of list) {
        const record = readWorkload(file, entry);
        if (record.canvasId !== canvasId) throw new StoreFileError(file, `holds a workload of canvas ${record.canvasId}`);
        workloads.set(record.threadId, record);
      }
      state.canvases.set(canvasId, workloads);
    }
    try {
      const doc = await DurableDocument.openJournaled(path.join(dir, JOURNAL_BASE), state, workloadsCodec(dir, fs), fs, observe, 'workloads', { compactAtBytes });
      return new JsonWorkloadFiles(doc);
    } catch (err) {
      if (err instanceof JournalCorruptError) throw new StoreFileError(err.file, err.message.slice(path.basename(err.file).length + 1));
      throw err;
    }
  }

  /** Canvases with workloads, sorted. */
  canvasIds(): string[] {
    return [...this.doc.state.canvases.keys()].sort();
  }

  async list(canvasId: string): Promise<readonly WorkloadRecord[]> {
    const workloads = this.doc.state.canvases.get(canvasId);
    return workloads ? [...workloads.keys()].sort().map((k) => workloads.get(k)!) : [];
  }

  async get(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    return this.doc.state.canvases.get(canvasId)?.get(threadId);
  }

  realize(record: WorkloadRecord): Promise<{ workload: WorkloadRecord; created: boolean }> {
    if (this.#closed) return Promise.reject(new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.'));
    const frozen = Object.freeze(record);
    const key = threadKey(record.canvasId, record.threadId);
    return this.doc.update<{ workload: WorkloadRecord; created: boolean }>((draft) => {
      const existing = draft.added!.get(key) ?? draft.canvases.get(record.canvasId)?.get(record.threadId);
      if (existing) return { result: { workload: existing, created: false }, changed: false };
      draft.added!.set(key, frozen);
      return { result: { workload: frozen, created: true }, changed: true };
    });
  }

  /** Waits for queued launches and compacts the journal into the canvas files; later launches are refused (503). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.doc.close();
  }
}
