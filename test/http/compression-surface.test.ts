// Compression of the rest of the surface, over a real socket with undici (which hands back the bytes as
// sent): /openapi.json, Swagger UI's files, the capability snapshot (JSON, DOT, SVG), a v2 record, the
// profile list and one profile come back br or gzip when asked, and decompress to the identity bytes; bodies
// under 1 KiB, HEAD and 304 go out uncompressed; ETags name the coding sent (304 per coding; If-Match
// accepts a revision in any coding); the pre-compressed catalogue is not compressed again; errors leave
// through the one error handler, compressed when large; and an event stream stays prompt under
// `Accept-Encoding: br`.
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import t from 'tap';
import { request } from 'undici';
import { registerCompression, sendEncoded } from '../../src/http/compression.js';
import { CachedBody, MIN_COMPRESSED_BYTES } from '../../src/registry/catalogue-cache.js';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

type Coding = 'br' | 'gzip' | 'identity';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
}

interface Served {
  h: TestApp;
  origin: string;
  call(
    path: string,
    headers: Record<string, string>,
    options?: { method?: 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'DELETE'; body?: unknown },
  ): Promise<Answer>;
}

async function serve(t: Parameters<typeof build>[0]): Promise<Served> {
  const h = await build(t);
  const origin = await listen(h.app);
  return {
    h,
    origin,
    async call(path, headers, options = {}) {
      const res = await request(`${origin}${path}`, {
        method: options.method ?? 'GET',
        headers: options.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      });
      return { status: res.statusCode, headers: res.headers, bytes: Buffer.from(await res.body.arrayBuffer()) };
    },
  };
}

function decode(coding: Coding, bytes: Buffer): Buffer {
  if (coding === 'br') return brotliDecompressSync(bytes);
  if (coding === 'gzip') return gunzipSync(bytes);
  return bytes;
}

const ask = (coding: Coding): Record<string, string> => (coding === 'identity' ? {} : { 'accept-encoding': coding });
const suffix = (etag: string, coding: Coding) => (coding === 'identity' ? etag : `${etag.slice(0, -1)}${coding === 'br' ? '-br' : '-gz'}"`);

const LONG = 'Searches the public web for the agent and summarizes what it found, with the sources it read. '.repeat(8);

/** Records on the host and one machine, and two profiles placed on it: every body below is over 1 KiB. */
async function seed(h: TestApp): Promise<{ profileId: string; etag: string }> {
  const token = await h.enroll('mac-a');
  for (let i = 0; i < 6; i++) {
    for (const res of [
      await h.put('huabu', CANARY.huabu, `host-tool-${i}`, { description: LONG.slice(0, 500), instructions: LONG }),
      await h.put('mac-a', token, `local-tool-${i}`, { description: LONG.slice(0, 500), instructions: LONG }),
    ]) {
      if (res.statusCode !== 201) throw new Error(`seed: ${res.statusCode} ${res.body}`);
    }
  }
  let created: { profileId: string; etag: string } | undefined;
  for (const alias of ['Reviewer', 'Writer']) {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: {
        alias,
        agentletId: 'mac-a',
        workingDirPath: '/home/me/site',
        launch: { kind: 'acp-command', command: 'claude-code-acp' },
        resourceIds: ['host-tool-0', 'local-tool-1'],
        customData: { notes: LONG, more: LONG },
      },
    });
    if (res.statusCode !== 201) throw new Error(`seed profile: ${res.statusCode} ${res.body}`);
    created ??= { profileId: res.json<{ id: string }>().id, etag: res.headers.etag as string };
  }
  return created!;
}

