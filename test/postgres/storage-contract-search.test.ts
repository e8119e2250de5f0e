// The storage contract of pages and search (test/helpers/storage-contract-search.ts) against the
// PostgreSQL store. One fresh database for this file; each subtest starts from an empty table.
import t from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { runSearchContract } from '../helpers/storage-contract-search.js';

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
  });
}
