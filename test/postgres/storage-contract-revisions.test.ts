// Digests and revisions in the storage contract (test/helpers/storage-contract-revisions.ts) against the PostgreSQL store.
import t from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { runRevisionContract } from '../helpers/storage-contract-revisions.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  await (await PostgresStore.open({ databaseUrl: url })).close(); // migrates the new database
  runRevisionContract(t, 'postgres', {
    async fresh() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('TRUNCATE resources, resource_revisions, revision_holds, machines, profiles, registry_state, workloads, audit_log');
      await c.end();
      return PostgresStore.open({ databaseUrl: url });
    },
    reopen: async () => PostgresStore.open({ databaseUrl: url }),
  });
}
