// Group commit for the PostgreSQL store: operations that arrive while a batch transaction runs are queued
// and run together in the next one, with one COMMIT (and, through the triggers, one notification) per
// batch. Each operation is acknowledged only after its batch's COMMIT. What a batch's statements are is the
// caller's (`run`); this module owns the queue, the transactions and the fallback when a batch fails.
import type pg from 'pg';
import type { BatchObserver } from '../durable-document.js';
import type { PgDatabase, Queryable } from './database.js';
import { isUnavailable, storageUnavailable } from './pg-errors.js';
import { currentTraceContext, inSharedSpan, type TraceContext } from '../../tracing/spans.js';

/** Batches of one process in flight at once: one running its statements while the previous one commits. */
const MAX_BATCHES_IN_FLIGHT = 2;

/** One operation's outcome in its batch: its value, or the refusal it alone gets. */
export type OpOutcome = { ok: true; value: unknown } | { ok: false; err: unknown };

/** What one run of a batch's statements gave: each operation's outcome, in the order given. */
export interface BatchRun {
  outcomes: OpOutcome[];
}

export interface GroupCommitOptions<Op, R extends BatchRun> {
  /** Most operations one batch transaction may cover. 1 turns group commit off. */
  maxBatch: number;
  /** Told after each batch transaction (label `postgres`): its size, duration and outcome. */
  observe?: BatchObserver;
  /**
   * The statements of a batch on `client`, inside its transaction. A refusal is that operation's outcome;
   * a database error throws (the batch rolls back).
   */
  run(client: Queryable, ops: readonly Op[]): Promise<R>;
  /** Told of each run that committed, before its operations are answered. */
  committed(run: R): void;
}

interface Job<Op> {
  op: Op;
  /** The trace context of the request that queued it (undefined without traces). */
  trace: TraceContext | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export class GroupCommit<Op, R extends BatchRun> {
  /** Jobs waiting for the next batch, and the drain running now (one at a time). */
  #queue: Job<Op>[] = [];
  #running: Promise<void> | undefined;

  constructor(
    private readonly db: PgDatabase,
    private readonly options: GroupCommitOptions<Op, R>,
  ) {}

  /**
   * Queues `op` for the next batch transaction, together with the operations queued beside it, and settles
   * only after that transaction's COMMIT (or its failure). A domain refusal (AppError) rejects its own
   * operation and leaves the others; any other error rolls the batch back, and each of its operations is
   * then run again in a transaction of its own, so one bad operation fails alone.
   */
  submit<T>(op: Op): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, trace: currentTraceContext(), resolve, reject });
      this.#running ??= this.#drain();
    });
  }

  /** Resolves once every operation queued so far has committed or failed. */
  async settled(): Promise<void> {
    await this.#running;
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
        const jobs = this.#queue.splice(0, this.options.maxBatch);
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
  async #runBatch(jobs: Job<Op>[], statementsRan: () => void): Promise<void> {
    const started = performance.now();
    const observe = (ok: boolean) =>
      this.options.observe?.({ label: 'postgres', operations: jobs.length, durationMs: performance.now() - started, ok });
    let client: pg.PoolClient;
    try {
      client = await this.db.connect();
    } catch (err) {
      for (const job of jobs) job.reject(err);
      observe(false);
      return;
    }
    let broken: Error | undefined;
    let result: R | undefined;
    let aborted: unknown;
    try {
      await client.query('BEGIN');
      try {
        result = await this.options.run(
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
      this.options.committed(result);
      observe(true);
      settle(jobs, result);
      return;
    }
    observe(false);
    // Rolled back, nothing of it stored: each operation alone, in its own transaction.
    for (const job of jobs) {
      try {
        const alone = await this.db.transaction((c) => this.options.run(c, [job.op]));
        this.options.committed(alone);
        settle([job], alone);
      } catch (err) {
        job.reject(err);
      }
    }
  }
}

function settle<Op>(jobs: readonly Job<Op>[], result: BatchRun): void {
  jobs.forEach((job, i) => {
    const outcome = result.outcomes[i]!;
    if (outcome.ok) job.resolve(outcome.value);
    else job.reject(outcome.err);
  });
}
