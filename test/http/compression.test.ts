// Compressed catalogue bodies, over a real socket with undici (which, unlike fetch, hands
// back the bytes as sent): br and gzip as Accept-Encoding negotiates them, decompressing to the identity
// bytes exactly, `Vary: Accept-Encoding` on every answer, one ETag per coding with 304s per coding, a write
// changing every coding, and each compressed copy built once per revision (counted by /metrics, not timed).
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { request } from 'undici';
import { negotiateCoding } from '../../src/http/content-coding.js';
import { CachedBody, MIN_COMPRESSED_BYTES } from '../../src/registry/catalogue-cache.js';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

type Coding = 'br' | 'gzip' | 'identity';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
}

async function serve(
  t: Parameters<typeof build>[0],
): Promise<{ h: TestApp; get(path: string, headers: Record<string, string>): Promise<Answer> }> {
  const h = await build(t);
  const origin = await listen(h.app);
  return {
    h,
    async get(path, headers) {
      const res = await request(`${origin}${path}`, { headers });
      return { status: res.statusCode, headers: res.headers, bytes: Buffer.from(await res.body.arrayBuffer()) };
    },
  };
}

/** Enough records (of both providers) that the catalogue is well over MIN_COMPRESSED_BYTES. */
async function seed(h: TestApp, machine: string, machineToken: string, count = 12): Promise<void> {
  for (let i = 0; i < count; i++) {
    const long = { description: `Record ${i}: searches the public web for the agent and summarizes what it found.` };
    for (const res of [
      await h.put('huabu', CANARY.huabu, `host-tool-${i}`, long),
      await h.put(machine, machineToken, `local-tool-${i}`, long),
    ]) {
      if (res.statusCode !== 201) throw new Error(`seed: ${res.statusCode} ${res.body}`);
    }
  }
}

function decode(coding: Coding, bytes: Buffer): Buffer {
  if (coding === 'br') return brotliDecompressSync(bytes);
  if (coding === 'gzip') return gunzipSync(bytes);
  return bytes;
}

const suffix = (etag: string, coding: Coding) => (coding === 'identity' ? etag : `${etag.slice(0, -1)}${coding === 'br' ? '-br' : '-gz'}"`);

