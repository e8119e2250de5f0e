// The authorization matrix: every operation in the served OpenAPI document × every kind of caller, with
// the status each one gets. The route list comes from the spec, so a new route without an entry here
// fails this test.
import t from 'tap';
import type { TestApp } from '../helpers/build.js';
import { build, recordIssuedToken } from '../helpers/build.js';

const PRINCIPALS = [
  'none',
  'garbage',
  'owner',
  'huabu',
  'machineA',
  'machineB',
  'revokedMachine',
  'rotatedMachine',
  'canvasX',
  'expiredCanvas',
  'revokedCanvas',
  'canvasOfRevokedMachine',
] as const;
type PrincipalName = (typeof PRINCIPALS)[number];
/**
 * Refused before any route: no or an unknown token, a revoked machine's, machine A's token before its
 * rotation, an expired canvas token, one minted before its canvas's tokens were revoked, and a canvas
 * token for canvas X whose machine was revoked after it was minted.
 */
const UNAUTHENTICATED: PrincipalName[] = [
  'none',
  'garbage',
  'revokedMachine',
  'rotatedMachine',
  'expiredCanvas',
  'revokedCanvas',
  'canvasOfRevokedMachine',
];

interface Entry {
  /** Concrete path (parameters filled in) and body. */
  url: string;
  payload?: unknown;
  /** The principals admitted, with the status each gets; every other authenticated caller gets 403. */
  allowed: Partial<Record<PrincipalName, number>> | 'public';
  /** Status for anyone on a public route. */
  publicStatus?: number;
  /** The error code an admitted principal gets when the route needs more than its token. */
  admittedCode?: string;
  /** The admitted principal's `details.reason`, where the code alone does not tell it apart from a refusal. */
  admittedReason?: string;
  /**
   * A stream that stays open for the admitted principal: only the refusals are checked here (the admitted
   * caller's 200 is read over a real socket in test/machines/channel.test.ts).
   */
  stream?: true;
  /** The same operation with other query parameters (a paged or searched read), held to the same matrix. */
  alsoUrls?: string[];
}

const resource = { schemaVersion: 1, name: 'Tool', description: 'A tool.', instructions: 'Use it via $HUABU_RFS_URL.' };

