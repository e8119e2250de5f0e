// A PostgreSQL crash under load (`pg_ctl stop -m immediate` while 8 writers keep registering): the server
// process lives, the writes refused meanwhile answer 503 `storage_unavailable` (never a 500), writes succeed
// again once the database is back, and every acknowledged write is stored. The database is a cluster of this
// test's own, so the outage reaches no other suite.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { CANARY, testEnv } from '../helpers/build.js';
import { postgresOrSkip, privateCluster, queryOnce } from '../helpers/postgres.js';
import { killAllServers, startServer } from '../crash/server-process.js';
import { until } from '../helpers/wait.js';

const base = postgresOrSkip(t);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

if (base) {
  t.test('a PostgreSQL crash under 8 writers: 503 meanwhile, the process lives, writes resume, nothing acknowledged lost', async (t) => {
    t.teardown(killAllServers);
    const cluster = await privateCluster(t);
    if (!cluster) {
      t.comment("no PostgreSQL binaries to start a cluster of this test's own: skipped");
      return;
    }
    const server = await startServer(
      testEnv('/nonexistent-data-dir', { DATABASE_URL: cluster.url, RATE_LIMIT_WRITES_PER_MINUTE: '0' }),
      60_000,
    );
    const acknowledged: string[] = [];
    const statuses = new Map<string, number>();
    const unexpected: string[] = [];
    let phase: 'before' | 'down' | 'after' = 'before';
    let ackedAfter = 0;
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const id = `o-${w}-${i}`;
        const res = await request(`${server.origin}/api/acp/providers/huabu/resources/${id}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${CANARY.huabu}`, 'content-type': 'application/json' },
          body: JSON.stringify({ schemaVersion: 1, name: `Name of ${id}`, description: `About ${id}.`, instructions: `Use ${id}.` }),
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        }).catch((err: Error) => err);
        if (res instanceof Error) {
          unexpected.push(`${id}: ${res.message}`);
          await sleep(50);
          continue;
        }
        const body = (await res.body.json().catch(() => ({}))) as { code?: string };
        const key = `${res.statusCode} ${body.code ?? ''}`.trim();
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (res.statusCode === 201) {
          acknowledged.push(id);
          if (phase === 'after') ackedAfter++;
        } else if (!(res.statusCode === 503 && body.code === 'storage_unavailable')) {
          unexpected.push(`${id}: ${key}`);
        }
        if (res.statusCode !== 201) await sleep(20); // refused: back off a little, as a client would
      }
    };
    const writers = Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
    const waitFor = (what: string, ok: () => boolean) => until(what, ok, { within: 60_000, every: 5 });
    try {
      await waitFor('100 acknowledged writes', () => acknowledged.length >= 100);
      await cluster.stop('immediate');
      phase = 'down';
      const refusedBefore = statuses.get('503 storage_unavailable') ?? 0;
      await waitFor(
        'writes refused while the database is down',
        () => (statuses.get('503 storage_unavailable') ?? 0) >= refusedBefore + 8 || !alive(server.pid),
      );
      await sleep(500);
      t.ok(alive(server.pid), 'the server process survives the database crash');
      await cluster.start();
      phase = 'after';
      await waitFor('50 writes acknowledged after the restart', () => ackedAfter >= 50 || !alive(server.pid));
    } finally {
      stop = true;
      await writers;
    }
    t.ok(alive(server.pid), 'the server process is alive at the end');
    t.ok((statuses.get('503 storage_unavailable') ?? 0) > 0, 'writes during the outage were refused with 503 storage_unavailable');
    t.same(unexpected, [], `no other answer (${JSON.stringify(Object.fromEntries(statuses))})`);
    t.ok(ackedAfter >= 50, `writes succeed again after recovery (${ackedAfter})`);
    const stored = new Set((await queryOnce<{ id: string }>(cluster.url, `SELECT id FROM resources WHERE id LIKE 'o-%'`)).map((r) => r.id));
    t.same(
      acknowledged.filter((id) => !stored.has(id)),
      [],
      `all ${acknowledged.length} acknowledged registrations are stored`,
    );
    const health = await request(`${server.origin}/healthz`).then(async (r) => (await r.body.text(), r.statusCode));
    t.equal(health, 200);
  });
}
