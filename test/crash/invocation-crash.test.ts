// A crash mid-invocation (SIGKILL of the real compiled server while a hosted call is in flight and writes
// are being acknowledged around it) loses nothing acknowledged elsewhere: after a restart on the same
// DATA_DIR every acknowledged record and thread is there, with the audit entry of every answered
// invocation, and the grant minted before the crash still works (same secret, same capabilities file).
// The endpoint sees the in-flight call end when the server dies.
//   npm run build && npx tap test/crash/invocation-crash.test.ts
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { CANARY, DATA_ROOT, recordIssuedToken, tempDataDir, testEnv } from '../helpers/build.js';
import { startHostedEndpoint } from '../helpers/hosted-endpoint.js';
import { killAllServers, startServer } from './server-process.js';
import { auditLines } from '../helpers/audit.js';

const KEY = 'arr_credential_CANARYcrash0key0value0for0tests000';
recordIssuedToken(KEY);

t.setTimeout(120_000);
t.teardown(killAllServers);

async function call(origin: string, method: string, url: string, token: string, body?: unknown, extra: Record<string, string> = {}) {
  const res = await request(`${origin}${url}`, {
    method: method as 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

t.test('SIGKILL during an invocation loses no acknowledged write', async (t) => {
  const endpoint = await startHostedEndpoint();
  t.teardown(() => endpoint.close());
  const base = {
    inputSchema: { type: 'object', properties: { query: { type: 'string', maxLength: 100 } }, additionalProperties: false },
    timeoutMs: 30_000,
    maxInputBytes: 1000,
    maxOutputBytes: 10_000,
    perGrant: { concurrency: 4, perMinute: 1000 },
  };
  const capsFile = path.join(DATA_ROOT, `caps-crash-${process.pid}.json`);
  await writeFile(
    capsFile,
    JSON.stringify({
      schemaVersion: 1,
      capabilities: {
        'web-search': { ...base, endpoint: `${endpoint.origin}/ok`, credential: { header: 'x-api-key', env: 'ARR_TEST_SEARCH_KEY' } },
        'hold-search': { ...base, endpoint: `${endpoint.origin}/hold` },
      },
    }),
  );
  const dataDir = await tempDataDir();
  const env = testEnv(dataDir, {
    HOSTED_CAPABILITIES_FILE: capsFile,
    ARR_TEST_SEARCH_KEY: KEY,
    REQUIRED_RESOURCE_IDS: '',
    SEED_HUABU_RESOURCES: 'false',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
  });

  const first = await startServer(env);
  const o = first.origin;
  const machine = (await call(o, 'POST', '/api/acp/machines', CANARY.owner, { machineId: 'mac-1' })).json.token as string;
  recordIssuedToken(machine);
  for (const id of ['web-search', 'hold-search']) {
    t.equal(
      (
        await call(o, 'PUT', `/api/acp/providers/huabu/resources/${id}`, CANARY.huabu, {
          schemaVersion: 1,
          name: id,
          description: `About ${id}.`,
          instructions: 'Invoke it.',
        })
      ).status,
      201,
    );
  }
  const profile = await call(o, 'POST', '/api/acp/profiles', CANARY.owner, {
    alias: 'Searcher',
    agentletId: 'mac-1',
    workingDirPath: '/w',
    launch: { kind: 'acp-command', command: 'agent' },
    resourceIds: ['web-search', 'hold-search'],
  });
  t.equal(
    (await call(o, 'POST', '/api/acp/launch', CANARY.owner, { profileId: profile.json.id, canvasId: 'canvas-1', threadId: 'thread-1' }))
      .status,
    201,
  );
  const token = (await call(o, 'POST', '/api/acp/canvas-tokens', CANARY.owner, { canvasId: 'canvas-1', agentletId: 'mac-1' })).json
    .token as string;
  const grant = (await call(o, 'POST', '/api/acp/grants', CANARY.owner, { canvasId: 'canvas-1', threadId: 'thread-1' })).json
    .grant as string;
  recordIssuedToken(token);
  recordIssuedToken(grant);
  const invoke = (id: string) =>
    call(
      o,
      'POST',
      `/api/rfs/canvas-1/resources/${id}/invoke`,
      token,
      { schemaVersion: 1, input: { query: 'q' } },
      { 'x-huabu-resource-grant': grant, 'x-huabu-thread-id': 'thread-1' },
    );

  t.equal((await invoke('web-search')).status, 200, 'an answered invocation before the crash');
  const seen = endpoint.next();
  const held = invoke('hold-search').catch((err: Error) => err);
  const got = await seen;

  // Writes acknowledged while the call is in flight, then the kill in the middle of more of them.
  const acknowledged: string[] = [];
  const put = (id: string) =>
    call(o, 'PUT', `/api/acp/providers/huabu/resources/${id}`, CANARY.huabu, {
      schemaVersion: 1,
      name: id,
      description: 'A note.',
      instructions: 'Read it.',
    })
      .then((r) => r.status === 201 && acknowledged.push(id))
      .catch(() => undefined);
  await Promise.all(Array.from({ length: 10 }, (_, i) => put(`note-${i}`)));
  const writes: Promise<unknown>[] = Array.from({ length: 200 }, (_, i) => put(`more-${i}`));
  while (acknowledged.length < 14) await new Promise((r) => setTimeout(r, 1));
  writes.push(first.kill());
  await Promise.all(writes);
  t.type(await held, Error, 'the agent lost its connection');
  t.equal(await got.aborted, true, 'the endpoint saw the in-flight call end with the server');
  t.ok(acknowledged.length > 0, `${acknowledged.length} writes were acknowledged around the invocation`);

  const second = await startServer(env);
  const listed = await call(second.origin, 'GET', '/api/acp/resources', CANARY.owner);
  const ids = new Set((listed.json.resources as { id: string }[]).map((r) => r.id));
  t.same(
    acknowledged.filter((id) => !ids.has(id)),
    [],
    'every acknowledged record survived',
  );
  t.equal((await call(second.origin, 'GET', '/api/acp/workloads/canvas-1/thread-1', CANARY.owner)).status, 200, 'the thread survived');
  const audit = await auditLines(dataDir);
  t.ok(
    audit.some((a) => a.action === 'resource.invoke' && a.outcome === 'ok'),
    'the answered invocation is audited',
  );
  const after = await call(
    second.origin,
    'POST',
    '/api/rfs/canvas-1/resources/web-search/invoke',
    token,
    { schemaVersion: 1, input: { query: 'q' } },
    { 'x-huabu-resource-grant': grant, 'x-huabu-thread-id': 'thread-1' },
  );
  t.equal(after.status, 200, 'the grant from before the crash still works');
  await second.kill();
});