/** Keyed by `METHOD /openapi/path`. Machine A is `agentlet-a`, canvas X is `canvas-x` on machine A. */
const MATRIX: Record<string, Entry> = {
  'GET /healthz': { url: '/healthz', allowed: 'public', publicStatus: 200 },
  'GET /readyz': { url: '/readyz', allowed: 'public', publicStatus: 200 },
  'GET /metrics': { url: '/metrics', allowed: 'public', publicStatus: 200 },
  'GET /.well-known/agent-resource-registry/keys': {
    url: '/.well-known/agent-resource-registry/keys',
    allowed: 'public',
    publicStatus: 200,
  },
  'GET /api/acp/resources': {
    url: '/api/acp/resources',
    allowed: { owner: 200 },
    alsoUrls: ['/api/acp/resources?q=tool&limit=1', '/api/acp/resources?limit=1&provider=agentlet-a'],
  },
  'GET /api/acp/resources/{id}': { url: '/api/acp/resources/tool-a', allowed: { owner: 200 } },
  'GET /api/acp/resources/{id}/revisions': { url: '/api/acp/resources/tool-a/revisions', allowed: { owner: 200 } },
  // A digest no revision has: the owner is admitted and told so.
  'GET /api/acp/resources/{id}/revisions/{digest}': {
    url: `/api/acp/resources/tool-a/revisions/sha256:${'0'.repeat(64)}`,
    allowed: { owner: 404 },
    admittedCode: 'revision_not_found',
  },
  'PATCH /api/acp/resources/{id}': {
    url: '/api/acp/resources/tool-a',
    payload: { userContent: 'Prefer the short form.' },
    allowed: { owner: 200 },
  },
  'POST /api/acp/resources/validate': {
    url: '/api/acp/resources/validate',
    payload: { ...resource, id: 'new-tool' },
    allowed: { owner: 200, huabu: 200, machineA: 200, machineB: 200 },
  },
  // Skill management: the owner only; admitted, then 503 (machine A holds no channel here) or 409 (tool-a is
  // machine A's own publication, not a skill the owner imported).
  'POST /api/acp/resources/import/scan': {
    url: '/api/acp/resources/import/scan?agentletId=agentlet-a',
    payload: { rootPath: '/srv/skills' },
    allowed: { owner: 503 },
    admittedCode: 'agentlet_unavailable',
  },
  'POST /api/acp/resources/import': {
    url: '/api/acp/resources/import?agentletId=agentlet-a',
    payload: { id: 'new-skill', sourcePath: '/srv/skills/new-skill', expectedRevision: 'a'.repeat(64) },
    allowed: { owner: 503 },
    admittedCode: 'agentlet_unavailable',
  },
  'POST /api/acp/resources/{id}/refresh/scan': {
    url: '/api/acp/resources/tool-a/refresh/scan?agentletId=agentlet-a',
    allowed: { owner: 409 },
    admittedCode: 'resource_not_manageable',
  },
  'POST /api/acp/resources/{id}/refresh': {
    url: '/api/acp/resources/tool-a/refresh?agentletId=agentlet-a',
    payload: { expectedRevision: 'a'.repeat(64) },
    allowed: { owner: 409 },
    admittedCode: 'resource_not_manageable',
  },
  'DELETE /api/acp/resources/{id}': {
    url: '/api/acp/resources/tool-a?agentletId=agentlet-a',
    allowed: { owner: 409 },
    admittedCode: 'resource_not_manageable',
  },
  'POST /api/acp/machines': { url: '/api/acp/machines', payload: { machineId: 'agentlet-new' }, allowed: { owner: 201 } },
  'GET /api/acp/machines': { url: '/api/acp/machines', allowed: { owner: 200 } },
  'DELETE /api/acp/machines/{machineId}': { url: '/api/acp/machines/agentlet-b', allowed: { owner: 204 } },
  'POST /api/acp/machines/{machineId}/rotate': { url: '/api/acp/machines/agentlet-b/rotate', allowed: { owner: 200 } },
  // Admitted, then 503: machine A holds no channel in this world.
  'POST /api/acp/machines/{machineId}/jobs': {
    url: '/api/acp/machines/agentlet-a/jobs',
    payload: { type: 'ping' },
    allowed: { owner: 503 },
    admittedCode: 'agentlet_unavailable',
  },
  'GET /api/acp/providers/{machineId}/channel': { url: '/api/acp/providers/agentlet-a/channel', allowed: { machineA: 200 }, stream: true },
  // Admitted, then 404: no job of machine A is waiting.
  'POST /api/acp/providers/{machineId}/jobs/{jobId}': {
    url: '/api/acp/providers/agentlet-a/jobs/job-1',
    payload: { ok: true, result: {} },
    allowed: { machineA: 404 },
    admittedCode: 'job_not_found',
  },
  'POST /api/acp/canvas-tokens/revoke': {
    url: '/api/acp/canvas-tokens/revoke',
    payload: { canvasId: 'canvas-z' },
    allowed: { owner: 200, huabu: 200 },
  },
  'POST /api/acp/canvas-tokens': {
    url: '/api/acp/canvas-tokens',
    payload: { canvasId: 'canvas-z', agentletId: 'agentlet-a' },
    allowed: { owner: 201, huabu: 201 },
  },
  'GET /api/acp/providers/{provider}/resources': { url: '/api/acp/providers/agentlet-a/resources', allowed: { machineA: 200 } },
  'PUT /api/acp/providers/{provider}/resources': {
    url: '/api/acp/providers/agentlet-a/resources',
    payload: { resources: [{ ...resource, id: 'tool-a' }] },
    allowed: { machineA: 200 },
  },
  'PUT /api/acp/providers/{provider}/resources/{id}': {
    url: '/api/acp/providers/agentlet-a/resources/tool-a',
    payload: resource,
    allowed: { machineA: 200 },
  },
  'DELETE /api/acp/providers/{provider}/resources/{id}': {
    url: '/api/acp/providers/agentlet-a/resources/tool-a',
    allowed: { machineA: 204 },
  },
  'GET /api/acp/profiles': { url: '/api/acp/profiles', allowed: { owner: 200 } },
  'POST /api/acp/profiles': {
    url: '/api/acp/profiles',
    payload: {
      alias: 'Writer',
      agentletId: 'agentlet-a',
      workingDirPath: '/work',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['tool-a'],
    },
    allowed: { owner: 201 },
  },
  'GET /api/acp/profiles/{id}': { url: '/api/acp/profiles/{profileId}', allowed: { owner: 200 } },
  'PATCH /api/acp/profiles/{id}': { url: '/api/acp/profiles/{profileId}', payload: { alias: 'Renamed' }, allowed: { owner: 200 } },
  'DELETE /api/acp/profiles/{id}': { url: '/api/acp/profiles/{profileId}', allowed: { owner: 204 } },
  'POST /api/acp/launch': {
    url: '/api/acp/launch',
    payload: { profileId: '{profileId}', canvasId: 'canvas-x', threadId: 'thread-new' },
    allowed: { owner: 201 },
  },
  'GET /api/acp/workloads': { url: '/api/acp/workloads?canvasId=canvas-x', allowed: { owner: 200 } },
  'GET /api/acp/workloads/{canvasId}/{threadId}': { url: '/api/acp/workloads/canvas-x/thread-1', allowed: { owner: 200 } },
  'GET /api/acp/workloads/{canvasId}/{threadId}/drift': { url: '/api/acp/workloads/canvas-x/thread-1/drift', allowed: { owner: 200 } },
  // Admitted, then refused for its digests (the moves themselves: test/pins/pin-moves.test.ts).
  'POST /api/acp/workloads/{canvasId}/{threadId}/pins': {
    url: '/api/acp/workloads/canvas-x/thread-1/pins',
    payload: { id: 'tool-a', from: `sha256:${'0'.repeat(64)}`, to: `sha256:${'0'.repeat(64)}` },
    allowed: { owner: 409 },
    admittedCode: 'pin_conflict',
  },
  'GET /api/acp/capabilities': { url: '/api/acp/capabilities', allowed: { owner: 200 } },
  // The event streams never end on their own: the admitted caller asks with a cursor this log never
  // issued, so it is answered (410) before a stream starts. test/events/change-events.test.ts reads the streams over sockets.
  'GET /api/acp/events': { url: '/api/acp/events?since=999999999', allowed: { owner: 410 }, admittedCode: 'cursor_expired' },
  'GET /api/acp/changes': { url: '/api/acp/changes', allowed: { owner: 200 } },
  'GET /api/rfs/{canvasId}/events': {
    url: '/api/rfs/canvas-x/events?since=999999999',
    allowed: { canvasX: 410 },
    admittedCode: 'cursor_expired',
  },
  'GET /api/rfs/{canvasId}/resources': {
    url: '/api/rfs/canvas-x/resources',
    allowed: { canvasX: 200 },
    alsoUrls: ['/api/rfs/canvas-x/resources?q=tool&limit=1', '/api/rfs/canvas-x/resources?limit=1'],
  },
  'GET /api/rfs/{canvasId}/resources/{id}': { url: '/api/rfs/canvas-x/resources/tool-a', allowed: { canvasX: 200 } },
  'GET /api/rfs/{canvasId}/skill': { url: '/api/rfs/canvas-x/skill', allowed: { canvasX: 200 } },
  'GET /api/rfs/{canvasId}/skill/{name}': { url: '/api/rfs/canvas-x/skill/huabu-access', allowed: { canvasX: 200 } },
  // MCP: admitted, the SDK's transport answers the rest (406 without `Accept: application/json, text/event-stream`;
  // the SDK's client over a real socket is in test/mcp/sdk-client.test.ts).
  'POST /api/rfs/{canvasId}/mcp': {
    url: '/api/rfs/canvas-x/mcp',
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    allowed: { canvasX: 406 },
  },
  'GET /api/rfs/{canvasId}/mcp': { url: '/api/rfs/canvas-x/mcp', allowed: { canvasX: 200 }, stream: true },
  'DELETE /api/rfs/{canvasId}/mcp': { url: '/api/rfs/canvas-x/mcp', allowed: { canvasX: 200 } },
  'GET /api/rfs/{canvasId}/agent/profiles': { url: '/api/rfs/canvas-x/agent/profiles', allowed: { canvasX: 200 } },
  'POST /api/rfs/{canvasId}/resources/local/receipts': {
    url: '/api/rfs/canvas-x/resources/local/receipts',
    payload: {
      id: 'agent-tool',
      kind: 'tool',
      name: 'Agent tool',
      sourceContent: 'Run $AGENT_RESOURCE_DIR/tools/agent-tool/run.sh.',
      entrypoint: 'tools/agent-tool/run.sh',
    },
    allowed: { canvasX: 200 },
  },
  'DELETE /api/rfs/{canvasId}/resources/local/receipts/{id}': {
    url: '/api/rfs/canvas-x/resources/local/receipts/agent-tool',
    allowed: { canvasX: 200 },
  },
  'POST /api/acp/grants': {
    url: '/api/acp/grants',
    payload: { canvasId: 'canvas-x', threadId: 'thread-1' },
    allowed: { owner: 201, huabu: 201 },
  },
  'GET /api/acp/secret-allowlist': { url: '/api/acp/secret-allowlist', allowed: { owner: 200 } },
  'POST /api/acp/secret-allowlist': {
    url: '/api/acp/secret-allowlist',
    payload: { fingerprint: `credential-assignment:${'a'.repeat(64)}`, reason: 'A sample value.' },
    allowed: { owner: 201 },
  },
  // No entry of this fingerprint: the owner is admitted and told so.
  'DELETE /api/acp/secret-allowlist': {
    url: `/api/acp/secret-allowlist?fingerprint=credential-assignment:${'b'.repeat(64)}`,
    allowed: { owner: 404 },
    admittedCode: 'allowlist_entry_not_found',
  },
  // The canvas token is admitted; the invocation then needs a resource grant too (test/invocation/invoke.test.ts):
  // upstream's 403 `forbidden`, with the reason telling it apart from a refused token.
  'POST /api/rfs/{canvasId}/resources/{id}/invoke': {
    url: '/api/rfs/canvas-x/resources/tool-a/invoke',
    payload: { schemaVersion: 1, input: {} },
    allowed: { canvasX: 403 },
    admittedCode: 'forbidden',
    admittedReason: 'grant_invalid',
  },
};

