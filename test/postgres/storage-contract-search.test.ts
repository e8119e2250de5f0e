// The storage contract of pages and search (test/helpers/storage-contract-search.ts) against the
// PostgreSQL store. One fresh database for this file; each subtest starts from an empty table.
import t, { type Test } from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { realSkills, runSearchContract } from '../helpers/storage-contract-search.js';
import { parseSearch } from '../../src/registry/search.js';
import type { PagePosition, RegistryStore } from '../../src/registry/store.js';
import {
  findResources,
  matchShare,
  scopeRows,
  scopeStatistics,
  SearchFactsCache,
  type ScopeStatistics,
  type SearchWalkTuning,
} from '../../src/storage/postgres/resource-search.js';
import { until } from '../helpers/wait.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  await (await PostgresStore.open({ databaseUrl: url })).close(); // migrates the new database
  const emptied = async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('TRUNCATE resources, audit_log');
    await c.end();
  };
  /** A client of the test's own on the emptied table. */
  const emptiedClient = async (t: Test) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    t.teardown(() => c.end());
    await c.query('TRUNCATE resources, audit_log');
    return c;
  };
  /** A store on the emptied table. */
  const fresh = async (searchWalk?: SearchWalkTuning) => {
    await emptied();
    return PostgresStore.open({ databaseUrl: url, ...(searchWalk ? { searchWalk } : {}) });
  };
  runSearchContract(t, 'postgres', {
    fresh: () => fresh(),
    runs: 25,
    shrink: false,
  });
  // The same contract where a search reads at most a row or two of the scope before it ranks every match:
  // pages settled by a full top tier, by a read that found no page, and by ranking, mixed within each walk.
  runSearchContract(t, 'postgres, searches reading 1–2 rows in page order', {
    fresh: () => fresh({ rowsPerResult: 1, minRows: 2, rankScopesUpTo: -1 }),
    runs: 10,
    shrink: false,
  });

  t.test('a search walked page by page gives the same pages whether it reads the scope in page order or ranks every match', async (t) => {
    const ranking = await fresh({ rowsPerResult: 0, minRows: 0, rankScopesUpTo: Infinity });
    t.teardown(() => ranking.close());
    for (const r of realSkills()) await ranking.putResource(r);
    const walkAll = async (s: RegistryStore, q: string, limit: number, providers?: string[]) => {
      const out: string[] = [];
      let after: PagePosition | undefined;
      // A walk that repeats itself would never end: no walk has more pages than there are records.
      for (let pages = 0; pages <= realSkills().length; pages++) {
        const page = await s.findResources({
          terms: parseSearch(q),
          limit,
          ...(providers ? { providers } : {}),
          ...(after ? { after } : {}),
        });
        out.push(...page.map((f) => `${f.tier} ${f.record.provider} ${f.record.id}`));
        if (page.length < limit) return out;
        const last = page.at(-1)!;
        after = { provider: last.record.provider, id: last.record.id, tier: last.tier };
      }
      return [...out, 'a page after the last'];
    };
    // Broad words (many matches over several tiers), a misspelt one, two-word and prefix queries.
    const queries = ['skill', 'the', 'use', 'code review', 'test driven', 'systmatic', 'plan', 'react'];
    const walking = await Promise.all(
      [
        { rowsPerResult: 1, minRows: 1, rankScopesUpTo: -1 },
        { rowsPerResult: 2, minRows: 5, rankScopesUpTo: -1 },
      ].map((searchWalk) => PostgresStore.open({ databaseUrl: url, searchWalk })),
    );
    t.teardown(() => Promise.all(walking.map((s) => s.close())));
    for (const q of queries) {
      for (const limit of [2, 5]) {
        for (const providers of [undefined, ['huabu', 'machine-a']]) {
          const expected = await walkAll(ranking, q, limit, providers);
          for (const [n, s] of walking.entries()) {
            t.same(
              await walkAll(s, q, limit, providers),
              expected,
              `${q}, limit ${limit}, ${providers ? 'scoped' : 'every provider'}, walk ${n}`,
            );
          }
        }
      }
    }
  });

  t.test('a short read of the scope never settles a page that a record further on outranks', async (t) => {
    const s = await fresh({ rowsPerResult: 1, minRows: 2, rankScopesUpTo: -1 });
    t.teardown(() => s.close());
    const record = (id: string, name: string, description: string, instructions: string) =>
      ({ schemaVersion: 1, id, provider: 'huabu', name, description, instructions }) as const;
    // The first records in page order hold the words in their bodies only; later ones in a summary or a name.
    for (const r of [
      record('a-1', 'First', 'Plain.', 'Feed the zebra and the okapi.'),
      record('a-2', 'Second', 'Plain.', 'The zebra sleeps; the okapi eats.'),
      record('a-3', 'Third', 'Plain.', 'A zebra, an okapi.'),
      record('m-summary', 'Middle', 'Knows the zebra well.', 'Ask about the okapi.'),
    ]) {
      await s.putResource(r);
    }
    const top = async (q: string) => (await s.findResources({ terms: parseSearch(q), limit: 2 })).map((f) => `${f.tier} ${f.record.id}`);
    t.same(await top('zebra'), ['2 m-summary', '1 a-1'], 'a term a later record holds in its summary');
    t.same(await top('okapi zebra'), ['3 m-summary', '2 a-1'], 'one term body-only everywhere, the other in a later summary');
    await s.putResource(record('z-name', 'Zebra keeper', 'Plain.', 'Okapi too.'));
    t.same(await top('zebra'), ['3 z-name', '2 m-summary'], 'a term a later record holds in its name');
    await s.putResource(record('y-name', 'Okapi care', 'Plain.', 'Brush daily.'));
    t.same(await top('okapi'), ['3 y-name', '1 a-1'], 'a term a later record holds in its name, and no record in a summary');
  });

  t.test('a search reuses what it learnt of its words only until the resources change, here or on another replica', async (t) => {
    const a = await fresh({ rowsPerResult: 1, minRows: 2, rankScopesUpTo: -1 });
    const b = await PostgresStore.open({ databaseUrl: url });
    t.teardown(() => Promise.all([a.close(), b.close()]));
    const record = (id: string, name: string, instructions: string) =>
      ({ schemaVersion: 1, id, provider: 'huabu', name, description: 'Plain.', instructions }) as const;
    for (const r of [
      record('a-1', 'First', 'Feed the zebra.'),
      record('a-2', 'Second', 'The zebra sleeps.'),
      record('a-3', 'Third', 'A zebra.'),
    ]) {
      await a.putResource(r);
    }
    const top = async (q: string) => (await a.findResources({ terms: parseSearch(q), limit: 2 })).map((f) => `${f.tier} ${f.record.id}`);
    // 'okapo' and 'tapit' are one substitution from 'okapi' and 'tapir' (and neither is their prefix).
    t.same(await top('okapo'), [], 'no word one edit away is held yet');
    await a.putResource(record('b-1', 'Fourth', 'An okapi.'));
    t.same(await top('okapo'), ['1 b-1'], 'a word this replica writes is a neighbour at its next search');
    t.same(await top('zebra'), ['1 a-1', '1 a-2'], 'a page of body matches: no record holds the word in a key or a summary');
    t.same(await top('tapit'), [], 'no tapir yet');
    await b.putResource(record('z-name', 'Zebra keeper', 'A tapir too.'));
    await until('the other replica’s records in the answers', async () => (await top('tapit'))[0] === '1 z-name', { within: 10_000 });
    t.same(await top('zebra'), ['3 z-name', '1 a-1'], 'the other replica’s name match comes first');
  });

  t.test('the word facts a search keeps are bounded, the oldest forgotten first', async (t) => {
    const c = await emptiedClient(t);
    const facts = SearchFactsCache.empty(2);
    for (const q of ['alpha x', 'bravo x', 'charlie x']) {
      await findResources(c, 'id, provider', (row) => row as never, { terms: parseSearch(q), limit: 5 }, { facts });
    }
    t.same([...facts.variants.keys()], ['bravo', 'charlie'], 'fuzzy words');
    t.equal(facts.inKey.size + facts.inSummary.size, 0, 'nothing matched: no bound was asked');
  });

  t.test("a scope's size is read from the planner's statistics, each provider once", async (t) => {
    const c = await emptiedClient(t);
    await c.query(`ANALYZE resources`);
    t.equal(scopeRows(await scopeStatistics(c), ['huabu']), 0, 'an analyzed empty table: no rows');
    await c.query(
      `INSERT INTO resources (id, provider, schema_version, name, description, instructions)
       SELECT 'r-' || i, CASE WHEN i % 4 = 0 THEN 'machine-a' ELSE 'huabu' END, 1, 'R ' || i, 'D.', 'I.' FROM generate_series(1, 400) i`,
    );
    await c.query(`ANALYZE resources`);
    const stats = await scopeStatistics(c);
    t.equal(scopeRows(stats, undefined), 400, 'every provider: the table');
    t.equal(Math.round(scopeRows(stats, ['machine-a'])!), 100, 'one provider: its share');
    t.equal(Math.round(scopeRows(stats, ['huabu', 'machine-a', 'huabu'])!), 400, 'each provider once');
    t.equal(Math.round(scopeRows(stats, ['machine-z'])!), 0, 'a provider with no rows');
  });

  t.test('a small scope is read in page order first only when the statistics of its words expect a page there', async (t) => {
    const c = await emptiedClient(t);
    await c.query(
      `INSERT INTO resources (id, provider, schema_version, name, description, instructions)
       SELECT 'r-' || i, 'huabu', 1, 'R ' || i, CASE WHEN i % 4 = 0 THEN 'Okapi den.' ELSE 'Plain.' END, 'Feed the zebra.'
       FROM generate_series(1, 400) i`,
    );
    await (await PostgresStore.open({ databaseUrl: url })).close(); // writes the rows' search vectors
    await c.query('ANALYZE resources');
    const statistics = await scopeStatistics(c);
    const share = (q: string) =>
      Number(
        matchShare(
          statistics,
          parseSearch(q),
          parseSearch(q).map((term) => [term.word]),
        ).toFixed(2),
      );
    t.equal(share('zebra'), 1, 'a word every record holds');
    t.equal(share('okapi'), 0.25, 'a word one record in four holds');
    t.equal(share('zebra okapi'), 0.25, 'two words');
    t.equal(share('oka'), 0.25, 'a prefix: the words it starts');
    t.equal(share('quokka'), 0, 'a word no record holds');

    const statements: string[] = [];
    const spy = {
      query: ((config: string | pg.QueryConfig, values?: unknown[]) => {
        statements.push((typeof config === 'string' ? config : config.text).trimStart().slice(0, 20));
        return c.query(config as string, values);
      }) as typeof c.query,
    };
    const search = async (q: string, limit: number, statistics?: ScopeStatistics) => {
      statements.length = 0;
      const found = await findResources(
        spy,
        'id, provider',
        (row) => row as never,
        { terms: parseSearch(q), limit, providers: ['huabu'] },
        { ...(statistics ? { statistics } : {}) },
      );
      return {
        found: found.map((f) => `${f.tier} ${(f.record as { id: string }).id}`),
        read: statements.some((s) => s.startsWith('WITH w')),
        ranked: statements.some((s) => s.startsWith('SELECT * FROM')),
      };
    };
    for (const [q, limit, read] of [
      ['zebra', 20, true],
      ['okapi', 5, true],
      ['okapi', 20, false],
      ['quokka', 5, false],
    ] as const) {
      const found = await search(q, limit, statistics);
      t.same(
        { read: found.read, ranked: found.ranked },
        { read, ranked: !read },
        `${q}, limit ${limit}: ${read ? 'read first, settled' : 'ranked at once'}`,
      );
      t.same(found.found, (await search(q, limit)).found, `${q}, limit ${limit}: the page ranking gives`);
    }
  });

  t.test('a row written without search vectors (before the migration, or by hand) is indexed at the next start', async (t) => {
    const c = await emptiedClient(t);
    await c.query(
      `INSERT INTO resources (id, provider, schema_version, name, description, instructions, display_name, user_content)
       VALUES ('old-tool', 'huabu', 1, 'Old tool', 'Converts walrus files.', 'Use it.', 'Antique', 'Ask the quokka.')`,
    );
    const before = await PostgresStore.open({ databaseUrl: url });
    const { rows } = await c.query<{ indexed: boolean }>(`SELECT search_source IS NOT NULL AS indexed FROM resources`);
    t.same(rows, [{ indexed: true }], 'filled at start');
    for (const q of ['walrus', 'antique', 'quokka', 'old']) {
      t.same(
        (await before.findResources({ terms: parseSearch(q), limit: 5 })).map((f) => [f.record.id, f.tier]),
        [['old-tool', q === 'walrus' ? 2 : q === 'quokka' ? 1 : 3]],
        q,
      );
    }
    await before.close();
  });
}
