// MCP's Streamable HTTP rules for a POST, on the wire, as any client meets them: the answers the transport
// gives for a wrong Accept, an unknown protocol version, a malformed or oversized batch; a batch answered
// whole with each request's own ID; notifications and responses accepted with 202; DELETE answered for a
// stateless server; many clients sending the same request ID at once, each answered with its own record
// and never another machine's; a tool call ended by its client hanging up aborts the vendor call; a batch's
// answer bounded by MCP_ANSWER_BYTES, the reads past it JSON-RPC errors of their own; and batches of ten
// reads or more held by the expensive-work bound until their answers are read, so slow readers are refused.
import t from 'tap';
import { request } from 'undici';
import { Compile } from 'typebox/compile';
import { auditLines } from '../helpers/audit.js';
import { until } from '../helpers/wait.js';
import { world, type World } from '../helpers/invocation-world.js';

const VERSION = '2025-06-18';
const ACCEPT = 'application/json, text/event-stream';

function post(w: World, body: unknown, headers: Record<string, string> = {}, token = w.tokens.c1m1, signal?: AbortSignal) {
  return request(`${w.origin}/api/rfs/canvas-1/mcp`, {
    method: 'POST',
    signal,
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': VERSION,
      authorization: `Bearer ${token}`,
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const read = (id: string | number, uri: string) => ({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri } });
const initialize = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
});

async function answer(res: Awaited<ReturnType<typeof post>>) {
  const text = await res.body.text();
  return { status: res.statusCode, type: res.headers['content-type'], body: text ? (JSON.parse(text) as unknown) : undefined };
}

