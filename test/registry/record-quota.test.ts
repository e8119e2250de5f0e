// Each machine's record quota (RECORDS_PER_MACHINE, RECORD_BYTES_PER_MACHINE) on every path that creates or
// grows its records: an agent's receipts, the machine's own put and reconcile (dry run too). Past a bound the
// answer is 409 `record_quota_exceeded` and nothing is written; a same-size replacement at the limit passes,
// a withdrawal frees room, concurrent writes at the limit never both pass, and the host has no quota. A
// machine's old text a thread pins counts too (retention cannot drop it); unpinned history does not.
import { readFile } from 'node:fs/promises';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { recordBytes } from '../../src/registry/record-quota.js';
import { build, CANARY, tempDataDir, testEnv, type TestApp } from '../helpers/build.js';

const receipt = (id: string, sourceContent = `Runs ${id}.`) => ({
  id,
  kind: 'tool',
  name: `Tool ${id}`,
  sourceContent,
  entrypoint: `tools/${id}/run.sh`,
});

async function world(t: Test, env: Record<string, string>) {
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '0', ...env } });
  const machine = await h.enroll('agentlet-a');
  const canvas = await h.canvasToken('canvas-x', 'agentlet-a');
  const record = (body: unknown) =>
    h.app.inject({ method: 'POST', url: '/api/rfs/canvas-x/resources/local/receipts', headers: h.bearer(canvas), payload: body as object });
  const remove = (id: string) =>
    h.app.inject({ method: 'DELETE', url: `/api/rfs/canvas-x/resources/local/receipts/${id}`, headers: h.bearer(canvas) });
  const mine = async () => {
    const res = await h.app.inject({ method: 'GET', url: '/api/acp/resources', headers: h.owner });
    return res
      .json<{ resources: { id: string; provider: string }[] }>()
      .resources.filter((r) => r.provider === 'agentlet-a')
      .map((r) => r.id);
  };
  return { h, machine, canvas, record, remove, mine };
}

const auditOf = async (h: TestApp) => {
  const text = await readFile(`${h.dataDir}/audit.jsonl`, 'utf8');
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { action: string; id: string; outcome: string });
};

t.test('defaults: 1000 records (a reconcile set at its largest) and 8 MiB of record text (a reconcile body at its largest)', async (t) => {
  const dir = await tempDataDir();
  t.same(loadConfig(testEnv(dir)).recordQuota, { maxRecords: 1000, maxBytes: 8 * 1024 * 1024 });
  t.same(loadConfig(testEnv(dir, { RECORDS_PER_MACHINE: '0', RECORD_BYTES_PER_MACHINE: '0' })).recordQuota, {
    maxRecords: 0,
    maxBytes: 0,
  });
  t.throws(() => loadConfig(testEnv(dir, { RECORDS_PER_MACHINE: '-1' })), /RECORDS_PER_MACHINE/);
  t.throws(() => loadConfig(testEnv(dir, { RECORD_BYTES_PER_MACHINE: '8MiB' })), /RECORD_BYTES_PER_MACHINE/);
});

t.test(
  'receipts: the count bound refuses the next new record with 409 and writes nothing; a replace and a removal still work',
  async (t) => {
    const { h, record, remove, mine } = await world(t, { RECORDS_PER_MACHINE: '3' });
    for (const id of ['r-1', 'r-2', 'r-3']) t.equal((await record(receipt(id))).statusCode, 200, `${id} recorded`);
    const over = await record(receipt('r-4'));
    t.equal(over.statusCode, 409);
    t.match(over.json(), {
      code: 'record_quota_exceeded',
      details: { provider: 'agentlet-a', limit: 'records', records: { held: 3, after: 4, max: 3 } },
    });
    t.same(await mine(), ['r-1', 'r-2', 'r-3'], 'nothing written');
    t.match(
      (await auditOf(h)).filter((e) => e.id === 'r-4'),
      [{ action: 'receipt.record', outcome: 'record_quota_exceeded' }],
      'the refusal is audited',
    );
    t.equal((await record(receipt('r-2', 'Runs r-2, now better.'))).statusCode, 200, 'a replacement at the limit passes');
    t.equal((await remove('r-1')).statusCode, 200);
    t.equal((await record(receipt('r-4'))).statusCode, 200, 'a withdrawal frees room');
    t.same(await mine(), ['r-2', 'r-3', 'r-4']);
  },
);

