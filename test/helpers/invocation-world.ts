// The invocation tests' world: a registry on a real socket with a hosted-capabilities file pointing at a
// real local endpoint, two enrolled machines, four launched threads, their canvas tokens and grants, and an
// agent-side `invoke` that speaks HTTP with undici.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { build, CANARY, DATA_ROOT, recordIssuedToken, type TestApp } from './build.js';
import { startHostedEndpoint, type HostedEndpoint } from './hosted-endpoint.js';
import { listen } from './sockets.js';
/** The hosted provider's credential: recognizable, so the canary scan looks for it everywhere. */
export const SEARCH_KEY = 'arr_credential_CANARYsearch0key0value0for0tests0';
recordIssuedToken(SEARCH_KEY);

const WEB_SEARCH_SCHEMA = {
  // After upstream's web-search input (microsoft/Huabu, the shared hosted-capability schema next to
  // RESOURCE_GRANT_HEADER, found with find_string "X-Huabu-Resource-Grant"; architecture in
  // docs/architecture/agent-resources.md at commit 0e53b7eb538ed0c1b76c4018daca13e8c8fd82ce).
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1, maxLength: 4000 },
    maxResults: { type: 'integer', minimum: 1, maximum: 10 },
    searchDepth: { type: 'string', enum: ['basic', 'advanced'], maxLength: 16 },
    includeAnswer: { type: 'boolean' },
  },
  required: ['query'],
  additionalProperties: false,
};

export function capabilitiesFile(origin: string) {
  const base = {
    inputSchema: WEB_SEARCH_SCHEMA,
    timeoutMs: 5000,
    maxInputBytes: 200,
    maxOutputBytes: 1000,
    perGrant: { concurrency: 4, perMinute: 1000 },
  };
  return {
    schemaVersion: 1,
    capabilities: {
      'web-search': { ...base, endpoint: `${origin}/ok`, credential: { header: 'X-Api-Key', env: 'ARR_TEST_SEARCH_KEY' } },
      'slow-search': { ...base, endpoint: `${origin}/hold`, timeoutMs: 300 },
      'hold-search': { ...base, endpoint: `${origin}/hold`, timeoutMs: 20_000, perGrant: { concurrency: 1, perMinute: 1000 } },
      'hold2-search': { ...base, endpoint: `${origin}/hold`, timeoutMs: 20_000 },
      'limited-search': { ...base, endpoint: `${origin}/ok`, perGrant: { concurrency: 4, perMinute: 2 } },
      'failing-search': { ...base, endpoint: `${origin}/fail` },
      'big-search': { ...base, endpoint: `${origin}/big` },
      'text-search': { ...base, endpoint: `${origin}/not-json` },
      'down-search': { ...base, endpoint: 'http://127.0.0.1:9/unreachable' },
      'withdrawn-search': { ...base, endpoint: `${origin}/ok` },
      'ghost-search': { ...base, endpoint: `${origin}/ok` },
      'echo-search': { ...base, endpoint: `${origin}/echo-headers`, credential: { header: 'X-Api-Key', env: 'ARR_TEST_SEARCH_KEY' } },
      'echo64-search': { ...base, endpoint: `${origin}/echo-base64`, credential: { header: 'X-Api-Key', env: 'ARR_TEST_SEARCH_KEY' } },
      'deep-search': { ...base, endpoint: `${origin}/deep`, maxOutputBytes: 300_000 },
    },
  };
}
export const HOSTED = [
  'web-search',
  'slow-search',
  'hold-search',
  'limited-search',
  'failing-search',
  'big-search',
  'text-search',
  'down-search',
  'withdrawn-search',
  'echo-search',
  'echo64-search',
  'deep-search',
  'hold2-search',
];

/** The thread a grant names (its claims are readable), or undefined for anything that is not a grant. */
export function threadOf(grant: string): string | undefined {
  try {
    const claims = JSON.parse(Buffer.from(grant.slice('arr_grant_'.length).split('.')[0]!, 'base64url').toString('utf8')) as {
      t?: unknown;
    };
    return typeof claims.t === 'string' ? claims.t : undefined;
  } catch {
    return undefined;
  }
}

export interface World {
  h: TestApp;
  endpoint: HostedEndpoint;
  origin: string;
  clock: { ms: number };
  capsFile: string;
  tokens: { c1m1: string; c2m1: string; c1m2: string };
  /** The machine tokens of mac-1 and mac-2. */
  machines: { m1: string; m2: string };
  grants: { t1: string; t2: string; t3: string; t4: string };
  mint(canvasId: string, threadId: string, ttlSeconds?: number): Promise<string>;
  invoke(
    id: string,
    opts?: {
      canvas?: string;
      token?: string | null;
      grant?: string | null;
      input?: unknown;
      body?: unknown;
      thread?: string | null;
      signal?: AbortSignal;
    },
  ): Promise<{ status: number; headers: Record<string, unknown>; body: InvokeAnswer; text: string }>;
}