t.test("the transport's refusals are JSON-RPC errors with its codes", async (t) => {
  const w = await world(t);
  const noSse = await answer(await post(w, read(1, 'registry://skill/huabu-access'), { accept: 'application/json' }));
  t.match(noSse, { status: 406, body: { jsonrpc: '2.0', id: null, error: { code: -32000, message: /Not Acceptable/ } } });
  t.match(noSse.type, /^application\/json/);
  const noJson = await answer(await post(w, read(1, 'registry://skill/huabu-access'), { accept: 'text/event-stream' }));
  t.match(noJson, { status: 406 }, 'nor without JSON');

  const version = await answer(await post(w, read(1, 'registry://skill/huabu-access'), { 'mcp-protocol-version': '1999-01-01' }));
  t.match(version, {
    status: 400,
    body: {
      id: null,
      error: { code: -32000, message: /Unsupported protocol version: 1999-01-01 \(supported versions: .*2025-06-18, 2025-03-26/ },
    },
  });
  const init = await answer(await post(w, initialize(1), { 'mcp-protocol-version': '1999-01-01' }));
  t.match(init, { status: 200, body: { id: 1, result: { protocolVersion: VERSION } } }, 'initialize negotiates instead');
  const noHeader = await answer(await post(w, read(2, 'registry://skill/huabu-access'), { 'mcp-protocol-version': '' }));
  t.match(noHeader, { status: 400 }, 'an empty version is no supported version');

  for (const bad of [
    { jsonrpc: '2.0' },
    { jsonrpc: '1.0', id: 1, method: 'ping' },
    [read(1, 'x'), { nope: true }],
    42,
    [read(1, 'x'), 42],
    [null, read(1, 'x')],
  ]) {
    const res = await answer(await post(w, bad));
    t.match(res, { status: 400, body: { id: null, error: { code: -32700, message: /Invalid JSON-RPC message/ } } }, JSON.stringify(bad));
  }
  const twoInits = await answer(await post(w, [initialize(1), read(2, 'registry://skill/huabu-access')]));
  t.match(twoInits, { status: 400, body: { error: { code: -32600, message: /Only one initialization request/ } } });
  const full = await answer(
    await post(
      w,
      Array.from({ length: 100 }, (_, i) => read(i, 'registry://skill/huabu-access')),
    ),
  );
  t.equal(full.status, 200, 'a batch of 100 is answered');
  t.equal((full.body as unknown[]).length, 100);
  const huge = await answer(
    await post(
      w,
      Array.from({ length: 101 }, (_, i) => read(i, 'registry://skill/huabu-access')),
    ),
  );
  t.match(huge, { status: 400, body: { error: { code: -32600, message: /Batch must not exceed 100/ } } });

  const unknown = await answer(await post(w, { jsonrpc: '2.0', id: 'u', method: 'nothing/here' }));
  t.match(unknown, { status: 200, body: { jsonrpc: '2.0', id: 'u', error: { code: -32601 } } }, 'an unknown method is an answer');
});

t.test('a batch is answered whole, each answer under its request ID; notifications and responses get 202', async (t) => {
  const w = await world(t);
  t.equal((await w.h.put('mac-1', w.machines.m1, 'mine', { description: 'Mine.' })).statusCode, 201);
  const batch = await answer(
    await post(w, [
      read('first', 'registry://resources/mine'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      read(0, 'registry://resources/nothing'),
      { jsonrpc: '2.0', id: 7, method: 'resources/list' },
    ]),
  );
  t.equal(batch.status, 200);
  t.match(batch.type, /^application\/json/);
  const answers = batch.body as {
    id: unknown;
    result?: { contents?: { text: string }[]; resources?: { name: string }[] };
    error?: { code: number };
  }[];
  t.same(
    answers.map((a) => a.id),
    ['first', 0, 7],
    'one answer per request, in order, with its own ID (0 included)',
  );
  t.match(answers[0]!.result!.contents![0]!.text, /Mine|mine/);
  t.equal(answers[1]!.error!.code, -32002, 'a missing resource is an error in its own answer');
  t.ok(answers[2]!.result!.resources!.some((r) => r.name === 'mine'));

  const single = await answer(await post(w, read(5, 'registry://resources/mine')));
  t.equal(single.status, 200);
  t.notOk(Array.isArray(single.body), 'a single request is answered with a single object');
  t.match(single.body, { jsonrpc: '2.0', id: 5 });

  const notification = await post(w, { jsonrpc: '2.0', method: 'notifications/initialized' });
  t.equal(notification.statusCode, 202);
  t.equal(await notification.body.text(), '', 'with no body');
  const response = await post(w, [{ jsonrpc: '2.0', id: 3, result: {} }]);
  t.equal(response.statusCode, 202, "a client's response is accepted too");
  await response.body.dump();
  t.equal(response.headers['mcp-session-id'], undefined, 'and no session is made');

  const ended = await request(`${w.origin}/api/rfs/canvas-1/mcp`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${w.tokens.c1m1}`, 'mcp-protocol-version': VERSION },
  });
  t.equal(ended.statusCode, 200, 'DELETE: no session to end');
  await ended.body.dump();
  const badDelete = await request(`${w.origin}/api/rfs/canvas-1/mcp`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${w.tokens.c1m1}`, 'mcp-protocol-version': '1999-01-01' },
  });
  t.equal(badDelete.statusCode, 400, 'DELETE checks the protocol version too');
  await badDelete.body.dump();
});

t.test('clients sending the same request ID at once each get their own answer, never another machine record', async (t) => {
  const w = await world(t);
  t.equal((await w.h.put('mac-1', w.machines.m1, 'one', { description: 'Of machine one.' })).statusCode, 201);
  t.equal((await w.h.put('mac-2', w.machines.m2, 'two', { description: 'Of machine two.' })).statusCode, 201);
  const asks = Array.from({ length: 60 }, (_, i) => {
    const onTwo = i % 2 === 1;
    const token = onTwo ? w.tokens.c1m2 : w.tokens.c1m1;
    return { onTwo, res: post(w, [read(1, 'registry://resources/one'), read(2, 'registry://resources/two')], {}, token) };
  });
  for (const ask of asks) {
    const { status, body } = await answer(await ask.res);
    t.equal(status, 200);
    const [one, two] = body as { id: number; result?: { contents: { text: string }[] }; error?: { code: number } }[];
    t.equal(one!.id, 1);
    t.equal(two!.id, 2);
    const mine = ask.onTwo ? two : one;
    const theirs = ask.onTwo ? one : two;
    t.match(mine!.result?.contents[0]?.text, ask.onTwo ? /machine two/ : /machine one/, 'its own record');
    t.equal(theirs!.error?.code, -32002, "never the other machine's");
  }
});

