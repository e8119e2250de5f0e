// PostgreSQL schema migrations: applied once under the advisory lock when replicas open together, a
// newer database refused, `npm run migrate` with DATABASE_URL (dry run and real), and the 503 mapping of
// a database that went away.
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { runDatabaseMigrate } from '../../src/storage/postgres/commands.js';
import { DatabaseSchemaError, MIGRATIONS, SCHEMA_VERSION } from '../../src/storage/postgres/migrations.js';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('five stores opening one empty database together migrate it once', async (t) => {
    const url = await freshDatabase(t, base);
    const stores = await Promise.all(Array.from({ length: 5 }, () => PostgresStore.open({ databaseUrl: url, poolSize: 2 })));
    for (const s of stores) t.teardown(() => s.close());
    const rows = await queryOnce<{ version: number }>(url, 'SELECT version FROM schema_migrations ORDER BY version');
    t.same(
      rows.map((r) => r.version),
      MIGRATIONS.map((m) => m.version),
      'each migration recorded exactly once',
    );
    t.equal(
      await stores[0]!.putResource({ schemaVersion: 1, id: 'x', name: 'X', provider: 'huabu', description: 'X.', instructions: 'X.' }),
      'created',
    );
  });

  t.test(
    'npm run migrate with DATABASE_URL: dry run lists the pending migrations, then applies them, then has nothing to do',
    async (t) => {
      const url = await freshDatabase(t, base);
      const out: string[] = [];
      const err: string[] = [];
      t.equal(
        await runDatabaseMigrate(
          ['--dry-run'],
          url,
          (l) => out.push(l),
          (l) => err.push(l),
        ),
        0,
      );
      t.match(
        out.pop(),
        /0 → 12 \(dry run: nothing applied\): 001-initial, 002-resource-record-v2, 003-canvas token revocations, 004-audit-details, 005-change-events, 006-imported-skills, 007-catalogue-search, 008-record-digests-and-revisions, 009-workload-drift, 010-revision-usage, 011-skill-source-revision, 012-catalogue-search-field-words/,
      );
      t.same(await queryOnce(url, 'SELECT * FROM schema_migrations'), [], 'the dry run applied nothing');
      t.equal(
        await runDatabaseMigrate(
          [],
          url,
          (l) => out.push(l),
          (l) => err.push(l),
        ),
        0,
      );
      t.match(
        out.pop(),
        /0 → 12: 001-initial, 002-resource-record-v2, 003-canvas token revocations, 004-audit-details, 005-change-events, 006-imported-skills, 007-catalogue-search, 008-record-digests-and-revisions, 009-workload-drift, 010-revision-usage, 011-skill-source-revision, 012-catalogue-search-field-words/,
      );
      t.equal(
        await runDatabaseMigrate(
          [],
          url,
          (l) => out.push(l),
          (l) => err.push(l),
        ),
        0,
      );
      t.match(out.pop(), /already at version 12; nothing to do/);
      t.equal(
        await runDatabaseMigrate(
          ['--bogus'],
          url,
          (l) => out.push(l),
          (l) => err.push(l),
        ),
        2,
      );
      t.notMatch(err.join('\n'), url, 'the URL is never printed');
    },
  );

  t.test('a database at a newer schema version stops the start with a clear error', async (t) => {
    const url = await freshDatabase(t, base);
    await (await PostgresStore.open({ databaseUrl: url })).close();
    await queryOnce(url, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'from-the-future')`, [SCHEMA_VERSION + 1]);
    await t.rejects(PostgresStore.open({ databaseUrl: url }), DatabaseSchemaError);
    await t.rejects(PostgresStore.open({ databaseUrl: url }), {
      message: new RegExp(`version ${SCHEMA_VERSION + 1}, newer than .* knows \\(${SCHEMA_VERSION}\\)`),
    });
    const config = loadConfig(testEnv(await tempDataDir(), { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'false' }));
    await t.rejects(buildApp({ config, logger: createLogger('silent') }), DatabaseSchemaError, 'the app does not start');
    const err: string[] = [];
    t.equal(
      await runDatabaseMigrate(
        [],
        url,
        () => undefined,
        (l) => err.push(l),
      ),
      1,
    );
    t.match(err.join('\n'), /newer than/);
  });

  t.test('DATABASE_URL without the credentials in the environment is refused', (t) => {
    t.throws(() => loadConfig({ DATABASE_URL: base }), /OWNER_TOKEN, HUABU_PROVIDER_TOKEN, CANVAS_TOKEN_SECRET must be set too/);
    t.throws(() => loadConfig({ DATABASE_URL: 'mysql://x', OWNER_TOKEN: CANARY.owner }), /DATABASE_URL/);
    t.end();
  });

  t.test('a database that goes away answers 503 storage_unavailable, never a 500 with internals', async (t) => {
    const url = await freshDatabase(t, base);
    const config = loadConfig(testEnv(await tempDataDir(), { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'false' }));
    const app = await buildApp({ config, logger: createLogger('silent') });
    t.teardown(() => app.close());
    const put = () =>
      app.inject({
        method: 'PUT',
        url: '/api/acp/providers/huabu/resources/web-search',
        headers: { authorization: `Bearer ${CANARY.huabu}` },
        payload: { schemaVersion: 1, name: 'Web search', description: 'Search.', instructions: 'Use it.' },
      });
    t.equal((await put()).statusCode, 201);
    // Refuse new connections to this database and end the ones open now.
    const dbName = new URL(url).pathname.slice(1);
    await queryOnce(base, `ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
    await queryOnce(base, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [dbName]);
    const down = await put();
    t.equal(down.statusCode, 503);
    t.equal(down.json().code, 'storage_unavailable');
    t.notMatch(down.body, /postgres|127\.0\.0\.1|FATAL|terminat/i, 'no internals');
    const read = await app.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${CANARY.owner}` } });
    t.equal(read.statusCode, 503, 'reads too');
    await queryOnce(base, `ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
    const back = await put();
    t.equal(back.statusCode, 200, 'recovers once the database is back');
  });
}
