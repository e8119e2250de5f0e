// The PostgreSQL store's pages and search of the catalogue (docs/decisions/search-and-pages.md): pages
// walk the (provider, id) index, one index range per provider of the scope; a search matches the GIN-indexed
// `search` vector against a tsquery built from src/registry/search.ts's terms and orders by tier in SQL,
// reading a large scope in page order first when that can settle the page
// (docs/decisions/postgres-search-reads-first.md). The vectors are written from the words `searchWords`
// makes (the same as the JSON store's index), never from PostgreSQL's own parsing of the raw text.
import { oneEditWords, searchTextsOf, searchWords, FIELD_WEIGHT, type SearchTerm } from '../../registry/search.js';
import { comparePositions } from '../../registry/catalogue-pages.js';
import type { FindRequest, FoundResource, PagePosition } from '../../registry/store.js';
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

/**
 * The words each term matches exactly: itself, and for a fuzzy term the words one edit away that some
 * record holds (looked up in the GIN index, one probe each: most such words occur nowhere).
 */
async function termWords(db: Queryable, terms: readonly SearchTerm[]): Promise<string[][]> {
  const variants = terms.flatMap((t, n) => (t.fuzzy ? oneEditWords(t.word).map((w) => [n, w] as const) : []));
  const present = new Set<string>();
  if (variants.length > 0) {
    // One index probe per variant (the GIN index has no pending list: migration 7 turns fastupdate off, so
    // a probe does not read every row written since the last vacuum).
    const { rows } = await db.query<{ w: string }>(
      `SELECT w FROM unnest($1::text[]) AS v(w) WHERE EXISTS (SELECT 1 FROM resources WHERE search @@ (quote_literal(v.w))::tsquery)`,
      [[...new Set(variants.map(([, w]) => w))]],
    );
    for (const row of rows) present.add(row.w);
  }
  return terms.map((t, n) => [t.word, ...variants.filter(([m, w]) => m === n && present.has(w)).map(([, w]) => w)]);
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

/** The planner's statistics of the resources table: its rows, and the providers' shares of them. */
export interface ScopeStatistics {
  rows: number;
  /** The share of the rows of each of the most common providers... */
  common: ReadonlyMap<string, number>;
  /** ...and of any other provider. */
  other: number;
}

/** Reads the statistics ANALYZE keeps (rows -1 before the first). */
export async function scopeStatistics(db: Queryable): Promise<ScopeStatistics> {
  const { rows } = await db.query<{ rows: number; vals: string[] | null; freqs: number[] | null; distinct: number | null }>(
    `SELECT c.reltuples::float8 AS rows, s.most_common_vals::text::text[] AS vals, s.most_common_freqs::float8[] AS freqs,
       s.n_distinct::float8 AS distinct
     FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'resources' AND s.attname = 'provider'
     WHERE c.oid = 'resources'::regclass`,
  );
  const { rows: total, vals, freqs, distinct } = rows[0]!;
  const common = new Map((vals ?? []).map((v, i) => [v, freqs?.[i] ?? 0]));
  const providers = distinct === null ? 1 : distinct < 0 ? -distinct * total : distinct;
  const rest = 1 - [...common.values()].reduce((a, b) => a + b, 0);
  return { rows: total, common, other: Math.max(0, rest) / Math.max(1, providers - common.size) };
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

/**
 * `findResources` of the PostgreSQL store. `columns` selects a record's columns; `toRecord` maps a row.
 * Throws the database's error (a statement timeout: SQLSTATE 57014) for the caller to map.
 */
export async function findResources<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
  request: FindRequest,
  walk: SearchWalkTuning = SEARCH_WALK,
  /** The scope's rows by the planner's statistics, when known. */
  scopeSize?: number,
): Promise<FoundResource[]> {
  const { providers, terms, after, limit } = request;
  if (!terms || terms.length === 0) {
    const { sql, params } = scopeWalk(columns, providers, after);
    const { rows } = await db.query<Row>(sql, [limit, ...params]);
    return rows.map((row) => ({ record: toRecord(row), tier: 0 }));
  }
  const words = await termWords(db, terms);
  const queries: TermQueries[] = terms.map((t, n) => ({
    any: termQuery(words[n]!, t.prefix ? t.word : undefined),
    a: termQuery(words[n]!, t.prefix ? t.word : undefined, 'A'),
    b: termQuery(words[n]!, t.prefix ? t.word : undefined, 'B'),
  }));
  // Without statistics yet (a table never analyzed), as a small scope.
  const small = (scopeSize ?? 0) <= walk.rankScopesUpTo;
  const walked = small ? undefined : await walkToPage(db, columns, toRecord, request, queries, walk);
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

/**
 * A search page read from the scope in (provider, id) order, when a short read settles it; undefined when
 * every match must be ranked. After a cursor, the read starts at the cursor's place and settles the page when
 * it finds `limit` matches of the cursor's tier (every match of a higher tier came before the cursor). From
 * the start of the scope, it settles the page when it reads the whole scope (every match is at hand), or when
 * the best tier it found `limit` matches of is one no record can exceed: every term in a key field, or a bound
 * asked of the key and summary words' own indexes (migration 12), lazily: per term, the key's weight when
 * some record holds it in a key field, else the summary's; only if that is not enough, the body's when no
 * record holds it in a summary either. A tier that cannot settle the page asks nothing.
 */
async function walkToPage<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
  { providers, after, limit }: FindRequest,
  queries: readonly TermQueries[],
  tuning: SearchWalkTuning,
): Promise<FoundResource[] | undefined> {
  if (after && after.tier === undefined) return undefined;
  const { key, summary, body } = FIELD_WEIGHT;
  const rows = Math.max(tuning.minRows, tuning.rowsPerResult * limit);
  const scope = scopeWalk(`${columns}, search`, providers, after);
  const at = 2 + scope.params.length; // $at: every term; $at+1: `limit`; then each term's own query; then tierSql's
  const holds = (field: 'a' | 'b', n: number) =>
    `EXISTS (SELECT 1 FROM resources WHERE ts_filter(search, '{${field}}') @@ $${at + 2 + n}::tsquery)`;
  const bound = (withSummary: boolean) =>
    queries
      .map(
        (_, n) =>
          `(CASE WHEN ${holds('a', n)} THEN ${key} ${withSummary ? `WHEN ${holds('b', n)} THEN ${summary} ELSE ${body}` : `ELSE ${summary}`} END)`,
      )
      .join(' + ');
  // The bound's subqueries are in CASE branches, run only when reached (SEARCH_BEGIN keeps them on the indexes).
  const { rows: found } = await db.query<Row & FoundRow & { read: string; settled: boolean | null; id: string | null }>(
    `WITH w AS MATERIALIZED (${scope.sql}),
       m AS MATERIALIZED (SELECT ${columns}, ${tierSql(queries.length, at + 2 + queries.length)} AS tier FROM w WHERE search @@ $${at}::tsquery),
       best AS (SELECT max(tier) AS tier FROM (SELECT tier FROM m GROUP BY tier HAVING count(*) >= $${at + 1}::int) AS t)
     SELECT c.read, c.settled, m.* FROM (
       SELECT (SELECT count(*) FROM w) AS read,
         CASE WHEN ${after ? 'true' : 'false'} OR (SELECT tier FROM best) IS NULL THEN NULL
              WHEN (SELECT tier FROM best) >= ${key * queries.length} THEN true
              WHEN (SELECT tier FROM best) >= ${bound(false)} THEN true
              ELSE (SELECT tier FROM best) >= ${bound(true)} END AS settled) AS c
     LEFT JOIN m ON true`,
    [
      rows,
      ...scope.params,
      queries.map((q) => q.any).join(' & '),
      limit,
      ...queries.map((q) => q.any),
      ...queries.flatMap((q) => [q.a, q.b]),
    ],
  );
  const position = (m: FoundResource): PagePosition => ({ provider: m.record.provider, id: m.record.id, tier: m.tier });
  const matches = found
    .filter((row) => row.id !== null)
    .map((row) => ({ record: toRecord(row), tier: row.tier }))
    .sort((x, y) => comparePositions(position(x), position(y)));
  if (after) {
    const ofTier = matches.filter((m) => m.tier === after.tier);
    return ofTier.length >= limit ? ofTier.slice(0, limit) : undefined;
  }
  if (Number(found[0]!.read) < rows) return matches.slice(0, limit);
  // Settled: the best tier with a page of matches is the highest any record can have.
  return found[0]!.settled ? matches.slice(0, limit) : undefined;
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
