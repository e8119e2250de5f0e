// The registry as an MCP server, driven by the official SDK's own client over a real socket: an agent
// lists and reads the records its canvas may see and the host's guides, is told of changes on the
// notification stream, lists and calls the hosted capabilities its grant allows (the vendor a real local
// server), cancels a call (a cancel without the call's grant aborts nothing), and gets a capability's failure as an `isError` result without the vendor's
// body or key. Refusals before JSON-RPC (token, canvas, Origin) are in our envelope; a revoked token
// closes the stream.
import t from 'tap';
import { request } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CANARY, DATA_ROOT } from '../helpers/build.js';
import { startHostedEndpoint, UPSTREAM_LEAK } from '../helpers/hosted-endpoint.js';
import { auditLines } from '../helpers/audit.js';
import { until } from '../helpers/wait.js';
import { capabilitiesFile, SEARCH_KEY, world, type World } from '../helpers/invocation-world.js';
import { PNG_B64, startVendorEndpoints } from '../helpers/vendor-endpoints.js';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

async function connect(
  t: Parameters<typeof world>[0],
  w: World,
  opts: { token?: string; canvas?: string; grant?: string; thread?: string } = {},
): Promise<Client> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? w.tokens.c1m1}` };
  if (opts.grant) headers['x-huabu-resource-grant'] = opts.grant;
  if (opts.thread) headers['x-huabu-thread-id'] = opts.thread;
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${w.origin}/api/rfs/${opts.canvas ?? 'canvas-1'}/mcp`), {
    requestInit: { headers },
  });
  await client.connect(transport);
  t.teardown(() => client.close());
  return client;
}

const raw = (w: World, headers: Record<string, string>, body: unknown = INIT, canvas = 'canvas-1') =>
  request(`${w.origin}/api/rfs/${canvas}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });

t.test('an MCP client lists and reads what its canvas may see, exactly as RFS serves it', async (t) => {
  const w = await world(t);
  t.equal((await w.h.put('mac-1', w.machines.m1, 'mine', { description: 'My own tool.' })).statusCode, 201);
  t.equal((await w.h.put('mac-2', w.machines.m2, 'theirs')).statusCode, 201);
  const customized = await w.h.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/mine',
    headers: w.h.owner,
    payload: { displayName: 'My tool', userContent: 'Prefer the short form.' },
  });
  t.equal(customized.statusCode, 200, customized.body);
  const client = await connect(t, w);
  t.same(
    client.getServerCapabilities(),
    { resources: { subscribe: true, listChanged: true }, tools: {} },
    'it offers resources a client may subscribe to and be told of, and tools',
  );
  const { resources } = await client.listResources();
  const ids = resources.filter((r) => r.uri.startsWith('registry://resources/')).map((r) => r.name);
  const rfs = await request(`${w.origin}/api/rfs/canvas-1/resources?limit=500`, { headers: w.h.bearer(w.tokens.c1m1) });
  const catalogue = (await rfs.body.json()) as { resources: { id: string }[] };
  t.same(
    ids,
    catalogue.resources.map((r) => r.id),
    'the same records as GET <rfs>/resources, in the order of its pages',
  );
  t.ok(ids.includes('mine') && !ids.includes('theirs'), "its machine's records, never another machine's");
  t.same(
    resources.find((r) => r.name === 'mine'),
    { uri: 'registry://resources/mine', name: 'mine', title: 'My tool', description: 'My own tool.', mimeType: 'text/markdown' },
  );
  t.same(
    resources.filter((r) => r.uri.startsWith('registry://skill/')).map((r) => r.name),
    ['huabu-access', 'local-resource-management'],
    "the host's guides",
  );

  const read = await client.readResource({ uri: 'registry://resources/mine' });
  const v2 = await request(`${w.origin}/api/rfs/canvas-1/resources/mine?schemaVersion=2`, { headers: w.h.bearer(w.tokens.c1m1) });
  const record = (await v2.body.json()) as { sourceContent: string; userContent: string };
  t.same(read.contents, [
    {
      uri: 'registry://resources/mine',
      mimeType: 'text/markdown',
      text: `${record.sourceContent}\n\n## Instructions from the owner\n\n${record.userContent}`,
    },
  ]);
  const guide = await client.readResource({ uri: 'registry://skill/huabu-access' });
  const served = await request(`${w.origin}/api/rfs/canvas-1/skill/huabu-access`, { headers: w.h.bearer(w.tokens.c1m1) });
  t.equal((guide.contents[0] as { text: string }).text, await served.body.text(), 'a guide reads as GET /skill/<name> serves it');
  for (const uri of [
    'registry://resources/theirs',
    'registry://resources/nothing',
    'registry://skill/nothing',
    'https://example.org/',
    'https://skills.x/huabu-access',
  ]) {
    await t.rejects(client.readResource({ uri }), { code: -32002, message: /Resource not found/, data: { uri } }, `${uri} is not found`);
  }
  await t.rejects(client.subscribeResource({ uri: 'registry://resources/theirs' }), { code: -32002 }, 'nor subscribed to');
});

