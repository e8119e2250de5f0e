// The storage contract of pages and search (test/helpers/storage-contract-search.ts) against the
// PostgreSQL store. One fresh database for this file; each subtest starts from an empty table.
import t from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { runSearchContract } from '../helpers/storage-contract-search.js';
import { parseSearch } from '../../src/registry/search.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  await (await PostgresStore.open({ databaseUrl: url })).close(); // migrates the new database
  runSearchContract(t, 'postgres', {
    async fresh() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('TRUNCATE resources, audit_log');
      await c.end();
      return PostgresStore.open({ databaseUrl: url });
    },
    runs: 25,
    shrink: false,
  });

  t.test('a row written without search vectors (before the migration, or by hand) is indexed at the next start', async (t) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    t.teardown(() => c.end());
    await c.query('TRUNCATE resources, audit_log');
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