t.test('a client hanging up on a tool call aborts the vendor call', async (t) => {
  const w = await world(t);
  const seen = w.endpoint.next();
  const hangUp = new AbortController();
  const call = post(
    w,
    { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'hold-search', arguments: { query: 'lichen' } } },
    { 'x-huabu-resource-grant': w.grants.t4, 'x-huabu-thread-id': 'thread-4' },
    w.tokens.c1m1,
    hangUp.signal,
  );
  const held = await seen;
  hangUp.abort();
  await t.rejects(call, 'the client gave up');
  t.equal(await held.aborted, true, 'the vendor saw the call aborted');
  await until('the call audited', async () => (await auditLines(w.h)).some((a) => a.action === 'resource.invoke'));
  t.match(
    (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke'),
    [{ id: 'hold-search', outcome: 'cancelled' }],
  );
});

/** A record of machine one whose MCP read answers about 280 KB of JSON (three UTF-8 bytes a character, mostly). */
async function bigRecord(w: World, id: string) {
  const sourceContent = '地衣与苔藓的工具：先读"说明"，再运行它，最后报告它的"回答"。\n'.repeat(4000).slice(0, 100_000);
  const res = await w.h.app.inject({
    method: 'PUT',
    url: `/api/acp/providers/mac-1/resources/${id}`,
    headers: w.h.bearer(w.machines.m1),
    payload: { schemaVersion: 2, name: `Big ${id}`, sourceContent },
  });
  if (res.statusCode !== 201) throw new Error(`put: ${res.statusCode} ${res.body}`);
}

t.test("a batch's answer is bounded: past MCP_ANSWER_BYTES the later reads are JSON-RPC errors of their own", async (t) => {
  const budget = 1024 * 1024;
  const w = await world(t, { env: { MCP_ANSWER_BYTES: String(budget) } });
  await bigRecord(w, 'big');
  const one = await post(w, read('one', 'registry://resources/big'));
  const size = Buffer.byteLength(await one.body.text());
  t.ok(size > 200_000, `one read answers ${size} bytes`);

  const res = await post(
    w,
    Array.from({ length: 100 }, (_, i) => read(i, 'registry://resources/big')),
  );
  t.equal(res.statusCode, 200);
  const text = await res.body.text();
  const answers = JSON.parse(text) as { id: number; result?: unknown; error?: { code: number; message: string; data?: unknown } }[];
  t.same(
    answers.map((a) => a.id).sort((a, b) => a - b),
    Array.from({ length: 100 }, (_, i) => i),
    'every request is answered under its own ID',
  );
  const kept = answers.filter((a) => a.result !== undefined);
  const refused = answers.filter((a) => a.error !== undefined);
  // Answers are kept until their bytes reach the budget; the one that crosses it is the last kept.
  t.equal(kept.length, Math.ceil(budget / size), `${kept.length} reads answered`);
  t.equal(refused.length, 100 - kept.length);
  t.ok(Buffer.byteLength(text) < budget + size + refused.length * 300, `the answer is ${Buffer.byteLength(text)} bytes, not ${100 * size}`);
  for (const r of refused) {
    t.match(r.error, { code: -32003, message: /MCP_ANSWER_BYTES/, data: { limitBytes: budget } });
  }
  t.equal(new Set(refused.map((r) => JSON.stringify(r.error))).size, 1, 'one refusal, the same for each');

  const single = await post(w, read('alone', 'registry://resources/big'));
  t.equal(single.statusCode, 200);
  t.match(
    await single.body.json(),
    { id: 'alone', result: { contents: [{ uri: 'registry://resources/big' }] } },
    'a single read is always answered',
  );
});

