// One JSON document kept in memory and on disk, updated by group commit: concurrent updates queue, each
// applies to a draft, one durable write covers the whole batch, and every caller is answered only after
// that write. Readers see the committed state only; a failed write leaves the committed state untouched.
// A durable write either replaces the whole file, or (journaled documents) appends the batch's changes to
// a journal beside it, which is compacted into the file once it has grown as large as the file itself, at
// start and at close: the work per write then no longer grows with the document. A codec with
// `beginCompaction` (workloads) is compacted beside the appends: batches keep being committed and answered
// while the compaction writes, and only the journal's swap for its unfolded tail is ordered with them.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../errors.js';
import { writeFileDurably, type FileSystemSeam, nodeFileSystem } from './durable-file.js';
import { Journal, journalLinePieces, journalPathFor, readJournal } from './journal.js';
import type { CheckedDraft, EventSink, EventTicket } from './event-log.js';

/**
 * A mutation: reads and changes `draft`, returns its answer and whether it changed anything.
 * It must throw (domain errors) before touching the draft, never halfway through.
 */
export type Mutation<S, R> = (draft: S) => {
  result: R;
  changed: boolean;
  events?: readonly CheckedDraft[];
  /** Journaled documents only: audit entries of the change, carried by its journal line (`DurableDocumentOptions.audit`). */
  audit?: readonly unknown[];
};

/**
 * Where the audit entries a journal line carries go once the line is durable (the audit log). They are
 * made durable there (`sync`) before the journal drops their line, and at open the journal's entries the
 * log lacks are appended (`recover`): one fdatasync (the journal's) makes a change and its entry durable.
 */
export interface CarriedAudit {
  carry(entries: readonly unknown[]): void;
  sync(): Promise<void>;
  recover(entries: readonly unknown[]): Promise<unknown>;
}

interface Pending<S> {
  mutate: Mutation<S, unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface DocumentCodec<S> {
  /** A copy (or, journaled, a draft over the state) the mutations may change without touching the committed state. */
  clone(state: S): S;
  serialize(state: S): string;
}

/** What a journaled document's codec adds: its changes as JSON values, and how to apply them. */
export interface JournalCodec<S> extends DocumentCodec<S> {
  /** The changes a draft made (`clone` must return a draft that records them). */
  changes(draft: S): unknown[];
  /**
   * Applies changes, of a committed batch or of a replayed journal line, to the state in place. A replayed
   * line (`journal`) came from disk: an invalid change throws. A committed batch's changes (`batch`) are
   * the draft's own, checked by the mutations that made them; they are already durable when applied.
   */
  apply(state: S, changes: readonly unknown[], from: 'journal' | 'batch'): void;
  /**
   * Optional: writes the state durably somewhere other than one whole file (workloads: the canvas files
   * the journal touched), returning the bytes written. Without it, compaction replaces `file` with `serialize`.
   */
  compact?(state: S): Promise<number>;
  /**
   * Optional, instead of `compact`: a compaction that may run while later batches are committed. Called at
   * the moment the journal's content so far is to be folded; the returned `write` must make durable at
   * least every change applied to the state before this call (it may include later ones).
   */
  beginCompaction?(state: S, mode: 'foreground' | 'background'): BackgroundCompaction;
}

export interface BackgroundCompaction {
  /** Writes durably; returns the bytes written. */
  write(): Promise<number>;
  /** `write` failed: what it did not write must stay due for the next compaction. */
  abandon(): void;
}

export interface BatchInfo {
  /** A low-cardinality name for the document (`resources.json`, `workloads`), safe as a metric label. */
  label: string;
  operations: number;
  durationMs: number;
  ok: boolean;
}

/** Called after each durable write with the batch size and the write's duration. */
export type BatchObserver = (info: BatchInfo) => void;

export interface DurableDocumentOptions {
  /**
   * Most updates one durable write may cover (default unlimited). 1 turns group commit off: one durable
   * write per update, the baseline the benchmarks compare batching with.
   */
  maxBatch?: number;
  /** Journaled documents: compact once the journal holds this many bytes (default: the file's size, at least 1 MiB). */
  compactAtBytes?: number;
  /**
   * Codecs with `beginCompaction`: when the compaction at start fails (a canvas file that does not load),
   * start anyway with the journal kept (its complete lines), to be folded by a later compaction.
   */
  keepJournalIfStartCompactionFails?: boolean;
  /**
   * The change log: the events the mutations of a batch return are prepared in it before the batch's
   * durable write and settled after it (src/storage/event-log.ts).
   */
  events?: EventSink;
  /** Journaled documents: the audit log that takes the entries the journal lines carry. */
  audit?: CarriedAudit;
}

const MIN_COMPACT_BYTES = 1024 * 1024;

export class DurableDocument<S> {
  #state: S;
  #revision = 0;
  #queue: Pending<S>[] = [];
  #flushing = false;
  #journal: Journal | undefined;
  #journalCodec: JournalCodec<S> | undefined;
  /** Size of the versioned file as last written. */
  #fileBytes = 0;
  /** After a failed compaction, wait for the journal to grow past this before trying again. */
  #retryCompactionAt = 0;
  /** The compaction running beside the appends (codecs with `beginCompaction`), until it has settled. */
  #background: Promise<void> | undefined;
  /** Work that must not run beside an append (the journal's swap), run by the flush loop before the next batch. */
  #exclusive: { run: () => Promise<void>; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #closed = false;
  /** Pauses in force (an online backup): no durable write starts while above 0; updates queue. */
  #pauses = 0;
  /** Settles when the running flush (if any) returns. */
  #flushed: Promise<void> = Promise.resolve();