t.test('every large body comes back br or gzip when asked, and decompresses to the identity bytes', async (t) => {
  const { h, call } = await serve(t);
  const { profileId } = await seed(h);
  const paths: Array<[string, Record<string, string>]> = [
    ['/openapi.json', {}],
    ['/docs/static/swagger-ui.css', {}],
    ['/docs/static/swagger-ui-bundle.js', {}],
    ['/docs/json', {}],
    ['/api/acp/capabilities', h.owner],
    ['/api/acp/capabilities?format=dot', h.owner],
    ['/api/acp/capabilities?format=svg', h.owner],
    ['/api/acp/resources/local-tool-1?schemaVersion=2', h.owner],
    ['/api/acp/profiles', h.owner],
    [`/api/acp/profiles/${profileId}`, h.owner],
  ];
  for (const [path, auth] of paths) {
    const plain = await call(path, auth);
    t.equal(plain.status, 200, `${path}: 200`);
    t.equal(plain.headers['content-encoding'], undefined, `${path}: no Accept-Encoding, no coding`);
    t.ok(plain.bytes.length >= MIN_COMPRESSED_BYTES, `${path}: ${plain.bytes.length} bytes, enough to be compressed`);
    // light-my-request sends no Accept-Encoding: the bytes every existing suite checks are the identity bytes.
    const injected = await h.app.inject({ url: path, headers: auth });
    t.ok(injected.rawPayload.equals(plain.bytes), `${path}: inject gets the identity bytes`);
    for (const coding of ['br', 'gzip'] as const) {
      const res = await call(path, { ...auth, 'accept-encoding': coding });
      t.equal(res.status, 200);
      t.equal(res.headers['content-encoding'], coding, `${path}: ${coding}`);
      t.match(String(res.headers.vary), /accept-encoding/i, `${path}: Vary: Accept-Encoding`);
      t.equal(res.headers['content-type'], plain.headers['content-type'], `${path}: the same content type`);
      t.ok(res.bytes.length < plain.bytes.length / 2, `${path}: ${coding} is ${res.bytes.length} bytes of ${plain.bytes.length}`);
      t.ok(decode(coding, res.bytes).equals(plain.bytes), `${path}: ${coding} decompresses to the identity bytes exactly`);
    }
  }
});

t.test('one rule picks the coding: the plugin path and the self-encoded path answer a header alike', async (t) => {
  const { h, call } = await serve(t);
  await seed(h);
  const cases: Array<[string, Coding]> = [
    ['*', 'br'],
    ['gzip;q=0, *', 'br'],
    ['br;q=0, *', 'gzip'],
    ['GZIP', 'gzip'],
    ['gzip, br;q=0.5', 'gzip'],
    ['identity;q=0', 'identity'],
    ['deflate', 'identity'],
  ];
  for (const [header, expected] of cases) {
    for (const path of ['/api/acp/profiles', '/api/acp/capabilities', '/openapi.json']) {
      const res = await call(path, { ...h.owner, 'accept-encoding': header });
      t.equal(res.headers['content-encoding'], expected === 'identity' ? undefined : expected, `${path}, Accept-Encoding: ${header}`);
      t.doesNotThrow(() => JSON.parse(decode(expected, res.bytes).toString()), 'and decodes as that coding');
    }
  }
});

