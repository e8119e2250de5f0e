// The machine channel: one live stream per Agentlet machine that carries jobs to it, and the answers the
// machine posts back. Framework-free: the HTTP adapter hands each opened stream in as a `ChannelSink`.
// State is this process's own (see docs/decisions/machine-channel.md for what that means with replicas).
import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.js';
import type { JobSecretFinding } from '../schemas/channel.js';

export type MachineChannelStatus = 'connected' | 'disconnected';

/** Where the channel's connected/disconnected changes go (the change-event log implements it). */
export type MachineStatusListener = (machineId: string, status: MachineChannelStatus, at: Date) => void;

/**
 * How a job sent over a channel ended: `succeeded` (answered ok) or `failed` (answered with an error, not
 * answered in time, or its channel closed first). Called once per job that reached a channel.
 */
export type JobOutcome = 'succeeded' | 'failed';
export type JobListener = (machineId: string, job: { jobId: string; type: string }, outcome: JobOutcome) => void;

/** One open stream to a machine, as the HTTP side writes it. */
export interface ChannelSink {
  /** Writes one job to the machine. */
  job(job: Job): void;
  /** Writes a comment line (the heartbeat). */
  comment(text: string): void;
  /** Ends the stream (idempotent). */
  end(): void;
}

export interface Job {
  jobId: string;
  type: string;
  payload: unknown;
}

/** What a machine posts for a job. */
export type JobAnswer =
  { ok: true; result?: unknown } | { ok: false; error: { code: string; message: string; findings?: readonly JobSecretFinding[] } };

export interface ChannelStatus {
  status: MachineChannelStatus;
  /** When the status last changed in this process; absent when the machine has not held a channel since it started. */
  since?: string;
}

export interface MachineChannelsOptions {
  now?: () => Date;
  /** How long a job waits for its answer. */
  jobTimeoutMs?: number;
  /** Jobs in flight per machine; one more is refused with 503 `agentlet_busy`. */
  maxJobsInFlight?: number;
  /** Interval of the heartbeat comment, which also re-checks the machine's credential. */
  heartbeatMs?: number;
  onMachineStatus?: MachineStatusListener;
  onJobSettled?: JobListener;
}

interface Pending {
  job: Job;
  resolve(done: { jobId: string; answer: JobAnswer }): void;
  reject(err: AppError): void;
  timer: NodeJS.Timeout;
}

interface Connection {
  machineId: string;
  sink: ChannelSink;
  /** False once the credential that opened the channel no longer authenticates this machine. */
  stillValid: () => Promise<boolean>;
  pending: Map<string, Pending>;
}

export const DEFAULT_JOB_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_JOBS_IN_FLIGHT = 16;
export const HEARTBEAT_MS = 15_000;

function unavailable(machineId: string, why: string): AppError {
  return new AppError('agentlet_unavailable', `Agentlet ${machineId} is not connected${why}.`, { machineId });
}

export class MachineChannels {
  readonly #now: () => Date;
  readonly #jobTimeoutMs: number;
  readonly #maxJobs: number;
  readonly #listener: MachineStatusListener | undefined;
  readonly #jobListener: JobListener | undefined;
  readonly #live = new Map<string, Connection>();
  readonly #since = new Map<string, string>();
  readonly #heartbeat: NodeJS.Timeout;
  #closed = false;