t.test('slow readers of large batches hold the expensive-work bound: the next batches are refused 429, not built', async (t) => {
  const w = await world(t, { env: { MCP_ANSWER_BYTES: String(64 * 1024 * 1024) } });
  await bigRecord(w, 'big');
  const batch = Array.from({ length: 100 }, (_, i) => read(i, 'registry://resources/big'));
  // Two clients that read nothing of their answers (about 24 MB each): the server cannot write them out.
  const slow = [await post(w, batch), await post(w, batch)];
  for (const s of slow) t.equal(s.statusCode, 200, 'a slow reader has its answer started');
  const more = await Promise.all(Array.from({ length: 6 }, () => post(w, batch)));
  for (const res of more) {
    t.equal(res.statusCode, 429, 'the same credential is refused while its answers wait on the socket');
    t.equal(res.headers['retry-after'], '1');
    t.match(await res.body.json(), { code: 'rate_limited', details: { limit: 2 } });
  }
  // Ten reads (`resources/read` or `resources/list` requests) make a batch expensive; nine, or notifications, do not.
  const reads = (n: number) => batch.slice(0, n);
  const asRead = { jsonrpc: '2.0', method: 'resources/read', params: { uri: 'registry://resources/big' } };
  const notExpensive = [
    reads(9),
    [...reads(9), asRead, { jsonrpc: '2.0', method: 'notifications/initialized' }],
    [...reads(8), read(99, 'x')],
  ];
  for (const body of notExpensive) {
    const small = await post(w, body);
    t.equal(small.statusCode, 200, 'fewer than ten reads are no expensive work');
    await small.body.text();
  }
  const list = { jsonrpc: '2.0', id: 'list', method: 'resources/list' };
  for (const body of [reads(10), [...reads(9), list]]) {
    const ten = await post(w, body);
    t.equal(ten.statusCode, 429, 'ten reads are');
    await ten.body.text();
  }
  const other = await post(w, batch, {}, w.tokens.c1m2);
  t.equal(other.statusCode, 200, "another machine's agent is answered");
  await other.body.text();

  for (const s of slow) t.equal(((await s.body.json()) as unknown[]).length, 100, 'the slow readers get their whole answers');
  const after = await post(w, batch);
  t.equal(after.statusCode, 200, 'once they are read, the next batch is answered');
  await after.body.text();
});

interface Media {
  schema: Record<string, unknown> & { description?: string };
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: { in: string; name: string; description?: string }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content?: Record<string, Media> }>;
}