t.test('refused before any JSON-RPC, in our envelope: no token 401, another canvas 403, a foreign Origin 403', async (t) => {
  const w = await world(t);
  const none = await raw(w, {});
  t.equal(none.statusCode, 401);
  t.equal(none.headers['www-authenticate'], 'Bearer');
  t.match(await none.body.json(), { code: 'unauthorized' });
  const garbage = await raw(w, { authorization: 'Bearer nope' });
  t.equal(garbage.statusCode, 401);
  await garbage.body.dump();
  const other = await raw(w, w.h.bearer(w.tokens.c2m1));
  t.equal(other.statusCode, 403, "another canvas's token");
  t.match(await other.body.json(), { code: 'forbidden' });
  const provider = await raw(w, w.h.bearer(w.machines.m1));
  t.equal(provider.statusCode, 403, 'a machine token is no canvas token');
  await provider.body.dump();
  const foreign = await raw(w, { ...w.h.bearer(w.tokens.c1m1), origin: 'http://evil.example' });
  t.equal(foreign.statusCode, 403, 'a browser page of another origin');
  t.match(await foreign.body.json(), { code: 'forbidden', message: /Origin/ });
  const stream = await request(`${w.origin}/api/rfs/canvas-1/mcp`, { headers: { accept: 'text/event-stream' } });
  t.equal(stream.statusCode, 401, 'the stream too');
  await stream.body.dump();
  const own = await raw(w, { ...w.h.bearer(w.tokens.c1m1), origin: 'http://registry.test' });
  t.equal(own.statusCode, 200, 'its own origin (PUBLIC_BASE_URL) is fine');
  t.match(await own.body.json(), { jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'agent-resource-registry' } } });
  const expired = await w.h.canvasToken('canvas-1', 'mac-1', 60);
  w.clock.ms += 120_000;
  const late = await raw(w, w.h.bearer(expired));
  t.equal(late.statusCode, 401, 'an expired token');
  await late.body.dump();
});

