// A draft over a committed map for journaled documents: reads fall through to the committed map, writes
// stay in the overlay, and the overlay's changes are what the journal records and what is applied to the
// committed map once durable. Opening a draft costs O(1), not a copy of the whole map.

/** The map operations mutations use; a plain Map satisfies it, and so does an OverlayMap. */
export interface RecordMap<V> {
  get(key: string): V | undefined;
  has(key: string): boolean;
  set(key: string, value: V): unknown;
  delete(key: string): boolean;
  keys(): IterableIterator<string>;
  values(): IterableIterator<V>;
  readonly size: number;
}

const DELETED = Symbol('deleted');

export class OverlayMap<V> implements RecordMap<V> {
  readonly #changes = new Map<string, V | typeof DELETED>();
  /** The changed keys of each group, when the map has groups (`groupOf`). */
  readonly #groups = new Map<string, Set<string>>();

  /**
   * Values must not be `undefined`. `groupOf` names a key's group, so `changesIn` answers one group's
   * changes without reading the others'.
   */
  constructor(
    private readonly base: ReadonlyMap<string, V>,
    private readonly groupOf?: (key: string) => string,
  ) {}

  get(key: string): V | undefined {
    const change = this.#changes.get(key);
    if (change === DELETED) return undefined;
    return change ?? this.base.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: V): this {
    this.#change(key, value);
    return this;
  }

  delete(key: string): boolean {
    const had = this.has(key);
    if (had) this.#change(key, DELETED);
    return had;
  }

  #change(key: string, change: V | typeof DELETED): void {
    this.#changes.set(key, change);
    if (!this.groupOf) return;
    const group = this.groupOf(key);
    let keys = this.#groups.get(group);
    if (!keys) this.#groups.set(group, (keys = new Set()));
    keys.add(key);
  }

  *keys(): IterableIterator<string> {
    for (const key of this.base.keys()) if (!this.#changes.has(key)) yield key;
    for (const [key, change] of this.#changes) if (change !== DELETED) yield key;
  }

  *values(): IterableIterator<V> {
    for (const key of this.keys()) yield this.get(key)!;
  }

  get size(): number {
    let size = this.base.size;
    for (const [key, change] of this.#changes) {
      const inBase = this.base.has(key);
      if (change === DELETED && inBase) size--;
      else if (change !== DELETED && !inBase) size++;
    }
    return size;
  }

  /** What the draft changed: `[key, value]`, with `undefined` for a removed key. */
  changes(): [string, V | undefined][] {
    return [...this.#changes].map(([key, change]) => [key, change === DELETED ? undefined : change]);
  }

  /** What the draft changed among the keys of `group` (a map made with `groupOf`), as `changes` answers. */
  changesIn(group: string): [string, V | undefined][] {
    return [...(this.#groups.get(group) ?? [])].map((key) => {
      const change = this.#changes.get(key)!;
      return [key, change === DELETED ? undefined : change];
    });
  }
}

/** The values of `map` in the order of their keys (the order the files keep their records in). */
export const sortedValues = <T>(map: RecordMap<T>): T[] => [...map.keys()].sort().map((k) => map.get(k)!);