  constructor(
    readonly file: string,
    initial: S,
    private readonly codec: DocumentCodec<S>,
    private readonly fs: FileSystemSeam = nodeFileSystem,
    private readonly observe?: BatchObserver,
    private readonly label: string = path.basename(file),
    private readonly options: DurableDocumentOptions = {},
  ) {
    this.#state = initial;
  }

  /**
   * A journaled document: replays the journal beside `file` over `initial` (the loaded file), compacts it
   * into `file` when it held anything, and opens it for appends. Throws JournalCorruptError, or the error of
   * `codec.apply`, when the journal cannot be replayed; nothing is written then.
   */
  static async openJournaled<S>(
    file: string,
    initial: S,
    codec: JournalCodec<S>,
    fs: FileSystemSeam = nodeFileSystem,
    observe?: BatchObserver,
    label: string = path.basename(file),
    options: DurableDocumentOptions = {},
  ): Promise<DurableDocument<S>> {
    const journalFile = journalPathFor(file);
    const content = await readJournal(journalFile);
    for (const changes of content.batches) codec.apply(initial, changes, 'journal');
    // Before the compaction below empties the journal: its entries the audit log lacks (a crash came
    // before they were written there) are appended durably.
    if (content.audit.length > 0) await options.audit?.recover(content.audit);
    const doc = new DurableDocument(file, initial, codec, fs, observe, label, options);
    // The versioned file always exists, so the layout of a DATA_DIR is the same with or without a journal.
    let keep = 0;
    if (codec.beginCompaction) {
      try {
        if (content.bytes > 0) doc.#fileBytes = await writeAll(codec.beginCompaction(initial, 'foreground'));
      } catch (err) {
        if (!options.keepJournalIfStartCompactionFails) throw err;
        keep = content.completeBytes;
        doc.#retryCompactionAt = keep * 2;
      }
    } else if (codec.compact) {
      if (content.bytes > 0) doc.#fileBytes = await codec.compact(initial);
    } else if (
      content.bytes > 0 ||
      !(await access(file).then(
        () => true,
        () => false,
      ))
    ) {
      const text = codec.serialize(initial);
      await writeFileDurably(file, text, fs);
      doc.#fileBytes = Buffer.byteLength(text);
    }
    doc.#journal = await Journal.open(journalFile, fs, keep);
    doc.#journalCodec = codec;
    return doc;
  }

  /** The committed (durable) state. Treat it as read-only. */
  get state(): S {
    return this.#state;
  }

  /** Increases with every committed change; lets callers cache what they derive from the state. */
  get revision(): number {
    return this.#revision;
  }

