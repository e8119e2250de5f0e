// How many change events each machine's activity wrote in the current minute, so that no one machine can
// push the rest out of the change log's retention (every mirror's cursor would then be answered 410). The
// count is read from the log itself as it is published (a replica counts what it publishes), by the
// machine an event belongs to: a resource event by its provider (the host `huabu` too), a workload's drift
// by the provider of the record that moved, a machine's own events by its ID. The owner's changes (profiles, workloads, customizations) and the jobs the owner runs
// are not counted. Framework-free: the HTTP side refuses a machine's writes while it is over.
import type { ChangeEvent, ChangeFeed } from './events.js';

const MINUTE_MS = 60_000;
const PAGE = 1000;

/** The machine (or provider) whose activity wrote `e`, if any. */
export function producerOf(e: ChangeEvent): string | undefined {
  if (e.detail) return e.detail.provider; // a workload's drift: the provider of the record that moved
  if (e.subject.kind === 'resource') return e.subject.provider;
  if (e.subject.kind === 'machine') return e.subject.id;
  return undefined;
}

export class EventBudget {
  readonly #counts = new Map<string, { minute: number; count: number }>();
  #cursor: string;
  #reading = false;
  #again = false;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly feed: ChangeFeed,
    /** Events per producer per minute; 0 counts nothing and refuses nothing. */
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.#cursor = feed.head();
    this.#unsubscribe = perMinute > 0 ? feed.onPublished(() => void this.#read()) : () => {};
  }

  /** The seconds until `producer` may write again, or 0 while it is within its budget. */
  retryAfterSeconds(producer: string): number {
    if (this.perMinute <= 0) return 0;
    const now = this.now();
    const entry = this.#counts.get(producer);
    if (!entry || entry.minute !== Math.floor(now / MINUTE_MS) || entry.count < this.perMinute) return 0;
    return Math.max(1, Math.ceil(((entry.minute + 1) * MINUTE_MS - now) / 1000));
  }

  close(): void {
    this.#unsubscribe();
  }

  async #read(): Promise<void> {
    if (this.#reading) return void (this.#again = true);
    this.#reading = true;
    try {
      do {
        this.#again = false;
        for (;;) {
          const page = await this.feed.read(this.#cursor, PAGE, { published: true });
          if (page.events.length === 0) break;
          this.#cursor = page.next;
          const minute = Math.floor(this.now() / MINUTE_MS);
          for (const e of page.events) {
            const producer = producerOf(e);
            if (producer === undefined) continue;
            const entry = this.#counts.get(producer);
            if (entry && entry.minute === minute) entry.count++;
            else this.#counts.set(producer, { minute, count: 1 });
          }
        }
      } while (this.#again);
    } catch {
      // Behind the retention (a flood this budget did not see coming): count on from the newest event.
      this.#cursor = this.feed.head();
    } finally {
      this.#reading = false;
    }
  }
}
