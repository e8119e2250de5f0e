// The PostgreSQL store's pages and search of the catalogue (docs/decisions/search-and-pages.md): pages
// walk the (provider, id) index, one index range per provider of the scope; a search matches the GIN-indexed
// `search` vector against a tsquery built from src/registry/search.ts's terms and orders by tier in SQL.
// The vectors are written from the words `searchWords` makes (the same as the JSON store's index), never
// from PostgreSQL's own parsing of the raw text.
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

/**
 * `findResources` of the PostgreSQL store. `columns` selects a record's columns; `toRecord` maps a row.
 * Throws the database's error (a statement timeout: SQLSTATE 57014) for the caller to map.
 */
export async function findResources<Row extends object>(
  db: Queryable,
  columns: string,
  toRecord: (row: Row) => StoredResource,
  { providers, terms, after, limit }: FindRequest,
): Promise<FoundResource[]> {
  if (!terms || terms.length === 0) {
    const order = `ORDER BY provider COLLATE "C", id COLLATE "C" LIMIT $1`;
    if (providers) {
      // Each provider's own index range, from where the walk is in it: after the cursor's ID in the cursor's
      // provider, from its first ID ('' sorts before every ID) in a provider after it, none before it. One
      // row comparison for all would start every provider's range at the cursor and read the rows between.
      const ranges = [...new Set(providers)].flatMap((p): [string, string][] =>
        !after || p > after.provider ? [[p, '']] : p === after.provider ? [[p, after.id]] : [],
      );
      const { rows } = await db.query<Row>(
        `SELECT r.* FROM unnest($2::text[], $3::text[]) AS s(p, a) CROSS JOIN LATERAL (
           SELECT ${columns} FROM resources WHERE provider COLLATE "C" = s.p AND id COLLATE "C" > s.a COLLATE "C" ${order}) AS r
         ORDER BY r.provider COLLATE "C", r.id COLLATE "C" LIMIT $1`,
        [limit, ranges.map(([p]) => p), ranges.map(([, a]) => a)],
      );
      return rows.map((row) => ({ record: toRecord(row), tier: 0 }));
    }
    const position = after ? [after.provider, after.id] : [null, null];
    const keyset = `($2::text IS NULL OR (provider COLLATE "C", id COLLATE "C") > ($2::text COLLATE "C", $3::text COLLATE "C"))`;
    const { rows } = await db.query<Row>(`SELECT ${columns} FROM resources WHERE ${keyset} ${order}`, [limit, ...position]);
    return rows.map((row) => ({ record: toRecord(row), tier: 0 }));
  }
  const words = await termWords(db, terms);
  const queries = terms.map((t, n) => ({
    any: termQuery(words[n]!, t.prefix ? t.word : undefined),
    a: termQuery(words[n]!, t.prefix ? t.word : undefined, 'A'),
    b: termQuery(words[n]!, t.prefix ? t.word : undefined, 'B'),
  }));
  const { key, summary, body } = FIELD_WEIGHT;
  // The tier, one CASE per term in the select list: a subquery over the terms per row took twice as long
  // (3.2 vs 1.1–1.6 ms to rank the 2,000 matches of an agent's scope at a million records).
  const tier = queries
    .map(
      (_, n) =>
        `(CASE WHEN search @@ $${7 + 2 * n}::tsquery THEN ${key} WHEN search @@ $${8 + 2 * n}::tsquery THEN ${summary} ELSE ${body} END)`,
    )
    .join(' + ');
  const { rows } = await db.query<Row & FoundRow>(
    `SELECT * FROM (
       SELECT ${columns}, ${tier} AS tier
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

/** Runs `find` in a transaction whose statements are bounded by SEARCH_TIMEOUT_MS. */
export const SEARCH_STATEMENT_TIMEOUT = `SET LOCAL statement_timeout = ${SEARCH_TIMEOUT_MS}`;

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
