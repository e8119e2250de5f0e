// The PostgreSQL store's pages and search of the catalogue (docs/decisions/search-and-pages.md): pages
// walk the (provider, id) index, one index range per provider of the scope; a search matches the GIN-indexed
// `search` vector against a tsquery built from src/registry/search.ts's terms and orders by tier in SQL,
// reading a large scope (or a common word's) in page order first when that can settle the page
// (docs/decisions/postgres-search-reads-first.md). The vectors are written from the words `searchWords`
// makes (the same as the JSON store's index), never from PostgreSQL's own parsing of the raw text.
import { createHash } from 'node:crypto';
import { oneEditWords, searchTextsOf, searchWords, FIELD_WEIGHT, type SearchTerm } from '../../registry/search.js';
import type { FindRequest, FoundResource } from '../../registry/store.js';
import type { StoredResource } from '../../schemas/resource.js';
import type { Queryable } from './database.js';

/** The text PostgreSQL's `simple` configuration turns into exactly `searchWords(text)`. */
export const wordsText = (text: string): string => searchWords(text).join(' ');

/** The SQL of a weighted vector of words: `$k` weight A, `$s` B, `$b` C. */
export const sourceVectorSql = (k: string, s: string, b: string) =>
  `setweight(to_tsvector('simple', ${k}), 'A') || setweight(to_tsvector('simple', ${s}), 'B') || setweight(to_tsvector('simple', ${b}), 'C')`;

/** The provider's texts of a record for `sourceVectorSql`: key, summary, body. */
export function sourceWords(record: StoredResource): [string, string, string] {
  const t = searchTextsOf(record);
  return [wordsText(t.key), wordsText(t.summary), wordsText(t.body)];
}

/** A statement's cost bound: a search that takes longer is refused as too broad. */
const SEARCH_TIMEOUT_MS = 2000;

const quoted = (word: string) => `'${word}'`;

/** One term's tsquery, its lexemes restricted to `weight` when given (`A`, `B`). */
function termQuery(words: readonly string[], prefix: string | undefined, weight = ''): string {
  const parts = words.map((w) => `${quoted(w)}${weight ? `:${weight}` : ''}`);
  if (prefix !== undefined) parts.push(`${quoted(prefix)}:*${weight}`);
  return `(${parts.join(' | ')})`;
}

/** Entries a replica keeps of each kind of word fact (queries are anyone's words: the memory is bounded). */
const FACTS_KEPT = 4096;

/**
 * What a search learns of its words that only a write can change: the words one edit away from a fuzzy word
 * that some record holds, and whether some record holds a term in a key field or a summary. Kept for one
 * revision of the resources (PgResources: this replica's commits and every replica's notifications move it),
 * so a catalogue no one writes answers them from memory; the same freshness as the catalogue's caches.
 */
export interface SearchFacts {
  /** The most entries each map keeps; the oldest goes first. */
  readonly kept: number;
  /** A fuzzy word -> the words one edit away from it that some record holds. */
  readonly variants: Map<string, readonly string[]>;
  /** A term's key-field tsquery -> whether some record matches it... */
  readonly inKey: Map<string, boolean>;
  /** ...and its summary tsquery. */
  readonly inSummary: Map<string, boolean>;
}

/** The SearchFacts of the current revision: the same object until the revision moves, then a new one. */
export class SearchFactsCache {
  #revision: string | undefined;
  #facts: SearchFacts = SearchFactsCache.empty();

  constructor(private readonly kept = FACTS_KEPT) {}

  static empty(kept = FACTS_KEPT): SearchFacts {
    return { kept, variants: new Map(), inKey: new Map(), inSummary: new Map() };
  }

  /** Read the revision before the search's snapshot: facts a later write makes stale are never kept under it. */
  at(revision: string): SearchFacts {
    if (revision !== this.#revision) {
      this.#revision = revision;
      this.#facts = SearchFactsCache.empty(this.kept);
    }
    return this.#facts;
  }
}