  update<R>(mutate: Mutation<S, R>): Promise<R> {
    if (this.#closed)
      return Promise.reject(new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.'));
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ mutate, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#flushing) this.#flushed = this.#flush();
    });
  }

  /**
   * Stops durable writes (an online backup): resolves once no write or compaction is under way; updates
   * queue meanwhile (their callers wait) until `resume`. The file and its journal then hold exactly the
   * committed state and do not change until then.
   */
  async pause(): Promise<void> {
    this.#pauses++;
    // The batch under way may start a compaction beside the appends as it ends; that compaction (its journal
    // swap runs in the flush loop, which a pause does not hold for it) finishes too. None starts after: only
    // a committed batch starts one, and none commits while paused.
    while (this.#flushing || this.#background) {
      await this.#flushed;
      if (this.#background) await this.#background;
    }
  }

  /** Ends one `pause`; the updates queued meanwhile are then written (as one batch, group commit). */
  resume(): void {
    if (this.#pauses === 0) return;
    this.#pauses--;
    if (this.#pauses === 0 && this.#queue.length > 0 && !this.#flushing) this.#flushed = this.#flush();
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      // A pause (an online backup) holds the batches, not the exclusive work of a compaction already under way.
      while ((this.#queue.length > 0 && this.#pauses === 0) || this.#exclusive.length > 0) {
        const work = this.#exclusive.shift();
        if (work) {
          await work.run().then(work.resolve, work.reject);
          continue;
        }
        const max = this.options.maxBatch ?? Infinity;
        const batch = this.#queue.length <= max ? this.#queue : this.#queue.slice(0, max);
        this.#queue = batch === this.#queue ? [] : this.#queue.slice(max);
        await this.#commit(batch);
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #commit(batch: Pending<S>[]): Promise<void> {
    const draft = this.codec.clone(this.#state);
    const applied: { pending: Pending<S>; result: unknown }[] = [];
    const events: CheckedDraft[] = [];
    const audit: unknown[] = [];
    // A rejection may rest on earlier changes of this batch (a conflict with a record created just before),
    // so it is answered only once those are durable, like every other answer.
    const rejected: { pending: Pending<S>; err: unknown }[] = [];
    let changed = false;
    for (const pending of batch) {
      try {
        const outcome = pending.mutate(draft);
        changed ||= outcome.changed;
        if (outcome.events) events.push(...outcome.events);
        if (outcome.audit) audit.push(...outcome.audit);
        applied.push({ pending, result: outcome.result });
      } catch (err) {
        rejected.push({ pending, err });
      }
    }
    if (changed) {
      const started = performance.now();
      const journaled = this.#journal && this.#journalCodec ? { journal: this.#journal, codec: this.#journalCodec } : undefined;
      let changes: unknown[] = [];
      const sink = events.length > 0 ? this.options.events : undefined;
      let ticket: EventTicket | undefined;
      try {
        // The events are durable before the change is (phase 1), and decided by its outcome (phase 2).
        if (sink) ticket = await sink.prepare(events);
        if (journaled) {
          changes = journaled.codec.changes(draft);
          await journaled.journal.append(journalLinePieces(changes, audit));
        } else {
          await writeFileDurably(this.file, this.codec.serialize(draft), this.fs);
        }
      } catch (err) {
        if (sink && ticket) sink.settle(ticket, false);
        this.observe?.({ label: this.label, operations: applied.length, durationMs: performance.now() - started, ok: false });
        const failure = new AppError(
          'storage_unavailable',
          'The registry could not store the change durably; nothing was changed. Retry later.',
          undefined,
          { cause: err },
        );
        for (const { pending } of [...applied, ...rejected]) pending.reject(failure);
        return;
      }
      this.observe?.({ label: this.label, operations: applied.length, durationMs: performance.now() - started, ok: true });
      // Queued in the audit log now, before the next batch, so the log keeps the journal's order.
      if (audit.length > 0) this.options.audit?.carry(audit);
      if (journaled) journaled.codec.apply(this.#state, changes, 'batch');
      else this.#state = draft;
      this.#revision++;
      if (sink && ticket) sink.settle(ticket, true);
    }
    for (const { pending, result } of applied) pending.resolve(result);
    for (const { pending, err } of rejected) pending.reject(err);
    // Callers are answered. A background compaction lets the next batch go on; otherwise it waits.
    if (this.#journalCodec?.beginCompaction) this.#startBackgroundCompactionIfDue();
    else if (this.#journal && this.#journal.size >= Math.max(this.#compactAt(), this.#retryCompactionAt)) await this.#compact();
  }

  /**
   * Starts a compaction beside the appends when the journal is past its threshold and none runs. Checked
   * after each batch and when a background compaction ends: batches appended while it ran may already have
   * filled the journal again, and no later batch may come to notice.
   */
  #startBackgroundCompactionIfDue(): void {
    const journal = this.#journal;
    if (!journal || this.#background || this.#closed || this.#pauses > 0) return;
    if (journal.size < Math.max(this.#compactAt(), this.#retryCompactionAt)) return;
    this.#background = this.#compactBeside(this.#journalCodec!).finally(() => {
      this.#background = undefined;
      this.#startBackgroundCompactionIfDue();
    });
  }

  /** Runs `run` from the flush loop, where no batch is being appended. */
  #runExclusive(run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#exclusive.push({ run, resolve, reject });
      if (!this.#flushing) this.#flushed = this.#flush();
    });
  }

  /**
   * Folds the journal into the files while batches go on: mark the journal, write what the codec has due
   * (the state at this moment, or later), then replace the journal by the lines appended since the mark.
   * A crash at any step leaves a journal that holds every change the files might lack. Never throws.
   */
  async #compactBeside(codec: JournalCodec<S>): Promise<void> {
    const journal = this.#journal!;
    const run = codec.beginCompaction!(this.#state, 'background');
    journal.markFoldPoint();
    try {
      this.#fileBytes = await writeAll(run);
      // The lines before the mark are about to go: the audit entries they carry must be durable in the log.
      await this.options.audit?.sync();
      const prepared = await journal.prepareRewrite();
      await this.#runExclusive(() => journal.commitRewrite(prepared));
      this.#retryCompactionAt = 0;
    } catch {
      // The journal still holds every change (a failed rewrite leaves it whole); try again once it has doubled.
      journal.dropFoldPoint();
      this.#retryCompactionAt = journal.size * 2;
    }
  }

  #compactAt(): number {
    return this.options.compactAtBytes ?? Math.max(MIN_COMPACT_BYTES, this.#fileBytes);
  }

  /**
   * Folds the journal into the versioned file: write the file durably, then empty the journal. A crash
   * between the two replays changes the file already holds, which leaves it as it is.
   */
  async #compact(): Promise<void> {
    const journal = this.#journal!;
    try {
      if (this.#journalCodec?.beginCompaction) {
        this.#fileBytes = await writeAll(this.#journalCodec.beginCompaction(this.#state, 'foreground'));
      } else if (this.#journalCodec?.compact) {
        this.#fileBytes = await this.#journalCodec.compact(this.#state);
      } else {
        const text = this.codec.serialize(this.#state);
        await writeFileDurably(this.file, text, this.fs);
        this.#fileBytes = Buffer.byteLength(text);
      }
      await this.options.audit?.sync();
      await journal.reset();
      this.#retryCompactionAt = 0;
    } catch {
      // The journal still holds every change; try again once it has doubled.
      this.#retryCompactionAt = journal.size * 2;
    }
  }

  /** Waits for queued updates and a running compaction, compacts the journal (if any) into the file, and closes it. */
  async close(): Promise<void> {
    this.#closed = true;
    // A pause (a backup) never outlives the store: the queued updates are written before closing.
    this.#pauses = 0;
    if (this.#queue.length > 0 && !this.#flushing) this.#flushed = this.#flush();
    while (this.#flushing || this.#queue.length > 0) await new Promise((r) => setImmediate(r));
    while (this.#background) await this.#background;
    const journal = this.#journal;
    if (!journal) return;
    if (journal.size > 0) await this.#compact();
    await journal.close();
    this.#journal = undefined;
  }
}

/** Runs a background-capable compaction to its end; on failure, what it did not write stays due. */
async function writeAll(run: BackgroundCompaction): Promise<number> {
  try {
    return await run.write();
  } catch (err) {
    run.abandon();
    throw err;
  }
}
