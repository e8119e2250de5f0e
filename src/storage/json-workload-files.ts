// Workload records as JSON files, one per canvas: `workloads/<canvasId>.json` =
// `{schemaVersion: 1, state: {workloads: [...]}}` sorted by threadId. At start only the file NAMES are read
// (a name that is not a canvas ID stops the start); a canvas file is read on its canvas's first access (a
// list, a get, a launch, a compaction), and one that does not parse then fails the requests touching that
// canvas (503 `storage_unavailable`, logged) instead of the start. A launch does not rewrite its canvas file:
// every canvas shares one group-committed journal, `workloads/workloads.journal` (one line per batch,
// fdatasync'ed before the batch is acknowledged), replayed at start over the canvases (records of a canvas
// not read yet wait beside it and are merged in when it is read) and compacted into the canvas files (only
// the canvases it touched, each read first) at start, at close and once it passes WORKLOADS_COMPACT_AT_BYTES.
// That last compaction runs beside the launches: it writes the canvases due at its start, then swaps the
// journal for the lines appended meanwhile (DurableDocument's background compaction). One document for all
// canvases keeps the first-realization check atomic with its record across canvases.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { AppError } from '../errors.js';
import { SLUG_ID_PATTERN } from '../schemas/common.js';
import { WorkloadRecord } from '../schemas/workload.js';
import { DurableDocument, type BatchObserver, type CarriedAudit, type JournalCodec } from './durable-document.js';
import type { AuditEntry } from '../registry/store.js';
import { fsyncDirectory, sweepTempFiles, writeFileDurably, type FileSystemSeam } from './durable-file.js';
import { JournalCorruptError, journalPathFor } from './journal.js';
import { StoreFileError } from './store-file-error.js';
import { recordCheck, type EventSink } from './event-log.js';
import { readVersionedFile } from './versioned-file.js';

export const WORKLOADS_DIR = 'workloads';
const WORKLOADS_FILE_VERSION = 1;
const checkWorkload = Compile(WorkloadRecord);
const canvasFileName = new RegExp(SLUG_ID_PATTERN.replace('$', '\\.json$'));

/** The journal is `workloads/workloads.journal` (the name the crash test's unsafe seam recognizes). */
const JOURNAL_BASE = 'workloads';
/** Compact once the journal holds this many bytes (~1,500 launches). */
export const WORKLOADS_COMPACT_AT_BYTES = 1024 * 1024;
/**
 * Canvas files written at once by a compaction at start or close (nothing waits on the disk then), and by
 * one running beside the launches: there one at a time, so its writes and fsyncs hold at most one of
 * libuv's four threads and one flush in the disk's queue ahead of a launch's journal fdatasync (sixteen
 * at once put up to sixteen flushes ahead of every launch while a compaction ran).
 */
const COMPACT_PARALLEL = { foreground: 16, background: 1 } as const;

interface WorkloadsState {
  /**
   * Committed records by canvas, then thread. A draft shares it read-only. For a canvas in `unread`, only
   * the journal's records (its file's are merged in when it is read, into a new map).
   */
  canvases: Map<string, Map<string, WorkloadRecord>>;
  /** Canvases whose file exists but has not been read yet. */
  unread: Set<string>;
  /** Canvases whose file may lack a committed record (their records are in the journal), not yet being compacted. */
  dirty: Set<string>;
  /** In a mutation's draft only: the records it added or replaced, by `canvasId/threadId`. */
  added?: Map<string, WorkloadRecord>;
  /** In a mutation's draft only: which of `added` replace a stored record (a pin move). */
  replaced?: Set<string>;
}

const threadKey = (canvasId: string, threadId: string) => `${canvasId}/${threadId}`;

/**
 * Keeps the revisions workloads pin (the store's revision holds, in another document): `hold` makes the
 * holds of the given records durable, resolving at once when they are held already. A realization calls it
 * as it decides to create its record, so the holds' flush runs beside the journal's; a compaction calls it
 * for the records it folds before it writes, so no line leaves the journal before its pins are held (a crash
 * between the two keeps too much, never too little: the journal's records are held again at start).
 */
export type HoldPins = (records: readonly WorkloadRecord[]) => Promise<void>;

function serializeCanvas(workloads: readonly WorkloadRecord[]): string {
  const sorted = [...workloads].sort((a, b) => (a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0));
  return JSON.stringify({ schemaVersion: WORKLOADS_FILE_VERSION, state: { workloads: sorted } }, null, 2) + '\n';
}