function remember<K, V>(map: Map<K, V>, key: K, value: V, kept: number): void {
  if (map.size >= kept) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

/**
 * The answers for `keys`: from `kept` where a search since the last write asked, the rest from one `ask` of
 * them all, then kept (at most `limit`).
 */
async function keptOrAsked<V>(
  kept: Map<string, V>,
  keys: readonly string[],
  limit: number,
  ask: (missing: string[]) => Promise<Map<string, V>>,
): Promise<Map<string, V>> {
  const answers = new Map<string, V>();
  const missing: string[] = [];
  for (const key of new Set(keys)) {
    const value = kept.get(key);
    if (value === undefined) missing.push(key);
    else answers.set(key, value);
  }
  if (missing.length > 0) {
    for (const [key, value] of await ask(missing)) {
      answers.set(key, value);
      remember(kept, key, value, limit);
    }
  }
  return answers;
}

/**
 * The words each term matches exactly: itself, and for a fuzzy term the words one edit away that some
 * record holds (looked up in the GIN index, one probe each: most such words occur nowhere).
 */
async function termWords(db: Queryable, terms: readonly SearchTerm[], facts: SearchFacts): Promise<string[][]> {
  const fuzzy = terms.filter((t) => t.fuzzy).map((t) => t.word);
  const held = await keptOrAsked(facts.variants, fuzzy, facts.kept, async (missing) => {
    const edits = new Map(missing.map((word) => [word, oneEditWords(word)]));
    // One index probe per variant (the GIN index has no pending list: migration 7 turns fastupdate off, so
    // a probe does not read every row written since the last vacuum).
    const { rows } = await db.query<{ w: string }>(
      `SELECT w FROM unnest($1::text[]) AS v(w) WHERE EXISTS (SELECT 1 FROM resources WHERE search @@ (quote_literal(v.w))::tsquery)`,
      [[...new Set([...edits.values()].flat())]],
    );
    const present = new Set(rows.map((row) => row.w));
    return new Map([...edits].map(([word, variants]) => [word, variants.filter((w) => present.has(w))]));
  });
  return terms.map((t) => [t.word, ...(t.fuzzy ? held.get(t.word)! : [])]);
}

/**
 * Whether some record holds each query in the field `field` indexes on its own (migration 12: `a` the key
 * words, `b` the summary's).
 */
async function heldIn(db: Queryable, field: 'a' | 'b', queries: readonly string[], facts: SearchFacts): Promise<boolean[]> {
  const answers = await keptOrAsked(field === 'a' ? facts.inKey : facts.inSummary, queries, facts.kept, async (missing) => {
    const { rows } = await db.query<{ q: string }>(
      `SELECT q FROM unnest($1::text[]) AS v(q) WHERE EXISTS (SELECT 1 FROM resources WHERE ts_filter(search, '{${field}}') @@ v.q::tsquery)`,
      [missing],
    );
    const held = new Set(rows.map((row) => row.q));
    return new Map(missing.map((q) => [q, held.has(q)]));
  });
  return queries.map((q) => answers.get(q)!);
}

interface FoundRow {
  tier: number;
}

/** Whether and how far a search reads the scope in (provider, id) order before it ranks every match instead. */
export interface SearchWalkTuning {
  /** Rows read per result asked for (`limit`)... */
  rowsPerResult: number;
  /** ...and at least this many. */
  minRows: number;
  /** A scope of at most this many rows (the planner's statistics) is ranked at once: that costs less than a read. */
  rankScopesUpTo: number;
}

/**
 * A top tier of one row in three or more fills a page within the read; a sparser one is ranked. Ranking an
 * agent's 2,000 records takes 1–2 ms (tests choose other sizes).
 */
export const SEARCH_WALK: SearchWalkTuning = { rowsPerResult: 3, minRows: 30, rankScopesUpTo: 5000 };

/** The planner's statistics of the resources table: its rows, the providers' shares of them, common words. */
export interface ScopeStatistics {
  rows: number;
  /** The share of the rows of each of the most common providers... */
  common: ReadonlyMap<string, number>;
  /** ...and of any other provider. */
  other: number;
  /** The share of the rows that hold each of the most common words (any other word: too few to count). */
  words: ReadonlyMap<string, number>;
}

/** Reads the statistics ANALYZE keeps (rows -1 before the first). */
export async function scopeStatistics(db: Queryable): Promise<ScopeStatistics> {
  const { rows } = await db.query<{
    rows: number;
    vals: string[] | null;
    freqs: number[] | null;
    distinct: number | null;
    words: string[] | null;
    shares: number[] | null;
  }>(
    `SELECT c.reltuples::float8 AS rows, s.most_common_vals::text::text[] AS vals, s.most_common_freqs::float8[] AS freqs,
       s.n_distinct::float8 AS distinct, w.most_common_elems::text::text[] AS words, w.most_common_elem_freqs::float8[] AS shares
     FROM pg_class c
       LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'resources' AND s.attname = 'provider'
       LEFT JOIN pg_stats w ON w.schemaname = current_schema() AND w.tablename = 'resources' AND w.attname = 'search'
     WHERE c.oid = 'resources'::regclass`,
  );
  const { rows: total, vals, freqs, distinct, words, shares } = rows[0]!;
  const common = new Map((vals ?? []).map((v, i) => [v, freqs?.[i] ?? 0]));
  const providers = distinct === null ? 1 : distinct < 0 ? -distinct * total : distinct;
  const rest = 1 - [...common.values()].reduce((a, b) => a + b, 0);
  return {
    rows: total,
    common,
    other: Math.max(0, rest) / Math.max(1, providers - common.size),
    // A tsvector's element frequencies are followed by their minimum, maximum and a null frequency: the
    // first `words.length` belong to the words.
    words: new Map((words ?? []).map((w, i) => [w, shares?.[i] ?? 0])),
  };
}

/**
 * The share of the records the statistics expect to match every term, each term's words (`termWords`) and
 * prefix counted: a word the statistics do not list counts as none, terms as independent.
 */
export function matchShare(stats: ScopeStatistics, terms: readonly SearchTerm[], words: readonly (readonly string[])[]): number {
  return terms.reduce((share, term, n) => {
    const exact = new Set(words[n]);
    let held = [...exact].reduce((sum, w) => sum + (stats.words.get(w) ?? 0), 0);
    if (term.prefix) for (const [w, f] of stats.words) if (!exact.has(w) && w.startsWith(term.word)) held += f;
    return share * Math.min(1, held);
  }, 1);
}

/** How many rows the scope holds by the statistics; undefined when they are not there yet. */
export function scopeRows(stats: ScopeStatistics, providers: readonly string[] | undefined): number | undefined {
  if (stats.rows < 0) return undefined;
  if (!providers) return stats.rows;
  return [...new Set(providers)].reduce((n, p) => n + (stats.common.get(p) ?? stats.other) * stats.rows, 0);
}

/**
 * The first `$1` rows of the scope after `after`, in (provider, id) byte order: `columns` of each, its
 * parameters from `$2`. With providers, each provider's own index range from where the walk is in it: after
 * the cursor's ID in the cursor's provider, from its first ID ('' sorts before every ID) in a provider after
 * it, none before it (one row comparison for all would start every provider's range at the cursor and read
 * the rows between).
 */
function scopeWalk(
  columns: string,
  providers: readonly string[] | undefined,
  after: { provider: string; id: string } | undefined,
): { sql: string; params: unknown[] } {
  const order = `ORDER BY provider COLLATE "C", id COLLATE "C" LIMIT $1`;
  if (providers) {
    const ranges = [...new Set(providers)].flatMap((p): [string, string][] =>
      !after || p > after.provider ? [[p, '']] : p === after.provider ? [[p, after.id]] : [],
    );
    return {
      sql: `SELECT r.* FROM unnest($2::text[], $3::text[]) AS s(p, a) CROSS JOIN LATERAL (
           SELECT ${columns} FROM resources WHERE provider COLLATE "C" = s.p AND id COLLATE "C" > s.a COLLATE "C" ${order}) AS r
         ORDER BY r.provider COLLATE "C", r.id COLLATE "C" LIMIT $1`,
      params: [ranges.map(([p]) => p), ranges.map(([, a]) => a)],
    };
  }
  const keyset = `($2::text IS NULL OR (provider COLLATE "C", id COLLATE "C") > ($2::text COLLATE "C", $3::text COLLATE "C"))`;
  return { sql: `SELECT ${columns} FROM resources WHERE ${keyset} ${order}`, params: after ? [after.provider, after.id] : [null, null] };
}

/** A term's tsqueries: any field, and restricted to the key (A) and summary (B) weights. */
interface TermQueries {
  any: string;
  a: string;
  b: string;
}

/** The SQL of a match's tier over `search`, one CASE per term, its queries the parameters from `$first`. */
function tierSql(terms: number, first: number): string {
  const { key, summary, body } = FIELD_WEIGHT;
  // One CASE per term in the select list: a subquery over the terms per row took twice as long (3.2 vs
  // 1.1–1.6 ms to rank the 2,000 matches of an agent's scope at a million records).
  return Array.from(
    { length: terms },
    (_, n) =>
      `(CASE WHEN search @@ $${first + 2 * n}::tsquery THEN ${key} WHEN search @@ $${first + 1 + 2 * n}::tsquery THEN ${summary} ELSE ${body} END)`,
  ).join(' + ');
}

/** How `findResources` searches: its reads of the scope, the planner's statistics, the word facts it may reuse. */
export interface SearchOptions {
  walk?: SearchWalkTuning;
  /** The planner's statistics (scopeStatistics), when read. */
  statistics?: ScopeStatistics;
  /** Facts of the current revision (SearchFactsCache); none are reused or kept when absent. */
  facts?: SearchFacts;
}

/**
 * `findResources` of the PostgreSQL store. `columns` selects a record's columns; `toRecord` maps a row.
 * Throws the database's error (a statement timeout: SQLSTATE 57014) for the caller to map.
 */
export async function findResources<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
  request: FindRequest,
  { walk = SEARCH_WALK, statistics, facts = SearchFactsCache.empty() }: SearchOptions = {},
): Promise<FoundResource[]> {
  const { providers, terms, after, limit } = request;
  if (!terms || terms.length === 0) {
    const { sql, params } = scopeWalk(columns, providers, after);
    const { rows } = await db.query<Row>(sql, [limit, ...params]);
    return rows.map((row) => ({ record: toRecord(row), tier: 0 }));
  }
  const words = await termWords(db, terms, facts);
  const queries: TermQueries[] = terms.map((t, n) => ({
    any: termQuery(words[n]!, t.prefix ? t.word : undefined),
    a: termQuery(words[n]!, t.prefix ? t.word : undefined, 'A'),
    b: termQuery(words[n]!, t.prefix ? t.word : undefined, 'B'),
  }));
  // A small scope is ranked at once unless the statistics expect the read to find a page; so is any scope
  // before the table's first ANALYZE.
  const small = (statistics ? (scopeRows(statistics, providers) ?? 0) : 0) <= walk.rankScopesUpTo;
  const dense = statistics !== undefined && matchShare(statistics, terms, words) * readRows(walk, limit) >= limit;
  const walked = small && !dense ? undefined : await walkToPage(db, columns, toRecord, request, queries, walk, facts);
  if (walked) return walked;
  const { rows } = await db.query<Row & FoundRow>(
    `SELECT * FROM (
       SELECT ${columns}, ${tierSql(queries.length, 7)} AS tier
       FROM resources WHERE search @@ $1::tsquery AND ($2::text[] IS NULL OR provider = ANY($2::text[]))) AS m
     WHERE $3::int IS NULL OR m.tier < $3 OR (m.tier = $3 AND (m.provider COLLATE "C", m.id COLLATE "C") > ($4::text COLLATE "C", $5::text COLLATE "C"))
     ORDER BY m.tier DESC, m.provider COLLATE "C", m.id COLLATE "C" LIMIT $6`,
    [
      queries.map((q) => q.any).join(' & '),
      providers ? [...providers] : null,
      after?.tier ?? null,
      after?.provider ?? null,
      after?.id ?? null,
      limit,
      ...queries.flatMap((q) => [q.a, q.b]),
    ],
  );
  return rows.map((row) => ({ record: toRecord(row), tier: row.tier }));
}

