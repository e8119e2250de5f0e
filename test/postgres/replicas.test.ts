// Two real service processes on one PostgreSQL database, as two replicas behind a load balancer would be:
// a change through one is visible through the other within a second, ownership and first launches have
// exactly one winner across both, and killing one mid-write loses nothing it acknowledged.
import t from 'tap';
import { request } from 'undici';
import { CANARY, recordIssuedToken, testEnv } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { killAllServers, startServer, type RunningServer } from '../crash/server-process.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  t.teardown(killAllServers);
  const env = { ...testEnv('/nonexistent-data-dir', { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'true' }) };
  // Started together: both migrate-or-wait under the advisory lock and both seed the host resources.
  const [a, b] = await Promise.all([startServer(env), startServer(env)]);

  const call = async (server: RunningServer, method: 'GET' | 'PUT' | 'POST', path: string, token: string, body?: unknown) => {
    const res = await request(`${server.origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.body.text();
    return { status: res.statusCode, etag: res.headers.etag as string | undefined, json: text ? JSON.parse(text) : undefined };
  };
  const resourceBody = (id: string, name = `Name of ${id}`) => ({
    schemaVersion: 1,
    name,
    description: `About ${id}.`,
    instructions: `Use ${id}.`,
  });
  const enroll = async (server: RunningServer, machineId: string) => {
    const res = await call(server, 'POST', '/api/acp/machines', CANARY.owner, { machineId });
    if (res.status !== 201) throw new Error(`enroll: ${res.status}`);
    recordIssuedToken(res.json.token);
    return res.json.token as string;
  };

  t.test('a registration through A is visible through B within one second (the catalogue ETag changes)', async (t) => {
    const before = await call(b, 'GET', '/api/acp/resources', CANARY.owner);
    t.equal(before.status, 200);
    t.same(
      before.json.resources.map((r: { id: string }) => r.id),
      ['huabu-access', 'local-resource-management'],
      'seeded once by two replicas',
    );
    t.equal((await call(a, 'PUT', '/api/acp/providers/huabu/resources/web-search', CANARY.huabu, resourceBody('web-search'))).status, 201);
    const started = performance.now();
    let after = before;
    while (after.etag === before.etag && performance.now() - started < 1_000) {
      after = await call(b, 'GET', '/api/acp/resources', CANARY.owner);
      if (after.etag === before.etag) await new Promise((r) => setTimeout(r, 10));
    }
    const ms = performance.now() - started;
    t.not(after.etag, before.etag, `ETag changed on B after ${ms.toFixed(0)} ms`);
    t.ok(ms < 1_000, 'within one second');
    t.ok(after.json.resources.some((r: { id: string }) => r.id === 'web-search'));
  });

  t.test('50 concurrent conflicting registrations of one ID by two providers over both replicas give exactly one owner', async (t) => {
    const mac = await enroll(a, 'mac-a');
    const attempts = Array.from({ length: 50 }, (_, i) => {
      const byHuabu = i % 2 === 0;
      const server = i % 4 < 2 ? a : b;
      return call(
        server,
        'PUT',
        `/api/acp/providers/${byHuabu ? 'huabu' : 'mac-a'}/resources/contested`,
        byHuabu ? CANARY.huabu : mac,
        resourceBody('contested', `Write ${i}`),
      ).then((res) => ({ provider: byHuabu ? 'huabu' : 'mac-a', status: res.status, code: res.json?.code as string | undefined }));
    });
    const results = await Promise.all(attempts);
    const stored = await call(b, 'GET', '/api/acp/resources/contested', CANARY.owner);
    const owner = stored.json.provider as string;
    const wins = results.filter((r) => r.status === 200 || r.status === 201);
    t.ok(wins.length > 0 && wins.every((r) => r.provider === owner), `every success is by the owner (${owner})`);
    t.equal(results.filter((r) => r.status === 201).length, 1, 'created once');
    t.ok(
      results.filter((r) => r.provider !== owner).every((r) => r.status === 409 && r.code === 'resource_conflict'),
      'the other provider always got 409',
    );
  });

  t.test('20 concurrent first launches of one thread over both replicas give one record', async (t) => {
    const profile = await call(a, 'POST', '/api/acp/profiles', CANARY.owner, {
      alias: 'Reviewer',
      agentletId: 'mac-a',
      workingDirPath: '/home/me/site',
      launch: { kind: 'acp-command', command: 'agent' },
    });
    t.equal(profile.status, 201);
    const launches = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call(i % 2 ? a : b, 'POST', '/api/acp/launch', CANARY.owner, {
          profileId: profile.json.id,
          canvasId: 'canvas-1',
          threadId: 'thread-1',
        }),
      ),
    );
    t.equal(launches.filter((l) => l.status === 201).length, 1, 'one 201');
    t.equal(launches.filter((l) => l.status === 200).length, 19, 'the rest 200 with the stored record');
    const first = JSON.stringify(launches[0]!.json);
    t.ok(
      launches.every((l) => JSON.stringify(l.json) === first),
      'one record for everyone',
    );
    const list = await call(b, 'GET', '/api/acp/workloads?canvasId=canvas-1', CANARY.owner);
    t.equal(list.json.workloads.length, 1);
  });

  t.test("a record's revisions written through A are kept and read through B, each as it was", async (t) => {
    const path = '/api/acp/providers/huabu/resources/rev-x';
    t.equal((await call(a, 'PUT', path, CANARY.huabu, resourceBody('rev-x', 'First name'))).status, 201);
    t.equal((await call(a, 'PUT', path, CANARY.huabu, resourceBody('rev-x', 'Second name'))).status, 200);
    const listed = await call(b, 'GET', '/api/acp/resources/rev-x/revisions', CANARY.owner);
    t.equal(listed.status, 200);
    const digests = (listed.json.revisions as { digest: string }[]).map((r) => r.digest);
    t.equal(digests.length, 2, 'both writes kept a revision');
    const [newest, oldest] = await Promise.all(digests.map((d) => call(b, 'GET', `/api/acp/resources/rev-x/revisions/${d}`, CANARY.owner)));
    t.equal(newest!.json.name, 'Second name', 'newest first');
    t.equal(oldest!.json.name, 'First name', 'the first write as it was');
  });

  t.test('killing one replica mid-write loses nothing it acknowledged', async (t) => {
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const id = `kill-${w}-${i}`;
        const res = await call(a, 'PUT', `/api/acp/providers/huabu/resources/${id}`, CANARY.huabu, resourceBody(id)).catch(() => undefined);
        if (!res) return; // the connection died with the process
        if (res.status === 201) acknowledged.push(id);
      }
    };
    const writers = Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
    while (acknowledged.length < 40) await new Promise((r) => setTimeout(r, 5));
    await a.kill();
    stop = true;
    await writers;
    const list = await call(b, 'GET', '/api/acp/resources?provider=huabu', CANARY.owner);
    t.equal(list.status, 200);
    const stored = new Set(list.json.resources.map((r: { id: string }) => r.id));
    const lost = acknowledged.filter((id) => !stored.has(id));
    t.same(lost, [], `all ${acknowledged.length} acknowledged writes are there`);
    const restarted = await startServer(env);
    const again = await call(restarted, 'GET', '/api/acp/resources?provider=huabu', CANARY.owner);
    t.ok(
      acknowledged.every((id) => again.json.resources.some((r: { id: string }) => r.id === id)),
      'and through a restarted replica',
    );
  });
}
