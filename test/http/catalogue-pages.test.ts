// Search and pages of the owner catalogue and of RFS, on a real socket, on the JSON store and (with
// DATABASE_URL) PostgreSQL: without q/limit/cursor the answer is the whole list as before; with them the
// same records a page at a time with `Link: <…>; rel="next"`, the canvas scope applied before the search,
// cursors bound to their list and query, and bad parameters answered 400 with a stable code.
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { build, tempDataDir, testEnv, type TestApp } from '../helpers/build.js';
import { freshDatabase, DATABASE_URL } from '../helpers/postgres.js';
import { listen } from '../helpers/sockets.js';

interface Answer {
  status: number;
  link: string | null;
  body: { resources: { id: string; provider: string }[]; code?: string; manageableResourceIds?: string[] };
  text: string;
}

async function served(h: TestApp) {
  const origin = await listen(h.app);
  return async (url: string, token: string): Promise<Answer> => {
    const res = await fetch(origin + url, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    return { status: res.status, link: res.headers.get('link'), text, body: JSON.parse(text) as Answer['body'] };
  };
}

/** Follows `Link: rel="next"` from `url` to the end; every page's records, and the number of pages. */
async function walk(get: (url: string, token: string) => Promise<Answer>, url: string, token: string) {
  const ids: string[] = [];
  let pages = 0;
  for (let next: string | undefined = url; next; pages++) {
    const page = await get(next, token);
    if (page.status !== 200) throw new Error(`${next}: ${page.status} ${page.text}`);
    ids.push(...page.body.resources.map((r) => r.id));
    next = /^<([^>]+)>; rel="next"$/.exec(page.link ?? '')?.[1];
  }
  return { ids, pages };
}

const stores: [string, () => Promise<Record<string, string>>][] = [['json', () => Promise.resolve({})]];
if (DATABASE_URL) stores.push(['postgres', async () => ({ DATABASE_URL: await freshDatabase(t, DATABASE_URL!) })]);

for (const [store, env] of stores) {
  t.test(`${store}: the catalogue and RFS lists, searched and paged`, async (t) => {
    const h = await build(t, { env: { ...(await env()), RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    const a = await h.enroll('agentlet-a');
    const b = await h.enroll('agentlet-b');
    for (const id of ['web-search', 'web-fetch', 'image-maker', 'pdf-reader', 'deploy-helper']) await h.put('agentlet-a', a, id);
    for (const id of ['web-crawler', 'b-notes']) await h.put('agentlet-b', b, id);
    await h.put('huabu', h.huabu.authorization!.slice(7), 'host-guide', { description: 'How to search the web here.' });
    const owner = h.owner.authorization!.slice(7);
    const canvasX = await h.canvasToken('canvas-x', 'agentlet-a');
    const canvasY = await h.canvasToken('canvas-y', 'agentlet-a');
    const get = await served(h);

    const whole = await get('/api/acp/resources', owner);
    t.equal(whole.link, null, 'the whole list has no Link');
    const byProviderThenId = [...whole.body.resources]
      .sort((x, y) => (`${x.provider}\0${x.id}` < `${y.provider}\0${y.id}` ? -1 : 1))
      .map((r) => r.id);
    const walked = await walk(get, '/api/acp/resources?limit=3', owner);
    t.same(walked.ids, byProviderThenId, 'pages of 3: every record once, in (provider, id) order');
    t.equal(walked.pages, 3);
    const one = await get('/api/acp/resources?limit=3', owner);
    t.same(
      JSON.parse(one.text).resources,
      whole.body.resources.filter((r) => byProviderThenId.slice(0, 3).includes(r.id)),
      'a page holds the same records in the same representation',
    );
    const v2 = await get('/api/acp/resources?limit=2&schemaVersion=2', owner);
    t.same(Object.keys(v2.body), ['resources', 'manageableResourceIds'], 'record v2 of the whole catalogue: the same members');
    t.match(v2.link, /schemaVersion=2/, 'the next page keeps the query');
    t.same(
      (await walk(get, '/api/acp/resources?limit=2&provider=agentlet-b', owner)).ids,
      ['b-notes', 'web-crawler'],
      "the owner's provider filter",
    );

    const searched = await get('/api/acp/resources?q=web', owner);
    t.same(
      searched.body.resources.map((r) => r.id),
      ['web-fetch', 'web-search', 'web-crawler', 'host-guide'],
      'the name before the description; ties by (provider, id)',
    );
    t.same(
      (await get('/api/acp/resources?q=serch', owner)).body.resources.map((r) => r.id),
      ['web-search', 'host-guide'],
      'one edit away, for a word of five letters or more',
    );
    t.same(
      (await get('/api/acp/resources?q=fech', owner)).body.resources.map((r) => r.id),
      [],
      'a typo in a four-letter word is no match',
    );
    t.same(
      (await get('/api/acp/resources?q=deploy%20hel', owner)).body.resources.map((r) => r.id),
      ['deploy-helper'],
      'the last word is a prefix',
    );
    t.same((await walk(get, '/api/acp/resources?q=web&limit=1', owner)).ids, ['web-fetch', 'web-search', 'web-crawler', 'host-guide']);

    const rfs = await walk(get, '/api/rfs/canvas-x/resources?q=web&limit=2', canvasX);
    t.same(rfs.ids, ['web-fetch', 'web-search', 'host-guide']);
    t.notOk(rfs.ids.includes('web-crawler'), "another machine's record is never found through a canvas token");
    t.same(
      (await walk(get, '/api/rfs/canvas-x/resources?limit=2', canvasX)).ids,
      ['deploy-helper', 'image-maker', 'pdf-reader', 'web-fetch', 'web-search', 'host-guide'],
      "RFS pages in (provider, id) order: the machine's and the host's",
    );

    const first = await get('/api/rfs/canvas-x/resources?limit=2', canvasX);
    const cursor = new URL(first.link!.slice(1, first.link!.indexOf('>')), 'http://x').searchParams.get('cursor')!;
    const elsewhere = await get(`/api/rfs/canvas-y/resources?limit=2&cursor=${encodeURIComponent(cursor)}`, canvasY);
    t.equal(elsewhere.status, 400);
    t.equal(elsewhere.body.code, 'invalid_cursor', "another canvas's cursor");
    const otherQuery = await get(`/api/rfs/canvas-x/resources?q=web&cursor=${encodeURIComponent(cursor)}`, canvasX);
    t.equal(otherQuery.body.code, 'invalid_cursor', "another query's cursor");
    const ownerUse = await get(`/api/acp/resources?cursor=${encodeURIComponent(cursor)}`, owner);
    t.equal(ownerUse.body.code, 'invalid_cursor', "a canvas's cursor on the owner's list");

    for (const limit of ['0', '501', 'abc', '', '-1']) {
      const res = await get(`/api/acp/resources?limit=${limit}`, owner);
      t.same([res.status, res.body.code], [400, 'validation_failed'], `limit=${limit}`);
    }
    const long = await get(`/api/rfs/canvas-x/resources?q=${'x'.repeat(10_000)}`, canvasX);
    t.same([long.status, long.body.code], [400, 'validation_failed'], 'a 10,000-character query');
    for (const q of ["'; DROP TABLE resources; --", '(.*)+[', 'web\u0000search', 'a:* & !b | <->']) {
      const res = await get(`/api/acp/resources?q=${encodeURIComponent(q)}`, owner);
      t.equal(res.status, 200, `q=${JSON.stringify(q)}`);
    }
    t.equal((await get('/api/acp/resources', owner)).text, whole.text, 'the whole list is unchanged by all of this');
  });
}

for (const [store, env] of stores) {
  t.test(`${store}: a page read again is the same bytes until the catalogue changes, offered compressed and answered 304`, async (t) => {
    const h = await build(t, { env: { ...(await env()), RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    const a = await h.enroll('agentlet-a');
    const long = { description: `Reads and writes notes. ${'Keeps them tidy. '.repeat(25)}` };
    for (const id of ['notes-b', 'notes-c', 'notes-d', 'notes-e']) t.ok((await h.put('agentlet-a', a, id, long)).statusCode < 300);
    const canvas = await h.canvasToken('canvas-x', 'agentlet-a');
    const origin = await listen(h.app);
    const read = async (url: string, headers: Record<string, string> = {}) => {
      const res = await fetch(origin + url, { headers: { authorization: `Bearer ${canvas}`, ...headers } });
      const text = await res.text();
      return {
        status: res.status,
        etag: res.headers.get('etag'),
        coding: res.headers.get('content-encoding'),
        link: res.headers.get('link'),
        text,
      };
    };
    const ids = (text: string) => (JSON.parse(text) as Answer['body']).resources.map((r) => r.id);
    const url = '/api/rfs/canvas-x/resources?limit=3';

    const first = await read(url, { 'accept-encoding': 'identity' });
    t.same(ids(first.text), ['notes-b', 'notes-c', 'notes-d']);
    const again = await read(url, { 'accept-encoding': 'identity' });
    t.same([again.text, again.etag, again.link], [first.text, first.etag, first.link], 'the same bytes, ETag and next link');
    t.equal((await read(url, { 'accept-encoding': 'identity', 'if-none-match': first.etag! })).status, 304, 'its ETag answers 304');
    const br = await read(url, { 'accept-encoding': 'br' });
    t.equal(br.coding, 'br', 'a page over 1 KiB is sent compressed when asked');
    t.equal(br.etag, `${first.etag!.slice(0, -1)}-br"`, "with the coding's own ETag");
    t.equal(br.text, first.text, 'the same text once decoded');
    t.equal((await read(url, { 'accept-encoding': 'br', 'if-none-match': br.etag! })).status, 304);

    await h.put('agentlet-a', a, 'notes-a', long);
    const written = await read(url, { 'accept-encoding': 'identity' });
    t.same(ids(written.text), ['notes-a', 'notes-b', 'notes-c'], 'a record written since is on the page at once');
    t.not(written.etag, first.etag);
    t.equal((await read(url, { 'accept-encoding': 'identity', 'if-none-match': first.etag! })).status, 200, 'the old ETag is stale');
    const withdrawn = await h.app.inject({
      method: 'DELETE',
      url: '/api/acp/providers/agentlet-a/resources/notes-b',
      headers: h.bearer(a),
    });
    t.equal(withdrawn.statusCode, 204);
    t.same(ids((await read(url, { 'accept-encoding': 'identity' })).text), ['notes-a', 'notes-c', 'notes-d'], 'and one withdrawn is gone');
    t.same(ids((await read('/api/rfs/canvas-x/resources?q=notes&limit=3')).text), ['notes-a', 'notes-c', 'notes-d'], 'a search page too');
    await h.put('agentlet-a', a, 'notes-c', { description: 'Now about something else entirely.' });
    t.same(
      ids((await read('/api/rfs/canvas-x/resources?q=tidy&limit=3')).text),
      ['notes-a', 'notes-d', 'notes-e'],
      'a search page follows a replace',
    );
  });
}

t.test('CATALOGUE_PAGE_CACHE_BYTES: 16 MiB unless set; at 0 every read builds its page, sent as it is', async (t) => {
  const dir = await tempDataDir();
  t.equal(loadConfig(testEnv(dir)).pageCacheBytes, 16 * 2 ** 20);
  t.equal(loadConfig(testEnv(dir, { CATALOGUE_PAGE_CACHE_BYTES: '0' })).pageCacheBytes, 0);
  t.throws(() => loadConfig(testEnv(dir, { CATALOGUE_PAGE_CACHE_BYTES: '16MiB' })), /CATALOGUE_PAGE_CACHE_BYTES/);
  const h = await build(t, { env: { CATALOGUE_PAGE_CACHE_BYTES: '0', RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
  const a = await h.enroll('agentlet-a');
  for (const id of ['notes-a', 'notes-b', 'notes-c']) {
    t.ok((await h.put('agentlet-a', a, id, { description: 'Keeps them tidy. '.repeat(25) })).statusCode < 300);
  }
  const read = () => h.app.inject({ method: 'GET', url: '/api/acp/resources?limit=3', headers: { ...h.owner, 'accept-encoding': 'br' } });
  const first = await read();
  t.ok(first.rawPayload.length > 1024, 'a page over 1 KiB');
  t.equal(first.headers['content-encoding'], undefined, 'not compressed for one read');
  const again = await read();
  t.same([again.body, again.headers.etag], [first.body, first.headers.etag], 'the same page built again');
});
