// Who may call what: 401 for no or unknown credentials, 403 for the wrong role, provider or canvas.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { build, CANARY } from '../helpers/build.js';

t.test('no token and unknown tokens are 401 with WWW-Authenticate', async (t) => {
  const h = await build(t);
  for (const headers of [{}, h.bearer('garbage'), h.bearer('arr_owner_notTheRealOne0000000000000000'), { authorization: 'Basic abc' }]) {
    const res = await h.app.inject({ url: '/api/acp/resources', headers });
    t.equal(res.statusCode, 401);
    t.equal(res.json().code, 'unauthorized');
    t.equal(res.headers['www-authenticate'], 'Bearer');
  }
});

t.test('a valid token of the wrong role is 403', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  const canvas = await h.canvasToken('canvas-1', 'agentlet-a');
  for (const token of [CANARY.huabu, machine, canvas]) {
    const res = await h.app.inject({ url: '/api/acp/resources', headers: h.bearer(token) });
    t.equal(res.statusCode, 403, 'catalogue is owner-only');
    t.equal(res.json().code, 'forbidden');
  }
  const ownerAsProvider = await h.put('huabu', CANARY.owner, 'web-search');
  t.equal(ownerAsProvider.statusCode, 403, 'the owner is not a provider');
  const machineMints = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.bearer(machine),
    payload: { canvasId: 'c', agentletId: 'agentlet-a' },
  });
  t.equal(machineMints.statusCode, 403, 'only the owner or huabu mint canvas tokens');
  const huabuMints = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.huabu,
    payload: { canvasId: 'c', agentletId: 'agentlet-a' },
  });
  t.equal(huabuMints.statusCode, 201, 'huabu mints canvas tokens');
});

t.test('a provider acts only on its own provider path', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  await h.enroll('agentlet-b');
  t.equal((await h.put('agentlet-b', a, 'tool-x')).statusCode, 403);
  t.equal((await h.put('huabu', a, 'tool-x')).statusCode, 403);
  t.equal((await h.put('agentlet-a', CANARY.huabu, 'tool-x')).statusCode, 403);
  const list = await h.app.inject({ url: '/api/acp/providers/agentlet-b/resources', headers: h.bearer(a) });
  t.equal(list.statusCode, 403);
  t.equal((await h.put('agentlet-a', a, 'tool-x')).statusCode, 201);
});

t.test('tokens in the query string are refused and never logged', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  const before = (await readFile(h.logFile, 'utf8')).length;
  for (const url of [
    `/api/acp/resources?access_token=${CANARY.owner}`,
    `/api/acp/resources?token=${machine}`,
    `/api/acp/resources?x=1&access_token=${CANARY.huabu}`,
  ]) {
    const res = await h.app.inject({ url });
    t.equal(res.statusCode, 401);
    t.match(res.json().message, /Authorization header/);
  }
  const log = (await readFile(h.logFile, 'utf8')).slice(before);
  t.match(log, /"statusCode":401/, 'the refused requests were logged');
  t.match(log, /\/api\/acp\/resources/, 'with their path');
  for (const token of [CANARY.owner, machine, CANARY.huabu]) t.notMatch(log, token.slice(10), 'but never the token');
});

t.test('machine tokens: shown once, revocable, never listed', async (t) => {
  const h = await build(t);
  const token = await h.enroll('agentlet-a');
  t.match(token, /^arr_machine_[A-Za-z0-9_-]{43}$/);
  const again = await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: 'agentlet-a' } });
  t.equal(again.statusCode, 409);
  t.equal(again.json().code, 'machine_exists');
  const reserved = await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: 'HUABU' } });
  t.equal(reserved.statusCode, 400);

  t.equal((await h.put('agentlet-a', token, 'tool-x')).statusCode, 201);
  const listed = await h.app.inject({ url: '/api/acp/machines', headers: h.owner });
  // The channel status came with the machine channel (a machine not holding one is `disconnected`).
  t.same(Object.keys(listed.json().machines[0]).sort(), ['enrolledAt', 'machineId', 'status']);
  t.notMatch(listed.body, token.slice(0, 20));

  const revoked = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner });
  t.equal(revoked.statusCode, 204);
  const after = await h.put('agentlet-a', token, 'tool-x');
  t.equal(after.statusCode, 401, 'a revoked token is unknown');
  const records = await h.app.inject({ url: '/api/acp/resources?provider=agentlet-a', headers: h.owner });
  t.same(
    records.json().resources.map((r: { id: string }) => r.id),
    [],
    'its records are withdrawn (revoking frees its IDs)',
  );
  const unknown = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner });
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().code, 'machine_not_found');

  const reenrolled = await h.enroll('agentlet-a');
  t.not(reenrolled, token);
  t.equal(
    (await h.put('agentlet-a', reenrolled, 'tool-x', { name: 'New name' })).statusCode,
    201,
    'the re-enrolled machine registers its records again',
  );
});