t.test('resources/list pages with nextCursor; find_resources searches what the canvas may read, grant or not', async (t) => {
  const w = await world(t);
  const names = Array.from({ length: 230 }, (_, i) => `tool-${String(i).padStart(3, '0')}`);
  const bulk = await w.h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-1/resources',
    headers: w.h.bearer(w.machines.m1),
    payload: {
      resources: names.map((id) => ({ schemaVersion: 1, id, name: `Tool ${id}`, description: `Tool ${id}.`, instructions: 'Use it.' })),
    },
  });
  t.equal(bulk.statusCode, 200, bulk.body);
  t.equal((await w.h.put('mac-1', w.machines.m1, 'pdf-reader', { description: 'Reads PDF files aloud.' })).statusCode, 201);
  t.equal((await w.h.put('mac-2', w.machines.m2, 'pdf-writer', { description: 'Writes PDF files.' })).statusCode, 201);
  const client = await connect(t, w);
  const listed: string[] = [];
  const guides: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listResources(cursor === undefined ? {} : { cursor });
    listed.push(...page.resources.filter((r) => r.uri.startsWith('registry://resources/')).map((r) => r.name));
    guides.push(...page.resources.filter((r) => r.uri.startsWith('registry://skill/')).map((r) => r.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== undefined);
  t.ok(pages >= 3, `${pages} pages of at most 100 records`);
  const rfs = await request(`${w.origin}/api/rfs/canvas-1/resources`, { headers: w.h.bearer(w.tokens.c1m1) });
  const all = ((await rfs.body.json()) as { resources: { id: string }[] }).resources.map((r) => r.id);
  t.same([...listed].sort(), [...all].sort(), 'every record the canvas may read, once');
  t.equal(new Set(listed).size, listed.length);
  t.same(guides, ['huabu-access', 'local-resource-management'], "the host's guides once, on the first page");
  await t.rejects(client.listResources({ cursor: 'not-a-cursor' }), /-32602|Invalid/, 'a cursor the list did not hand out');

  const found = (await client.callTool({ name: 'find_resources', arguments: { query: 'pdf' } })) as CallToolResult;
  t.notOk(found.isError);
  t.same(
    found.structuredContent,
    {
      resources: [
        { id: 'pdf-reader', title: 'Name of pdf-reader', description: 'Reads PDF files aloud.', uri: 'registry://resources/pdf-reader' },
      ],
    },
    "its machine's match, never another machine's",
  );
  t.same(found.content, [{ type: 'text', text: JSON.stringify(found.structuredContent) }]);
  const read = await client.readResource({ uri: 'registry://resources/pdf-reader' });
  t.match(read.contents[0], { uri: 'registry://resources/pdf-reader' }, 'then read what it found');
  const limited = (await client.callTool({ name: 'find_resources', arguments: { query: 'tool', limit: 3 } })) as CallToolResult;
  t.equal((limited.structuredContent as { resources: unknown[] }).resources.length, 3);
  for (const args of [
    {},
    { query: '' },
    { query: 'x', limit: 0 },
    { query: 'x', limit: 51 },
    { query: 'x', extra: 1 },
    { query: 'y'.repeat(300) },
  ]) {
    const bad = (await client.callTool({ name: 'find_resources', arguments: args })) as CallToolResult;
    t.equal(bad.isError, true, JSON.stringify(args).slice(0, 60));
    t.match(bad.structuredContent, { code: 'validation_failed' });
  }
});

t.test('tools are the hosted capabilities the grant allows; a call goes through the invocation service', async (t) => {
  const w = await world(t);
  const bare = await connect(t, w);
  t.same(
    (await bare.listTools()).tools.map((tool) => tool.name),
    ['find_resources'],
    'without a grant, no hosted capability: only the search',
  );
  const refused = (await bare.callTool({ name: 'web-search', arguments: { query: 'lichen' } })) as CallToolResult;
  t.equal(refused.isError, true, 'and a call is refused');
  t.match(refused.structuredContent, { code: 'forbidden', details: { reason: 'grant_invalid' } });

  const client = await connect(t, w, { grant: w.grants.t1, thread: 'thread-1' });
  const { tools } = await client.listTools();
  const granted = await w.h.app.inject({ method: 'GET', url: '/api/acp/workloads/canvas-1/thread-1', headers: w.h.owner });
  t.ok(granted.statusCode === 200);
  t.ok(tools.some((tool) => tool.name === 'web-search'));
  t.notOk(
    tools.some((tool) => tool.name === 'hold-search'),
    'not a capability the thread lacks',
  );
  t.match(
    tools.find((tool) => tool.name === 'web-search'),
    {
      title: 'Name of web-search',
      description: 'About web-search.',
      inputSchema: { type: 'object', required: ['query'], properties: { query: { type: 'string' } } },
    },
  );
  const otherThread = await connect(t, w, { grant: w.grants.t1, thread: 'thread-4' });
  t.same(
    (await otherThread.listTools()).tools.map((tool) => tool.name),
    ['find_resources'],
    "a grant sent with another thread's ID lists no capability",
  );

  const seen = w.endpoint.next();
  const result = (await client.callTool({
    name: 'web-search',
    arguments: { query: 'lichen growth rates', maxResults: 3 },
  })) as CallToolResult;
  t.notOk(result.isError);
  const output = { results: [{ title: 'A result', url: 'https://example.org/' }], echoed: { query: 'lichen growth rates', maxResults: 3 } };
  t.same(result.structuredContent, output);
  t.same(result.content, [{ type: 'text', text: JSON.stringify(output) }]);
  t.equal((await seen).headers['x-api-key'], SEARCH_KEY, 'the vendor gets its key');
  const invoked = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke' && a.outcome === 'ok');
  t.match(
    invoked,
    [{ actor: 'canvas:canvas-1@mac-1', id: 'web-search', outcome: 'ok', details: { thread: 'thread-1' } }],
    'audited as /invoke is',
  );

  const bad = (await client.callTool({ name: 'web-search', arguments: { query: 'x', extra: 1 } })) as CallToolResult;
  t.match(bad.structuredContent, { code: 'invalid_input', details: { reason: 'validation_failed' } }, 'the input is checked');
  const notGranted = (await client.callTool({ name: 'hold-search', arguments: { query: 'x' } })) as CallToolResult;
  t.match(notGranted.structuredContent, { code: 'forbidden', details: { reason: 'resource_not_granted' } });
});