/** Reads a canvas's file into its records by thread; throws StoreFileError when it does not load. */
async function readCanvasFile(file: string, canvasId: string): Promise<Map<string, WorkloadRecord>> {
  const workloads = new Map<string, WorkloadRecord>();
  const stored = await readVersionedFile(file, WORKLOADS_FILE_VERSION);
  if (stored === undefined) return workloads;
  const list = stored.workloads;
  if (!Array.isArray(list)) throw new StoreFileError(file, 'state.workloads is not an array');
  for (const entry of list) {
    const record = readWorkload(file, entry);
    if (record.canvasId !== canvasId) throw new StoreFileError(file, `holds a workload of canvas ${record.canvasId}`);
    workloads.set(record.threadId, record);
  }
  return workloads;
}

/**
 * Reads canvas files on first access. Concurrent first accesses share one read; a read that fails is not
 * remembered (the next access reads again, so a file the operator fixed is picked up without a restart).
 */
class CanvasLoader {
  #reading = new Map<string, Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly state: WorkloadsState,
    private readonly onUnreadable: (err: StoreFileError, canvasId: string) => void,
  ) {}

  /** Resolves once `canvasId` is in memory; rejects with StoreFileError when its file does not load. */
  ensure(canvasId: string): Promise<void> {
    if (!this.state.unread.has(canvasId)) return Promise.resolve();
    let reading = this.#reading.get(canvasId);
    if (!reading) {
      reading = this.#read(canvasId).finally(() => this.#reading.delete(canvasId));
      this.#reading.set(canvasId, reading);
    }
    return reading;
  }

  async #read(canvasId: string): Promise<void> {
    const file = path.join(this.dir, `${canvasId}.json`);
    let fromFile: Map<string, WorkloadRecord>;
    try {
      fromFile = await readCanvasFile(file, canvasId);
    } catch (err) {
      const failure =
        err instanceof StoreFileError
          ? err
          : new StoreFileError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      this.onUnreadable(failure, canvasId);
      throw failure;
    }
    // Synchronous from here. The journal's records of this canvas (replayed at start) come after the
    // file's: the journal holds every line since the compaction that wrote the file began, so a thread in
    // both is the same record or the journal's is newer (a pin move): the journal's is kept.
    const journaled = this.state.canvases.get(canvasId);
    if (journaled) for (const [threadId, record] of journaled) fromFile.set(threadId, record);
    this.state.canvases.set(canvasId, fromFile);
    this.state.unread.delete(canvasId);
  }
}

