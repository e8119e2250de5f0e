// The JSON store's indexes over its committed resources, kept up to date by every committed change (and
// every replayed journal line), never rebuilt per write: the (provider, id) order that pages walk, and an
// inverted index (built on the first search, then maintained record by record, the word work of a change done
// a few milliseconds per event-loop turn after its commit and before any search) from each word to the
// records holding it and in which fields. Its dictionary is MiniSearch's radix tree (SearchableMap), which
// finds a term's words by prefix and one edit away, beside a map of the words as written. Each record has a slot (a small integer); a
// word's posting maps slots to field masks, as a Map while few records hold the word and as a byte array
// over every slot once many do. A search whose rarest term has few matches intersects the postings from
// that term; one whose every term is broad computes each record's tier in one pass over byte arrays and walks
// the scope in (provider, id) order, keeping at most a page per tier. Either way no score is computed that the
// tier would ignore. The search rules and the tier are src/registry/search.ts's.
import SearchableMap from 'minisearch/SearchableMap';
import { comparePositions } from '../registry/catalogue-pages.js';
import { FIELD_WEIGHT, searchTextsOf, searchWords, type SearchField, type SearchTerm } from '../registry/search.js';
import type { FindRequest, FoundResource, PagePosition } from '../registry/store.js';
import type { StoredResource } from '../schemas/resource.js';

/** Which fields of a record hold a word: one bit per field. */
type FieldMask = number;

const FIELDS: readonly SearchField[] = ['key', 'summary', 'body'];
const BIT: Readonly<Record<SearchField, FieldMask>> = { key: 1, summary: 2, body: 4 };
/** The weight of the heaviest field in a mask (the tier's part of one term). */
const WEIGHT_OF_MASK: readonly number[] = Array.from({ length: 8 }, (_, mask) =>
  Math.max(0, ...FIELDS.filter((f) => mask & BIT[f]).map((f) => FIELD_WEIGHT[f])),
);
/** A posting turns into a byte array over every slot once it holds this share of them (and at least DENSE_MIN). */
const DENSE_SHARE = 1 / 32;
const DENSE_MIN = 256;
/** A search whose rarest term matches at most this many records intersects postings; past it, one pass over the scope. */
const SPARSE_QUERY_MAX = 4096;
/** Milliseconds of pending word work done per event-loop turn (at least one record's). */
const DRAIN_TURN_MS = 5;
/** Sorts as (provider, id): neither holds a NUL, which sorts before every other character. */
const keyOf = (provider: string, id: string) => `${provider}\u0000${id}`;

/** Each word of a record's texts with the fields that hold it. */
function wordsOf(record: StoredResource): Map<string, FieldMask> {
  const t = searchTextsOf(record);
  const texts: Record<SearchField, string> = {
    key: `${t.key} ${t.ownerKey}`,
    summary: t.summary,
    body: `${t.body} ${t.ownerBody}`,
  };
  const words = new Map<string, FieldMask>();
  for (const field of FIELDS) for (const word of searchWords(texts[field])) words.set(word, (words.get(word) ?? 0) | BIT[field]);
  return words;
}

/** The records holding one word: slot → the fields that hold it. */
class Posting {
  size = 0;
  /** Every field that has held the word in some record (never cleared: a bound on the term's weight). */
  fields: FieldMask = 0;
  #sparse: Map<number, FieldMask> | undefined = new Map();
  #dense: Uint8Array | undefined;

  get(slot: number): FieldMask {
    return this.#dense ? (this.#dense[slot] ?? 0) : (this.#sparse!.get(slot) ?? 0);
  }

