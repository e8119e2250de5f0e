// Refusals of callers without a valid credential, summarized per client address so that nobody can fill
// the audit log (and rotate earlier entries away) by sending bad tokens: within one window, an address's
// first refusal is written at once and the rest are counted into one summary line when the window ends.
// At most `maxClients` addresses are tracked per window; refusals from further ones share one summary.
import type { AuditTrail } from './audit-trail.js';

export const REFUSAL_WINDOW_MS = 60_000;
export const REFUSAL_MAX_CLIENTS = 256;
/** The summary line's `action`; its `details.client` is the address, or this for the addresses beyond the bound. */
export const SUMMARY_ACTION = 'anonymous.refusals';
export const OTHER_CLIENTS = 'other';

export type RefusalOutcome = 'unauthorized' | 'rate_limited';

interface Tally {
  since: string;
  unauthorized: number;
  rate_limited: number;
}

export interface AnonymousRefusalsOptions {
  windowMs?: number;
  maxClients?: number;
  now?: () => Date;
}

export class AnonymousRefusals {
  readonly #audit: AuditTrail;
  readonly #windowMs: number;
  readonly #maxClients: number;
  readonly #now: () => Date;
  #tallies = new Map<string, Tally>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #writing = new Set<Promise<void>>();

  constructor(audit: AuditTrail, options: AnonymousRefusalsOptions = {}) {
    this.#audit = audit;
    this.#windowMs = options.windowMs ?? REFUSAL_WINDOW_MS;
    this.#maxClients = options.maxClients ?? REFUSAL_MAX_CLIENTS;
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * One refused request from `client` (its address) to `action` (`<METHOD> <route pattern>`, never the
   * concrete path). Resolves once a line written at once is appended.
   */
  async note(client: string, action: string, outcome: RefusalOutcome): Promise<void> {
    if (this.#closed) return;
    this.#timer ??= setTimeout(() => void this.flush(), this.#windowMs).unref();
    const known = this.#tallies.get(client);
    if (known) {
      known[outcome] += 1;
      return;
    }
    const since = this.#now().toISOString();
    if (this.#tallies.size >= this.#maxClients) {
      const other = this.#tallies.get(OTHER_CLIENTS) ?? { since, unauthorized: 0, rate_limited: 0 };
      other[outcome] += 1;
      this.#tallies.set(OTHER_CLIENTS, other);
      return;
    }
    this.#tallies.set(client, { since, unauthorized: 0, rate_limited: 0 });
    const writing = this.#audit.record([{ actor: 'anonymous', action, id: '-', outcome, details: { client } }]);
    this.#writing.add(writing);
    await writing.finally(() => this.#writing.delete(writing));
  }

  /** Ends the window: one summary line per address with refusals not yet written. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const tallies = this.#tallies;
    this.#tallies = new Map();
    const until = this.#now().toISOString();
    const lines = [...tallies]
      .filter(([, t]) => t.unauthorized + t.rate_limited > 0)
      .map(([client, t]) => ({
        actor: 'anonymous',
        action: SUMMARY_ACTION,
        id: '-',
        outcome: 'summary',
        details: { client, unauthorized: t.unauthorized, rate_limited: t.rate_limited, since: t.since, until },
      }));
    await this.#audit.record(lines);
  }

  /** Writes what is pending; later refusals are not recorded (the store is about to close). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#writing);
    await this.flush();
  }
}
