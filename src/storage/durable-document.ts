// One JSON document kept in memory and on disk, updated by group commit: concurrent updates queue, each
// applies to a draft, one durable write covers the whole batch, and every caller is answered only after
// that write. Readers see the committed state only; a failed write leaves the committed state untouched.
import path from 'node:path';
import { AppError } from '../errors.js';
import { writeFileDurably, type FileSystemSeam, nodeFileSystem } from './durable-file.js';

/**
 * A mutation: reads and changes `draft`, returns its answer and whether it changed anything.
 * It must throw (domain errors) before touching the draft, never halfway through.
 */
export type Mutation<S, R> = (draft: S) => { result: R; changed: boolean };

interface Pending<S> {
  mutate: Mutation<S, unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface DocumentCodec<S> {
  /** A copy the mutations may change without touching the committed state. */
  clone(state: S): S;
  serialize(state: S): string;
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
}

export class DurableDocument<S> {
  #state: S;
  #revision = 0;
  #queue: Pending<S>[] = [];
  #flushing = false;

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

  /** The committed (durable) state. Treat it as read-only. */
  get state(): S {
    return this.#state;
  }

  /** Increases with every committed change; lets callers cache what they derive from the state. */
  get revision(): number {
    return this.#revision;
  }

  update<R>(mutate: Mutation<S, R>): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ mutate, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#queue.length > 0) {
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
    let changed = false;
    for (const pending of batch) {
      try {
        const outcome = pending.mutate(draft);
        changed ||= outcome.changed;
        applied.push({ pending, result: outcome.result });
      } catch (err) {
        pending.reject(err);
      }
    }
    if (changed) {
      const started = performance.now();
      try {
        await writeFileDurably(this.file, this.codec.serialize(draft), this.fs);
      } catch (err) {
        this.observe?.({ label: this.label, operations: applied.length, durationMs: performance.now() - started, ok: false });
        const failure = new AppError('storage_unavailable', 'The registry could not store the change durably; nothing was changed. Retry later.', undefined, { cause: err });
        for (const { pending } of applied) pending.reject(failure);
        return;
      }
      this.observe?.({ label: this.label, operations: applied.length, durationMs: performance.now() - started, ok: true });
      this.#state = draft;
      this.#revision++;
    }
    for (const { pending, result } of applied) pending.resolve(result);
  }
}