t.test('receipts: the byte bound refuses growth past it; a same-size or smaller replacement at the limit passes', async (t) => {
  const stored = (id: string, text: string) =>
    recordBytes({ schemaVersion: 2, id, name: `Tool ${id}`, provider: 'agentlet-a', sourceContent: text, userContent: '' });
  const text = 'x'.repeat(1000);
  const limit = stored('big-1', text) + stored('big-2', text);
  const { record, mine } = await world(t, { RECORD_BYTES_PER_MACHINE: String(limit) });
  t.equal((await record(receipt('big-1', text))).statusCode, 200);
  t.equal((await record(receipt('big-2', text))).statusCode, 200, 'exactly at the limit');
  const grown = await record(receipt('big-2', `${text}y`));
  t.equal(grown.statusCode, 409, 'one more byte');
  t.match(grown.json(), {
    code: 'record_quota_exceeded',
    details: { limit: 'bytes', bytes: { held: limit, after: limit + 1, max: limit } },
  });
  t.equal((await record(receipt('tiny', 'a'))).statusCode, 409, 'no room for another record');
  t.equal((await record(receipt('big-2', 'z'.repeat(1000)))).statusCode, 200, 'a same-size replacement at the limit');
  t.equal((await record(receipt('big-1', 'short'))).statusCode, 200, 'a smaller one');
  t.equal((await record(receipt('tiny', 'a'))).statusCode, 200, 'the room it freed is usable');
  t.same(await mine(), ['big-1', 'big-2', 'tiny']);
});

t.test(
  "a thread's pin of a machine's old text counts in its bytes: at the limit, the replace that leaves it pinned is refused",
  async (t) => {
    const stored = (id: string, text: string) =>
      recordBytes({ schemaVersion: 2, id, name: `Tool ${id}`, provider: 'agentlet-a', sourceContent: text, userContent: '' });
    const text = 'x'.repeat(1000);
    const limit = 2 * stored('big-1', text);
    const { h, machine, record } = await world(t, { RECORD_BYTES_PER_MACHINE: String(limit), REQUIRED_RESOURCE_IDS: '' });
    t.equal((await record(receipt('big-1', text))).statusCode, 200);
    t.equal((await record(receipt('big-1', 'y'.repeat(1000)))).statusCode, 200, 'unpinned history costs nothing: a same-size replace');
    const profile = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: {
        alias: 'Pinning',
        agentletId: 'agentlet-a',
        workingDirPath: '/work',
        launch: { kind: 'acp-command', command: 'agent' },
        resourceIds: ['big-1'],
      },
    });
    t.equal(profile.statusCode, 201);
    const launch = await h.app.inject({
      method: 'POST',
      url: '/api/acp/launch',
      headers: h.owner,
      payload: { profileId: profile.json<{ id: string }>().id, canvasId: 'canvas-x', threadId: 'thread-1' },
    });
    t.equal(launch.statusCode, 201, launch.body);
    t.equal(
      (await record(receipt('big-1', 'z'.repeat(1000)))).statusCode,
      200,
      'the pinned text is now history: it fits (exactly at the limit)',
    );
    const refused = await record(receipt('big-1', 'w'.repeat(1001)));
    t.equal(refused.statusCode, 409, 'one byte more, the pinned text counted');
    t.match(refused.json(), {
      code: 'record_quota_exceeded',
      details: { limit: 'bytes', bytes: { held: limit, after: limit + 1, max: limit } },
    });
    const reconcile = await h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/agentlet-a/resources',
      headers: h.bearer(machine),
      payload: { resources: [{ schemaVersion: 2, id: 'big-1', name: 'Tool big-1', sourceContent: 'v'.repeat(1001) }] },
    });
    t.equal(reconcile.statusCode, 409, 'a reconcile counts the pinned text too');
    t.equal((await record(receipt('big-1', 'short'))).statusCode, 200, 'a smaller replace passes');
  },
);

