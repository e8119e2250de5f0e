// 128-character IDs work in every path, and every framework error (414, the HTTP parser's 400, prototype
// poisoning, a plugin's 4xx of any status) leaves in our envelope with our codes, each code with its one
// status; a client's hang-up is a cancellation, not an overloaded registry.
import { STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { ERROR_CODES } from '../../src/errors.js';
import { build } from '../helpers/build.js';
import { until } from '../helpers/wait.js';

const ENVELOPE_KEYS = ['code', 'error', 'message', 'statusCode'];

function isEnvelope(body: Record<string, unknown>): boolean {
  return ENVELOPE_KEYS.every((k) => k in body) && typeof body.code === 'string' && /^[a-z_]+$/.test(body.code);
}

t.test('128-character IDs can be created, read, replaced, withdrawn and revoked', async (t) => {
  const h = await build(t);
  const machineId = 'm'.repeat(128);
  const token = await h.enroll(machineId);
  const id = 'r'.repeat(128);
  t.equal((await h.put(machineId, token, id, { name: 'Long one' })).statusCode, 201, 'created under a 128-char provider path');
  t.equal((await h.put(machineId, token, id, { name: 'Other' })).statusCode, 200, 'replaced');
  const read = await h.app.inject({ url: `/api/acp/resources/${id}`, headers: h.owner });
  t.equal(read.statusCode, 200, 'read');
  const canvasId = 'c'.repeat(128);
  const canvas = await h.canvasToken(canvasId, machineId);
  const rfs = await h.app.inject({ url: `/api/rfs/${canvasId}/resources/${id}`, headers: h.bearer(canvas) });
  t.equal(rfs.statusCode, 200, 'read through a 128-char canvas path');
  const withdrawn = await h.app.inject({
    method: 'DELETE',
    url: `/api/acp/providers/${machineId}/resources/${id}`,
    headers: h.bearer(token),
  });
  t.equal(withdrawn.statusCode, 204, 'withdrawn');
  const revoked = await h.app.inject({ method: 'DELETE', url: `/api/acp/machines/${machineId}`, headers: h.owner });
  t.equal(revoked.statusCode, 204, 'revoked');
});

t.test('an over-long path parameter is 400 validation_failed in the envelope, never 414', async (t) => {
  const h = await build(t);
  const res = await h.app.inject({ url: `/api/acp/resources/${'r'.repeat(600)}`, headers: h.owner });
  t.equal(res.statusCode, 400);
  t.ok(isEnvelope(res.json()), 'our envelope');
  t.equal(res.json().code, 'validation_failed');
  const huge = await h.app.inject({ url: `/api/acp/resources/${'r'.repeat(5000)}`, headers: h.owner });
  t.ok(isEnvelope(huge.json()), `our envelope for a 5000-char parameter too (${huge.statusCode})`);
  t.ok([400, 414].includes(huge.statusCode));
});

t.test('a prototype-poisoning body is 400 validation_failed saying so, not "not valid JSON"', async (t) => {
  const h = await build(t);
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/acp/machines',
    headers: { ...h.owner, 'content-type': 'application/json' },
    payload: '{"machineId":"agentlet-a","__proto__":{"admin":true}}',
  });
  t.equal(res.statusCode, 400);
  t.ok(isEnvelope(res.json()));
  t.equal(res.json().code, 'validation_failed');
  t.notMatch(res.json().message, /not valid JSON/);
  t.match(res.json().message, /__proto__|prototype/);
});

t.test("the HTTP parser's 400 (clientErrorHandler) answers in our envelope", async (t) => {
  const h = await build(t);
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as { port: number };
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('utf8')));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
  });
  t.match(raw, /^HTTP\/1\.1 400/);
  const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
  t.ok(isEnvelope(body), 'our envelope');
  t.equal(body.code, 'validation_failed');
  t.notMatch(body.message, /^Client Error$/);
});

