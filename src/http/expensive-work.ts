// Work one caller can make expensive (an SVG layout, a reconcile of hundreds of records, an MCP batch of
// reads) is bounded per credential, so one caller cannot hold the event loop and starve everyone else
// (agents' RFS reads above all): past the bound, 429 `rate_limited` with Retry-After, nothing started.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';

/** Concurrent expensive requests one credential may have in progress. */
export const EXPENSIVE_PER_CREDENTIAL = 2;
/** A reconcile of at least this many records counts as expensive (dry runs included). */
export const EXPENSIVE_RECONCILE_RECORDS = 100;
/** An MCP POST holding at least this many reads (`resources/read`, `resources/list`) counts as expensive. */
export const EXPENSIVE_MCP_READS = 10;
/** A write carrying at least this much text (UTF-16 code units, all of it secret-scanned) counts as expensive. */
export const EXPENSIVE_SCAN_CHARS = 64 * 1024;

/** The length of every string in a JSON value, object keys included: what a secret scan of it reads. */
export function textLength(value: unknown): number {
  let total = 0;
  // A stack, not recursion: a body is any JSON, nested as deep as its parser allows.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === 'string') total += next.length;
    else if (Array.isArray(next)) for (const child of next) stack.push(child);
    else if (next !== null && typeof next === 'object') {
      for (const [key, child] of Object.entries(next)) {
        total += key.length;
        stack.push(child);
      }
    }
  }
  return total;
}

export class ExpensiveWork {
  readonly #inProgress = new Map<string, number>();

  constructor(private readonly limit: number = EXPENSIVE_PER_CREDENTIAL) {}

  /** Runs `work` as expensive when the request's body carries at least EXPENSIVE_SCAN_CHARS of text to scan. */
  scanning<T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> {
    return textLength(request.body) >= EXPENSIVE_SCAN_CHARS ? this.run(request, work) : work();
  }

  /** Runs `work` as one of the caller's expensive requests, or refuses with 429 when it has `limit` already. */
  async run<T>(request: FastifyRequest, work: () => Promise<T>): Promise<T> {
    const key = request.principal ? actorOf(request.principal) : `ip:${request.ip}`;
    const count = this.#inProgress.get(key) ?? 0;
    if (count >= this.limit) {
      throw new AppError(
        'rate_limited',
        `This credential already has ${count} expensive requests in progress; retry when one has finished.`,
        {
          retryAfterSeconds: 1,
          limit: this.limit,
        },
      );
    }
    this.#inProgress.set(key, count + 1);
    try {
      return await work();
    } finally {
      const left = (this.#inProgress.get(key) ?? 1) - 1;
      if (left === 0) this.#inProgress.delete(key);
      else this.#inProgress.set(key, left);
    }
  }
}

/** Aborted when the client goes away before its response was sent. */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