async function world(
  t: Parameters<typeof build>[0],
): Promise<{ h: TestApp; tokens: Record<PrincipalName, string | undefined>; profileId: string }> {
  let now = new Date('2026-11-30T10:00:00Z');
  const h = await build(t, { now: () => now, env: { REQUIRED_RESOURCE_IDS: '' } });
  const rotatedMachine = await h.enroll('agentlet-a');
  const rotation = await h.app.inject({ method: 'POST', url: '/api/acp/machines/agentlet-a/rotate', headers: h.owner });
  const machineA = rotation.json<{ token: string }>().token;
  recordIssuedToken(machineA);
  const machineB = await h.enroll('agentlet-b');
  const revokedMachine = await h.enroll('agentlet-r');
  await h.put('agentlet-a', machineA, 'tool-a');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Reviewer',
      agentletId: 'agentlet-a',
      workingDirPath: '/work',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['tool-a'],
    },
  });
  await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId: profile.json().id, canvasId: 'canvas-x', threadId: 'thread-1' },
  });
  const expiredCanvas = await h.canvasToken('canvas-x', 'agentlet-a', 60);
  now = new Date('2026-11-30T11:00:00Z');
  const revokedCanvas = await h.canvasToken('canvas-x', 'agentlet-a', 7200);
  now = new Date('2026-11-30T11:30:00Z');
  await h.app.inject({ method: 'POST', url: '/api/acp/canvas-tokens/revoke', headers: h.owner, payload: { canvasId: 'canvas-x' } });
  now = new Date('2026-11-30T12:00:00Z');
  const canvasX = await h.canvasToken('canvas-x', 'agentlet-a', 3600);
  const canvasOfRevokedMachine = await h.canvasToken('canvas-x', 'agentlet-r', 3600);
  await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-r', headers: h.owner });
  const garbage = 'arr_machine_' + 'NeverIssued'.repeat(4).slice(0, 43); // distinctive: the canary scan looks for its first 12 characters
  recordIssuedToken(garbage);
  return {
    h,
    profileId: profile.json().id,
    tokens: {
      none: undefined,
      garbage,
      owner: h.owner.authorization!.slice(7),
      huabu: h.huabu.authorization!.slice(7),
      machineA,
      machineB,
      revokedMachine,
      rotatedMachine,
      canvasX,
      expiredCanvas,
      revokedCanvas,
      canvasOfRevokedMachine,
    },
  };
}