t.test('canvas tokens: bound to one canvas and one machine, expiring, tamper-evident', async (t) => {
  let now = new Date('2026-11-30T12:00:00Z');
  const h = await build(t, { now: () => now });
  const a = await h.enroll('agentlet-a');
  await h.enroll('agentlet-b');
  await h.put('agentlet-a', a, 'tool-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a', 120);

  const ok = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) });
  t.equal(ok.statusCode, 200);

  const otherCanvas = await h.app.inject({ url: '/api/rfs/canvas-y/resources', headers: h.bearer(token) });
  t.equal(otherCanvas.statusCode, 403);
  t.notMatch(otherCanvas.body, 'tool-a', 'a token for another canvas reveals nothing');

  const [payload, signature] = token.slice('arr_canvas_'.length).split('.') as [string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const forged = `arr_canvas_${Buffer.from(JSON.stringify({ ...claims, c: 'canvas-y' })).toString('base64url')}.${signature}`;
  const tampered = await h.app.inject({ url: '/api/rfs/canvas-y/resources', headers: h.bearer(forged) });
  t.equal(tampered.statusCode, 401);

  t.equal((await h.app.inject({ url: '/api/acp/resources', headers: h.bearer(token) })).statusCode, 403, 'canvas tokens read only RFS');

  now = new Date(now.getTime() + 121_000);
  const expired = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) });
  t.equal(expired.statusCode, 401);
  t.match(expired.json().message, /expired/);
});

t.test('a canvas token dies with its machine credential; minting needs an enrolled machine', async (t) => {
  const h = await build(t);
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner });
  t.equal((await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) })).statusCode, 401);
  const mint = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.owner,
    payload: { canvasId: 'canvas-x', agentletId: 'agentlet-a' },
  });
  t.equal(mint.statusCode, 404);
  t.equal(mint.json().code, 'machine_not_found');
});

t.test('minting returns the rfs URL and bounded expiry', async (t) => {
  const now = new Date('2026-11-30T12:00:00Z');
  const h = await build(t, { now: () => now });
  await h.enroll('agentlet-a');
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.owner,
    payload: { canvasId: 'canvas-x', agentletId: 'agentlet-a', ttlSeconds: 600 },
  });
  t.equal(res.statusCode, 201);
  t.equal(res.json().rfsUrl, 'http://registry.test/api/rfs/canvas-x');
  t.equal(res.json().expiresAt, '2026-11-30T12:10:00.000Z');
  t.equal(res.headers['cache-control'], 'no-store');
  const tooLong = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.owner,
    payload: { canvasId: 'canvas-x', agentletId: 'agentlet-a', ttlSeconds: 10 * 24 * 3600 },
  });
  t.equal(tooLong.statusCode, 400);
});

t.test(
  'a revoked canvas token is told it was revoked; one minted after the revocation works; one of an ended enrollment is not valid',
  async (t) => {
    let now = new Date('2026-11-30T12:00:00.000Z');
    const h = await build(t, { now: () => now });
    await h.enroll('agentlet-a');
    const read = async (token: string) => {
      const res = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) });
      return [res.statusCode, res.statusCode === 200 ? undefined : res.json().message];
    };
    const before = await h.canvasToken('canvas-x', 'agentlet-a');
    t.same(await read(before), [200, undefined]);
    now = new Date(now.getTime() + 1_000);
    t.equal(
      (await h.app.inject({ method: 'POST', url: '/api/acp/canvas-tokens/revoke', headers: h.owner, payload: { canvasId: 'canvas-x' } }))
        .statusCode,
      200,
    );
    t.same(await read(before), [401, 'The canvas token has been revoked.']);
    now = new Date(now.getTime() + 1_000);
    const after = await h.canvasToken('canvas-x', 'agentlet-a');
    t.same(await read(after), [200, undefined], 'minted after the revocation: valid');
    // The machine revoked and enrolled again: the token minted under the old enrollment is dead for good.
    t.equal((await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner })).statusCode, 204);
    await h.enroll('agentlet-a');
    t.same(await read(after), [401, 'The canvas token is not valid.']);
  },
);

t.test('only the owner or the Huabu provider mints canvas tokens, and a machine is told so', async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens',
    headers: h.bearer(machine),
    payload: { canvasId: 'c', agentletId: 'agentlet-a' },
  });
  t.equal(res.statusCode, 403);
  t.equal(res.json().message, 'This operation needs the Huabu provider token.');
});

t.test('the served OpenAPI names the token each protected operation takes, and its 401 and 403 answers', async (t) => {
  const h = await build(t);
  const spec = (await h.app.inject({ url: '/openapi.json' })).json<{
    paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
  }>();
  const op = (path: string, method: string) => spec.paths[path]![method]!;
  t.same(op('/api/acp/canvas-tokens', 'post').security, [{ ownerToken: [] }, { providerToken: [] }]);
  t.same(op('/api/acp/resources', 'get').security, [{ ownerToken: [] }]);
  t.same(op('/api/rfs/{canvasId}/resources', 'get').security, [{ canvasToken: [] }]);
  for (const [path, method] of [
    ['/api/acp/canvas-tokens', 'post'],
    ['/api/acp/resources', 'get'],
    ['/api/rfs/{canvasId}/resources', 'get'],
  ] as const) {
    t.ok('401' in op(path, method).responses && '403' in op(path, method).responses, `${method} ${path} documents 401 and 403`);
    t.ok('429' in op(path, method).responses, `${method} ${path} documents 429 (failed authentications from its address)`);
    t.ok('200' in op(path, method).responses || '201' in op(path, method).responses, `${method} ${path} keeps its own answers`);
  }
  t.same(op('/healthz', 'get').security, [], 'a public operation asks for no token');
});
