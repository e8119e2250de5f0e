// The storage contract (test/helpers/storage-contract.ts) against the PostgreSQL store, with a second
// store on the same database as the other replica. One fresh database for this file; each subtest starts
// from empty tables.
import t from 'tap';
import pg from 'pg';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { runContract } from '../helpers/storage-contract.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  await (await PostgresStore.open({ databaseUrl: url })).close(); // migrates the new database
  runContract(t, 'postgres', {
    async fresh() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('TRUNCATE resources, machines, profiles, registry_state, workloads, audit_log');
      await c.end();
      return PostgresStore.open({ databaseUrl: url });
    },
    replica: async () => PostgresStore.open({ databaseUrl: url }),
    async readAudit() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const { rows } = await c.query('SELECT at, actor, action, object_id AS id, outcome, details FROM audit_log ORDER BY seq');
        return rows.map(({ details, ...entry }) => (details === null ? entry : { ...entry, details }));
      } finally {
        await c.end();
      }
    },
  });
}