t.test("the machine's own put and reconcile (and its dry run) keep the same quota; a refused set changes nothing", async (t) => {
  const { h, machine, mine } = await world(t, { RECORDS_PER_MACHINE: '3' });
  const entry = (id: string) => ({ schemaVersion: 2, id, name: `Skill ${id}`, sourceContent: `Does ${id}.` });
  const reconcile = (ids: string[], dryRun = false) =>
    h.app.inject({
      method: 'PUT',
      url: `/api/acp/providers/agentlet-a/resources${dryRun ? '?dryRun=true' : ''}`,
      headers: h.bearer(machine),
      payload: { resources: ids.map(entry) },
    });
  t.equal((await reconcile(['s-1', 's-2'])).statusCode, 200);
  for (const dryRun of [true, false]) {
    const over = await reconcile(['s-1', 's-2', 's-3', 's-4'], dryRun);
    t.equal(over.statusCode, 409, dryRun ? 'dry run' : 'the set');
    t.match(over.json(), { code: 'record_quota_exceeded', details: { limit: 'records', records: { held: 2, after: 4, max: 3 } } });
  }
  t.same(await mine(), ['s-1', 's-2'], 'a refused set writes nothing');
  t.equal((await h.put('agentlet-a', machine, 's-3')).statusCode, 201);
  const put = await h.put('agentlet-a', machine, 's-4');
  t.equal(put.statusCode, 409);
  t.equal(put.json().code, 'record_quota_exceeded');
  t.same(await mine(), ['s-1', 's-2', 's-3']);
  t.equal((await reconcile(['s-2', 's-3', 's-5'])).statusCode, 200, 'a set at the limit that swaps records');
  t.same(await mine(), ['s-2', 's-3', 's-5']);
});

t.test('concurrent writes at the limit: exactly one passes', async (t) => {
  const { record, mine } = await world(t, { RECORDS_PER_MACHINE: '3' });
  for (const id of ['c-1', 'c-2']) t.equal((await record(receipt(id))).statusCode, 200);
  const answers = await Promise.all(['c-3', 'c-4', 'c-5', 'c-6', 'c-7', 'c-8'].map((id) => record(receipt(id))));
  t.same(answers.map((a) => a.statusCode).sort(), [200, 409, 409, 409, 409, 409]);
  t.equal((await mine()).length, 3);
});

t.test('the host provider has no record quota', async (t) => {
  const { h } = await world(t, { RECORDS_PER_MACHINE: '1', RECORD_BYTES_PER_MACHINE: '1' });
  for (const id of ['h-1', 'h-2', 'h-3']) t.equal((await h.put('huabu', CANARY.huabu, id)).statusCode, 201, id);
  const set = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources',
    headers: h.huabu,
    payload: {
      resources: ['h-4', 'h-5', 'h-6'].map((id) => ({ schemaVersion: 1, id, name: id, description: 'About it.', instructions: 'Use it.' })),
    },
  });
  t.equal(set.statusCode, 200, `a reconcile of the host's set: ${set.body}`);
});