  constructor(options: MachineChannelsOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#jobTimeoutMs = options.jobTimeoutMs ?? DEFAULT_JOB_TIMEOUT_MS;
    this.#maxJobs = options.maxJobsInFlight ?? DEFAULT_MAX_JOBS_IN_FLIGHT;
    this.#listener = options.onMachineStatus;
    this.#jobListener = options.onJobSettled;
    this.#heartbeat = setInterval(() => void this.#beat(), options.heartbeatMs ?? HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /**
   * Takes `sink` as the machine's channel. A machine has at most one: a channel already open is ended and
   * the jobs sent over it fail with 503 (the new stream never saw them); the status stays `connected`.
   * Returns the function the HTTP side calls when the stream ends.
   */
  open(machineId: string, sink: ChannelSink, stillValid: () => Promise<boolean>): () => void {
    if (this.#closed) {
      sink.end();
      throw new AppError('unavailable', 'The registry is shutting down; reconnect later.');
    }
    const previous = this.#live.get(machineId);
    const connection: Connection = { machineId, sink, stillValid, pending: new Map() };
    this.#live.set(machineId, connection);
    if (previous) this.#drop(previous, ': its channel was replaced by a newer connection');
    else this.#changed(machineId, 'connected');
    return () => this.#close(connection, ': its channel closed');
  }

  status(machineId: string): ChannelStatus {
    const since = this.#since.get(machineId);
    return { status: this.#live.has(machineId) ? 'connected' : 'disconnected', ...(since === undefined ? {} : { since }) };
  }

  isConnected(machineId: string): boolean {
    return this.#live.has(machineId);
  }

  /**
   * Sends a job to the machine and waits for its answer: 503 `agentlet_unavailable` when the machine holds
   * no channel (or loses it before answering), 503 `agentlet_busy` past the jobs in flight, 504
   * `agentlet_timeout` when no answer comes in time (a late answer is dropped).
   */
  run(
    machineId: string,
    type: string,
    payload: unknown = {},
    timeoutMs = this.#jobTimeoutMs,
  ): Promise<{ jobId: string; answer: JobAnswer }> {
    const connection = this.#live.get(machineId);
    if (!connection) return Promise.reject(unavailable(machineId, ''));
    if (connection.pending.size >= this.#maxJobs) {
      return Promise.reject(
        new AppError('agentlet_busy', `Agentlet ${machineId} already has ${this.#maxJobs} jobs in flight; retry when one has finished.`, {
          machineId,
          limit: this.#maxJobs,
        }),
      );
    }
    const job: Job = { jobId: randomUUID(), type, payload };
    return new Promise<{ jobId: string; answer: JobAnswer }>((resolve, reject) => {
      const timer = setTimeout(() => {
        connection.pending.delete(job.jobId);
        this.#settled(machineId, job, 'failed');
        reject(
          new AppError('agentlet_timeout', `Agentlet ${machineId} did not answer the ${type} job within ${timeoutMs} ms.`, {
            machineId,
            jobId: job.jobId,
            timeoutMs,
          }),
        );
      }, timeoutMs);
      connection.pending.set(job.jobId, { job, resolve, reject, timer });
      try {
        connection.sink.job(job);
      } catch {
        this.#close(connection, ': its channel failed');
      }
    });
  }

  /**
   * Delivers a machine's answer to the job's waiter. False when no job of this machine with that ID is
   * waiting (unknown, already answered, timed out, or sent over a channel that has since closed): dropped.
   */
  answer(machineId: string, jobId: string, answer: JobAnswer): boolean {
    const pending = this.#live.get(machineId)?.pending.get(jobId);
    if (!pending) return false;
    this.#live.get(machineId)!.pending.delete(jobId);
    clearTimeout(pending.timer);
    this.#settled(machineId, pending.job, answer.ok ? 'succeeded' : 'failed');
    pending.resolve({ jobId, answer });
    return true;
  }

  /** Ends the machine's channel at once (its credential was revoked or rotated); its jobs fail with 503. */
  disconnect(machineId: string, why: string): void {
    const connection = this.#live.get(machineId);
    if (connection) this.#close(connection, `: ${why}`);
  }

  /** Ends every channel (the service is closing). */
  closeAll(): void {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    for (const connection of [...this.#live.values()]) this.#close(connection, ': the registry is shutting down');
  }

  #close(connection: Connection, why: string): void {
    if (this.#live.get(connection.machineId) !== connection) return;
    this.#live.delete(connection.machineId);
    this.#drop(connection, why);
    this.#changed(connection.machineId, 'disconnected');
  }

  /** Ends the stream and fails every job sent over it. */
  #drop(connection: Connection, why: string): void {
    connection.sink.end();
    for (const pending of connection.pending.values()) {
      clearTimeout(pending.timer);
      this.#settled(connection.machineId, pending.job, 'failed');
      pending.reject(unavailable(connection.machineId, why));
    }
    connection.pending.clear();
  }

  #settled(machineId: string, job: Job, outcome: JobOutcome): void {
    this.#jobListener?.(machineId, { jobId: job.jobId, type: job.type }, outcome);
  }

  #changed(machineId: string, status: MachineChannelStatus): void {
    const at = this.#now();
    this.#since.set(machineId, at.toISOString());
    this.#listener?.(machineId, status, at);
  }

  /** The heartbeat: a comment on every channel, and channels whose credential no longer holds are closed. */
  async #beat(): Promise<void> {
    await Promise.all(
      [...this.#live.values()].map(async (connection) => {
        const valid = await connection.stillValid().catch(() => true); // a store outage is not a revocation
        if (!valid) return this.#close(connection, ': its credential is no longer valid');
        try {
          connection.sink.comment('heartbeat');
        } catch {
          this.#close(connection, ': its channel failed');
        }
      }),
    );
  }
}