t.test("a capability's failure is an isError result with upstream's code, never the vendor's body or key", async (t) => {
  const w = await world(t);
  const client = await connect(t, w, { grant: w.grants.t1, thread: 'thread-1' });
  for (const name of ['failing-search', 'echo-search', 'text-search']) {
    const result = (await client.callTool({ name, arguments: { query: 'lichen' } })) as CallToolResult;
    t.equal(result.isError, true, name);
    t.match(result.structuredContent, { code: 'provider_failure', details: { reason: 'invocation_failed' } }, name);
    const { code, message } = result.structuredContent as { code: string; message: string };
    t.same(result.content, [{ type: 'text', text: `${code}: ${message}` }], `${name}: the model reads the code and message`);
    const text = JSON.stringify(result);
    t.notOk(text.includes(UPSTREAM_LEAK), `${name}: no vendor body`);
    t.notOk(text.includes(SEARCH_KEY), `${name}: no key`);
  }
  const slow = (await client.callTool({ name: 'slow-search', arguments: { query: 'lichen' } })) as CallToolResult;
  t.match(slow.structuredContent, { code: 'timeout', details: { reason: 'invocation_timeout' } }, 'the deadline holds');
});

t.test('notifications/cancelled aborts the vendor call', async (t) => {
  const w = await world(t);
  const client = await connect(t, w, { grant: w.grants.t4, thread: 'thread-4' });
  const seen = w.endpoint.next();
  const cancel = new AbortController();
  const call = client.callTool({ name: 'hold-search', arguments: { query: 'lichen' } }, undefined, { signal: cancel.signal });
  const held = await seen;
  cancel.abort();
  await t.rejects(call);
  t.equal(await held.aborted, true, 'the vendor saw the call aborted');
  // Audited once the call ends.
  await until('the cancelled call audited', async () => (await auditLines(w.h)).some((a) => a.action === 'resource.invoke'));
  t.match(
    (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke'),
    [{ id: 'hold-search', outcome: 'cancelled', details: { reason: 'client_disconnected' } }],
  );
});

t.test("a cancel without the call's grant aborts nothing; one with it aborts the call", async (t) => {
  const w = await world(t);
  const client = await connect(t, w, { grant: w.grants.t4, thread: 'thread-4' });
  const seen = w.endpoint.next();
  const call = client.callTool({ name: 'hold-search', arguments: { query: 'lichen' } });
  const held = await seen;
  // Another caller on the same canvas names the call's thread and guesses its request ID (SDK clients count
  // from 0): with no grant, with another thread's grant, with the call's thread but another canvas token.
  const cancel = (requestId: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });
  const foreign: [string, Record<string, string>][] = [
    ['no grant', { authorization: `Bearer ${w.tokens.c1m1}`, 'x-huabu-thread-id': 'thread-4' }],
    [
      "another thread's grant",
      { authorization: `Bearer ${w.tokens.c1m1}`, 'x-huabu-resource-grant': w.grants.t1, 'x-huabu-thread-id': 'thread-4' },
    ],
    [
      "the call's grant under another thread's ID",
      { authorization: `Bearer ${w.tokens.c1m1}`, 'x-huabu-resource-grant': w.grants.t4, 'x-huabu-thread-id': 'thread-1' },
    ],
  ];
  for (const [who, headers] of foreign) {
    const res = await raw(
      w,
      { ...headers, 'mcp-protocol-version': '2025-06-18' },
      Array.from({ length: 10 }, (_, id) => cancel(id)),
    );
    t.equal(res.statusCode, 202, `the cancel with ${who} is accepted`);
    await res.body.dump();
  }
  w.endpoint.releaseAll();
  const done = (await call) as CallToolResult;
  t.notOk(done.isError, 'the call was not aborted: it ends with its result');
  t.equal(await held.aborted, false, 'the vendor call was not aborted');

  // The call's own grant and thread, in a POST of its own (as any client sends a cancel), still abort it.
  const again = w.endpoint.next();
  const second = raw(
    w,
    {
      authorization: `Bearer ${w.tokens.c1m1}`,
      'x-huabu-resource-grant': w.grants.t4,
      'x-huabu-thread-id': 'thread-4',
      'mcp-protocol-version': '2025-06-18',
    },
    { jsonrpc: '2.0', id: 'mine', method: 'tools/call', params: { name: 'hold-search', arguments: { query: 'moss' } } },
  );
  const secondHeld = await again;
  const rightful = await raw(
    w,
    {
      authorization: `Bearer ${w.tokens.c1m1}`,
      'x-huabu-resource-grant': w.grants.t4,
      'x-huabu-thread-id': 'thread-4',
      'mcp-protocol-version': '2025-06-18',
    },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'mine' } },
  );
  t.equal(rightful.statusCode, 202);
  await rightful.body.dump();
  t.equal(await secondHeld.aborted, true, 'the rightful cancel aborts the vendor call');
  const answer = (await (await second).body.json()) as { id: string; result: CallToolResult };
  t.match(answer, {
    id: 'mine',
    result: { isError: true, structuredContent: { code: 'cancelled', details: { reason: 'client_disconnected' } } },
  });
  t.match(answer.result.content, [{ type: 'text', text: /^cancelled: .*cancelled/ }], 'the model is told the call was cancelled');
});