/**
 * The invoke route's answer as the tests read it: the members of a result and of the error envelope (an
 * answer holds one set; a test reads the members of the answer it expects). Undefined when not JSON.
 */
export interface InvokeAnswer {
  schemaVersion: number;
  resourceId: string;
  correlationId: string;
  result: Record<string, unknown>;
  code: string;
  error: string;
  message: string;
  details: { reason: string; cause?: string; issues?: unknown; findings?: unknown; [key: string]: unknown };
}

export async function world(
  t: Parameters<typeof build>[0],
  options: { dataDir?: string; capsFile?: string; endpoint?: HostedEndpoint; env?: Record<string, string> } = {},
): Promise<World> {
  const endpoint = options.endpoint ?? (await startHostedEndpoint());
  if (!options.endpoint) t.teardown(() => endpoint.close());
  const clock = { ms: Date.parse('2026-11-30T12:00:00.000Z') };
  const capsFile = options.capsFile ?? path.join(DATA_ROOT, `caps-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  if (!options.capsFile) await writeFile(capsFile, JSON.stringify(capabilitiesFile(endpoint.origin)));
  const h = await build(t, {
    env: { HOSTED_CAPABILITIES_FILE: capsFile, ARR_TEST_SEARCH_KEY: SEARCH_KEY, REQUIRED_RESOURCE_IDS: '', ...options.env },
    now: () => new Date(clock.ms),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const origin = await listen(h.app);

  const mint = async (canvasId: string, threadId: string, ttlSeconds?: number) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/grants',
      headers: h.owner,
      payload: { canvasId, threadId, ...(ttlSeconds ? { ttlSeconds } : {}) },
    });
    if (res.statusCode !== 201) throw new Error(`grant: ${res.statusCode} ${res.body}`);
    const grant = res.json().grant as string;
    recordIssuedToken(grant);
    return grant;
  };
  const w: World = {
    h,
    endpoint,
    origin,
    clock,
    capsFile,
    tokens: undefined as never,
    machines: undefined as never,
    grants: undefined as never,
    mint,
    async invoke(id, opts = {}) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      const token = opts.token === undefined ? w.tokens.c1m1 : opts.token;
      const grant = opts.grant === undefined ? w.grants.t1 : opts.grant;
      if (token) headers.authorization = `Bearer ${token}`;
      if (grant) headers['x-huabu-resource-grant'] = grant;
      // As the seeded records tell agents to: the grant's own thread, unless the test names one or none.
      const thread = opts.thread === undefined ? (grant ? threadOf(grant) : undefined) : opts.thread;
      if (thread) headers['x-huabu-thread-id'] = thread;
      const res = await request(`${origin}/api/rfs/${opts.canvas ?? 'canvas-1'}/resources/${id}/invoke`, {
        method: 'POST',
        headers,
        body: JSON.stringify(opts.body ?? { schemaVersion: 1, input: opts.input ?? { query: 'lichen growth rates' } }),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      const text = await res.body.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: res.statusCode, headers: res.headers, body: body as InvokeAnswer, text };
    },
  };
  if (options.dataDir) return w;

  const m1 = await h.enroll('mac-1');
  const m2 = await h.enroll('mac-2');
  for (const id of HOSTED) {
    const put = await h.put('huabu', CANARY.huabu, id);
    if (put.statusCode !== 201) throw new Error(`put ${id}: ${put.body}`);
  }
  const profile = async (agentletId: string, resourceIds: string[]) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: {
        alias: `Agent ${agentletId} ${resourceIds.length}`,
        agentletId,
        workingDirPath: '/work',
        launch: { kind: 'acp-command', command: 'agent' },
        resourceIds,
      },
    });
    if (res.statusCode !== 201) throw new Error(`profile: ${res.body}`);
    return res.json().id as string;
  };
  const p1 = await profile(
    'mac-1',
    HOSTED.filter((id) => id !== 'hold-search'),
  );
  const p1b = await profile('mac-1', ['web-search', 'hold-search', 'hold2-search']);
  const p2 = await profile('mac-2', ['web-search']);
  const launch = async (profileId: string, canvasId: string, threadId: string) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/launch',
      headers: h.owner,
      payload: { profileId, canvasId, threadId },
    });
    if (res.statusCode !== 201) throw new Error(`launch: ${res.body}`);
  };
  await launch(p1, 'canvas-1', 'thread-1');
  await launch(p2, 'canvas-1', 'thread-2');
  await launch(p1, 'canvas-2', 'thread-3');
  await launch(p1b, 'canvas-1', 'thread-4');
  w.machines = { m1, m2 };
  w.tokens = {
    c1m1: await h.canvasToken('canvas-1', 'mac-1'),
    c2m1: await h.canvasToken('canvas-2', 'mac-1'),
    c1m2: await h.canvasToken('canvas-1', 'mac-2'),
  };
  w.grants = {
    t1: await mint('canvas-1', 'thread-1'),
    t2: await mint('canvas-1', 'thread-2'),
    t3: await mint('canvas-2', 'thread-3'),
    t4: await mint('canvas-1', 'thread-4'),
  };
  return w;
}