t.test('the OpenAPI document describes the MCP endpoint as the wire answers it', async (t) => {
  const w = await world(t);
  const doc = (await (await request(`${w.origin}/openapi.json`)).body.json()) as { paths: Record<string, Record<string, Operation>> };
  const ops = doc.paths['/api/rfs/{canvasId}/mcp']!;
  t.same(
    Object.entries(ops).map(([method, op]) => [method, op.operationId, op.tags]),
    [
      ['post', 'mcpRequest', ['rfs']],
      ['get', 'mcpStream', ['rfs']],
      ['delete', 'mcpEnd', ['rfs']],
    ],
    'POST, GET and DELETE, named for the generated clients',
  );
  const rpcCodes = new Map<string, number>();
  for (const [method, op] of Object.entries(ops)) {
    t.ok(op.summary.length > 0, `${method} has a summary`);
    t.same(op.security, [{ canvasToken: [] }], `${method} asks for the canvas token`);
    for (const needed of ['Authorization: Bearer', 'X-Huabu-Resource-Grant', 'X-Huabu-Thread-Id', 'stateless'])
      t.ok(op.description.includes(needed), `${method} tells a client of ${needed}`);
    t.same(
      op.parameters.filter((p) => p.in === 'header').map((p) => [p.name, (p.description ?? '').length > 0]),
      [
        ['x-huabu-resource-grant', true],
        ['x-huabu-thread-id', true],
      ],
      `${method} documents the grant and thread headers`,
    );
    t.same(
      op.parameters.filter((p) => p.in === 'path').map((p) => p.name),
      ['canvasId'],
    );
    for (const status of ['400', '404', '405', '406', '415']) {
      const media = op.responses[status]!.content!['application/json']!;
      const rpc = media.examples?.['json-rpc']?.value as { jsonrpc: string; id: null; error: { code: number; message: string } };
      t.match(rpc, { jsonrpc: '2.0', id: null }, `${method} ${status} shows the transport's JSON-RPC error`);
      t.ok(rpc.error.code <= -32000 && rpc.error.code >= -32768, `${method} ${status}: a JSON-RPC error code (${rpc.error.code})`);
      t.ok(rpc.error.message.length > 0);
      t.ok(media.examples!['json-rpc']!.summary, 'with a summary (the name Swagger UI shows)');
      t.ok(Compile(media.schema).Check(rpc), `${method} ${status}: the example fits the schema`);
      t.notOk(
        Compile(media.schema).Check({ ...rpc, result: {} }),
        `${method} ${status}: an error carries no member beside jsonrpc, error and id`,
      );
      t.match(media.schema.description, /JSON-RPC error/, `${method} ${status}: the schema says what it is`);
      rpcCodes.set(status, rpc.error.code);
      if (status === '400' || status === '415')
        t.ok(Object.keys(media.examples!).length >= 2, `${method} ${status}: our envelope's example beside it`);
    }
  }
  t.equal(rpcCodes.get('400'), -32700, 'a 400 of the transport is its parse error');

  // What the wire sends fits what is documented for its status.
  const mcpPost = ops.post!;
  const fits = (status: number, body: unknown) =>
    Compile(mcpPost.responses[String(status)]!.content!['application/json']!.schema).Check(body);
  const notAcceptable = await answer(await post(w, read(1, 'registry://skill/huabu-access'), { accept: 'application/json' }));
  t.equal(notAcceptable.status, 406);
  t.same(notAcceptable.body, mcpPost.responses['406']!.content!['application/json']!.examples!['json-rpc']!.value, 'the 406 as documented');
  const badVersion = await answer(await post(w, read(1, 'registry://skill/huabu-access'), { 'mcp-protocol-version': '1999-01-01' }));
  t.ok(fits(badVersion.status, badVersion.body), 'a JSON-RPC 400 fits the 400 schema');
  const invalid = await answer(await post(w, { jsonrpc: '1.0' }));
  t.equal(invalid.status, 400);
  t.ok(fits(400, invalid.body), 'so does a parse error');
  t.equal((invalid.body as { error: { code: number } }).error.code, rpcCodes.get('400'));
  const notJson = await answer(await post(w, '{"jsonrpc": "2.0", "id": 1,'));
  t.match(notJson, { status: 400, body: { code: 'validation_failed' } }, 'a body that is no JSON is refused in our envelope');
  t.ok(fits(400, notJson.body), 'which fits the 400 schema too');
  const documented = mcpPost.requestBody!.content['application/json']!.example;
  t.ok(documented, 'the request body has an example');
  const listed = await answer(await post(w, documented));
  t.match(listed, { status: 200, body: { jsonrpc: '2.0', id: 1, result: { resources: [] } } }, 'the documented request is answered');
  t.match(
    mcpPost.responses['200']!.content!['application/json']!.example,
    { jsonrpc: '2.0', result: { resources: [{ uri: /^registry:\/\/resources\//, mimeType: 'text/markdown' }] } },
    'the 200 example is a resources/list answer',
  );
  t.ok(mcpPost.responses['202'], 'a notification is documented as 202');
  t.ok(ops.get!.responses['200']!.content!['text/event-stream'], 'the stream is documented as Server-Sent Events');
  t.ok(ops.delete!.responses['200'], 'DELETE is documented as 200');
});

t.test("an agent's MCP requests go on while its machine is over its change events per minute", async (t) => {
  const w = await world(t, { env: { EVENTS_PER_MACHINE_PER_MINUTE: '20' } });
  const resources = Array.from({ length: 30 }, (_, i) => ({
    schemaVersion: 1,
    id: `tool-${i}`,
    name: `Tool ${i}`,
    description: 'A tool.',
    instructions: 'Use it.',
  }));
  const bulk = await w.h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-1/resources',
    headers: w.h.bearer(w.machines.m1),
    payload: { resources },
  });
  t.equal(bulk.statusCode, 200, bulk.body);
  const more = await w.h.put('mac-1', w.machines.m1, 'one-more');
  t.equal(more.statusCode, 429, 'the machine writes no more this minute');
  const res = await answer(await post(w, read(1, 'registry://resources/tool-0')));
  t.match(res, { status: 200, body: { id: 1, result: { contents: [{ uri: 'registry://resources/tool-0' }] } } }, 'its agent reads on');
});
