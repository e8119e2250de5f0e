// `agentlet-resources serve` as a real process against a real registry on a loopback socket: it connects and
// shows the machine connected, runs the owner's jobs, publishes a receipt dropped into the root within a
// second, reconnects after the registry restarts, is cut off when its machine is revoked, exits 0 on SIGTERM
// (the machine then shows disconnected), and writes JSON log lines none of which holds a token.
import t from 'tap';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { backoffMs } from '../../src/agentlet/serve.js';
import { RECONNECT_BASE_MS } from '../../src/agentlet/serve-constants.js';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import {
  addSkill,
  installFile,
  machine,
  receiptJson,
  startServe,
  tokenFile,
  writeReceipt,
  type Daemon,
  type Machine,
} from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { until } from '../helpers/wait.js';

// The daemon runs as the compiled executable: those tests need the build (`npm run build`).
const daemonBuild = needsBuild();

/** The part of a tap test these helpers use. */
type Test = Parameters<typeof build>[0] & { ok(v: unknown, m: string): boolean; same(a: unknown, b: unknown, m: string): boolean };

function startDaemon(t: Test, m: Machine, extra: string[] = []): Daemon {
  return startServe(t, m.root, m.remote, ['--reconnect-max-ms', '500', ...extra]);
}

async function statusOf(h: TestApp, machineId: string): Promise<string | undefined> {
  const res = await h.app.inject({ url: '/api/acp/machines', headers: h.owner });
  return (res.json().machines as { machineId: string; status: string }[]).find((x) => x.machineId === machineId)?.status;
}

async function problemsOf(h: TestApp, machineId = 'agentlet-7f3a'): Promise<unknown[] | undefined> {
  const res = await h.app.inject({ url: '/api/acp/machines', headers: h.owner });
  return (res.json().machines as { machineId: string; problems?: unknown[] }[]).find((x) => x.machineId === machineId)?.problems;
}

const problemEventCount = async (h: TestApp) =>
  ((await h.app.inject({ url: '/api/acp/changes?limit=1000', headers: h.owner })).json().changes as { type: string }[]).filter(
    (e) => e.type === 'machine.problems',
  ).length;

const catalogueIds = async (h: TestApp) =>
  ((await h.app.inject({ url: '/api/acp/resources', headers: h.owner })).json().resources as { id: string }[]).map((r) => r.id);

/** Every line is a JSON object (not a terminal), and none holds a token issued in the test. */
function assertLogs(t: Test, d: Daemon, tokens: string[]): void {
  t.ok(d.lines.length > 0, 'the daemon logged');
  t.same(
    d.lines.filter((l) => {
      try {
        return typeof JSON.parse(l) !== 'object';
      } catch {
        return true;
      }
    }),
    [],
    'every line is a JSON object',
  );
  t.same(
    tokens.filter((tok) => d.lines.some((l) => l.includes(tok))),
    [],
    'no token in any log line',
  );
}