  set(slot: number, mask: FieldMask, slots: number, denseMin: number): void {
    if (this.get(slot) === 0) this.size++;
    this.fields |= mask;
    if (this.#dense) {
      if (slot >= this.#dense.length) this.#dense = grown(this.#dense, slots);
      this.#dense[slot] = mask;
      return;
    }
    this.#sparse!.set(slot, mask);
    if (this.size >= denseMin && this.size >= slots * DENSE_SHARE) {
      this.#dense = new Uint8Array(slots);
      for (const [s, m] of this.#sparse!) this.#dense[s] = m;
      this.#sparse = undefined;
    }
  }

  delete(slot: number): void {
    if (this.get(slot) === 0) return;
    this.size--;
    if (this.#dense) this.#dense[slot] = 0;
    else this.#sparse!.delete(slot);
  }

  /** Each (slot, mask) of the posting. */
  *entries(): IterableIterator<[number, FieldMask]> {
    if (this.#sparse) yield* this.#sparse;
    else for (let s = 0; s < this.#dense!.length; s++) if (this.#dense![s]) yield [s, this.#dense![s]!];
  }

  /** The posting's own bytes (one per slot, possibly fewer than there are slots) when it keeps them. */
  bytes(): Uint8Array | undefined {
    return this.#dense;
  }

  /** ORs the posting's masks into `into` (one byte per slot). */
  orInto(into: Uint8Array): void {
    if (this.#sparse) for (const [s, m] of this.#sparse) into[s]! |= m;
    else for (let s = 0; s < this.#dense!.length; s++) into[s]! |= this.#dense![s]!;
  }
}

function grown(bytes: Uint8Array, slots: number): Uint8Array {
  const next = new Uint8Array(Math.max(slots, bytes.length * 2));
  next.set(bytes);
  return next;
}

/** The masks of a term that is not walked, by slot. */
type MaskOf = (slot: number) => FieldMask;

/** The union of postings' masks, by slot. */
function unitedMasks(postings: readonly Posting[]): Map<number, FieldMask> {
  const masks = new Map<number, FieldMask>();
  for (const posting of postings) for (const [slot, mask] of posting.entries()) masks.set(slot, (masks.get(slot) ?? 0) | mask);
  return masks;
}

/** How to look a term's mask up for `lookups` slots: its one posting, one united map, or each of its words' postings. */
function maskOf({ postings, size }: TermPostings, lookups: number): MaskOf {
  if (postings.length === 1) return (slot) => postings[0]!.get(slot);
  if (size > lookups * postings.length) return (slot) => postings.reduce((m, p) => m | p.get(slot), 0);
  const masks = unitedMasks(postings);
  return (slot) => masks.get(slot) ?? 0;
}

/** A match on its way to the page: the record, its tier and so its place in the answer. */
interface Match {
  record: StoredResource;
  tier: number;
  position: PagePosition;
}

/** The words of a search's term, and how many records they hold at most (the sum of their postings). */
interface TermPostings {
  postings: Posting[];
  size: number;
}

/** The index's sizes (tests choose small ones to walk every path with few records). */
export interface IndexTuning {
  /** A posting turns into a byte array once it holds this many records and DENSE_SHARE of the slots. */
  denseMin: number;
  /** A search whose rarest term matches at most this many records intersects postings. */
  sparseQueryMax: number;
  /** Most records' pending word work done per event-loop turn. */
  drainTurnRecords: number;
  /** Milliseconds after which a turn's word work stops (one record's work is always done). */
  drainTurnMs: number;
}

export class ResourceIndex {
  /** `provider NUL id` of every record, sorted. */
  readonly #keys: string[];
  /** Once the words are indexed: the slot of each key of `#keys`, at the same place. */
  #keySlots: number[] = [];
  /** word → its posting, for prefixes and words one edit away; undefined until the first search. */
  #words: SearchableMap<Posting> | undefined;
  /** The same postings by word as written: a change's many words are looked up here, not in the tree. */
  readonly #exact = new Map<string, Posting>();
  readonly #slotOf = new Map<string, number>();
  readonly #idAt: (string | undefined)[] = [];
  readonly #freeSlots: number[] = [];
  readonly #tuning: IndexTuning;
  #changes = 0;
  /**
   * The word work of committed changes not yet done, in order: a record's words to post in its slot, or a
   * withdrawn record's words to take out of its slot (the slot is free once done). A search does it all
   * first; until then it is done a few milliseconds per event-loop turn, never in the turn of the commit.
   */
  #pending: { slot: number; record: StoredResource; add: boolean }[] = [];
  /** Where the undone work of `#pending` starts (done work is dropped once all of it is done). */
  #next = 0;
  #draining = false;
  /** Told when the pending word work is all done (`current`). */
  #waiters: (() => void)[] = [];

  /** @param records the committed records (the store's own map, changed in place before each call here). */
  constructor(
    private readonly records: ReadonlyMap<string, StoredResource>,
    tuning: Partial<IndexTuning> = {},
  ) {
    this.#keys = [...records.values()].map((r) => keyOf(r.provider, r.id)).sort();
    this.#tuning = {
      denseMin: DENSE_MIN,
      sparseQueryMax: SPARSE_QUERY_MAX,
      drainTurnRecords: Infinity,
      drainTurnMs: DRAIN_TURN_MS,
      ...tuning,
    };
  }

  /** How many puts and removals the index has seen: a list of the records made at one count holds until the next. */
  get changes(): number {
    return this.#changes;
  }

  /** `record` was stored, replacing `previous` when there was one. */
  put(record: StoredResource, previous: StoredResource | undefined): void {
    this.#changes++;
    if (previous) this.remove(previous);
    const key = keyOf(record.provider, record.id);
    const at = this.#firstAfter(key, false);
    this.#keys.splice(at, 0, key);
    if (!this.#words) return;
    const slot = this.#claimSlot(record);
    this.#keySlots.splice(at, 0, slot);
    this.#defer({ slot, record, add: true });
  }

  /** `previous` was withdrawn. */
  remove(previous: StoredResource): void {
    this.#changes++;
    const key = keyOf(previous.provider, previous.id);
    const at = this.#firstAfter(key, false);
    if (this.#keys[at] !== key) return;
    this.#keys.splice(at, 1);
    if (!this.#words) return;
    this.#keySlots.splice(at, 1);
    const slot = this.#slotOf.get(previous.id)!;
    this.#slotOf.delete(previous.id);
    this.#idAt[slot] = undefined;
    this.#defer({ slot, record: previous, add: false });
  }

  /** Word work waiting for a later turn (or the next search). */
  get pendingWords(): number {
    return this.#pending.length - this.#next;
  }

  /**
   * Resolves once the word index is built and no word work is pending: a search that waits for it first
   * leaves the work (the first build too) to the turns it is done in, where the other requests are answered
   * between them, instead of doing it all in its own.
   */
  current(): Promise<void> {
    this.#begin();
    if (this.pendingWords === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #defer(work: { slot: number; record: StoredResource; add: boolean }): void {
    this.#pending.push(work);
    if (this.#draining) return;
    this.#draining = true;
    setImmediate(() => this.#drainSome());
  }

  /** A turn's share of the pending word work (its time and record bounds), then the rest on later turns. */
  #drainSome(): void {
    const until = performance.now() + this.#tuning.drainTurnMs;
    let done = 0;
    this.#drain(() => done++ === 0 || (done <= this.#tuning.drainTurnRecords && performance.now() < until));
    if (this.pendingWords > 0) {
      setImmediate(() => this.#drainSome());
      return;
    }
    this.#draining = false;
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  /** Does the pending word work in order while `more()` holds. */
  #drain(more: () => boolean): void {
    const words = this.#words!;
    const exact = this.#exact;
    while (this.#next < this.#pending.length && more()) {
      const { slot, record, add } = this.#pending[this.#next++]!;
      if (add) {
        const slots = this.#idAt.length;
        for (const [word, mask] of wordsOf(record)) {
          let posting = exact.get(word);
          if (!posting) {
            posting = new Posting();
            exact.set(word, posting);
            words.set(word, posting);
          }
          posting.set(slot, mask, slots, this.#tuning.denseMin);
        }
        continue;
      }
      for (const word of wordsOf(record).keys()) {
        const posting = exact.get(word);
        if (!posting) continue;
        posting.delete(slot);
        if (posting.size === 0) {
          exact.delete(word);
          words.delete(word);
        }
      }
      this.#freeSlots.push(slot);
    }
    if (this.#next === this.#pending.length) {
      this.#pending = [];
      this.#next = 0;
    }
  }

  find(request: FindRequest): FoundResource[] {
    return request.terms && request.terms.length > 0 ? this.#searchPage(request, request.terms) : this.#page(request);
  }

  /** The index of the first key after `key` (`strictly`), or at or after it. */
  #firstAfter(key: string, strictly: boolean): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k = this.#keys[mid]!;
      if (k < key || (strictly && k === key)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #page({ providers, after, limit }: FindRequest): FoundResource[] {
    const out: FoundResource[] = [];
    const start = after ? this.#firstAfter(keyOf(after.provider, after.id), true) : 0;
    for (const [lo, hi] of this.#scopeRanges(providers)) {
      for (let i = Math.max(start, lo); i < hi && out.length < limit; i++) {
        const record = this.#recordAtKey(i);
        if (record) out.push({ record, tier: 0 });
      }
    }
    return out;
  }

  /** The record of `#keys[i]`. */
  #recordAtKey(i: number): StoredResource | undefined {
    const key = this.#keys[i]!;
    return this.records.get(key.slice(key.indexOf('\u0000') + 1));
  }

  /** A slot of its own for `record`, its words not yet posted. */
  #claimSlot(record: StoredResource): number {
    const slot = this.#freeSlots.pop() ?? this.#idAt.length;
    this.#slotOf.set(record.id, slot);
    this.#idAt[slot] = record.id;
    return slot;
  }

  #index(): SearchableMap<Posting> {
    this.#begin();
    if (this.pendingWords > 0) this.#drain(() => true);
    return this.#words!;
  }

  /** Once: a slot for every record and its words pending, posted in later turns (or by the first search). */
  #begin(): void {
    if (this.#words) return;
    this.#words = new SearchableMap<Posting>();
    const slotOfKey = new Map<string, number>();
    for (const record of this.records.values()) {
      const slot = this.#claimSlot(record);
      slotOfKey.set(keyOf(record.provider, record.id), slot);
      this.#defer({ slot, record, add: true });
    }
    this.#keySlots = this.#keys.map((key) => slotOfKey.get(key)!);
  }

  /** The postings of every word a term matches: as written, by prefix, one edit away. */
  #postingsOf(term: SearchTerm): TermPostings {
    const words = this.#index();
    const found = new Map<string, Posting>();
    const exact = this.#exact.get(term.word);
    if (exact) found.set(term.word, exact);
    if (term.prefix) for (const [word, posting] of words.atPrefix(term.word)) found.set(word, posting);
    if (term.fuzzy) for (const [word, [posting]] of words.fuzzyGet(term.word, 1)) found.set(word, posting);
    const postings = [...found.values()];
    return { postings, size: postings.reduce((n, p) => n + p.size, 0) };
  }

  #searchPage(request: FindRequest, terms: readonly SearchTerm[]): FoundResource[] {
    const byTerm = terms.map((term) => this.#postingsOf(term)).sort((a, b) => a.size - b.size);
    if (byTerm[0]!.size === 0) return [];
    return byTerm[0]!.size <= this.#tuning.sparseQueryMax ? this.#fewMatches(request, byTerm) : this.#manyMatches(request, byTerm);
  }

  /**
   * The rarest term's matches, narrowed by every other term's postings, sorted into the page. A term of
   * several words (a prefix, fuzzy neighbours) is united once where that is cheaper than looking up each of
   * its words per match; a match's record is read only once every term holds it.
   */
  #fewMatches({ providers, after, limit }: FindRequest, byTerm: readonly TermPostings[]): FoundResource[] {
    const scope = providers ? new Set(providers) : undefined;
    const rarest = byTerm[0]!.postings.length === 1 ? byTerm[0]!.postings[0]!.entries() : unitedMasks(byTerm[0]!.postings);
    const others = byTerm.slice(1).map((term) => maskOf(term, byTerm[0]!.size));
    const page: Match[] = [];
    const before = (a: Match, b: Match) => comparePositions(a.position, b.position) < 0;
    for (const [slot, mask] of rarest) {
      let tier = WEIGHT_OF_MASK[mask]!;
      for (const masksOf of others) {
        const m = masksOf(slot);
        if (m === 0) {
          tier = 0;
          break;
        }
        tier += WEIGHT_OF_MASK[m]!;
      }
      if (tier === 0) continue;
      const id = this.#idAt[slot]!;
      const record = this.records.get(id);
      if (!record || (scope && !scope.has(record.provider))) continue;
      // The first `limit` matches after the cursor, in (tier desc, provider, id) order, kept sorted as they come.
      const match = { record, tier, position: { provider: record.provider, id, tier } };
      if (after && comparePositions(match.position, after) <= 0) continue;
      if (page.length === limit && !before(match, page[limit - 1]!)) continue;
      let at = page.length;
      while (at > 0 && before(match, page[at - 1]!)) at--;
      page.splice(at, 0, match);
      if (page.length > limit) page.pop();
    }
    return page.map(({ record, tier }) => ({ record, tier }));
  }

  /**
   * Each term's field masks as one byte per slot (a broad word's own bytes, or the union of the term's
   * words), then one walk of the scope in (provider, id) order that keeps the first `limit` matches after the
   * cursor of each tier; the page is the best tiers' lists. The walk stops once the highest tier a record
   * could have (each term's heaviest field in any record, and no higher than the cursor's) has a full page:
   * every record after it in the walk would come after that page.
   */
  #manyMatches({ providers, after, limit }: FindRequest, byTerm: readonly TermPostings[]): FoundResource[] {
    const slots = this.#idAt.length;
    const masks = byTerm.map(({ postings }) => {
      const own = postings.length === 1 ? postings[0]!.bytes() : undefined;
      if (own) return own;
      const union = new Uint8Array(slots);
      for (const posting of postings) posting.orInto(union);
      return union;
    });
    const afterTier = after?.tier ?? 0;
    const afterAt = after ? this.#firstAfter(keyOf(after.provider, after.id), true) : 0;
    const highest = byTerm.reduce((sum, { postings }) => sum + WEIGHT_OF_MASK[postings.reduce((m, p) => m | p.fields, 0)]!, 0);
    const top = after ? Math.min(highest, afterTier) : highest;
    const byTier: number[][] = [];
    walk: for (const [lo, hi] of this.#scopeRanges(providers)) {
      keys: for (let i = lo; i < hi; i++) {
        const slot = this.#keySlots[i]!;
        let tier = 0;
        for (const bytes of masks) {
          const mask = bytes[slot] ?? 0;
          if (mask === 0) continue keys;
          tier += WEIGHT_OF_MASK[mask]!;
        }
        if (after && (tier > afterTier || (tier === afterTier && i < afterAt))) continue;
        const list = (byTier[tier] ??= []);
        if (list.length < limit) list.push(i);
        if (tier === top && list.length === limit) break walk;
      }
    }
    const out: FoundResource[] = [];
    for (let tier = byTier.length - 1; tier > 0 && out.length < limit; tier--) {
      for (const i of byTier[tier] ?? []) {
        if (out.length === limit) break;
        const record = this.#recordAtKey(i);
        if (record) out.push({ record, tier });
      }
    }
    return out;
  }

  /** The ranges of `#keys` a scope covers, in key order (everything without one). */
  #scopeRanges(providers: readonly string[] | undefined): [number, number][] {
    if (!providers) return [[0, this.#keys.length]];
    return [...new Set(providers)].sort().map((provider) => {
      const prefix = `${provider}\u0000`;
      return [this.#firstAfter(prefix, false), this.#firstAfter(`${provider}\u0001`, false)];
    });
  }
}
