// Requests with a large body (a machine's whole set: megabytes to read, parse, validate, scan and store, all
// but the scan on the event loop) are admitted one at a time, before their body is read: the others wait in
// order with their bodies unread (TCP holds them), so the event loop serves reads between the pieces of one
// publish instead of queueing behind ten at once, and only one large body is in memory at a time. A request
// that waits past LARGE_BODY_WAIT_MS, or finds LARGE_BODY_QUEUE already waiting, is 503 `overloaded` with
// Retry-After (nothing read, nothing written; the Agentlet retries its publish). The gate applies after
// authentication (an `onRequest` hook), so only a known caller can wait in it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';

/** A body of at least this many bytes (its Content-Length) is large. */
export const LARGE_BODY_BYTES = 1024 * 1024;
/** Large bodies read and handled at once. */
export const LARGE_BODY_PERMITS = 1;
/** Large requests that may wait for their turn; one more is refused at once. */
export const LARGE_BODY_QUEUE = 64;
/** How long a large request may wait for its turn (Node refuses a request not received within 30 s). */
export const LARGE_BODY_WAIT_MS = 20_000;
/** Retry-After of a refusal (seconds). */
const RETRY_AFTER_SECONDS = 5;

export interface LargeBodyOptions {
  bytes: number;
  permits: number;
  queue: number;
  waitMs: number;
}

interface Waiter {
  admit(): void;
  refuse(err: AppError): void;
}

export class LargeBodyGate {
  #held = 0;
  readonly #waiting: Waiter[] = [];
  readonly #options: LargeBodyOptions;

  constructor(options: Partial<LargeBodyOptions> = {}) {
    this.#options = {
      bytes: LARGE_BODY_BYTES,
      permits: LARGE_BODY_PERMITS,
      queue: LARGE_BODY_QUEUE,
      waitMs: LARGE_BODY_WAIT_MS,
      ...options,
    };
  }

  /** Large requests being handled, and waiting (for metrics and tests). */
  get state(): { held: number; waiting: number } {
    return { held: this.#held, waiting: this.#waiting.length };
  }

  /**
   * A route's `preParsing` hook: a large request waits for its turn here, and gives it back when its
   * response is sent or its connection closes, whichever comes first.
   */
  readonly preParsing = async <T>(request: FastifyRequest, reply: FastifyReply, payload: T): Promise<T> => {
    const length = Number(request.headers['content-length']);
    if (!(length >= this.#options.bytes)) return payload;
    await this.#turn(reply);
    let given = false;
    const giveBack = () => {
      if (given) return;
      given = true;
      this.#next();
    };
    reply.raw.once('close', giveBack);
    if (reply.raw.destroyed) giveBack();
    return payload;
  };

  #turn(reply: FastifyReply): Promise<void> {
    if (this.#held < this.#options.permits) {
      this.#held++;
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.#options.queue) return Promise.reject(this.#refusal('queue_full'));
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        reply.raw.off('close', gone);
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
      };
      const waiter: Waiter = {
        admit: () => {
          leave();
          resolve();
        },
        refuse: (err) => {
          leave();
          reject(err);
        },
      };
      const timer = setTimeout(() => waiter.refuse(this.#refusal('wait_too_long')), this.#options.waitMs);
      // A caller that went away while waiting gives up its place (no answer can reach it).
      const gone = () => waiter.refuse(this.#refusal('client_gone'));
      reply.raw.once('close', gone);
      this.#waiting.push(waiter);
    });
  }

  /** A permit given back: the longest waiting request takes it. */
  #next(): void {
    const waiter = this.#waiting[0];
    if (waiter) waiter.admit();
    else this.#held--;
  }

  #refusal(reason: 'queue_full' | 'wait_too_long' | 'client_gone'): AppError {
    return new AppError('overloaded', 'Large publishes are handled one at a time and this one could not get its turn; retry shortly.', {
      reason: `large_body_${reason}`,
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    });
  }
}
