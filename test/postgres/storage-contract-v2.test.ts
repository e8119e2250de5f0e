// Record v2 in the storage contract (test/helpers/storage-contract-v2.ts) against the PostgreSQL store.
import t from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { runV2Contract } from '../helpers/storage-contract-v2.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  await (await PostgresStore.open({ databaseUrl: url })).close(); // migrates the new database
  runV2Contract(t, 'postgres', {
    async fresh() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('TRUNCATE resources, machines, profiles, registry_state, workloads, audit_log');
      await c.end();
      return PostgresStore.open({ databaseUrl: url });
    },
    reopen: async () => PostgresStore.open({ databaseUrl: url }),
  });
}