/** How many rows of the scope a search reads in page order for a page of `limit`. */
const readRows = (tuning: SearchWalkTuning, limit: number) => Math.max(tuning.minRows, tuning.rowsPerResult * limit);

/**
 * A search page read from the scope in (provider, id) order, when a short read settles it; undefined when
 * every match must be ranked. After a cursor, the read starts at the cursor's place and settles the page when
 * it finds `limit` matches of the cursor's tier (every match of a higher tier came before the cursor). From
 * the start of the scope, it settles the page when it reads the whole scope (every match is at hand), or when
 * the best tier it found `limit` matches of is one no record can exceed: every term in a key field, or a bound
 * from whether some record holds each term in a key field or a summary (the indexes of migration 12, or
 * `facts`), asked lazily: per term, the key's weight when some record holds it in a key field, else the
 * summary's; only if that is not enough, the body's when no record holds it in a summary either. A tier that
 * cannot settle the page asks nothing.
 */
async function walkToPage<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
  { providers, after, limit }: FindRequest,
  queries: readonly TermQueries[],
  tuning: SearchWalkTuning,
  facts: SearchFacts,
): Promise<FoundResource[] | undefined> {
  if (after && after.tier === undefined) return undefined;
  const { key, summary, body } = FIELD_WEIGHT;
  const rows = readRows(tuning, limit);
  const scope = scopeWalk(`${columns}, search`, providers, after);
  const at = 2 + scope.params.length; // $at: every term; $at+1: `limit`; $at+2: the cursor's tier; then tierSql's
  // Only the page leaves the database: after a cursor, the matches of its tier (a higher one after the
  // cursor's place came before it); from the start, the best.
  const text = `WITH w AS MATERIALIZED (${scope.sql}),
       m AS MATERIALIZED (SELECT ${columns}, ${tierSql(queries.length, at + 3)} AS tier FROM w WHERE search @@ $${at}::tsquery)
     SELECT c.read, c.best, p.* FROM (
       SELECT (SELECT count(*) FROM w) AS read,
         (SELECT max(tier) FROM (SELECT tier FROM m GROUP BY tier HAVING count(*) >= $${at + 1}::int) AS t) AS best) AS c
     LEFT JOIN (SELECT * FROM m WHERE $${at + 2}::int IS NULL OR tier = $${at + 2}
       ORDER BY tier DESC, provider COLLATE "C", id COLLATE "C" LIMIT $${at + 1}) AS p ON true`;
  // Prepared once per connection and shape: its plan (index ranges of the scope) does not depend on the words.
  const { rows: found } = await db.query<Row & FoundRow & { read: string; best: number | null; id: string | null }>({
    name: `arr_search_walk_${createHash('sha256').update(text).digest('base64url').slice(0, 16)}`,
    text,
    values: [
      rows,
      ...scope.params,
      queries.map((q) => q.any).join(' & '),
      limit,
      after?.tier ?? null,
      ...queries.flatMap((q) => [q.a, q.b]),
    ],
  });
  const page = found.filter((row) => row.id !== null).map((row) => ({ record: toRecord(row), tier: row.tier }));
  if (after) return page.length >= limit ? page : undefined;
  if (Number(found[0]!.read) < rows) return page;
  const best = found[0]!.best;
  if (best === null) return undefined;
  if (best >= key * queries.length) return page;
  const inKey = await heldIn(
    db,
    'a',
    queries.map((q) => q.a),
    facts,
  );
  if (best >= inKey.reduce((sum, held) => sum + (held ? key : summary), 0)) return page;
  const unkeyed = queries.filter((_, n) => !inKey[n]);
  const inSummary = await heldIn(
    db,
    'b',
    unkeyed.map((q) => q.b),
    facts,
  );
  const bound = key * (queries.length - unkeyed.length) + inSummary.reduce((sum, held) => sum + (held ? summary : body), 0);
  // Settled: the best tier with a page of matches is the highest any record can have.
  return best >= bound ? page : undefined;
}