t.test('serve: connects, runs jobs, publishes a dropped receipt within a second, exits 0 on SIGTERM', { skip: daemonBuild }, async (t) => {
  const m = await machine(t);
  t.equal((await addSkill(m, 'first-skill')).code, 0);
  const d = startDaemon(t, m);
  await d.waitFor(/^connected to /);
  t.equal(await statusOf(m.reg.h, 'agentlet-7f3a'), 'connected', 'the machine shows connected');
  await until('the first publish', async () => (await catalogueIds(m.reg.h)).includes('first-skill'));
  t.pass('the receipts present at start are published without sync');

  const ping = await m.reg.h.app.inject({
    method: 'POST',
    url: '/api/acp/machines/agentlet-7f3a/jobs',
    headers: m.reg.h.owner,
    payload: { type: 'ping' },
  });
  t.equal(ping.statusCode, 200, ping.body);
  t.same(ping.json().result, { pong: true }, 'a ping job round trip');
  const sync = await m.reg.h.app.inject({
    method: 'POST',
    url: '/api/acp/machines/agentlet-7f3a/jobs',
    headers: m.reg.h.owner,
    payload: { type: 'sync' },
  });
  t.equal(sync.statusCode, 200, sync.body);
  t.same(
    sync.json().result,
    { dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: ['first-skill'] },
    'a sync job reconciles the root',
  );
  await d.waitFor(/^job sync done$/);

  await installFile(m.root, 'skills/dropped-skill/SKILL.md', '# dropped\n');
  const dropped = Date.now();
  await writeReceipt(m.root, receiptJson('dropped-skill', { provider: 'agentlet-7f3a' }));
  await until('the dropped receipt in the catalogue', async () => (await catalogueIds(m.reg.h)).includes('dropped-skill'), {
    within: 5_000,
  });
  const publishedIn = Date.now() - dropped;
  t.ok(publishedIn < 1000, `a dropped receipt is published within a second (${publishedIn} ms)`);

  await rm(`${m.root}/receipts/first-skill.json`);
  const removed = Date.now();
  await until('the removed receipt withdrawn', async () => !(await catalogueIds(m.reg.h)).includes('first-skill'), { within: 5_000 });
  t.ok(Date.now() - removed < 1000, `a removed receipt is withdrawn within a second (${Date.now() - removed} ms)`);

  // One invalid receipt is that receipt's problem: the rest is published, the machine reports it, a sync job too.
  const before = d.lines.length;
  await writeReceipt(m.root, '{"schemaVersion": 1, "id": "half-writ', 'half-written.json');
  const warned = await d.waitFor(/^1 receipt\(s\) not published/, 5_000, before);
  t.match(warned.msg, /receipts\/half-written\.json: not valid JSON/, 'the log line names the receipt and why');
  t.same(await catalogueIds(m.reg.h), ['dropped-skill'], 'the valid receipts stay published');
  const halfWritten = { receipt: 'receipts/half-written.json', id: 'half-written', code: 'receipt_invalid', message: 'not valid JSON' };
  await until('the problem shown for the machine', async () => isDeepStrictEqual(await problemsOf(m.reg.h), [halfWritten]));
  t.pass('GET /machines shows the invalid receipt for that machine');
  const reported = await m.reg.h.app.inject({
    method: 'POST',
    url: '/api/acp/machines/agentlet-7f3a/jobs',
    headers: m.reg.h.owner,
    payload: { type: 'sync' },
  });
  t.equal(reported.statusCode, 200, reported.body);
  t.same(
    reported.json().result,
    { dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: ['dropped-skill'], problems: [halfWritten] },
    'a sync job publishes what is valid and names what is not',
  );
  await rm(`${m.root}/receipts/half-written.json`);
  await until('the problem cleared', async () => (await problemsOf(m.reg.h)) === undefined);

  t.equal(await d.stop(), 0, 'SIGTERM: exit 0');
  await d.waitFor(/^stopped$/, 1000);
  await until('the machine disconnected', async () => (await statusOf(m.reg.h, 'agentlet-7f3a')) === 'disconnected');
  t.pass('the machine shows disconnected');
  assertLogs(t, d, m.cli.tokens.concat(m.token));
});

t.test(
  'a hand-deleted skill folder withdraws that skill only: the rest is published, the machine reports it, and it comes back',
  { skip: daemonBuild },
  async (t) => {
    const m = await machine(t);
    for (const id of ['alpha-skill', 'beta-skill']) t.equal((await addSkill(m, id)).code, 0);
    const d = startDaemon(t, m);
    await d.waitFor(/^connected to /);
    await until('both published', async () => (await catalogueIds(m.reg.h)).length === 2);
    const eventsBefore = await problemEventCount(m.reg.h);

    await rm(`${m.root}/skills/alpha-skill`, { recursive: true });
    const gone = {
      receipt: 'receipts/alpha-skill.json',
      id: 'alpha-skill',
      code: 'entrypoint_missing',
      message: '/entrypoint skills/alpha-skill does not exist',
    };
    await until('the broken skill withdrawn', async () => JSON.stringify(await catalogueIds(m.reg.h)) === '["beta-skill"]', {
      within: 5_000,
    });
    t.pass('the deleted folder is noticed without any receipt changing, and only its record is withdrawn');
    await until('the problem shown', async () => isDeepStrictEqual(await problemsOf(m.reg.h), [gone]));
    t.pass('GET /machines shows the problem for that machine');
    t.equal(await statusOf(m.reg.h, 'agentlet-7f3a'), 'connected');
    await until('one machine.problems event', async () => (await problemEventCount(m.reg.h)) === eventsBefore + 1);
    t.pass('announced as one machine.problems event');

    t.equal((await addSkill(m, 'gamma-skill')).code, 0);
    await until('a later receipt published', async () => (await catalogueIds(m.reg.h)).includes('gamma-skill'), { within: 5_000 });
    t.same(await catalogueIds(m.reg.h), ['beta-skill', 'gamma-skill'], 'later publishes go on');
    t.same(await problemsOf(m.reg.h), [gone], 'the problem is still reported');
    t.equal(await problemEventCount(m.reg.h), eventsBefore + 1, 'an unchanged problem is not announced again');

    await installFile(m.root, 'skills/alpha-skill/SKILL.md', '# alpha-skill\n');
    await until('the repaired skill back', async () => (await catalogueIds(m.reg.h)).includes('alpha-skill'), { within: 5_000 });
    await until('the problem cleared', async () => (await problemsOf(m.reg.h)) === undefined);
    t.pass('putting the folder back publishes it again and clears the problem');
    t.equal(await d.stop(), 0);
    assertLogs(t, d, m.cli.tokens.concat(m.token));
  },
);