t.test("Swagger UI's files: compressed once per coding and kept, with their own weak ETag and 304", async (t) => {
  const { call } = await serve(t);
  const path = '/docs/static/swagger-ui-bundle.js';
  const plain = await call(path, {});
  const first = await call(path, { 'accept-encoding': 'br' });
  const second = await call(`${path}?v=2`, { 'accept-encoding': 'br' });
  t.equal(first.headers['content-encoding'], 'br');
  t.equal(Number(first.headers['content-length']), first.bytes.length, 'a kept copy: its length is known');
  t.ok(second.bytes.equals(first.bytes), 'the same copy for the next reader');
  t.ok(decode('br', second.bytes).equals(plain.bytes));
  t.equal(first.headers.vary, 'Accept-Encoding');
  const etag = first.headers.etag as string;
  t.match(etag, /^W\//, "@fastify/static's weak ETag, which a coding may share");
  const notModified = await call(path, { 'accept-encoding': 'br', 'if-none-match': etag });
  t.equal(notModified.status, 304);
  t.equal(notModified.bytes.length, 0);
  const head = await call(path, { 'accept-encoding': 'gzip' }, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.bytes.length, 0, 'HEAD: no body');
  const png = await call('/docs/static/favicon-32x32.png', { 'accept-encoding': 'br' });
  t.equal(png.headers['content-encoding'], undefined, 'an image is not text: sent as it is');
});

t.test('a body under 1 KiB goes out as it is, whatever Accept-Encoding says', async (t) => {
  const { h, call } = await serve(t);
  await h.put('huabu', CANARY.huabu, 'web-search');
  for (const [path, auth] of [
    ['/api/acp/resources/web-search', h.owner],
    ['/docs/static/index.css', {}],
    ['/healthz', {}],
  ] as const) {
    const plain = await call(path, auth);
    t.equal(plain.status, 200, path);
    t.ok(plain.bytes.length > 0 && plain.bytes.length < MIN_COMPRESSED_BYTES, `${path}: ${plain.bytes.length} bytes`);
    for (const coding of ['br', 'gzip'] as const) {
      const res = await call(path, { ...auth, 'accept-encoding': coding });
      t.equal(res.headers['content-encoding'], undefined, `${path}: ${coding} asked, sent as it is`);
      t.ok(res.bytes.equals(plain.bytes), `${path}: the identity bytes`);
    }
  }
});

t.test('capabilities: one ETag per coding, 304 only with the ETag of the coding this request gets', async (t) => {
  const { h, call } = await serve(t);
  await seed(h);
  for (const path of ['/api/acp/capabilities', '/api/acp/capabilities?format=dot', '/api/acp/capabilities?kind=resource']) {
    const plain = await call(path, h.owner);
    const etag = plain.headers.etag as string;
    t.match(etag, /^"[^"-]+"$/, `${path}: the identity ETag is the digest`);
    t.equal(plain.headers.vary, 'Accept-Encoding', `${path}: Vary on the identity body too`);
    const all = ['identity', 'br', 'gzip'] as const;
    for (const coding of all) {
      const res = await call(path, { ...h.owner, ...ask(coding) });
      t.equal(res.headers.etag, suffix(etag, coding), `${path}: ${coding} has its own ETag`);
      const own = await call(path, { ...h.owner, ...ask(coding), 'if-none-match': suffix(etag, coding) });
      t.equal(own.status, 304, `${path}: ${coding}: its own ETag answers 304`);
      t.equal(own.bytes.length, 0, 'a 304 has no body');
      t.equal(own.headers['content-encoding'], undefined, 'a 304 has no coding');
      t.equal(own.headers.etag, suffix(etag, coding), 'the 304 names the ETag it validated');
      for (const other of all.filter((c) => c !== coding)) {
        const res = await call(path, { ...h.owner, ...ask(coding), 'if-none-match': suffix(etag, other) });
        t.equal(res.status, 200, `${path}: ${coding} asked with ${other}'s ETag: the body the client lacks`);
        t.equal(res.headers['content-encoding'], coding === 'identity' ? undefined : coding);
      }
    }
  }
  // A change gives every coding a new ETag.
  const before = await call('/api/acp/capabilities', { ...h.owner, 'accept-encoding': 'br' });
  await h.put('huabu', CANARY.huabu, 'host-tool-0', { description: 'Changed.' });
  const after = await call('/api/acp/capabilities', {
    ...h.owner,
    'accept-encoding': 'br',
    'if-none-match': before.headers.etag as string,
  });
  t.equal(after.status, 200, 'the old br ETag is stale');
  t.not(after.headers.etag, before.headers.etag);
  t.match(after.headers.etag, /-br"$/);
});

t.test('profiles: the ETag follows the coding, and If-Match accepts the revision in any coding', async (t) => {
  const { h, call } = await serve(t);
  const { profileId, etag } = await seed(h);
  const path = `/api/acp/profiles/${profileId}`;
  t.match(etag, /^"[^"]+"$/, 'created (through inject, no Accept-Encoding): the revision, quoted');
  const br = await call(path, { ...h.owner, 'accept-encoding': 'br' });
  t.equal(br.headers['content-encoding'], 'br');
  t.equal(br.headers.etag, suffix(etag, 'br'), 'the br body has its own ETag');
  const gz = await call(path, { ...h.owner, 'accept-encoding': 'gzip' });
  t.equal(gz.headers.etag, suffix(etag, 'gzip'));
  t.equal((await call(path, h.owner)).headers.etag, etag);

  const patched = await call(
    path,
    { ...h.owner, 'accept-encoding': 'br', 'if-match': br.headers.etag as string },
    { method: 'PATCH', body: { alias: 'Reviewer two' } },
  );
  t.equal(patched.status, 200, 'If-Match with the br ETag of the current revision is current');
  t.equal(patched.headers['content-encoding'], 'br', 'the answer to the write is compressed too');
  t.equal(JSON.parse(decode('br', patched.bytes).toString()).alias, 'Reviewer two');
  const second = (patched.headers.etag as string).replace(/-br"$/, '"');
  t.not(second, etag, 'a new revision');
  t.equal(patched.headers.etag, suffix(second, 'br'), 'named in the coding sent');

  const stale = await call(path, { ...h.owner, 'if-match': gz.headers.etag as string }, { method: 'PATCH', body: { alias: 'Lost' } });
  t.equal(stale.status, 412, 'the gzip ETag of the first revision is stale');
  t.equal(JSON.parse(stale.bytes.toString()).code, 'precondition_failed');
  t.equal(
    (await call(path, { ...h.owner, 'if-match': `W/${patched.headers.etag as string}` }, { method: 'PATCH', body: { alias: 'Lost' } }))
      .status,
    412,
    'a weak tag still never matches',
  );
  const list = await call(
    path,
    { ...h.owner, 'if-match': `${gz.headers.etag as string}, ${suffix(second, 'gzip')}` },
    { method: 'PATCH', body: { alias: 'Reviewer three' } },
  );
  t.equal(list.status, 200, 'a list of ETags matches when one names the current revision');
  t.match(list.headers.etag, /^"[^"]+"$/, 'no Accept-Encoding: the plain revision');
  t.notMatch(list.headers.etag, /-(br|gz)"$/);
  const deleted = await call(path, { ...h.owner, 'if-match': suffix(list.headers.etag as string, 'br') }, { method: 'DELETE' });
  t.equal(deleted.status, 204, 'DELETE accepts a coded ETag as PATCH does');
});

t.test('the pre-compressed catalogue is compressed once, not again by the plugin', async (t) => {
  const { h, call } = await serve(t);
  await seed(h);
  const plain = await call('/api/acp/resources', h.owner);
  for (const coding of ['br', 'gzip'] as const) {
    const res = await call('/api/acp/resources', { ...h.owner, 'accept-encoding': coding });
    t.equal(res.headers['content-encoding'], coding, `${coding}: one coding named`);
    t.equal(res.headers.vary, 'Accept-Encoding', 'Vary named once');
    t.equal(Number(res.headers['content-length']), res.bytes.length, 'a known length: not re-streamed through the plugin');
    t.ok(decode(coding, res.bytes).equals(plain.bytes), `${coding}: one decompression gives the JSON`);
    t.equal(res.headers.etag, suffix(plain.headers.etag as string, coding));
  }
});

t.test('HEAD and 304 carry no body; an error over 1 KiB leaves through the error handler, compressed', async (t) => {
  const { h, call } = await serve(t);
  await seed(h);
  for (const path of ['/openapi.json', '/api/acp/profiles', '/api/acp/capabilities']) {
    const head = await call(path, { ...h.owner, 'accept-encoding': 'br' }, { method: 'HEAD' });
    t.equal(head.status, 200, `HEAD ${path}`);
    t.equal(head.bytes.length, 0, `HEAD ${path}: no body`);
  }
  const capability = await call('/api/acp/capabilities', { ...h.owner, 'accept-encoding': 'gzip' });
  const notModified = await call('/api/acp/capabilities', {
    ...h.owner,
    'accept-encoding': 'gzip',
    'if-none-match': capability.headers.etag as string,
  });
  t.equal(notModified.status, 304);
  t.equal(notModified.bytes.length, 0);

  // A refusal that names its offenders: 60 unknown resource IDs make it large.
  const ids = Array.from({ length: 60 }, (_, i) => `unknown-resource-number-${i}`);
  const refuse = (headers: Record<string, string>) =>
    call('/api/acp/profiles', headers, {
      method: 'POST',
      body: { alias: 'Nobody', agentletId: 'mac-a', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'x' }, resourceIds: ids },
    });
  const plain = await refuse(h.owner);
  t.equal(plain.status, 422);
  t.ok(plain.bytes.length >= MIN_COMPRESSED_BYTES, `${plain.bytes.length} bytes`);
  const body = JSON.parse(plain.bytes.toString()) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['code', 'details', 'error', 'message', 'statusCode'], 'the one error shape');
  t.equal(body.code, 'unresolved_resource_ids');
  for (const coding of ['br', 'gzip'] as const) {
    const res = await refuse({ ...h.owner, 'accept-encoding': coding });
    t.equal(res.status, 422);
    t.equal(res.headers['content-encoding'], coding, `${coding}: the error is compressed`);
    t.ok(decode(coding, res.bytes).equals(plain.bytes), `${coding}: the same error, compressed`);
  }
});

t.test('an event stream stays unbuffered under Accept-Encoding: br: an event arrives at once, as it is', async (t) => {
  const { h, origin } = await serve(t);
  const token = await h.enroll('mac-a');
  const received: string[] = [];
  let wake: () => void = () => undefined;
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(
      `${origin}/api/acp/events`,
      { headers: { ...h.owner, accept: 'text/event-stream', 'accept-encoding': 'br, gzip' } },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          received.push(chunk);
          wake();
        });
        resolve(res);
      },
    );
    req.on('error', reject);
    t.teardown(() => req.destroy());
  });
  t.equal(response.statusCode, 200);
  t.equal(response.headers['content-encoding'], undefined, 'the stream is not compressed');
  t.match(response.headers['content-type'], /^text\/event-stream/);

  const started = Date.now();
  t.equal((await h.put('mac-a', token, 'fresh-tool')).statusCode, 201);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no event in 2 s: ${received.join('')}`)), 2000);
    wake = () => {
      if (received.join('').includes('fresh-tool')) {
        clearTimeout(timer);
        resolve();
      }
    };
    wake();
  });
  const elapsed = Date.now() - started;
  t.ok(elapsed < 2000, `the event arrived after ${elapsed} ms`);
  t.match(received.join(''), /event: resource\.\w+/, 'plain SSE text on the wire');
});

t.test('a body a route chose to send as it is stays as it is: the plugin does not compress it behind its ETag', async (t) => {
  const app = Fastify();
  await registerCompression(app);
  const body = JSON.stringify({ resources: Array.from({ length: 80 }, (_, i) => ({ id: `r-${i}`, name: 'Some name' })) });
  // A catalogue body built for a revision superseded meanwhile: sent once, as it is (never compressed).
  const superseded = new CachedBody(body, '"old"', { kept: false });
  const kept = new CachedBody(body, '"now"');
  app.get('/superseded', (request, reply) => sendEncoded(reply, request.headers, superseded, { type: 'application/json; charset=utf-8' }));
  app.get('/kept', (request, reply) => sendEncoded(reply, request.headers, kept, { type: 'application/json; charset=utf-8' }));
  const origin = await listen(app);
  t.teardown(() => app.close());
  for (const coding of ['br', 'gzip'] as const) {
    const res = await request(`${origin}/superseded`, { headers: { 'accept-encoding': coding } });
    const bytes = Buffer.from(await res.body.arrayBuffer());
    t.equal(res.headers['content-encoding'], undefined, `${coding} asked: sent as it is`);
    t.equal(res.headers.etag, '"old"', 'under the identity ETag, which names these bytes');
    t.equal(bytes.toString(), body);
    const other = await request(`${origin}/kept`, { headers: { 'accept-encoding': coding } });
    t.equal(other.headers['content-encoding'], coding, `${coding}: a kept body is compressed once, by the route`);
    t.equal(other.headers.etag, coding === 'br' ? '"now-br"' : '"now-gz"');
    t.equal(decode(coding, Buffer.from(await other.body.arrayBuffer())).toString(), body);
  }
});