t.test('an error of any 4xx status a plugin raises leaves with a code whose listed status is the status sent', async (t) => {
  const h = await build(t);
  // A plugin's error of its own (no code of ours), with each status Node knows in 400..499.
  h.app.get('/plugin-error/:status', (request) => {
    throw Object.assign(new Error('A plugin refused the request.'), { statusCode: Number((request.params as { status: string }).status) });
  });
  const statuses = Object.keys(STATUS_CODES)
    .map(Number)
    .filter((s) => s >= 400 && s < 500);
  const seen: string[] = [];
  for (const status of statuses) {
    const res = await h.app.inject({ url: `/plugin-error/${status}` });
    const body = res.json<{ statusCode: number; code: keyof typeof ERROR_CODES }>();
    t.ok(isEnvelope(body), `${status}: our envelope`);
    t.equal(body.statusCode, res.statusCode, `${status}: the body's status is the one sent`);
    t.equal(ERROR_CODES[body.code], res.statusCode, `${status}: ${body.code} is listed with ${res.statusCode}`);
    seen.push(`${status}→${res.statusCode} ${body.code}`);
  }
  t.match(seen, ['400→400 validation_failed'], 'a 400 stays a 400');
  t.ok(seen.includes('404→404 not_found') && seen.includes('429→429 rate_limited'), 'a status with a code of its own keeps it');
  t.ok(seen.includes('418→400 validation_failed'), 'a status without one answers 400 validation_failed');
});

t.test("a client's hang-up is not an overloaded registry: no 503, no error logged, no 503 in the metrics", async (t) => {
  const h = await build(t);
  let working!: () => void;
  const started = new Promise<void>((resolve) => (working = resolve));
  // Work cancelled because its client went away, as a render does (src/routes/capabilities.ts).
  h.app.get('/slow-work', async (_request, reply) => {
    const gone = new Promise((resolve) => reply.raw.once('close', resolve));
    working();
    await gone;
    throw Object.assign(new Error('The client went away.'), { name: 'AbortError' });
  });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  socket.write('GET /slow-work HTTP/1.1\r\nHost: x\r\n\r\n');
  // Hang up once the work runs (a hang-up before would never reach the handler).
  await started;
  socket.destroy();
  // The cancellation is logged once the request is done; its metrics are counted by then.
  await until('the cancellation logged', async () =>
    (await readFile(h.logFile, 'utf8')).includes('the client went away; its work was cancelled'),
  );
  const metrics = (await h.app.inject({ url: '/metrics' })).body;
  const lines = metrics.split('\n').filter((l) => l.startsWith('http_request_duration_seconds_count') && l.includes('/slow-work'));
  t.notOk(
    lines.some((l) => l.includes('status_code="503"')),
    `no 503 counted (${lines.join(' ') || 'nothing counted'})`,
  );
  const log = (await readFile(h.logFile, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.notOk(
    log.some((l) => (l.level as number) >= 50),
    'nothing logged as an error',
  );
  t.notOk(
    log.some((l) => l.code === 'overloaded'),
    'nothing logged as overloaded',
  );
  t.ok(
    log.some((l) => l.msg === 'the client went away; its work was cancelled'),
    'logged as a cancellation',
  );
});

t.test('a method a path does not serve is 405 with Allow, in our envelope', async (t) => {
  const h = await build(t);
  const cases: [string, string, string[]][] = [
    ['POST', '/api/acp/resources/web-search', ['GET']],
    ['PUT', '/api/acp/machines', ['GET', 'POST']],
    ['DELETE', '/healthz', ['GET']],
    ['PATCH', '/api/acp/providers/huabu/resources', ['GET', 'PUT']],
  ];
  for (const [method, url, allowed] of cases) {
    const res = await h.app.inject({ method: method as 'POST', url, headers: h.owner });
    t.equal(res.statusCode, 405, `${method} ${url}`);
    t.equal(res.json().code, 'method_not_allowed');
    const allow = String(res.headers.allow).split(/,\s*/);
    for (const m of allowed) t.ok(allow.includes(m), `Allow lists ${m} (${res.headers.allow})`);
  }
  const unknown = await h.app.inject({ url: '/api/acp/nothing-here', headers: h.owner });
  t.equal(unknown.statusCode, 404, 'an unknown path stays 404');
});
