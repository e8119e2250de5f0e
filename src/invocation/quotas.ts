// Per-grant quotas for one process: at most `concurrency` invocations in flight and `perMinute` started
// in any sliding 60-second window, per (grant, capability). Refusals say when to retry. State lives in
// memory (each replica counts its own; see DESIGN-NOTES) and is dropped once a key is idle.
// Framework-free.

export interface QuotaLimits {
  concurrency: number;
  perMinute: number;
}

export type QuotaDecision =
  | { ok: true; release: () => void }
  | { ok: false; reason: 'concurrency' | 'rate'; retryAfterSeconds: number };

interface Slot {
  inFlight: number;
  /** Start times (ms) inside the current window, oldest first. */
  starts: number[];
}

const WINDOW_MS = 60_000;

export class GrantQuotas {
  readonly #slots = new Map<string, Slot>();

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** Takes one slot for `key` or says why not; call `release` exactly once when the invocation ends. */
  acquire(key: string, limits: QuotaLimits): QuotaDecision {
    const now = this.nowMs();
    if (this.#slots.size > 10_000) this.#sweep(now);
    const slot = this.#slots.get(key) ?? { inFlight: 0, starts: [] };
    while (slot.starts.length > 0 && slot.starts[0]! <= now - WINDOW_MS) slot.starts.shift();
    if (slot.inFlight >= limits.concurrency) return { ok: false, reason: 'concurrency', retryAfterSeconds: 1 };
    if (slot.starts.length >= limits.perMinute) {
      const freeAt = slot.starts[slot.starts.length - limits.perMinute]! + WINDOW_MS;
      return { ok: false, reason: 'rate', retryAfterSeconds: Math.max(1, Math.ceil((freeAt - now) / 1000)) };
    }
    slot.inFlight++;
    slot.starts.push(now);
    this.#slots.set(key, slot);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        slot.inFlight--;
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
      if (slot.inFlight === 0 && (slot.starts.length === 0 || slot.starts[slot.starts.length - 1]! <= now - WINDOW_MS)) this.#slots.delete(key);
    }
  }
}