async function compressions(h: TestApp, encoding: 'br' | 'gzip', view = 'all'): Promise<number> {
  const body = (await h.app.inject({ url: '/metrics' })).body;
  const line = body.split('\n').find((l) => l.startsWith(`registry_catalogue_compressions_total{view="${view}",encoding="${encoding}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

t.test('Accept-Encoding is negotiated by q-value, with `*`, identity rules and br preferred on a tie', (t) => {
  const cases: Array<[string | undefined, Coding]> = [
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['GZip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['gzip, br;q=0.5', 'gzip'],
    ['br;q=0.1, gzip;q=0.9', 'gzip'],
    ['*', 'br'],
    ['*;q=0.5, gzip', 'gzip'],
    ['br;q=0, *', 'gzip'],
    ['gzip;q=0, *', 'br'],
    ['br;q=0, gzip;q=0', 'identity'],
    ['deflate', 'identity'],
    ['zstd, gzip;q=0.8', 'gzip'],
    ['identity', 'identity'],
    ['identity, gzip;q=0.5', 'identity'],
    ['gzip, identity;q=0', 'gzip'],
    // Nothing offered is acceptable: the body is sent as it is rather than refused (docs/decisions/catalogue-compression.md).
    ['identity;q=0', 'identity'],
    ['*;q=0', 'identity'],
  ];
  for (const [header, expected] of cases) t.equal(negotiateCoding(header), expected, `Accept-Encoding: ${header ?? '(absent)'}`);
  t.equal(negotiateCoding('gzip, br;q=0.5'), 'gzip', 'a repeated header value answers alike');
  t.end();
});

t.test('the owner catalogue round-trips in br and gzip, byte for byte, with Vary and one ETag per coding', async (t) => {
  const { h, get } = await serve(t);
  const token = await h.enroll('agentlet-a');
  await seed(h, 'agentlet-a', token);

  for (const path of ['/api/acp/resources', '/api/acp/resources?schemaVersion=2', '/api/acp/resources?provider=agentlet-a']) {
    const plain = await get(path, h.owner);
    t.equal(plain.status, 200);
    t.equal(plain.headers['content-encoding'], undefined, `${path}: no Accept-Encoding, no coding`);
    t.equal(plain.headers.vary, 'Accept-Encoding', `${path}: Vary on the identity body too`);
    t.ok(plain.bytes.length >= MIN_COMPRESSED_BYTES, `${path}: ${plain.bytes.length} bytes, enough to be compressed`);
    const injected = await h.app.inject({ url: path, headers: h.owner });
    t.ok(plain.bytes.equals(injected.rawPayload), `${path}: the identity bytes are the ones sent without Accept-Encoding`);
    const etag = plain.headers.etag as string;
    t.match(etag, /^"[A-Za-z0-9_-]{32}"$/);

    for (const coding of ['br', 'gzip'] as const) {
      const res = await get(path, { ...h.owner, 'accept-encoding': coding });
      t.equal(res.status, 200);
      t.equal(res.headers['content-encoding'], coding, `${path}: ${coding}`);
      t.equal(res.headers.vary, 'Accept-Encoding');
      t.match(res.headers['content-type'], /^application\/json; charset=utf-8/);
      t.equal(Number(res.headers['content-length']), res.bytes.length);
      t.ok(res.bytes.length < plain.bytes.length / 3, `${path}: ${coding} is ${res.bytes.length} bytes of ${plain.bytes.length}`);
      t.ok(decode(coding, res.bytes).equals(plain.bytes), `${path}: ${coding} decompresses to the identity bytes exactly`);
      t.equal(res.headers.etag, suffix(etag, coding), `${path}: ${coding} has its own ETag`);
    }
  }
});

t.test('If-None-Match answers 304 only with the ETag of the coding this request gets', async (t) => {
  const { h, get } = await serve(t);
  const token = await h.enroll('agentlet-a');
  await seed(h, 'agentlet-a', token);
  const path = '/api/acp/resources';
  const etag = (await get(path, h.owner)).headers.etag as string;
  const all = ['identity', 'br', 'gzip'] as const;

  for (const coding of all) {
    const ask: Record<string, string> = coding === 'identity' ? {} : { 'accept-encoding': coding };
    const own = await get(path, { ...h.owner, ...ask, 'if-none-match': suffix(etag, coding) });
    t.equal(own.status, 304, `${coding}: its own ETag is current`);
    t.equal(own.bytes.length, 0);
    t.equal(own.headers.etag, suffix(etag, coding), `${coding}: the 304 names the ETag it validated`);
    t.equal(own.headers.vary, 'Accept-Encoding', `${coding}: the 304 carries Vary`);
    t.equal(own.headers['content-encoding'], undefined, 'a 304 has no body to be encoded');
    const weak = await get(path, { ...h.owner, ...ask, 'if-none-match': `"other", W/${suffix(etag, coding)}` });
    t.equal(weak.status, 304, `${coding}: weak comparison over a list`);
    const every = await get(path, { ...h.owner, ...ask, 'if-none-match': all.map((c) => suffix(etag, c)).join(', ') });
    t.equal(every.status, 304, `${coding}: a cache holding every coding sends every ETag`);
    t.equal((await get(path, { ...h.owner, ...ask, 'if-none-match': '*' })).status, 304);
    for (const other of all.filter((c) => c !== coding)) {
      const res = await get(path, { ...h.owner, ...ask, 'if-none-match': suffix(etag, other) });
      t.equal(res.status, 200, `${coding} asked, ${other}'s ETag sent: the body the client lacks`);
      t.equal(res.headers['content-encoding'], coding === 'identity' ? undefined : coding);
      t.equal(res.headers.etag, suffix(etag, coding));
    }
  }
});