t.test('the stream tells of changes to what the canvas may see, within a second', async (t) => {
  const w = await world(t);
  const client = await connect(t, w);
  const updated: string[] = [];
  let listChanged = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void listChanged++);
  await client.subscribeResource({ uri: 'registry://resources/web-search' });
  t.same(await client.unsubscribeResource({ uri: 'registry://resources/web-search' }), {}, 'an unsubscribe is answered');
  await client.subscribeResource({ uri: 'registry://resources/web-search' });
  // The client opens its stream after initializing; wait until it is open before writing.
  await until('the stream open', async () => {
    await w.h.put('huabu', CANARY.huabu, 'probe');
    return updated.includes('registry://resources/probe');
  });
  updated.length = 0;
  listChanged = 0;
  const started = performance.now();
  t.equal((await w.h.put('huabu', CANARY.huabu, 'web-search', { description: 'Changed.' })).statusCode, 200);
  t.equal((await w.h.put('mac-2', w.machines.m2, 'theirs')).statusCode, 201);
  t.equal((await w.h.put('mac-1', w.machines.m1, 'mine')).statusCode, 201);
  await until('the notification of mine', () => Promise.resolve(updated.includes('registry://resources/mine')));
  t.ok(performance.now() - started < 1000, 'within a second');
  t.ok(updated.includes('registry://resources/web-search'), 'a record it subscribed to, replaced');
  t.notOk(updated.includes('registry://resources/theirs'), "never another machine's record");
  t.ok(listChanged >= 1, 'the list changed');

  // Another machine's change alone tells this canvas nothing, not even that its list changed.
  updated.length = 0;
  listChanged = 0;
  t.equal((await w.h.put('mac-2', w.machines.m2, 'theirs-too')).statusCode, 201);
  await new Promise((r) => setTimeout(r, 300));
  t.equal((await w.h.put('mac-1', w.machines.m1, 'mine-too')).statusCode, 201);
  await until('the notification of mine-too', () => Promise.resolve(updated.includes('registry://resources/mine-too')));
  t.same(updated, ['registry://resources/mine-too'], 'only the record it may see');
  t.equal(listChanged, 1, 'one list change: the one it may see');
});

