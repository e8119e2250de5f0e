// The change listener: a replica whose listening connection drops (so it may miss notifications) stops
// trusting its caches at once, reconnects, and serves a stable revision again once it listens.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { resource } from '../helpers/storage-contract.js';
import { until } from '../helpers/wait.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('a dropped listener bypasses the cache until it has reconnected, and misses nothing', async (t) => {
    const url = await freshDatabase(t, base);
    const a = await PostgresStore.open({ databaseUrl: url });
    const b = await PostgresStore.open({ databaseUrl: url });
    t.teardown(() => Promise.all([a.close(), b.close()]));
    const stable = b.resourcesRevision();
    t.equal(b.resourcesRevision(), stable, 'stable while listening and nothing changes');

    const dbName = new URL(url).pathname.slice(1);
    const killed = await queryOnce(
      base,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'agent-resource-registry-listener'`,
      [dbName],
    );
    t.equal(killed.length, 2, 'both listeners dropped');
    await a.putResource(resource('huabu', 'while-down')); // its notification reaches nobody
    const during = b.resourcesRevision();
    t.not(during, stable, 'the revision moves: nothing cached before the drop is served');

    let settled = '';
    for (let i = 0; i < 100; i++) {
      await sleep(50);
      const r1 = b.resourcesRevision();
      if (r1 === b.resourcesRevision()) {
        settled = r1;
        break;
      }
    }
    t.ok(settled, 'listening again: the revision is stable again');
    t.same(
      (await b.listResources()).map((r) => r.id),
      ['while-down'],
      'the change made while down is read',
    );
    await a.putResource(resource('huabu', 'after'));
    await until('a notification after the reconnect', () => b.resourcesRevision() !== settled);
    t.not(b.resourcesRevision(), settled, 'notifications arrive again after the reconnect');
  });
}
