// Protective limits: write rate per credential, hardened headers.
import t from 'tap';
import { build, CANARY } from '../helpers/build.js';

t.test('write requests are rate limited per credential with Retry-After; reads are not', async (t) => {
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '5' } });
  const a = await h.enroll('agentlet-a'); // the owner's first write
  const b = await h.enroll('agentlet-b');
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await h.put('agentlet-a', a, `tool-${i}`)).statusCode);
  t.same(statuses, [201, 201, 201, 201, 201, 429, 429]);
  const limited = await h.put('agentlet-a', a, 'tool-9');
  t.equal(limited.json().code, 'rate_limited');
  t.ok(Number(limited.headers['retry-after']) > 0, 'Retry-After tells when to retry');
  t.notMatch(JSON.stringify(limited.headers), 'arr_machine_', 'the key is the principal, never the token');
  t.equal((await h.put('agentlet-b', b, 'tool-b')).statusCode, 201, 'another credential has its own budget');
  for (let i = 0; i < 10; i++) {
    t.equal((await h.app.inject({ url: '/api/acp/providers/agentlet-a/resources', headers: h.bearer(a) })).statusCode, 200);
  }
});

/** The hardened headers every answer carries (helmet's defaults without CSP and HSTS), in the order sent. */
const HARDENED = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

t.test('every answer carries the same hardened headers: success, 304, refusal, unknown route, bad body', async (t) => {
  const h = await build(t);
  const list = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  const answers = {
    ok: list,
    notModified: await h.app.inject({ url: '/api/acp/resources', headers: { ...h.owner, 'if-none-match': String(list.headers.etag) } }),
    refused: await h.app.inject({ url: '/api/acp/resources' }),
    unknown: await h.app.inject({ url: '/no/such/route' }),
    badBody: await h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources/x',
      headers: { ...h.bearer(CANARY.huabu), 'content-type': 'application/json' },
      payload: '{not json',
    }),
  };
  t.same(Object.fromEntries(Object.entries(answers).map(([name, res]) => [name, res.statusCode])), {
    ok: 200,
    notModified: 304,
    refused: 401,
    unknown: 404,
    badBody: 400,
  });
  for (const [name, res] of Object.entries(answers)) {
    const hardened = Object.keys(res.headers).filter((header) => header in HARDENED);
    t.same(hardened, Object.keys(HARDENED), `${name}: all of them, first, in order`);
    for (const [header, value] of Object.entries(HARDENED)) t.equal(res.headers[header], value, `${name}: ${header}`);
    t.notOk('content-security-policy' in res.headers, `${name}: no CSP on the API (Swagger UI has its own)`);
    t.notOk('strict-transport-security' in res.headers, `${name}: no HSTS (TLS ends in front of the service)`);
    t.notOk('x-powered-by' in res.headers, name);
  }
});

t.test('responses carry hardened headers; Swagger UI gets a strict CSP', async (t) => {
  const h = await build(t);
  const api = await h.app.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${CANARY.owner}` } });
  t.equal(api.headers['x-content-type-options'], 'nosniff');
  const docs = await h.app.inject({ url: '/docs/' });
  t.equal(docs.statusCode, 200);
  t.match(docs.headers['content-security-policy'], /script-src 'self'/);
  t.match(docs.headers['content-security-policy'], /frame-ancestors 'none'/);
});

t.test('a blocked event loop answers 503 overloaded with Retry-After', async (t) => {
  const h = await build(t, { env: { MAX_EVENT_LOOP_DELAY_MS: '100' } });
  t.equal((await h.app.inject({ url: '/api/acp/resources', headers: h.owner })).statusCode, 200);
  // Keep the loop blocked in 300 ms slices for more than two sampling intervals.
  const end = Date.now() + 2500;
  while (Date.now() < end) {
    const slice = Date.now() + 300;
    while (Date.now() < slice);
    await new Promise((r) => setImmediate(r));
  }
  const res = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.equal(res.statusCode, 503);
  t.equal(res.json().code, 'overloaded');
  t.equal(res.headers['retry-after'], '5');
});
