// Issue 14, item 1: 128-character IDs work in every path, and every framework error (414, the HTTP
// parser's 400, prototype poisoning) leaves in our envelope with our codes.
import { connect } from 'node:net';
import t from 'tap';
import { build } from './helpers/build.js';

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
