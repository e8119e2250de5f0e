// OpenTelemetry traces, end to end against a local OTLP/HTTP receiver: the server `npm start` runs (the
// esbuild bundle) with the standard OTEL_* variables continues a request's W3C `traceparent` in a server
// span named by the route template, makes a hosted capability's vendor call a child span of it, and exports
// no credential, grant or query-string value anywhere (nor one a body names as an unknown property, in a
// span's status); without OTEL_* variables it exports nothing and loads no OpenTelemetry module. The PostgreSQL store's batch span is proven in test/postgres/tracing.test.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { loadConfig } from '../../src/config.js';
import { BUNDLE_ENTRY, startServer } from '../crash/server-process.js';
import { ancestorsOf, startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { until } from '../helpers/wait.js';

t.setTimeout(300_000);
// The bundle `npm start` runs, built when a source is newer than it.
execFileSync(process.execPath, ['scripts/build-if-changed.mjs'], { stdio: 'inherit' });

const SEARCH_KEY = 'arr_vendor_key_TRACEsearch0key0value0for0tests';
const QUERY_SECRET = 'QUERYsecret0value0in0the0vendor0url0';
const ASKED_SECRET = 'QUERYsecret0value0a0client0sent0';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';
const INVOKE_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const INVOKE_PARENT_ID = '00f067aa0ba902b7';
const traceparent = (traceId: string, parentId: string) => `00-${traceId}-${parentId}-01`;

/** A vendor endpoint: answers search results, and keeps the headers of each call. */
async function startVendor() {
  const calls: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    calls.push(req.headers);
    req.resume().on('end', () => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ results: [{ title: 'Lichens', url: 'https://example.org/' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, close: () => new Promise((r) => server.close(r)) };
}

/** `node --import` of a loader hook that writes down every module the process imports (the ESM loader resolves). */
function moduleRecorder(): { nodeOptions: string; modules: () => string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'arr-modules-'));
  const log = path.join(dir, 'modules.txt');
  writeFileSync(log, '');
  writeFileSync(
    path.join(dir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';\nexport async function resolve(specifier, context, next) {\n  const resolved = await next(specifier, context);\n  appendFileSync(${JSON.stringify(log)}, resolved.url + '\\n');\n  return resolved;\n}\n`,
  );
  writeFileSync(path.join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`);
  return {
    nodeOptions: `--import=${pathToFileURL(path.join(dir, 'register.mjs')).href}`,
    modules: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
  };
}
const OTEL_MODULE = /node_modules\/(@opentelemetry\/|@fastify\/otel\/)/;

async function call(origin: string, method: string, url: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(origin + url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}
const owner = { authorization: `Bearer ${CANARY.owner}` };

/** A started server hosting `web-search` at the vendor (key in a header and in the URL's query string). */
async function serve(t: { teardown(fn: () => unknown): void }, vendorOrigin: string, otel: Record<string, string>, nodeOptions?: string) {
  const dataDir = await tempDataDir();
  const capsFile = path.join(dataDir, 'capabilities.json');
  writeFileSync(
    capsFile,
    JSON.stringify({
      schemaVersion: 1,
      capabilities: {
        'web-search': {
          endpoint: `${vendorOrigin}/search?api_key=${QUERY_SECRET}`,
          credential: { header: 'X-Api-Key', env: 'ARR_TEST_SEARCH_KEY' },
          inputSchema: {
            type: 'object',
            properties: { query: { type: 'string', minLength: 1, maxLength: 200 } },
            required: ['query'],
            additionalProperties: false,
          },
          timeoutMs: 5000,
          maxInputBytes: 1000,
          maxOutputBytes: 10_000,
          perGrant: { concurrency: 4, perMinute: 1000 },
        },
      },
    }),
  );
  const server = await startServer(
    {
      OWNER_TOKEN: CANARY.owner,
      HUABU_PROVIDER_TOKEN: CANARY.huabu,
      CANVAS_TOKEN_SECRET: CANARY.secret,
      DATA_DIR: dataDir,
      SEED_HUABU_RESOURCES: 'false',
      REQUIRED_RESOURCE_IDS: '',
      MAX_EVENT_LOOP_DELAY_MS: '0',
      HOSTED_CAPABILITIES_FILE: capsFile,
      ARR_TEST_SEARCH_KEY: SEARCH_KEY,
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...otel,
    },
    60_000,
    BUNDLE_ENTRY,
  );
  t.teardown(() => server.kill());
  return server;
}

/** Everything a grant needs, then one invocation of `web-search` with `headers` added; the secrets it used. */
async function invokeOnce(origin: string, headers: Record<string, string>) {
  const put = await call(
    origin,
    'PUT',
    '/api/acp/providers/huabu/resources/web-search',
    { authorization: `Bearer ${CANARY.huabu}` },
    {
      schemaVersion: 1,
      name: 'Web search',
      description: 'Searches the web.',
      instructions: 'Invoke it.',
    },
  );
  if (put.status !== 201) throw new Error(`put: ${put.status}`);
  const machine = await call(origin, 'POST', '/api/acp/machines', owner, { machineId: 'mac-1' });
  const profile = await call(origin, 'POST', '/api/acp/profiles', owner, {
    alias: 'Searcher',
    agentletId: 'mac-1',
    workingDirPath: '/work',
    launch: { kind: 'acp-command', command: 'agent' },
    resourceIds: ['web-search'],
  });
  const launch = await call(origin, 'POST', '/api/acp/launch', owner, {
    profileId: profile.json.id,
    canvasId: 'canvas-1',
    threadId: 'thread-1',
  });
  if (launch.status !== 201) throw new Error(`launch: ${launch.status}`);
  const canvasToken = (await call(origin, 'POST', '/api/acp/canvas-tokens', owner, { canvasId: 'canvas-1', agentletId: 'mac-1' })).json
    .token as string;
  const grant = (await call(origin, 'POST', '/api/acp/grants', owner, { canvasId: 'canvas-1', threadId: 'thread-1' })).json.grant as string;
  const invoked = await call(
    origin,
    'POST',
    '/api/rfs/canvas-1/resources/web-search/invoke',
    { authorization: `Bearer ${canvasToken}`, 'x-huabu-resource-grant': grant, 'x-huabu-thread-id': 'thread-1', ...headers },
    { schemaVersion: 1, input: { query: 'lichen growth rates' } },
  );
  return { invoked, secrets: [machine.json.token as string, canvasToken, grant] };
}

t.test('with OTEL_* variables: spans continue traceparent, are named by route, hold the vendor call and no secret', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const vendor = await startVendor();
  t.teardown(() => vendor.close());
  const recorder = moduleRecorder();
  const server = await serve(
    t,
    vendor.origin,
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_SERVICE_NAME: 'registry-under-test', OTEL_BSP_SCHEDULE_DELAY: '50' },
    recorder.nodeOptions,
  );

  const { invoked, secrets } = await invokeOnce(server.origin, { traceparent: traceparent(INVOKE_TRACE_ID, INVOKE_PARENT_ID) });
  t.equal(invoked.status, 200, 'the invocation answers');
  const read = await call(server.origin, 'GET', '/api/acp/resources/web-search', {
    ...owner,
    traceparent: traceparent(TRACE_ID, PARENT_ID),
  });
  t.equal(read.status, 200);
  const asked = await call(server.origin, 'GET', `/api/acp/resources/web-search?token=${ASKED_SECRET}`, owner);
  t.equal(asked.status, 401, 'a token in the query string is not a credential here, and the refusal is traced');

  const span = await receiver.waitFor((s) => s.traceId === TRACE_ID && s.kind === 2);
  t.equal(span.parentSpanId, PARENT_ID, 'the server span is a child of the caller’s span');
  t.equal(span.name, 'GET /api/acp/resources/:id', 'named by the route template, not the raw URL');
  t.equal(span.attributes['http.route'], '/api/acp/resources/:id');
  t.equal(span.attributes['http.response.status_code'], 200);
  t.equal(span.attributes['url.path'], '/api/acp/resources/web-search');
  t.equal(span.encoding, 'application/x-protobuf', 'sent as binary protobuf, OTLP’s default encoding');

  const refused = await receiver.waitFor((s) => s.kind === 2 && s.attributes['http.response.status_code'] === 401);
  t.equal(refused.name, 'GET /api/acp/resources/:id');
  t.equal(refused.attributes['url.path'], '/api/acp/resources/web-search', 'the path without its query string');

  const vendorCall = await receiver.waitFor((s) => s.traceId === INVOKE_TRACE_ID && s.kind === 3);
  const chain = ancestorsOf(vendorCall, receiver.spans);
  const invokeSpan = chain.find((s) => s.kind === 2);
  t.ok(invokeSpan, 'the vendor call is a descendant of the invocation’s server span');
  t.equal(invokeSpan?.name, 'POST /api/rfs/:canvasId/resources/:id/invoke');
  t.equal(invokeSpan?.parentSpanId, INVOKE_PARENT_ID);
  t.equal(vendorCall.name, 'POST');
  t.equal(vendorCall.attributes['server.address'], '127.0.0.1');
  t.equal(vendorCall.attributes['http.response.status_code'], 200);
  t.equal(vendorCall.attributes['url.full'], `${vendor.origin}/search?api_key=REDACTED`, 'the vendor URL’s query values are redacted');
  t.equal(
    vendor.calls.at(-1)?.traceparent,
    `00-${INVOKE_TRACE_ID}-${vendorCall.spanId}-01`,
    'the vendor is told the trace, with its call as parent',
  );
  t.ok(
    receiver.spans.every((s) => s.scope !== '@opentelemetry/instrumentation-pg'),
    'the JSON store has no database spans',
  );

  // Everything exported, as sent: span names, attributes, links, resource. No credential of any kind.
  await sleep(300);
  t.same(
    receiver.spans.filter((s) => s.traceId === TRACE_ID).map((s) => s.name),
    ['GET /api/acp/resources/:id'],
    'a read is one span: no span per lifecycle hook or handler',
  );
  t.same([...new Set(receiver.requests)], ['POST /v1/traces application/x-protobuf'], 'every export is OTLP/HTTP with a protobuf body');
  const exported = receiver.bodies.join('\n');
  t.ok(exported.includes('registry-under-test'), 'the resource carries OTEL_SERVICE_NAME');
  for (const secret of [CANARY.owner, CANARY.huabu, CANARY.secret, SEARCH_KEY, QUERY_SECRET, ASKED_SECRET, ...secrets]) {
    t.notOk(exported.includes(secret), `no ${secret.slice(0, 12)}… in any exported span`);
  }
  t.ok(
    recorder.modules().some((url) => OTEL_MODULE.test(url)),
    'the recorder sees the OpenTelemetry modules when traces are on',
  );
});

t.test('OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the same spans, as JSON bodies', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const vendor = await startVendor();
  t.teardown(() => vendor.close());
  const server = await serve(t, vendor.origin, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  });
  const read = await call(server.origin, 'GET', '/api/acp/resources/web-search', {
    ...owner,
    traceparent: traceparent(TRACE_ID, PARENT_ID),
  });
  t.equal(read.status, 404);
  const span = await receiver.waitFor((s) => s.traceId === TRACE_ID && s.kind === 2);
  t.equal(span.encoding, 'application/json');
  t.equal(span.name, 'GET /api/acp/resources/:id');
  t.equal(span.parentSpanId, PARENT_ID);
  t.equal(span.attributes['http.response.status_code'], 404);
  t.same([...new Set(receiver.requests)], ['POST /v1/traces application/json']);
  t.notOk(receiver.bodies.join('\n').includes(CANARY.owner), 'no owner token in any exported span');
});

t.test('without OTEL_* variables: nothing is exported and no OpenTelemetry module is loaded', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const vendor = await startVendor();
  t.teardown(() => vendor.close());
  const recorder = moduleRecorder();
  const server = await serve(t, vendor.origin, { OTEL_BSP_SCHEDULE_DELAY: '50' }, recorder.nodeOptions);
  const { invoked } = await invokeOnce(server.origin, { traceparent: traceparent(INVOKE_TRACE_ID, INVOKE_PARENT_ID) });
  t.equal(invoked.status, 200);
  t.equal(
    (await call(server.origin, 'GET', '/api/acp/resources/web-search', { ...owner, traceparent: traceparent(TRACE_ID, PARENT_ID) })).status,
    200,
  );
  await sleep(1000);
  t.same(receiver.requests, [], 'no request reached the receiver');
  t.equal(vendor.calls.at(-1)?.traceparent, undefined, 'the vendor is told no trace');
  const loaded = recorder.modules();
  t.ok(
    loaded.some((url) => url.includes('/node_modules/fastify/')),
    'the recorder sees the server’s modules',
  );
  t.same(
    loaded.filter((url) => OTEL_MODULE.test(url)),
    [],
    'no OpenTelemetry module was imported',
  );
});

t.test('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn traces off even with an endpoint', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const vendor = await startVendor();
  t.teardown(() => vendor.close());
  const offs: Record<string, string>[] = [{ OTEL_SDK_DISABLED: 'true' }, { OTEL_TRACES_EXPORTER: 'none' }];
  for (const off of offs) {
    const server = await serve(t, vendor.origin, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_BSP_SCHEDULE_DELAY: '50', ...off });
    t.equal((await call(server.origin, 'GET', '/api/acp/resources', owner)).status, 200);
    await server.kill();
  }
  await sleep(500);
  t.same(receiver.requests, [], 'no request reached the receiver');
});

t.test('the OTEL_* settings: on only when asked, the standard endpoints, http/protobuf or http/json', async (t) => {
  const dataDir = await tempDataDir();
  const tracing = (extra: Record<string, string>) => loadConfig(testEnv(dataDir, extra)).tracing;
  t.equal(tracing({}), undefined, 'nothing set: off (no default endpoint)');
  t.equal(tracing({ OTEL_SERVICE_NAME: 'x' }), undefined, 'a service name alone turns nothing on');
  t.same(tracing({ OTEL_TRACES_EXPORTER: 'otlp' }), {
    exporter: 'otlp',
    endpoint: 'http://localhost:4318/v1/traces',
    protocol: 'http/protobuf',
    serviceName: 'agent-resource-registry',
  });
  t.equal(tracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol, 'http/json');
  t.equal(
    tracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })
      ?.protocol,
    'http/protobuf',
    'the traces protocol wins over the general one',
  );
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.endpoint, 'http://collector:4318/v1/traces');
  t.equal(
    tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp' })
      ?.endpoint,
    'https://traces.example/otlp',
    'the traces endpoint is used as it is',
  );
  t.equal(tracing({ OTEL_TRACES_EXPORTER: 'console' })?.exporter, 'console');
  t.equal(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), undefined);
  for (const [name, value] of [
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'http://user:SECRETpassword@collector:4318'],
  ] as const) {
    t.throws(
      () => tracing({ [name]: value }),
      { name: 'ConfigError', message: new RegExp(name) },
      `${name}=${value.slice(0, 8)}… is refused`,
    );
    try {
      tracing({ [name]: value });
    } catch (err) {
      t.notMatch((err as Error).message, 'SECRETpassword', 'never echoing the value');
    }
  }
});

t.test('a credential named as an unknown property reaches no span: not its status, attributes or events', async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const vendor = await startVendor();
  t.teardown(() => vendor.close());
  const server = await serve(t, vendor.origin, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_BSP_SCHEDULE_DELAY: '50' });
  const { invoked, secrets } = await invokeOnce(server.origin, {});
  t.equal(invoked.status, 200);
  const [machineToken, canvasToken, grant] = secrets as [string, string, string];
  const tokens = { owner: CANARY.owner, huabu: CANARY.huabu, machine: machineToken, canvas: canvasToken, grant };
  const canvas = { authorization: `Bearer ${canvasToken}`, 'x-huabu-resource-grant': grant, 'x-huabu-thread-id': 'thread-1' };
  // Each route's body is valid but for one property whose name is a credential.
  const asks: [string, string, Record<string, string>, Record<string, unknown>][] = [
    [
      'POST',
      '/api/acp/profiles',
      owner,
      { alias: 'A', agentletId: 'mac-1', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'a' } },
    ],
    ['POST', '/api/acp/grants', owner, { canvasId: 'canvas-1', threadId: 'thread-1' }],
    ['POST', '/api/acp/machines', owner, { machineId: 'mac-2' }],
    [
      'PUT',
      '/api/acp/providers/huabu/resources/web-search',
      { authorization: `Bearer ${CANARY.huabu}` },
      { schemaVersion: 1, name: 'Web search', description: 'Searches.', instructions: 'Invoke it.' },
    ],
    ['POST', '/api/rfs/canvas-1/resources/web-search/invoke', canvas, { schemaVersion: 1, input: { query: 'lichen' } }],
  ];
  for (const [method, url, headers, valid] of asks) {
    for (const [kind, token] of Object.entries(tokens)) {
      const res = await call(
        server.origin,
        method,
        url,
        { ...headers, traceparent: traceparent(TRACE_ID, PARENT_ID) },
        { ...valid, [token]: 1 },
      );
      t.equal(res.status, 400, `${method} ${url} refuses a property named by the ${kind} token`);
      t.notOk(JSON.stringify(res.json).includes(token), 'and does not answer with its name');
    }
  }
  await receiver.waitFor((s) => s.traceId === TRACE_ID && s.attributes['http.response.status_code'] === 400);
  await until('every refusal exported', () => receiver.spans.filter((s) => s.traceId === TRACE_ID).length >= asks.length * 5);
  const exported = receiver.bodies.join('\n');
  for (const [kind, token] of Object.entries(tokens)) t.notOk(exported.includes(token), `no ${kind} token in any exported span`);
  t.ok(exported.includes('must not have additional properties'), 'the span still says what the answer said');
});