t.test('a write changes every coding: new bodies, new ETags, old ETags no longer 304', async (t) => {
  const { h, get } = await serve(t);
  const token = await h.enroll('agentlet-a');
  await seed(h, 'agentlet-a', token);
  const path = '/api/acp/resources';
  const before = new Map<Coding, Answer>();
  for (const coding of ['identity', 'br', 'gzip'] as const) {
    before.set(coding, await get(path, { ...h.owner, ...(coding === 'identity' ? {} : { 'accept-encoding': coding }) }));
  }
  t.equal((await h.put('huabu', CANARY.huabu, 'host-tool-3', { name: 'Renamed after the first read' })).statusCode, 200);

  const identity = await get(path, h.owner);
  t.match(identity.bytes.toString(), 'Renamed after the first read');
  for (const coding of ['identity', 'br', 'gzip'] as const) {
    const ask: Record<string, string> = coding === 'identity' ? {} : { 'accept-encoding': coding };
    const old = before.get(coding)!;
    const res = await get(path, { ...h.owner, ...ask, 'if-none-match': old.headers.etag as string });
    t.equal(res.status, 200, `${coding}: the old ETag is stale`);
    t.not(res.headers.etag, old.headers.etag, `${coding}: a new ETag`);
    t.equal(res.headers.etag, suffix(identity.headers.etag as string, coding));
    t.notOk(res.bytes.equals(old.bytes), `${coding}: a new body`);
    t.ok(decode(coding, res.bytes).equals(identity.bytes), `${coding}: decompresses to the new identity bytes`);
  }
});

t.test('each compressed copy is built once per revision and coding, never per request, and never for a 304', async (t) => {
  const { h, get } = await serve(t);
  const token = await h.enroll('agentlet-a');
  await seed(h, 'agentlet-a', token);
  const path = '/api/acp/resources';
  t.equal(await compressions(h, 'br'), 0);

  const concurrent = await Promise.all(Array.from({ length: 8 }, () => get(path, { ...h.owner, 'accept-encoding': 'br' })));
  for (let i = 0; i < 4; i++) await get(path, { ...h.owner, 'accept-encoding': 'gzip, br' });
  for (let i = 0; i < 3; i++) await get(path, { ...h.owner, 'accept-encoding': 'gzip' });
  t.ok(
    concurrent.every((r) => r.bytes.equals(concurrent[0]!.bytes)),
    'every concurrent reader gets the same bytes',
  );
  t.equal(await compressions(h, 'br'), 1, '12 br reads (8 of them concurrent), one compression');
  t.equal(await compressions(h, 'gzip'), 1, '3 gzip reads, one compression');

  t.equal((await h.put('huabu', CANARY.huabu, 'host-tool-0', { name: 'Changed' })).statusCode, 200);
  const identity = await get(path, h.owner);
  const brTag = suffix(identity.headers.etag as string, 'br');
  const notModified = await get(path, { ...h.owner, 'accept-encoding': 'br', 'if-none-match': brTag });
  t.equal(notModified.status, 304, 'the br ETag of the new revision is known without compressing');
  t.equal(await compressions(h, 'br'), 1, 'a 304 compresses nothing');
  for (let i = 0; i < 3; i++) await get(path, { ...h.owner, 'accept-encoding': 'br' });
  t.equal(await compressions(h, 'br'), 2, 'the new revision: one more compression');
  t.equal(await compressions(h, 'gzip'), 1, 'no gzip reader since the write: no gzip compression');

  await get(`${path}?schemaVersion=2`, { ...h.owner, 'accept-encoding': 'br' });
  await get(`${path}?schemaVersion=2`, { ...h.owner, 'accept-encoding': 'br' });
  t.equal(await compressions(h, 'br'), 3, 'each representation is its own body: one compression for v2');
});

