// Per-grant quotas for one process: per (grant, capability) at most `concurrency` invocations in flight and
// `perMinute` started in any sliding 60-second window, and per grant at most `inFlightPerGrant` in flight
// across all its capabilities. A grant is named by its verified claims' digest, never by the header's
// spelling. Refusals say when to retry. State lives in memory (each replica counts its own; see
// docs/decisions/invocation-calls.md) and is dropped once a key is idle. Framework-free.

export interface QuotaLimits {
  concurrency: number;
  perMinute: number;
  /** One grant's calls in flight across every capability. */
  inFlightPerGrant: number;
}

export type QuotaDecision =
  { ok: true; release: () => void } | { ok: false; reason: 'concurrency' | 'in_flight' | 'rate'; retryAfterSeconds: number };

interface Slot {
  inFlight: number;
  /** Start times (ms) inside the current window, oldest first. */
  starts: number[];
}

const WINDOW_MS = 60_000;

export class GrantQuotas {
  readonly #slots = new Map<string, Slot>();
  /** Calls in flight per grant (entries removed at zero). */
  readonly #grants = new Map<string, number>();

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** Takes one slot of `capability` for `grant` or says why not; call `release` exactly once when the invocation ends. */
  acquire(grant: string, capability: string, limits: QuotaLimits): QuotaDecision {
    const now = this.nowMs();
    if (this.#slots.size > 10_000) this.#sweep(now);
    const key = `${grant}:${capability}`;
    const slot = this.#slots.get(key) ?? { inFlight: 0, starts: [] };
    while (slot.starts.length > 0 && slot.starts[0]! <= now - WINDOW_MS) slot.starts.shift();
    if (slot.inFlight >= limits.concurrency) return { ok: false, reason: 'concurrency', retryAfterSeconds: 1 };
    const grantInFlight = this.#grants.get(grant) ?? 0;
    if (grantInFlight >= limits.inFlightPerGrant) return { ok: false, reason: 'in_flight', retryAfterSeconds: 1 };
    if (slot.starts.length >= limits.perMinute) {
      const freeAt = slot.starts[slot.starts.length - limits.perMinute]! + WINDOW_MS;
      return { ok: false, reason: 'rate', retryAfterSeconds: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
    }
    slot.inFlight++;
    slot.starts.push(now);
    this.#slots.set(key, slot);
    this.#grants.set(grant, grantInFlight + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        slot.inFlight--;
        const left = (this.#grants.get(grant) ?? 1) - 1;
        if (left > 0) this.#grants.set(grant, left);
        else this.#grants.delete(grant);
      },
    };
  }

  /** Keys currently tracked (tests). */
  get size(): number {
    this.#sweep(this.nowMs());
    return this.#slots.size;
  }

  #sweep(now: number): void {
    for (const [key, slot] of this.#slots) {
      if (slot.inFlight === 0 && (slot.starts.length === 0 || slot.starts[slot.starts.length - 1]! <= now - WINDOW_MS))
        this.#slots.delete(key);
    }
  }
}
