// /readyz on the PostgreSQL store follows the database: 503 `not_ready` while it refuses
// connections, 200 again once it is back, over a real socket.
import t from 'tap';
import { request } from 'undici';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { listen } from '../helpers/sockets.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('/readyz is 503 while the database is unreachable and 200 once it is back', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url } });
    const origin = await listen(h.app);
    const readyz = async () => {
      const res = await request(`${origin}/readyz`);
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    t.same(await readyz(), { status: 200, body: { status: 'ready' } });

    const dbName = new URL(url).pathname.slice(1);
    await queryOnce(base, `ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
    await queryOnce(base, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
      dbName,
    ]);
    const down = await readyz();
    t.equal(down.status, 503);
    t.equal(down.body.code, 'not_ready');
    t.notMatch(JSON.stringify(down.body), /postgres|127\.0\.0\.1|FATAL/i, 'no internals');
    t.equal((await readyz()).status, 503, 'stays 503 while the database is away');

    await queryOnce(base, `ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
    t.same(await readyz(), { status: 200, body: { status: 'ready' } }, 'ready again once the database answers');
  });
}
