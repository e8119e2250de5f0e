// Shared by the JSON-store and PostgreSQL suites: machine-token rotation and per-canvas canvas-token
// revocation, exercised over a real HTTP socket, then across a restart on the same store.
import type { Test } from 'tap';
import { request } from 'undici';
import { recordIssuedToken, type TestApp } from './build.js';
import { listen } from './sockets.js';

/** Builds a fresh app, and a way to close it and open another on the same store (a restart). */
type BuildFn = (t: Test) => Promise<{ h: TestApp; restart: () => Promise<TestApp> }>;

async function call(base: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, token: string, body?: unknown) {
  const res = await request(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

const record = (id: string) => ({ schemaVersion: 1, name: `Name of ${id}`, description: `About ${id}.`, instructions: `Use ${id}.` });

export function credentialOperationSuite(t: Test, make: BuildFn): void {
  t.test('rotating a machine token: a new token works, the old one is refused at once, the enrollment stays', async (t) => {
    const { h, restart } = await make(t);
    const base = await listen(h.app);
    const oldToken = await h.enroll('agentlet-rot');
    t.equal((await call(base, 'PUT', '/api/acp/providers/agentlet-rot/resources/rot-tool', oldToken, record('rot-tool'))).status, 201);
    const canvasToken = await h.canvasToken('canvas-rot', 'agentlet-rot');
    const before = (await call(base, 'GET', '/api/acp/machines', h.owner.authorization!.slice(7))).json.machines.find(
      (m: { machineId: string }) => m.machineId === 'agentlet-rot',
    );

    const rotated = await call(base, 'POST', '/api/acp/machines/agentlet-rot/rotate', h.owner.authorization!.slice(7));
    t.equal(rotated.status, 200);
    t.equal(rotated.headers['cache-control'], 'no-store');
    t.equal(rotated.json.machineId, 'agentlet-rot');
    t.match(rotated.json.token, /^arr_machine_/);
    t.not(rotated.json.token, oldToken);
    recordIssuedToken(rotated.json.token);

    const stale = await call(base, 'PUT', '/api/acp/providers/agentlet-rot/resources/rot-tool-2', oldToken, record('rot-tool-2'));
    t.equal(stale.status, 401, 'the old token is dead at once');
    t.equal(
      (await call(base, 'PUT', '/api/acp/providers/agentlet-rot/resources/rot-tool-2', rotated.json.token, record('rot-tool-2'))).status,
      201,
    );

    const after = (await call(base, 'GET', '/api/acp/machines', h.owner.authorization!.slice(7))).json.machines.find(
      (m: { machineId: string }) => m.machineId === 'agentlet-rot',
    );
    t.same(after, before, 'enrolledAt unchanged, not revoked');
    const rfs = await call(base, 'GET', '/api/rfs/canvas-rot/resources', canvasToken);
    t.equal(rfs.status, 200, 'canvas tokens minted before the rotation keep working');
    t.ok(JSON.stringify(rfs.json).includes('rot-tool'), "the machine's records are kept");

    t.equal((await call(base, 'POST', '/api/acp/machines/nobody/rotate', h.owner.authorization!.slice(7))).json.code, 'machine_not_found');
    t.equal((await call(base, 'POST', '/api/acp/machines/agentlet-rot/rotate', h.huabu.authorization!.slice(7))).status, 403, 'owner only');
    t.equal((await call(base, 'POST', '/api/acp/machines/agentlet-rot/rotate', rotated.json.token)).status, 403, 'not the machine itself');

    const again = await restart();
    const base2 = await listen(again.app);
    t.equal(
      (await call(base2, 'GET', '/api/acp/providers/agentlet-rot/resources', oldToken)).status,
      401,
      'the old token stays dead after a restart',
    );
    t.equal(
      (await call(base2, 'GET', '/api/acp/providers/agentlet-rot/resources', rotated.json.token)).status,
      200,
      'the new one survives it',
    );

    t.equal((await call(base2, 'DELETE', '/api/acp/machines/agentlet-rot', again.owner.authorization!.slice(7))).status, 204);
    t.equal(
      (await call(base2, 'POST', '/api/acp/machines/agentlet-rot/rotate', again.owner.authorization!.slice(7))).json.code,
      'machine_not_found',
      'a revoked machine cannot be rotated back to life',
    );
  });

  t.test("revoking one canvas's tokens: tokens minted before die, other canvases and later tokens work", async (t) => {
    const { h, restart } = await make(t);
    const base = await listen(h.app);
    await h.enroll('agentlet-cv');
    const first = await h.canvasToken('canvas-a', 'agentlet-cv');
    const other = await h.canvasToken('canvas-b', 'agentlet-cv');
    t.equal((await call(base, 'GET', '/api/rfs/canvas-a/resources', first)).status, 200);

    const revoked = await call(base, 'POST', '/api/acp/canvas-tokens/revoke', h.huabu.authorization!.slice(7), { canvasId: 'canvas-a' });
    t.equal(revoked.status, 200);
    t.equal(revoked.json.canvasId, 'canvas-a');
    t.ok(Date.parse(revoked.json.revokedBefore) <= Date.now());

    const refused = await call(base, 'GET', '/api/rfs/canvas-a/resources', first);
    t.equal(refused.status, 401);
    t.equal(refused.json.code, 'unauthorized');
    t.equal((await call(base, 'GET', '/api/rfs/canvas-b/resources', other)).status, 200, 'another canvas is untouched');
    await new Promise((r) => setTimeout(r, 5));
    const fresh = await h.canvasToken('canvas-a', 'agentlet-cv');
    t.equal((await call(base, 'GET', '/api/rfs/canvas-a/resources', fresh)).status, 200, 'a token minted after the revocation works');

    t.equal(
      (await call(base, 'POST', '/api/acp/canvas-tokens/revoke', fresh, { canvasId: 'canvas-a' })).status,
      403,
      'a canvas token cannot revoke',
    );
    t.equal(
      (await call(base, 'POST', '/api/acp/canvas-tokens/revoke', h.owner.authorization!.slice(7), { canvasId: '' })).json.code,
      'validation_failed',
    );

    const again = await restart();
    const base2 = await listen(again.app);
    t.equal((await call(base2, 'GET', '/api/rfs/canvas-a/resources', first)).status, 401, 'the revocation survives a restart');
    t.equal((await call(base2, 'GET', '/api/rfs/canvas-a/resources', fresh)).status, 200);
  });
}
