// The JSON store's indexes over its committed resources, kept up to date by every committed change (and
// every replayed journal line), never rebuilt per write: the (provider, id) order that pages walk, and a
// MiniSearch full-text index (built on the first search, then maintained record by record) that finds the
// records matching a query's terms. Ranking and the search rules are src/registry/search.ts's.
import MiniSearch from 'minisearch';
import { comparePositions } from '../registry/catalogue-pages.js';
import { searchTextsOf, searchWords, tierOf, type SearchField, type SearchTerm } from '../registry/search.js';
import type { FindRequest, FoundResource, PagePosition } from '../registry/store.js';
import type { StoredResource } from '../schemas/resource.js';

interface IndexedDoc {
  id: string;
  key: string;
  summary: string;
  body: string;
}

const FIELDS: SearchField[] = ['key', 'summary', 'body'];
/** Sorts as (provider, id): neither holds a NUL, which sorts before every other character. */
const keyOf = (provider: string, id: string) => `${provider}\u0000${id}`;

function docOf(record: StoredResource): IndexedDoc {
  const t = searchTextsOf(record);
  return { id: record.id, key: `${t.key} ${t.ownerKey}`, summary: t.summary, body: `${t.body} ${t.ownerBody}` };
}

export class ResourceIndex {
  /** `provider NUL id` of every record, sorted. */
  readonly #keys: string[];
  #search: MiniSearch<IndexedDoc> | undefined;

  /** @param records the committed records (the store's own map, changed in place before each call here). */
  constructor(private readonly records: ReadonlyMap<string, StoredResource>) {
    this.#keys = [...records.values()].map((r) => keyOf(r.provider, r.id)).sort();
  }

  /** `record` was stored, replacing `previous` when there was one. */
  put(record: StoredResource, previous: StoredResource | undefined): void {
    if (previous) this.remove(previous);
    const key = keyOf(record.provider, record.id);
    this.#keys.splice(this.#firstAfter(key, false), 0, key);
    this.#search?.add(docOf(record));
  }

  /** `previous` was withdrawn. */
  remove(previous: StoredResource): void {
    const key = keyOf(previous.provider, previous.id);
    const at = this.#firstAfter(key, false);
    if (this.#keys[at] === key) this.#keys.splice(at, 1);
    if (this.#search?.has(previous.id)) this.#search.discard(previous.id);
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
    const ranges = providers ? [...new Set(providers)].sort() : [undefined];
    const start = after ? this.#firstAfter(keyOf(after.provider, after.id), true) : 0;
    for (const provider of ranges) {
      const prefix = provider === undefined ? '' : `${provider}\u0000`;
      for (let i = Math.max(start, this.#firstAfter(prefix, false)); i < this.#keys.length && out.length < limit; i++) {
        const key = this.#keys[i]!;
        if (!key.startsWith(prefix)) break;
        const record = this.records.get(key.slice(key.indexOf('\u0000') + 1));
        if (record) out.push({ record, tier: 0 });
      }
      if (out.length >= limit) break;
    }
    return out;
  }

  #index(): MiniSearch<IndexedDoc> {
    if (!this.#search) {
      this.#search = new MiniSearch<IndexedDoc>({ fields: FIELDS, idField: 'id', tokenize: searchWords, processTerm: (t) => t });
      this.#search.addAll([...this.records.values()].map(docOf));
    }
    return this.#search;
  }

  #searchPage({ providers, after, limit }: FindRequest, terms: readonly SearchTerm[]): FoundResource[] {
    const index = this.#index();
    const scope = providers ? new Set(providers) : undefined;
    let matched = new Map<string, SearchField[][]>();
    for (const [n, term] of terms.entries()) {
      const next = new Map<string, SearchField[][]>();
      const results = index.search(term.word, {
        fields: FIELDS,
        prefix: term.prefix,
        fuzzy: term.fuzzy ? 1 : false,
        combineWith: 'OR',
        tokenize: (s) => [s],
        processTerm: (t) => t,
      });
      for (const result of results) {
        const id = result.id as string;
        const before = n === 0 ? [] : matched.get(id);
        if (!before) continue;
        if (n === 0 && scope && !scope.has(this.records.get(id)?.provider ?? '')) continue;
        const fields = new Set(Object.values(result.match).flat() as SearchField[]);
        next.set(id, [...before, [...fields]]);
      }
      matched = next;
      if (matched.size === 0) break;
    }
    const found: (FoundResource & { position: PagePosition })[] = [];
    for (const [id, fields] of matched) {
      const record = this.records.get(id);
      if (!record) continue;
      const tier = tierOf(fields);
      const position = { provider: record.provider, id, tier };
      if (after && comparePositions(position, after) <= 0) continue;
      found.push({ record, tier, position });
    }
    found.sort((a, b) => comparePositions(a.position, b.position));
    return found.slice(0, limit).map(({ record, tier }) => ({ record, tier }));
  }
}