t.test('a burst of changes longer than a page is told in full, whoever made its first pages', async (t) => {
  const w = await world(t);
  const client = await connect(t, w);
  const updated = new Set<string>();
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.add(n.params.uri));
  await until('the stream open', async () => {
    await w.h.put('huabu', CANARY.huabu, 'probe');
    return updated.has('registry://resources/probe');
  });
  const set = (prefix: string) =>
    Array.from({ length: 300 }, (_, i) => ({
      schemaVersion: 1,
      id: `${prefix}-${i}`,
      name: `Tool ${i}`,
      description: 'A tool.',
      instructions: 'Use it.',
    }));
  const publish = (machine: string, token: string, prefix: string) =>
    w.h.app.inject({
      method: 'PUT',
      url: `/api/acp/providers/${machine}/resources`,
      headers: w.h.bearer(token),
      payload: { resources: set(prefix) },
    });
  // More than a page (256 events) of another machine's changes, with this machine's own right behind them.
  const [theirs, mine] = await Promise.all([publish('mac-2', w.machines.m2, 'theirs'), publish('mac-1', w.machines.m1, 'mine')]);
  t.equal(theirs.statusCode, 200, theirs.body);
  t.equal(mine.statusCode, 200, mine.body);
  await until('every record of mine told', () => Promise.resolve(set('mine').every((r) => updated.has(`registry://resources/${r.id}`))));
  t.notOk(
    [...updated].some((uri) => uri.includes('/theirs-')),
    "never another machine's record",
  );
  // And a later change of its own, after the burst, is told as well.
  t.equal((await w.h.put('mac-1', w.machines.m1, 'after')).statusCode, 201);
  await until('the record after the burst told', () => Promise.resolve(updated.has('registry://resources/after')));
  t.pass('told');
});

t.test('a revoked canvas token closes the stream', async (t) => {
  const w = await world(t);
  const res = await request(`${w.origin}/api/rfs/canvas-1/mcp`, {
    headers: { ...w.h.bearer(w.tokens.c1m1), accept: 'text/event-stream', 'mcp-protocol-version': '2025-06-18' },
  });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /text\/event-stream/);
  const ended = (async () => {
    for await (const _chunk of res.body) {
      // reading until the server ends it
    }
    return performance.now();
  })().catch(() => performance.now());
  const revoked = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens/revoke',
    headers: w.h.owner,
    payload: { canvasId: 'canvas-1' },
  });
  t.equal(revoked.statusCode, 200);
  const at = performance.now();
  t.ok((await ended) - at < 1000, 'closed within a second');
  const closed = (await readFile(w.h.logFile, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg?: string; why?: unknown })
    .filter((entry) => entry.msg === 'MCP stream closed: its credential no longer holds');
  t.ok(closed.length >= 1, 'the close is logged');
  t.match(closed.at(-1), { why: /\S/ }, 'with why');
  const again = await request(`${w.origin}/api/rfs/canvas-1/mcp`, {
    headers: { ...w.h.bearer(w.tokens.c1m1), accept: 'text/event-stream' },
  });
  t.equal(again.statusCode, 401, 'and its reconnect is refused');
  await again.body.dump();
});

t.test('an image comes back as MCP image content', async (t) => {
  const vendor = await startVendorEndpoints();
  t.teardown(() => vendor.close());
  const endpoint = await startHostedEndpoint();
  t.teardown(() => endpoint.close());
  const capsFile = path.join(DATA_ROOT, `caps-mcp-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  const caps = capabilitiesFile(endpoint.origin);
  const withImages = {
    ...caps,
    capabilities: {
      ...caps.capabilities,
      'generate-image': {
        adapter: 'openai-images',
        endpoint: `${vendor.origin}/v1/images/generations`,
        credential: { env: 'ARR_TEST_SEARCH_KEY' },
      },
    },
  };
  await writeFile(capsFile, JSON.stringify(withImages));
  const w = await world(t, { capsFile, endpoint });
  t.equal((await w.h.put('huabu', CANARY.huabu, 'generate-image')).statusCode, 201);
  const profile = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: w.h.owner,
    payload: {
      alias: 'Painter',
      agentletId: 'mac-1',
      workingDirPath: '/work',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['generate-image'],
    },
  });
  t.equal(profile.statusCode, 201, profile.body);
  const launched = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: w.h.owner,
    payload: { profileId: profile.json().id, canvasId: 'canvas-1', threadId: 'thread-paint' },
  });
  t.equal(launched.statusCode, 201, launched.body);
  const client = await connect(t, w, { grant: await w.mint('canvas-1', 'thread-paint'), thread: 'thread-paint' });
  const result = (await client.callTool({ name: 'generate-image', arguments: { prompt: 'a fox in the snow' } })) as CallToolResult;
  t.notOk(result.isError, JSON.stringify(result).slice(0, 300));
  t.same(result.content[0], { type: 'image', mimeType: 'image/png', data: PNG_B64 });
  t.same(result.structuredContent, { width: 1024, height: 1024, revisedPrompt: 'A fox, in watercolour.' });
});
