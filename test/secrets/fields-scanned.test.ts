// Every stored field is scanned, IDs and launch overrides included, and a 400 never
// echoes an unknown property name (which could be a token pasted as a key).
import t from 'tap';
import { build, CANARY } from '../helpers/build.js';

const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

async function world(t: Parameters<typeof build>[0] & { equal(a: unknown, b: unknown): unknown }) {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' } });
  const machineToken = await h.enroll('mac-a');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/home/me/site', launch: { kind: 'acp-command', command: 'agent' } },
  });
  t.equal(profile.statusCode, 201);
  return { h, machineToken, profileId: profile.json().id as string };
}

t.test('the launch workingDirPath override, threadId and canvasId are scanned (422, nothing written)', async (t) => {
  const { h, machineToken, profileId } = await world(t);
  const cases: [string, Record<string, unknown>][] = [
    ['/workingDirPath', { workingDirPath: `/home/me/${GITHUB}` }],
    ['/workingDirPath', { workingDirPath: `/home/me/x${machineToken}` }],
    ['/threadId', { threadId: GITHUB }],
    ['/canvasId', { canvasId: GITHUB }],
  ];
  for (const [field, override] of cases) {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/launch',
      headers: h.owner,
      payload: { profileId, canvasId: 'canvas-1', threadId: 'thread-1', ...override },
    });
    t.equal(res.statusCode, 422, `${field} refused`);
    t.equal(res.json().code, 'secret_detected');
    t.equal(res.json().details.findings[0].field, field);
    t.notMatch(res.body, /ghp_|arr_machine_/, 'never echoed');
  }
  const list = await h.app.inject({ url: '/api/acp/workloads?canvasId=canvas-1', headers: h.owner });
  t.same(list.json().workloads, [], 'nothing realized');
});

t.test('machineId at enrollment, canvasId at a canvas-token mint and a profile agentletId are scanned', async (t) => {
  const { h, machineToken } = await world(t);
  const enroll = await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: GITHUB } });
  t.equal(enroll.statusCode, 422, 'a token as a machine ID');
  t.equal(enroll.json().details.findings[0].field, '/machineId');
  const glued = await h.app.inject({
    method: 'POST',
    url: '/api/acp/machines',
    headers: h.owner,
    payload: { machineId: `m${machineToken}`.slice(0, 128) },
  });
  t.equal(glued.statusCode, 422, 'a live machine token glued into a machine ID');
  const machines = (await h.app.inject({ url: '/api/acp/machines', headers: h.owner })).json().machines;
  t.same(
    machines.map((m: { machineId: string }) => m.machineId),
    ['mac-a'],
    'nothing enrolled',
  );
  const mint = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.owner,
    payload: { canvasId: GITHUB, agentletId: 'mac-a' },
  });
  t.equal(mint.statusCode, 422, 'a token as a canvas ID');
  t.equal(mint.json().details.findings[0].field, '/canvasId');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Other', agentletId: GITHUB, workingDirPath: '/home/me', launch: { kind: 'acp-command', command: 'agent' } },
  });
  t.equal(profile.statusCode, 422, 'a token as a profile agentletId');
  t.equal(profile.json().details.findings[0].field, '/agentletId');
});

t.test('400 messages never echo unknown property names', async (t) => {
  const { h, machineToken } = await world(t);
  for (const name of [GITHUB, machineToken, CANARY.owner, 'AKIA2E3A7F3B244CQDZM']) {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/machines',
      headers: h.owner,
      payload: { machineId: 'mac-z', [name]: 1 },
    });
    t.equal(res.statusCode, 400);
    t.equal(res.json().code, 'validation_failed');
    t.notOk(res.body.includes(name), 'the name is not echoed');
    t.match(res.json().message, /additional propert/);
  }
  const validate = await h.app.inject({
    method: 'POST',
    url: '/api/acp/resources/validate',
    headers: h.owner,
    payload: { id: 'x', name: 'X', description: 'd', instructions: 'i', [GITHUB]: 1 },
  });
  t.equal(validate.statusCode, 200);
  t.notOk(validate.body.includes(GITHUB), 'validate issues do not echo it either');
});