/**
 * How a search's transaction begins: one snapshot for its statements, each bounded by SEARCH_TIMEOUT_MS, and
 * no sequential scan. The planner guesses a thousand rows for a prefix tsquery on the key words that no row
 * holds, and would read the table until one turns up (0.8 s at a million records) rather than ask the index
 * that says at once there is none; every statement of a search has an index to read.
 */
export const SEARCH_BEGIN = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL statement_timeout = ${SEARCH_TIMEOUT_MS}; SET LOCAL enable_seqscan = off`;

/**
 * Fills the vectors of rows that have none (written before the search migration, or by an import), a
 * batch at a time. Returns how many rows it filled.
 */
export async function indexUnindexed<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
): Promise<number> {
  let filled = 0;
  for (;;) {
    const { rows } = await db.query<Row>(`SELECT ${columns} FROM resources WHERE search_source IS NULL LIMIT 500`);
    if (rows.length === 0) return filled;
    const records = rows.map(toRecord);
    const words = records.map(sourceWords);
    const owner = records.map((r) => searchTextsOf(r));
    await db.query(
      `UPDATE resources AS r SET search_source = ${sourceVectorSql('u.k', 'u.s', 'u.b')},
         search_display = setweight(to_tsvector('simple', u.dk), 'A'), search_notes = setweight(to_tsvector('simple', u.nb), 'C')
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(id, k, s, b, dk, nb)
       WHERE r.id = u.id`,
      [
        records.map((r) => r.id),
        words.map((w) => w[0]),
        words.map((w) => w[1]),
        words.map((w) => w[2]),
        owner.map((o) => wordsText(o.ownerKey)),
        owner.map((o) => wordsText(o.ownerBody)),
      ],
    );
    filled += rows.length;
  }
}
