// The domain core's rules as a client sees them over HTTP: the whole-suite mutant survivors
// (a PUT changing only `instructions`, a repeat launch asking for a prefix of the stored list) and the
// focused-run ones (Bearer header shape, canvas-token expiry second and bad signatures, withdraw details,
// another additional preamble, realizedAt from the injected clock). Pure checks: test/domain/rules.test.ts.
import t from 'tap';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';
import { until } from '../helpers/wait.js';

t.test('over HTTP a canvas token is refused from its expiry second on', async (t) => {
  let now = new Date('2026-11-30T12:00:00.000Z');
  const h = await build(t, { now: () => now });
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a', 60);
  const read = () => h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) });
  now = new Date('2026-11-30T12:00:59.999Z');
  t.equal((await read()).statusCode, 200, 'valid in its last second');
  now = new Date('2026-11-30T12:01:00.000Z');
  const expired = await read();
  t.equal(expired.statusCode, 401, 'expired at exp');
  t.equal(expired.json().message, 'The canvas token has expired.');
});

t.test('a canvas token with a short signature is 401 over HTTP, not 500', async (t) => {
  const h = await build(t);
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  for (const bad of [token.slice(0, -5), `${token}.x`, token.split('.')[0]!]) {
    const res = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(bad) });
    t.equal(res.statusCode, 401);
    t.equal(res.json().message, 'The canvas token is not valid.');
  }
});

// --- The Authorization header -------------------------------------------------------------------------------

t.test('the Authorization header is exactly `Bearer <token>`: any case, any spaces between, nothing else', async (t) => {
  const h = await build(t);
  const as = (authorization: string) => h.app.inject({ url: '/api/acp/resources', headers: { authorization } });
  for (const ok of [`Bearer ${CANARY.owner}`, `bearer ${CANARY.owner}`, `BEARER   ${CANARY.owner}`, `Bearer ${CANARY.owner}  `]) {
    t.equal((await as(ok)).statusCode, 200, JSON.stringify(ok));
  }
  for (const bad of [
    `xBearer ${CANARY.owner}`,
    `Bearer ${CANARY.owner} extra`,
    `Bearer${CANARY.owner}`,
    `Bearer ${CANARY.owner}\tx`,
    `Token ${CANARY.owner}`,
  ]) {
    const res = await as(bad);
    t.equal(res.statusCode, 401, JSON.stringify(bad));
    t.equal(res.json().message, 'Authorization must be `Bearer <token>`.', JSON.stringify(bad));
  }
  const none = await h.app.inject({ url: '/api/acp/resources' });
  t.equal(none.json().message, 'A bearer token is required.');
  const unknown = await as('Bearer arr_owner_nope');
  t.equal(unknown.json().message, 'The bearer token is missing or not recognized.');
  const inUrl = await h.app.inject({ url: `/api/acp/resources?token=${CANARY.owner}`, headers: h.owner });
  t.equal(inUrl.statusCode, 401);
  t.equal(inUrl.json().message, 'Tokens are accepted only in the Authorization header, never in the URL.');
});

t.test('each role is told which token it needs', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  const canvas = await h.canvasToken('canvas-x', 'agentlet-a');
  const message = async (url: string, token: string, method: 'GET' | 'PUT' | 'POST' = 'GET', payload?: object) =>
    (await h.app.inject({ method, url, headers: h.bearer(token), ...(payload ? { payload } : {}) })).json().message;
  t.equal(await message('/api/acp/resources', canvas), 'This operation needs the owner token.');
  t.equal(
    await message('/api/acp/providers/huabu/resources/x', CANARY.owner, 'PUT', {
      schemaVersion: 1,
      name: 'n',
      description: 'd',
      instructions: 'i',
    }),
    'This operation needs a provider token.',
  );
  t.equal(await message('/api/rfs/canvas-x/resources', machine), 'This operation needs a canvas token.');
});

// --- Launch: repeats ----------------------------------------------------------------------------------------

async function launchWorld(t: Parameters<typeof build>[0], now?: () => Date) {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' }, ...(now ? { now } : {}) });
  await h.enroll('mac-a');
  for (const id of ['web-search', 'image-gen']) await h.put('huabu', CANARY.huabu, id);
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Reviewer',
      agentletId: 'mac-a',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search', 'image-gen'],
    },
  });
  return { h, profileId: profile.json().id as string };
}