function workloadsCodec(dir: string, fs: FileSystemSeam, loader: CanvasLoader, holdPins?: HoldPins): JournalCodec<WorkloadsState> {
  const journalFile = journalPathFor(path.join(dir, JOURNAL_BASE));
  return {
    clone: (s) => ({ canvases: s.canvases, unread: s.unread, dirty: s.dirty, added: new Map(), replaced: new Set() }),
    serialize: () => {
      throw new Error('workloads are written per canvas (compact)');
    },
    // A first realization is the record itself; a replacement (a pin move) is `{replace: record}`.
    changes: (draft) => [...draft.added!].map(([key, record]) => (draft.replaced!.has(key) ? { replace: record } : record)),
    apply(state, changes) {
      for (const change of changes) {
        const replace = change !== null && typeof change === 'object' && 'replace' in change;
        const record = readWorkload(journalFile, replace ? change.replace : change);
        if (!canvasFileName.test(`${record.canvasId}.json`)) throw new StoreFileError(journalFile, 'holds an invalid workload record');
        let canvas = state.canvases.get(record.canvasId);
        if (!canvas) state.canvases.set(record.canvasId, (canvas = new Map()));
        // A first realization never replaces a record (a replayed line the canvas file already holds is the
        // same record); a pin move does.
        if (replace || !canvas.has(record.threadId)) canvas.set(record.threadId, record);
        state.dirty.add(record.canvasId);
      }
    },
    beginCompaction(state, mode) {
      // The canvases due now leave `dirty`; a batch committed while they are written marks its canvases
      // dirty again, for the next compaction (its records are in the journal's kept tail until then). Each
      // file is written as the canvas is now: its records are never removed or replaced, only added, so
      // the first `size` records in insertion order are exactly today's, whatever is committed meanwhile.
      // A canvas not read yet (journal records replayed at start) is read first and written whole: a file
      // is never replaced by the journal's records alone.
      const due = new Map<string, { workloads: Map<string, WorkloadRecord>; size: number } | 'unread'>();
      for (const canvasId of state.dirty) {
        const workloads = state.canvases.get(canvasId)!;
        due.set(canvasId, state.unread.has(canvasId) ? 'unread' : { workloads, size: workloads.size });
      }
      state.dirty.clear();
      // The records this compaction folds, as they are now (a canvas not read yet: its journal records).
      const folded = [...due.values()].flatMap((snapshot) =>
        snapshot === 'unread' ? [] : [...snapshot.workloads.values()].slice(0, snapshot.size),
      );
      for (const [canvasId, snapshot] of due) if (snapshot === 'unread') folded.push(...state.canvases.get(canvasId)!.values());
      return {
        async write() {
          if (holdPins) await holdPins(folded);
          let bytes = 0;
          let failure: { err: unknown } | undefined;
          const pending = [...due.keys()];
          // Every worker stops at the first failure, and all have finished before the write returns or
          // throws: no write of an older state can land after a later compaction's.
          const worker = async () => {
            for (let canvasId = pending.pop(); canvasId !== undefined && !failure; canvasId = pending.pop()) {
              const snapshot = due.get(canvasId)!;
              let text: string;
              try {
                if (snapshot === 'unread') {
                  await loader.ensure(canvasId);
                  text = serializeCanvas([...state.canvases.get(canvasId)!.values()]);
                } else {
                  text = serializeCanvas([...snapshot.workloads.values()].slice(0, snapshot.size));
                }
                // The directory is fsynced once, after every file of this compaction is renamed into it.
                await writeFileDurably(path.join(dir, `${canvasId}.json`), text, fs, false);
              } catch (err) {
                failure ??= { err };
                return;
              }
              bytes += Buffer.byteLength(text);
            }
          };
          await Promise.all(Array.from({ length: COMPACT_PARALLEL[mode] }, worker));
          // The renames above are durable only with the directory: before this, nothing written counts (the
          // journal keeps every record until the caller has this call's answer).
          if (!failure && bytes > 0) await fsyncDirectory(dir, fs).catch((err: unknown) => (failure = { err }));
          // On failure every canvas of this run stays due (`abandon`), the ones already written included.
          if (failure) throw failure.err;
          due.clear();
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
  const upgraded =
    spec && typeof spec === 'object' && !('resourceIds' in spec) ? { ...(entry as object), spec: { ...spec, resourceIds: [] } } : entry;
  if (!checkWorkload.Check(upgraded)) throw new StoreFileError(file, 'holds an invalid workload record');
  return Object.freeze(upgraded);
}

export class JsonWorkloadFiles {
  #closed = false;

  private constructor(
    private readonly doc: DurableDocument<WorkloadsState>,
    private readonly loader: CanvasLoader,
    private readonly holdPins?: HoldPins,
  ) {}

  /**
   * Lists the canvas files (names only), replays the journal and compacts it (reading the canvases it
   * touched). A canvas file that does not load is reported to `onUnreadable` when first touched; if the
   * journal touched it, the journal is kept (not emptied) until a compaction can read it.
   */
  static async open(
    dataDir: string,
    fs: FileSystemSeam,
    observe?: BatchObserver,
    compactAtBytes: number = WORKLOADS_COMPACT_AT_BYTES,
    onUnreadable: (err: StoreFileError, canvasId: string) => void = () => undefined,
    events?: EventSink,
    audit?: CarriedAudit,
    holdPins?: HoldPins,
  ): Promise<JsonWorkloadFiles> {
    const dir = path.join(dataDir, WORKLOADS_DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await sweepTempFiles(dir);
    const state: WorkloadsState = { canvases: new Map(), unread: new Set(), dirty: new Set() };
    for (const name of await readdir(dir)) {
      if (!name.endsWith('.json')) continue;
      if (!canvasFileName.test(name)) throw new StoreFileError(path.join(dir, name), 'is not named after a canvas ID');
      state.unread.add(name.slice(0, -'.json'.length));
    }
    // One report per distinct failure of a canvas, not one per request.
    const reported = new Map<string, string>();
    const loader = new CanvasLoader(dir, state, (err, canvasId) => {
      if (reported.get(canvasId) === err.message) return;
      reported.set(canvasId, err.message);
      onUnreadable(err, canvasId);
    });
    try {
      const doc = await DurableDocument.openJournaled(
        path.join(dir, JOURNAL_BASE),
        state,
        workloadsCodec(dir, fs, loader, holdPins),
        fs,
        observe,
        'workloads',
        {
          compactAtBytes,
          keepJournalIfStartCompactionFails: true,
          ...(events ? { events } : {}),
          ...(audit ? { audit } : {}),
        },
      );
      return new JsonWorkloadFiles(doc, loader, holdPins);
    } catch (err) {
      if (err instanceof JournalCorruptError) throw new StoreFileError(err.file, err.message.slice(path.basename(err.file).length + 1));
      throw err;
    }
  }

  /** Canvases with workloads (or a file), sorted. Reads no file. */
  canvasIds(): string[] {
    const { canvases, unread } = this.doc.state;
    return [...new Set([...canvases.keys(), ...unread])].sort();
  }

  async list(canvasId: string): Promise<readonly WorkloadRecord[]> {
    await this.#read(canvasId);
    const workloads = this.doc.state.canvases.get(canvasId);
    return workloads ? [...workloads.keys()].sort().map((k) => workloads.get(k)!) : [];
  }

  async get(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined> {
    await this.#read(canvasId);
    return this.doc.state.canvases.get(canvasId)?.get(threadId);
  }

  /**
   * Stores the thread's first realization; `audit`, the entry of a realization, is written only when this
   * one creates the record, carried by the same journal line (one fdatasync for both).
   */
  realize(record: WorkloadRecord, audit?: AuditEntry): Promise<{ workload: WorkloadRecord; created: boolean }> {
    if (this.#closed)
      return Promise.reject(new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.'));
    // The canvas is in memory before the launch enters the group commit (its first-realization check reads
    // it). A canvas already in memory enters at once, without a turn of the event loop, so launches made
    // together share a batch.
    if (this.doc.state.unread.has(record.canvasId)) return this.#read(record.canvasId).then(() => this.#realize(record, audit));
    return this.#realize(record, audit);
  }

  #realize(record: WorkloadRecord, audit: AuditEntry | undefined): Promise<{ workload: WorkloadRecord; created: boolean }> {
    const frozen = Object.freeze(record);
    const key = threadKey(record.canvasId, record.threadId);
    // Only the realization that creates the record holds its pins (a repeat's would move the winner's).
    let held: Promise<void> | undefined;
    const written = this.doc.update<{ workload: WorkloadRecord; created: boolean }>((draft) => {
      const existing = draft.added!.get(key) ?? draft.canvases.get(record.canvasId)?.get(record.threadId);
      if (existing) return { result: { workload: existing, created: false }, changed: false };
      draft.added!.set(key, frozen);
      held = this.holdPins?.([frozen]);
      // Awaited below; a failed journal write must not leave it unobserved.
      held?.catch(() => undefined);
      return {
        result: { workload: frozen, created: true },
        changed: true,
        events: [{ type: 'workload.launched', subject: { kind: 'workload', id: key }, check: recordCheck(frozen) }],
        ...(audit ? { audit: [audit] } : {}),
      };
    });
    // Answered once both are durable (the journal line and the holds, flushed side by side).
    return this.holdPins ? written.then(async (outcome) => (await held, outcome)) : written;
  }

  /**
   * Replaces a thread's record with `next(current)` (a pin move), with its audit entry and the event
   * `workload.repinned` in the same journal line. `next` throws to refuse (nothing written);
   * `workload_not_found` when the thread has no record.
   */
  async replace(
    canvasId: string,
    threadId: string,
    next: (current: WorkloadRecord) => WorkloadRecord,
    audit: AuditEntry,
  ): Promise<WorkloadRecord> {
    if (this.#closed) throw new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.');
    await this.#read(canvasId);
    const key = threadKey(canvasId, threadId);
    return this.doc.update<WorkloadRecord>((draft) => {
      const existing = draft.added!.get(key) ?? draft.canvases.get(canvasId)?.get(threadId);
      if (!existing) {
        throw new AppError('workload_not_found', `No workload for thread ${threadId} of canvas ${canvasId}.`, { canvasId, threadId });
      }
      const record = Object.freeze(next(existing));
      draft.added!.set(key, record);
      draft.replaced!.add(key);
      return {
        result: record,
        changed: true,
        events: [{ type: 'workload.repinned', subject: { kind: 'workload', id: key }, check: recordCheck(record) }],
        audit: [audit],
      };
    });
  }

  pause(): Promise<void> {
    return this.doc.pause();
  }

  resume(): void {
    this.doc.resume();
  }

  /** Waits for queued launches and compacts the journal into the canvas files; later launches are refused (503). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.doc.close();
  }

  async #read(canvasId: string): Promise<void> {
    try {
      await this.loader.ensure(canvasId);
    } catch (err) {
      throw new AppError(
        'storage_unavailable',
        'The stored workloads of this canvas cannot be read; the operator has been told. Nothing was changed.',
        { canvasId },
        { cause: err },
      );
    }
  }
}