t.test('a body under 1 KiB is sent as it is, with Vary, whatever Accept-Encoding says', async (t) => {
  const { h, get } = await serve(t);
  await h.put('huabu', CANARY.huabu, 'web-search');
  for (const ask of ['br', 'gzip', '*', 'identity;q=0, gzip']) {
    const res = await get('/api/acp/resources', { ...h.owner, 'accept-encoding': ask });
    t.equal(res.status, 200);
    t.ok(res.bytes.length < MIN_COMPRESSED_BYTES, `${res.bytes.length} bytes`);
    t.equal(res.headers['content-encoding'], undefined, `${ask}: not compressed`);
    t.equal(res.headers.vary, 'Accept-Encoding');
    t.match(res.headers.etag, /^"[A-Za-z0-9_-]{32}"$/, 'the identity ETag');
    t.same(
      JSON.parse(res.bytes.toString()).resources.map((r: { id: string }) => r.id),
      ['web-search'],
    );
  }
  t.equal(await compressions(h, 'br'), 0);
  t.equal(await compressions(h, 'gzip'), 0);
});

t.test('RFS: an agent reads its catalogue compressed with its canvas token, with ETags and 304 per coding', async (t) => {
  const { h, get } = await serve(t);
  const a = await h.enroll('agentlet-a');
  const b = await h.enroll('agentlet-b');
  await seed(h, 'agentlet-a', a);
  t.equal((await h.put('agentlet-b', b, 'other-machine-tool')).statusCode, 201);
  const canvas = h.bearer(await h.canvasToken('canvas-1', 'agentlet-a'));

  for (const path of ['/api/rfs/canvas-1/resources', '/api/rfs/canvas-1/resources?schemaVersion=2']) {
    const plain = await get(path, canvas);
    t.equal(plain.status, 200);
    t.equal(plain.headers.vary, 'Accept-Encoding');
    t.equal(plain.headers['content-encoding'], undefined);
    t.notMatch(plain.bytes.toString(), 'other-machine-tool', "another machine's records stay out");
    const etag = plain.headers.etag as string;
    for (const coding of ['br', 'gzip'] as const) {
      const res = await get(path, { ...canvas, 'accept-encoding': `${coding};q=1, identity;q=0.1` });
      t.equal(res.status, 200);
      t.equal(res.headers['content-encoding'], coding, `${path}: ${coding}`);
      t.equal(res.headers.vary, 'Accept-Encoding');
      t.ok(decode(coding, res.bytes).equals(plain.bytes), `${path}: ${coding} decompresses to the identity bytes exactly`);
      t.equal(res.headers.etag, suffix(etag, coding));
      const again = await get(path, { ...canvas, 'accept-encoding': coding, 'if-none-match': res.headers.etag as string });
      t.equal(again.status, 304, `${path}: ${coding} 304`);
      t.equal(again.headers.vary, 'Accept-Encoding');
    }
  }
  t.equal(await compressions(h, 'br', 'machine'), 2, 'v1 and v2 of the machine view, once each (two reads each)');
  t.equal(await compressions(h, 'gzip', 'machine'), 2);

  const wrong = await get('/api/rfs/canvas-2/resources', { ...canvas, 'accept-encoding': 'br' });
  t.equal(wrong.status, 403, 'a token for another canvas is still refused');
  t.equal(wrong.headers['content-encoding'], undefined, 'errors are never compressed here');
});

t.test('CachedBody: concurrent asks share one compression; a body superseded while built is not compressed', async (t) => {
  let built = 0;
  const body = JSON.stringify({ resources: Array.from({ length: 40 }, (_, i) => ({ id: `r-${i}`, name: 'Some name' })) });
  const entry = new CachedBody(body, '"abc"', { onEncode: () => built++ });
  t.ok(entry.compressible);
  const [x, y] = await Promise.all([entry.encoded('br'), entry.encoded('br')]);
  t.equal(x, y, 'the same Buffer');
  t.equal(built, 1);
  t.equal(brotliDecompressSync(x).toString(), body);
  t.equal(entry.etagFor('br'), '"abc-br"');
  t.equal(entry.etagFor('gzip'), '"abc-gz"');
  t.equal(entry.etagFor('identity'), '"abc"');
  t.notOk(new CachedBody(body, '"abc"', { kept: false }).compressible, 'a body nobody else will read is sent as it is');
  t.notOk(new CachedBody('x'.repeat(MIN_COMPRESSED_BYTES - 1), '"abc"').compressible);
  t.ok(new CachedBody('x'.repeat(MIN_COMPRESSED_BYTES), '"abc"').compressible);
});