const launch = (h: TestApp, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/api/acp/launch', headers: h.owner, payload });

t.test('a repeat asking for a prefix of the stored resource list is 409, not the stored record', async (t) => {
  const { h, profileId } = await launchWorld(t);
  const thread = { profileId, canvasId: 'c', threadId: 't' };
  const first = await launch(h, thread);
  t.equal(first.statusCode, 201);
  t.same(first.json().spec.resourceIds, ['huabu-access', 'local-resource-management', 'web-search', 'image-gen']);
  for (const resourceIds of [[], ['web-search'], ['image-gen', 'web-search'], ['web-search', 'image-gen', 'huabu-access-2']]) {
    const res = await launch(h, { ...thread, resourceIds });
    t.equal(res.statusCode, 409, JSON.stringify(resourceIds));
    t.same(res.json().details.differs, ['resourceIds']);
  }
  t.equal((await launch(h, { ...thread, resourceIds: ['web-search', 'image-gen'] })).statusCode, 200, 'the same list is a repeat');
});

t.test('a repeat with another additional preamble is 409; with the same one it is the stored record', async (t) => {
  const { h, profileId } = await launchWorld(t);
  const thread = { profileId, canvasId: 'c', threadId: 't', additionalInitialPreamble: 'Be brief.' };
  const first = await launch(h, thread);
  t.equal(first.statusCode, 201);
  t.same(first.json().spec.initialPreamble.slice(1), ['Be brief.']);
  const again = await launch(h, thread);
  t.equal(again.statusCode, 200);
  t.same(again.json(), first.json());
  const without = await launch(h, { profileId, canvasId: 'c', threadId: 't' });
  t.equal(without.statusCode, 200, 'leaving it out asks for nothing different');
  const other = await launch(h, { ...thread, additionalInitialPreamble: 'Be thorough.' });
  t.equal(other.statusCode, 409);
  t.same(other.json().details.differs, ['additionalInitialPreamble']);
  t.equal(other.json().message, 'Thread t of canvas c is already realized; it cannot change its additionalInitialPreamble.');
  const two = await launch(h, { ...thread, additionalInitialPreamble: 'Be thorough.', workingDirPath: '/elsewhere' });
  t.equal(two.json().message, 'Thread t of canvas c is already realized; it cannot change its workingDirPath, additionalInitialPreamble.');
  t.same(two.json().details, {
    differs: ['workingDirPath', 'additionalInitialPreamble'],
    profileId,
    workingDirPath: '/w',
    resourceIds: first.json().spec.resourceIds,
    realizedAt: first.json().realizedAt,
  });
});

t.test('realizedAt is the injected clock’s time of the first launch, and stays', async (t) => {
  let now = new Date('2026-11-30T10:00:00.000Z');
  const { h, profileId } = await launchWorld(t, () => now);
  const first = await launch(h, { profileId, canvasId: 'c', threadId: 't' });
  t.equal(first.json().realizedAt, '2026-11-30T10:00:00.000Z');
  now = new Date('2026-11-30T11:00:00.000Z');
  t.equal((await launch(h, { profileId, canvasId: 'c', threadId: 't' })).json().realizedAt, '2026-11-30T10:00:00.000Z');
  t.equal((await launch(h, { profileId, canvasId: 'c', threadId: 't2' })).json().realizedAt, '2026-11-30T11:00:00.000Z');
});

t.test('a launch of an unknown profile is 404 naming it', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const res = await launch(h, { profileId: 'nope', canvasId: 'c', threadId: 't' });
  t.equal(res.statusCode, 404);
  t.equal(res.json().code, 'profile_not_found');
  t.same(res.json().details, { id: 'nope' });
});

t.test(
  'every launch is audited with its caller, thread and outcome (realized or repeated); a secret in the preamble is named by its field',
  async (t) => {
    const { h, profileId } = await launchWorld(t);
    t.equal((await launch(h, { profileId, canvasId: 'c', threadId: 't' })).statusCode, 201);
    t.equal((await launch(h, { profileId, canvasId: 'c', threadId: 't' })).statusCode, 200);
    t.equal((await launch(h, { profileId, canvasId: 'c', threadId: 't2' })).statusCode, 201);
    const launches = async () => (await auditLines(h)).filter((e) => e.action === 'workload.launch');
    // A realization's entry is durable with its journal line; the audit log takes it a moment after the answer.
    const entries = await until('the three launches audited', async () => {
      const found = await launches();
      return found.length >= 3 && found;
    });
    t.same(
      entries.map(({ actor, id, outcome }) => ({ actor, id, outcome })),
      [
        { actor: 'owner', id: 'c/t', outcome: 'realized' },
        { actor: 'owner', id: 'c/t', outcome: 'repeated' },
        { actor: 'owner', id: 'c/t2', outcome: 'realized' },
      ],
    );
    const secret = await launch(h, { profileId, canvasId: 'c', threadId: 't3', additionalInitialPreamble: `token ${CANARY.owner}` });
    t.equal(secret.json().code, 'secret_detected');
    t.equal(secret.json().details.findings[0].field, '/additionalInitialPreamble');
  },
);