t.test('every operation in the OpenAPI document has a matrix entry', async (t) => {
  const h = await build(t);
  const spec = (await h.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
  const operations = Object.entries(spec.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
  t.same(
    operations.filter((op) => !(op in MATRIX)),
    [],
    'operations without an entry',
  );
  t.same(
    Object.keys(MATRIX).filter((op) => !operations.includes(op)),
    [],
    'entries for operations that no longer exist',
  );
});

for (const [operation, entry] of Object.entries(MATRIX)) {
  t.test(operation, async (t) => {
    const { h, tokens, profileId } = await world(t);
    for (const url of [entry.url, ...(entry.alsoUrls ?? [])].map((u) => u.replace('{profileId}', profileId))) await check(url);
    async function check(url: string) {
      const method = operation.split(' ')[0] as 'GET';
      // Admitted principals last: their request may change state (revoke, withdraw).
      const order = [...PRINCIPALS].sort(
        (a, b) => Number(entry.allowed !== 'public' && a in entry.allowed) - Number(entry.allowed !== 'public' && b in entry.allowed),
      );
      for (const principal of order) {
        if (entry.stream && entry.allowed !== 'public' && principal in entry.allowed) continue;
        const token = tokens[principal];
        const expected =
          entry.allowed === 'public' ? entry.publicStatus! : UNAUTHENTICATED.includes(principal) ? 401 : (entry.allowed[principal] ?? 403);
        const res = await h.app.inject({
          method,
          url,
          headers: token ? { authorization: `Bearer ${token}` } : {},
          ...(entry.payload === undefined ? {} : { payload: JSON.parse(JSON.stringify(entry.payload).replace('{profileId}', profileId)) }),
        });
        t.equal(res.statusCode, expected, `${url} ${principal} → ${expected}`);
        if (entry.admittedCode && entry.allowed !== 'public' && principal in entry.allowed) {
          t.equal(res.json().code, entry.admittedCode);
          if (entry.admittedReason) t.equal(res.json().details?.reason, entry.admittedReason, 'admitted, then refused for its grant');
        } else {
          if (expected === 401) t.equal(res.json().code, 'unauthorized');
          if (expected === 403) t.equal(res.json().code, 'forbidden');
        }
        if ((res.statusCode === 201 && /machines|canvas-tokens/.test(entry.url)) || (res.statusCode === 200 && /rotate$/.test(entry.url)))
          recordIssuedToken(res.json().token);
        if (res.statusCode === 201 && /grants/.test(entry.url)) recordIssuedToken(res.json().grant);
      }
    }
  });
}

t.test('object level: machine A cannot touch machine B records; provider path mismatch is 403', async (t) => {
  const { h, tokens } = await world(t);
  await h.put('agentlet-b', tokens.machineB!, 'tool-b');
  const url = '/api/acp/providers/agentlet-b/resources/tool-b';
  for (const method of ['PUT', 'DELETE'] as const) {
    const res = await h.app.inject({
      method,
      url,
      headers: h.bearer(tokens.machineA!),
      ...(method === 'PUT' ? { payload: resource } : {}),
    });
    t.equal(res.statusCode, 403, `${method} on B's path with A's token`);
  }
  const viaOwnPath = await h.app.inject({
    method: 'DELETE',
    url: '/api/acp/providers/agentlet-a/resources/tool-b',
    headers: h.bearer(tokens.machineA!),
  });
  t.equal(viaOwnPath.statusCode, 409, "B's record through A's own path is a conflict");
  const still = await h.app.inject({ url: '/api/acp/resources/tool-b', headers: h.owner });
  t.equal(still.json().provider, 'agentlet-b');
  const canvasY = await h.app.inject({ url: '/api/rfs/canvas-y/resources', headers: h.bearer(tokens.canvasX!) });
  t.equal(canvasY.statusCode, 403, 'a canvas-X token cannot read canvas Y');
});

t.test("object level: a thread header selects only among the canvas's own pins, never widening what a token reads", async (t) => {
  const { h, tokens } = await world(t);
  // thread-1 of canvas X runs on machine A and pins tool-a; machine A then replaces tool-a.
  t.equal((await h.put('agentlet-a', tokens.machineA!, 'tool-a', { instructions: 'Changed since the launch.' })).statusCode, 200);
  const thread = { 'x-huabu-thread-id': 'thread-1' };
  const own = await h.app.inject({ url: '/api/rfs/canvas-x/resources/tool-a', headers: { ...h.bearer(tokens.canvasX!), ...thread } });
  t.equal(own.json().instructions, 'Use tool-a via $HUABU_RFS_URL.', 'the canvas X token of machine A reads its thread at the pin');
  const canvasXofB = await h.canvasToken('canvas-x', 'agentlet-b');
  for (const url of ['/api/rfs/canvas-x/resources/tool-a', '/api/rfs/canvas-x/resources/tool-a?schemaVersion=2']) {
    const res = await h.app.inject({ url, headers: { ...h.bearer(canvasXofB), ...thread } });
    t.equal(res.statusCode, 404, "machine B's token on the same canvas naming A's thread still cannot read A's record");
    t.equal(res.headers['x-resource-digest'], undefined);
  }
  const listB = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: { ...h.bearer(canvasXofB), ...thread } });
  t.notOk(
    listB.json<{ resources: { id: string }[] }>().resources.some((r) => r.id === 'tool-a'),
    'nor list it',
  );
  const canvasY = await h.canvasToken('canvas-y', 'agentlet-a');
  const otherCanvas = await h.app.inject({ url: '/api/rfs/canvas-y/resources/tool-a', headers: { ...h.bearer(canvasY), ...thread } });
  t.equal(otherCanvas.json().instructions, 'Changed since the launch.', "canvas Y's token naming canvas X's thread reads as without it");
  t.equal(otherCanvas.headers['x-resource-digest'], undefined);
  const crossed = await h.app.inject({ url: '/api/rfs/canvas-x/resources/tool-a', headers: { ...h.bearer(canvasY), ...thread } });
  t.equal(crossed.statusCode, 403, 'a token of another canvas is refused, header or not');
  for (const principal of ['expiredCanvas', 'revokedCanvas', 'canvasOfRevokedMachine'] as const) {
    const res = await h.app.inject({ url: '/api/rfs/canvas-x/resources/tool-a', headers: { ...h.bearer(tokens[principal]!), ...thread } });
    t.equal(res.statusCode, 401, `${principal} with the thread header → 401`);
  }
  const ownerThread = await h.app.inject({ url: '/api/acp/workloads/canvas-x/no-such-thread', headers: h.owner });
  t.equal(ownerThread.statusCode, 404);
  t.equal(ownerThread.json().code, 'workload_not_found', 'an unknown thread on owner routes');
});
