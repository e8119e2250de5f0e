// Required default IDs belong to the host alone; revoking a machine withdraws its
// records (audited); launches, canvas-token mints, revocations and refused writes leave audit entries
// without secrets.
import t from 'tap';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';
import { until } from '../helpers/wait.js';

const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

t.test('a machine cannot register a required default ID, even before the host does', async (t) => {
  const h = await build(t);
  const token = await h.enroll('squatter');
  const put = await h.put('squatter', token, 'huabu-access');
  t.equal(put.statusCode, 403, 'single put refused');
  t.equal(put.json().code, 'forbidden');
  t.same(put.json().details, { ids: ['huabu-access'] });
  const reconcile = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/squatter/resources',
    headers: h.bearer(token),
    payload: {
      resources: [
        { schemaVersion: 1, id: 'fine-tool', name: 'Fine', description: 'd', instructions: 'i' },
        { schemaVersion: 1, id: 'local-resource-management', name: 'L', description: 'd', instructions: 'i' },
      ],
    },
  });
  t.equal(reconcile.statusCode, 403, 'a reconcile naming one is refused whole');
  const list = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.same(list.json().resources, [], 'nothing stored');
  t.equal((await h.put('huabu', CANARY.huabu, 'huabu-access')).statusCode, 201, 'the host may');
});

t.test('revoking a machine withdraws its records, audited', async (t) => {
  const h = await build(t);
  const token = await h.enroll('mac-a');
  await h.put('mac-a', token, 'tool-one');
  await h.put('mac-a', token, 'tool-two');
  const revoke = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: h.owner });
  t.equal(revoke.statusCode, 204);
  const list = await h.app.inject({ url: '/api/acp/resources?provider=mac-a', headers: h.owner });
  t.same(list.json().resources, [], 'its records are gone');
  const entries = await until('the revocation audited', async () => {
    const lines = await auditLines(h);
    return lines.some((e) => e.action === 'machine.revoke' && e.id === 'mac-a' && e.outcome === 'revoked') && lines;
  });
  t.pass('the revocation');
  for (const id of ['tool-one', 'tool-two']) {
    t.ok(
      entries.some((e) => e.action === 'machine.revoke' && e.id === id && e.outcome === 'withdrawn'),
      `${id} withdrawn`,
    );
  }
});

t.test('launches, canvas-token mints and refused writes are audited, never with a secret', async (t) => {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' } });
  const token = await h.enroll('mac-a');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/home/me', launch: { kind: 'acp-command', command: 'agent' } },
  });
  const profileId = profile.json().id;
  const launch = (payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: '/api/acp/launch', headers: h.owner, payload });
  t.equal((await launch({ profileId, canvasId: 'canvas-1', threadId: 'thread-1' })).statusCode, 201);
  t.equal((await launch({ profileId, canvasId: 'canvas-1', threadId: 'thread-1', workingDirPath: '/elsewhere' })).statusCode, 409);
  await h.canvasToken('canvas-1', 'mac-a');
  t.equal((await h.put('mac-a', token, 'leaky', { instructions: `use ${GITHUB}` })).statusCode, 422);
  t.equal((await h.put('mac-a', 'arr_machine_' + 'Z'.repeat(43), 'tool-x')).statusCode, 401);
  t.equal((await h.put('huabu', token, 'tool-x')).statusCode, 403);
  // Refusals and a launch's entry reach the log after their answers: wait for the last refusal and the launch.
  const entries = await until('the 403 write and the launch audited', async () => {
    const lines = await auditLines(h);
    const refused = lines.some((e) => e.outcome === 'forbidden' && e.actor === 'provider:mac-a' && /^PUT /.test(e.action));
    const launched = lines.some((e) => e.action === 'workload.launch' && e.outcome === 'realized');
    return refused && launched && lines;
  });
  const has = (action: string, id: string, outcome: string) =>
    t.ok(
      entries.some((e) => e.action === action && e.id === id && e.outcome === outcome),
      `${action} ${id} ${outcome}`,
    );
  has('workload.launch', 'canvas-1/thread-1', 'realized');
  has('workload.launch', 'canvas-1/thread-1', 'workload_already_realized');
  has('canvas-token.mint', 'canvas-1@mac-a', 'minted');
  has('resource.register', 'leaky', 'secret_detected');
  t.ok(
    entries.some((e) => e.outcome === 'unauthorized' && e.actor === 'anonymous' && /^PUT /.test(e.action)),
    'the 401 write',
  );
  t.ok(
    entries.some((e) => e.outcome === 'forbidden' && e.actor === 'provider:mac-a' && /^PUT /.test(e.action)),
    'the 403 write',
  );
  const text = JSON.stringify(entries);
  for (const secret of [GITHUB, token, CANARY.owner, 'arr_machine_ZZZZ', 'arr_canvas_'])
    t.notOk(text.includes(secret), 'no secret in the audit log');
});

t.test(
  'a restart leaves host records stored as they are alone (nothing scanned, nothing audited) and refreshes a changed one',
  async (t) => {
    const seeds = ['huabu-access', 'local-resource-management'];
    const hostLines = async (h: TestApp) => (await auditLines(h)).filter((e) => e.actor === 'host:seed').map((e) => `${e.id} ${e.outcome}`);
    const first = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' } });
    t.same(
      await hostLines(first),
      seeds.map((id) => `${id} created`),
      'the first start registers them',
    );
    // The owner's customization is the owner's: it does not make the provider's record differ.
    const patched = await first.app.inject({
      method: 'PATCH',
      url: '/api/acp/resources/huabu-access',
      headers: first.owner,
      payload: { displayName: 'Canvas access' },
    });
    t.equal(patched.statusCode, 200);
    await first.app.close();

    const second = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' }, dataDir: first.dataDir });
    t.same(
      await hostLines(second),
      seeds.map((id) => `${id} created`),
      'a restart registers (and audits) nothing',
    );
    t.equal(
      (await second.app.inject({ url: '/api/acp/resources/huabu-access?schemaVersion=2', headers: second.owner })).json().displayName,
      'Canvas access',
      'the customization stays',
    );
    // An older text of a host record (here written by the host provider itself) is brought back to the seed.
    const stale = await second.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources/local-resource-management',
      headers: second.huabu,
      payload: {
        schemaVersion: 1,
        name: 'Local resource management',
        description: 'An older description.',
        instructions: 'Older instructions.',
      },
    });
    t.equal(stale.statusCode, 200);
    await second.app.close();

    const third = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' }, dataDir: first.dataDir });
    t.same(
      (await hostLines(third)).slice(seeds.length),
      ['local-resource-management replaced'],
      'only the changed record is registered again',
    );
    const refreshed = (await third.app.inject({ url: '/api/acp/resources/local-resource-management', headers: third.owner })).json();
    t.not(refreshed.description, 'An older description.');
    t.match(refreshed.instructions, /\$AGENT_RESOURCE_DIR/);
  },
);