t.test('a v1 record counts its ID, name, description and instructions; the refusal names the bound in words', async (t) => {
  const { h, machine } = await world(t, { RECORDS_PER_MACHINE: '0', RECORD_BYTES_PER_MACHINE: '0' });
  const fields = { name: 'Name of v-1', description: 'About v-1.', instructions: 'Use v-1.' };
  const bytes = recordBytes({ schemaVersion: 1, id: 'v-1', provider: 'agentlet-a', ...fields });
  t.equal(bytes, Buffer.byteLength('v-1' + fields.name + fields.description + fields.instructions));
  t.equal((await h.put('agentlet-a', machine, 'v-1', fields)).statusCode, 201, 'both bounds 0: no quota');

  const bounded = await world(t, { RECORDS_PER_MACHINE: '0', RECORD_BYTES_PER_MACHINE: String(bytes) });
  const put = (f: Partial<typeof fields>) => bounded.h.put('agentlet-a', bounded.machine, 'v-1', { ...fields, ...f });
  t.equal((await put({})).statusCode, 201, 'exactly at the byte bound, with no count bound');
  for (const grown of [
    { description: `${fields.description}!` },
    { instructions: `${fields.instructions}!` },
    { name: `${fields.name}!` },
  ]) {
    const over = await put(grown);
    t.equal(over.statusCode, 409, Object.keys(grown).join());
    t.match(over.json(), {
      code: 'record_quota_exceeded',
      message: `Machine agentlet-a would hold ${bytes + 1} bytes of record text (at most ${bytes}); nothing was changed. Withdraw records it no longer needs, or ask the operator to raise RECORDS_PER_MACHINE / RECORD_BYTES_PER_MACHINE.`,
      details: {
        provider: 'agentlet-a',
        limit: 'bytes',
        records: { held: 1, after: 1, max: 0 },
        bytes: { held: bytes, after: bytes + 1, max: bytes },
      },
    });
  }
  t.equal((await put({ description: 'About.' })).statusCode, 200, 'a smaller replacement');

  const counted = await world(t, { RECORDS_PER_MACHINE: '1', RECORD_BYTES_PER_MACHINE: '0' });
  t.equal((await counted.h.put('agentlet-a', counted.machine, 'c-1', { instructions: 'x'.repeat(1000) })).statusCode, 201, 'no byte bound');
  const second = await counted.h.put('agentlet-a', counted.machine, 'c-2');
  t.equal(second.statusCode, 409);
  t.match(second.json(), {
    message: /^Machine agentlet-a would hold 2 records \(at most 1\); nothing was changed\./,
    details: { limit: 'records', records: { held: 1, after: 2, max: 1 }, bytes: { max: 0 } },
  });
});

t.test('a machine left over its bounds (the operator lowered them) may replace and withdraw, never grow', async (t) => {
  const dataDir = await tempDataDir();
  const first = await build(t, { dataDir, env: { RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
  const machine = await first.enroll('agentlet-a');
  for (const id of ['o-1', 'o-2', 'o-3'])
    t.equal((await first.put('agentlet-a', machine, id, { instructions: 'x'.repeat(100) })).statusCode, 201);
  await first.app.close();

  const held =
    3 *
    recordBytes({
      schemaVersion: 1,
      id: 'o-1',
      name: 'Name of o-1',
      description: 'About o-1.',
      instructions: 'x'.repeat(100),
    } as Parameters<typeof recordBytes>[0]);
  const h = await build(t, {
    dataDir,
    env: { RATE_LIMIT_WRITES_PER_MINUTE: '0', RECORDS_PER_MACHINE: '2', RECORD_BYTES_PER_MACHINE: String(held - 50) },
  });
  t.equal((await h.put('agentlet-a', machine, 'o-1', { instructions: 'y'.repeat(100) })).statusCode, 200, 'a same-size replacement');
  t.equal((await h.put('agentlet-a', machine, 'o-2', { instructions: 'y'.repeat(60) })).statusCode, 200, 'a smaller one');
  const grown = await h.put('agentlet-a', machine, 'o-3', { instructions: 'y'.repeat(101) });
  t.equal(grown.statusCode, 409, 'growing past the byte bound');
  t.match(grown.json().details, { limit: 'bytes' });
  const added = await h.put('agentlet-a', machine, 'o-4', { instructions: 'i' });
  t.equal(added.statusCode, 409, 'a new record past the count bound');
  t.match(added.json().details, { limit: 'records', records: { held: 3, after: 4, max: 2 } });
  t.equal(
    (await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/agentlet-a/resources/o-3', headers: h.bearer(machine) })).statusCode,
    204,
  );
});