t.test('a thread with no workload is 404 naming the thread and canvas', async (t) => {
  const { h } = await launchWorld(t);
  const res = await h.app.inject({ url: '/api/acp/workloads/c/nope', headers: h.owner });
  t.equal(res.statusCode, 404);
  t.same(res.json(), {
    statusCode: 404,
    code: 'workload_not_found',
    error: 'Not Found',
    message: 'No workload for thread nope of canvas c.',
    details: { canvasId: 'c', threadId: 'nope' },
  });
});

// --- Ownership over HTTP: a change to any single field is a replacement, and it is stored ---------------------------

t.test('a PUT changing only one field answers 200 and stores the change; an identical PUT stores nothing new', async (t) => {
  const h = await build(t);
  const token = CANARY.huabu;
  t.equal((await h.put('huabu', token, 'web-search')).statusCode, 201);
  for (const [field, value] of [
    ['instructions', 'Use web-search via $HUABU_RFS_URL, carefully.'],
    ['name', 'Web search'],
    ['description', 'Searches the web.'],
  ] as const) {
    const before = (await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner })).json();
    const res = await h.put('huabu', token, 'web-search', { ...pick(before), [field]: value });
    t.equal(res.statusCode, 200, `changing only ${field}`);
    const read = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
    t.equal(read.json()[field], value, `the new ${field} is stored`);
  }
  const audit = async () => (await auditLines(h)).filter((a) => a.action === 'resource.register').map((a) => a.outcome);
  t.same(await audit(), ['created', 'replaced', 'replaced', 'replaced']);
  const current = (await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner })).json();
  t.equal((await h.put('huabu', token, 'web-search', pick(current))).statusCode, 200);
  t.same(await audit(), ['created', 'replaced', 'replaced', 'replaced', 'unchanged'], 'an identical PUT is unchanged');
});

t.test('reconcile sorts a record changing only its instructions into replaced, and stores it', async (t) => {
  const h = await build(t);
  const rec = (id: string, instructions = `Use ${id}.`) => ({
    schemaVersion: 1,
    id,
    name: `Name ${id}`,
    description: `About ${id}.`,
    instructions,
  });
  const url = '/api/acp/providers/huabu/resources';
  const first = await h.app.inject({ method: 'PUT', url, headers: h.huabu, payload: { resources: [rec('a'), rec('b')] } });
  t.equal(first.statusCode, 200, first.body);
  const second = await h.app.inject({
    method: 'PUT',
    url,
    headers: h.huabu,
    payload: { resources: [rec('a', 'Use a, now differently.'), rec('b')] },
  });
  t.match(second.json(), { created: [], replaced: ['a'], unchanged: ['b'], withdrawn: [] });
  t.equal((await h.app.inject({ url: '/api/acp/resources/a', headers: h.owner })).json().instructions, 'Use a, now differently.');
});

t.test('withdrawing another provider’s record is 409 naming the holder; an unknown ID is 404 naming the ID', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  await h.put('huabu', CANARY.huabu, 'web-search');
  const conflict = await h.app.inject({
    method: 'DELETE',
    url: '/api/acp/providers/agentlet-a/resources/web-search',
    headers: h.bearer(machine),
  });
  t.equal(conflict.statusCode, 409);
  t.same(conflict.json().details, { ids: ['web-search'], conflicts: [{ id: 'web-search', provider: 'huabu' }] });
  t.equal(conflict.json().message, 'Resource ID web-search is held by another provider; nothing was changed.');
  t.equal((await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner })).statusCode, 200, 'still there');
  const missing = await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/nope', headers: h.huabu });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'resource_not_found');
  t.same(missing.json().details, { id: 'nope' });
});

t.test('a reconcile conflicting on two IDs names both, in the plural', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  for (const id of ['a', 'b']) await h.put('huabu', CANARY.huabu, id);
  const rec = (id: string) => ({ schemaVersion: 1, id, name: id, description: id, instructions: id });
  const res = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/agentlet-a/resources',
    headers: h.bearer(machine),
    payload: { resources: [rec('a'), rec('b'), rec('c')] },
  });
  t.equal(res.statusCode, 409);
  t.equal(res.json().message, 'Resource IDs a, b are held by another provider; nothing was changed.');
  t.same(res.json().details.ids, ['a', 'b']);
  t.equal((await h.app.inject({ url: '/api/acp/resources/c', headers: h.owner })).statusCode, 404, 'nothing was created');
});

// --- helpers --------------------------------------------------------------------------------------------------

function pick(r: Record<string, unknown>) {
  return { name: String(r.name), description: String(r.description), instructions: String(r.instructions) };
}