t.test('a failed publish says it will retry, and does, without any receipt changing', { skip: daemonBuild }, async (t) => {
  const m = await machine(t);
  t.equal((await m.reg.h.put('huabu', CANARY.huabu, 'taken-skill')).statusCode, 201, 'the host holds the ID');
  t.equal((await addSkill(m, 'taken-skill')).code, 0);
  const d = startDaemon(t, m);
  const failed = await d.waitFor(/^publish failed: /);
  t.match(failed.msg, /retry/, 'the line says it will retry');
  t.equal(
    (await m.reg.h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/taken-skill', headers: m.reg.h.huabu }))
      .statusCode,
    204,
  );
  await until('the retried publish', async () =>
    (
      (await m.reg.h.app.inject({ url: '/api/acp/resources', headers: m.reg.h.owner })).json().resources as {
        id: string;
        provider: string;
      }[]
    ).some((r) => r.id === 'taken-skill' && r.provider === 'agentlet-7f3a'),
  );
  t.pass('published by the retry');
  t.equal(await d.stop(), 0);
  assertLogs(t, d, m.cli.tokens.concat(m.token));
});

t.test('serve reconnects after the registry restarts', { skip: daemonBuild }, async (t) => {
  const m = await machine(t);
  const port = (m.reg.h.app.server.address() as AddressInfo).port;
  const d = startDaemon(t, m);
  await d.waitFor(/^connected to /);
  const before = d.lines.length;
  await m.reg.h.app.close();
  await d.waitFor(/reconnecting|lost the channel/, 10_000, before);

  const again = await build(t, { dataDir: m.reg.h.dataDir });
  await again.app.listen({ port, host: '127.0.0.1' });
  await d.waitFor(/^connected to /, 20_000, before);
  t.equal(await statusOf(again, 'agentlet-7f3a'), 'connected', 'connected to the restarted registry');
  const ping = await again.app.inject({
    method: 'POST',
    url: '/api/acp/machines/agentlet-7f3a/jobs',
    headers: again.owner,
    payload: { type: 'ping' },
  });
  t.equal(ping.statusCode, 200, 'and runs its jobs');
  t.equal(await d.stop(), 0);
  assertLogs(t, d, m.cli.tokens.concat(m.token));
});

t.test(
  'revoking the machine closes its channel; the daemon says why, without the token, and stays stoppable',
  { skip: daemonBuild },
  async (t) => {
    const m = await machine(t);
    const d = startDaemon(t, m);
    await d.waitFor(/^connected to /);
    const revoked = await m.reg.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-7f3a', headers: m.reg.h.owner });
    t.equal(revoked.statusCode, 204);
    t.equal(await statusOf(m.reg.h, 'agentlet-7f3a'), 'disconnected', 'the channel closed at once');
    const refused = await d.waitFor(/rejected the token for machine agentlet-7f3a \(401\)/);
    t.match(refused.msg, m.tokenPath, 'names the token file to fix');
    const job = await m.reg.h.app.inject({
      method: 'POST',
      url: '/api/acp/machines/agentlet-7f3a/jobs',
      headers: m.reg.h.owner,
      payload: { type: 'ping' },
    });
    t.equal(job.statusCode, 503, 'no job reaches a revoked machine');
    t.equal(await d.stop(), 0);
    assertLogs(t, d, m.cli.tokens.concat(m.token));
  },
);

t.test(
  "serve with another machine's token: the registry refuses the channel (403), the daemon says so and still stops cleanly",
  { skip: daemonBuild },
  async (t) => {
    const m = await machine(t);
    const other = await m.reg.h.enroll('agentlet-other');
    const otherFile = await tokenFile(m.dir, other, 0o600, 'other.token');
    const d = startDaemon(t, { ...m, remote: ['--registry', m.reg.url, '--machine-id', 'agentlet-7f3a', '--token-file', otherFile] });
    await d.waitFor(/refused the channel of machine agentlet-7f3a \(403\): the token belongs to another machine/);
    t.equal(await statusOf(m.reg.h, 'agentlet-7f3a'), 'disconnected');
    t.equal(await statusOf(m.reg.h, 'agentlet-other'), 'disconnected');
    t.equal(await d.stop(), 0);
    assertLogs(t, d, m.cli.tokens.concat(m.token, other));
  },
);

t.test('reconnect delays: full jitter under a doubling bound, capped', (t) => {
  t.equal(
    backoffMs(0, 30_000, () => 0.999999),
    RECONNECT_BASE_MS - 1,
    'the first attempt waits under the base',
  );
  t.equal(
    backoffMs(3, 30_000, () => 0.5),
    (RECONNECT_BASE_MS * 8) / 2,
    'the bound doubles per attempt',
  );
  t.equal(
    backoffMs(40, 30_000, () => 0.999999),
    29_999,
    'never past the cap',
  );
  t.equal(
    backoffMs(5, 30_000, () => 0),
    0,
    'full jitter: down to zero',
  );
  t.end();
});
