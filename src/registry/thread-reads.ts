// What a launched thread reads (docs/decisions/record-digest.md, "Thread reads"): a read that names a
// realized workload of the token's canvas and machine (`X-Huabu-Thread-Id`) is served each pinned record at
// its pinned revision; a pinned record no longer there for that machine is withdrawn for the thread. The
// thread only selects among its own pins: what is served is never more than the token may read today.
// Framework-free; RFS and MCP both choose through `contentFor`. A thread's pins change only when the owner
// moves one (`workload.repinned`): the cached pins of that thread are dropped then, on every replica (the
// event reaches each one's change feed).
import { AppError } from '../errors.js';
import type { StoredResource } from '../schemas/resource.js';
import type { ResourcePin } from '../schemas/workload.js';
import { digestOf } from './record-digest.js';
import type { RegistryStore } from './store.js';
import type { ChangeFeed } from './events.js';
import { visibleOnMachine } from './visibility.js';

/** The pins one thread reads at: ID → pinned digest, in effective order. */
export type ThreadPins = ReadonlyMap<string, string>;

/** How many threads' pins and pinned revisions are kept in memory (revisions never change; pins only by a move). */
const CACHE_ENTRIES = 4096;

/** A map that forgets its oldest entry beyond `max` (values that never change: no invalidation). */
class Bounded<V> {
  readonly #map = new Map<string, V>();
  constructor(private readonly max: number) {}
  clear(): void {
    this.#map.clear();
  }
  get(key: string): V | undefined {
    return this.#map.get(key);
  }
  delete(key: string): void {
    this.#map.delete(key);
  }
  set(key: string, value: V): void {
    this.#map.set(key, value);
    if (this.#map.size > this.max) this.#map.delete(this.#map.keys().next().value!);
  }
}

export function resourceWithdrawn(id: string): AppError {
  return new AppError(
    'resource_withdrawn',
    `Resource ${id} was pinned when this thread was launched and has been withdrawn since; it cannot be read for the thread.`,
    { id },
  );
}

export class ThreadReads {
  readonly #pins = new Bounded<{ agentletId: string; map: ThreadPins } | null>(CACHE_ENTRIES);
  readonly #revisions = new Bounded<StoredResource>(CACHE_ENTRIES);

  /** Raised by every `forget`: pins read before it are not cached after it. */
  #generation = 0;
  #cursor = '0';
  #reading = false;
  #again = false;
  #unsubscribe: () => void = () => undefined;

  constructor(private readonly store: RegistryStore) {}

  /** Drops the cached pins of a thread (its pins were moved). */
  forget(canvasId: string, threadId: string): void {
    this.#generation++;
    this.#pins.delete(JSON.stringify([canvasId, threadId]));
  }

  /** Forgets a thread's pins at each `workload.repinned` the feed publishes (a move on any replica). */
  follow(feed: ChangeFeed): this {
    this.#cursor = feed.head();
    this.#unsubscribe = feed.onPublished(() => void this.#read(feed));
    return this;
  }

  close(): void {
    this.#unsubscribe();
  }

  async #read(feed: ChangeFeed): Promise<void> {
    if (this.#reading) return void (this.#again = true);
    this.#reading = true;
    try {
      do {
        this.#again = false;
        for (;;) {
          const page = await feed.read(this.#cursor, 500, { published: true });
          if (page.events.length === 0) break;
          this.#cursor = page.next;
          for (const e of page.events) {
            if (e.type !== 'workload.repinned') continue;
            const slash = e.subject.id.indexOf('/');
            this.forget(e.subject.id.slice(0, slash), e.subject.id.slice(slash + 1));
          }
        }
      } while (this.#again);
    } catch {
      // Behind the retention: whatever was moved meanwhile is unknown, so every cached pin goes.
      this.#cursor = feed.head();
      this.#generation++;
      this.#pins.clear();
    } finally {
      this.#reading = false;
    }
  }

  /**
   * The pins a read naming `threadId` selects: those of the realized workload of `canvasId` placed on
   * `machineId`. `undefined` (reads are today's) without a thread, for a thread that is not such a
   * workload, and for a workload realized before pins existed.
   */
  async pinsOf(canvasId: string, machineId: string, threadId: string | undefined): Promise<ThreadPins | undefined> {
    if (threadId === undefined) return undefined;
    const key = JSON.stringify([canvasId, threadId]);
    let pins = this.#pins.get(key);
    if (pins === undefined) {
      const generation = this.#generation;
      const workload = await this.store.getWorkload(canvasId, threadId).catch(() => undefined);
      if (!workload) return undefined; // not cached: the thread may be realized later
      pins = workload.spec.resourcePins ? pinMap(workload.spec.agentletId, workload.spec.resourcePins) : null;
      if (generation === this.#generation) this.#pins.set(key, pins);
    }
    return pins !== null && pins.agentletId === machineId ? pins.map : undefined;
  }

  /**
   * The one choice of content for a thread: for `id`, the record `current` (what the machine may read now,
   * or undefined when it may read none) or, when the thread pins `id`, the pinned revision. Undefined when
   * the machine may not read the ID today; 410 `resource_withdrawn` when it is pinned and no longer there.
   */
  async contentFor(
    id: string,
    current: StoredResource | undefined,
    machineId: string,
    pins: ThreadPins,
  ): Promise<StoredResource | undefined> {
    const digest = pins.get(id);
    if (digest === undefined) return current;
    if (current === undefined) throw resourceWithdrawn(id);
    if (digestOf(current) === digest) return current;
    const key = `${id} ${digest}`;
    let pinned = this.#revisions.get(key);
    if (pinned === undefined) {
      pinned = (await this.store.getRevision(id, digest))?.record;
      // Retention keeps every pinned revision; one missing (or not this machine's to read) cannot be served.
      if (pinned === undefined || !visibleOnMachine(pinned.provider, machineId)) throw resourceWithdrawn(id);
      this.#revisions.set(key, pinned);
    }
    return pinned;
  }

  /** `records` (what the machine may read today) with each pinned one at its pin; withdrawn pins left out. */
  async listFor(records: readonly StoredResource[], machineId: string, pins: ThreadPins): Promise<StoredResource[]> {
    const served: StoredResource[] = [];
    for (const record of records) {
      const content = await this.contentFor(record.id, record, machineId, pins).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'resource_withdrawn') return undefined;
        throw err;
      });
      if (content) served.push(content);
    }
    return served;
  }
}

function pinMap(agentletId: string, pins: readonly ResourcePin[]): { agentletId: string; map: ThreadPins } {
  return { agentletId, map: new Map(pins.map((p) => [p.id, p.digest])) };
}
