// The catalogue cache on its own: which body or page a read gets at which revision, when one is rebuilt,
// which pages its bound of bytes keeps, and how If-None-Match is matched. The HTTP side (codings, Vary, 304 per coding) is test/http/compression.test.ts.
import t from 'tap';
import fc from 'fast-check';
import {
  catalogueBody,
  CatalogueCache,
  DEFAULT_PAGE_CACHE_BYTES,
  PAGE_ENTRY_BYTES,
  uncodedTag,
  etagMatches,
  MIN_COMPRESSED_BYTES,
  viewLabel,
} from '../../src/registry/catalogue-cache.js';
import type { StoredResource } from '../../src/schemas/resource.js';
import { represent } from '../../src/registry/resource-versions.js';

const record = (id: string, description = 'd'.repeat(MIN_COMPRESSED_BYTES)): StoredResource => ({
  schemaVersion: 1,
  id,
  name: id,
  provider: 'huabu',
  description,
  instructions: 'Use it.',
});

/** A read held until `release()`: `after(value)` resolves to `value` once released. */
function gate() {
  let release!: () => void;
  const opened = new Promise<void>((r) => (release = r));
  return { release, after: <T>(value: T) => opened.then(() => value) };
}

function counted() {
  const rebuilt: string[] = [];
  return { rebuilt, cache: new CatalogueCache((view) => rebuilt.push(view)) };
}

t.test('a cached view is found at once at its revision; a new revision drops every view', async (t) => {
  const { cache, rebuilt } = counted();
  t.equal(cache.hit('1', 'all', 1), undefined, 'nothing before the first read');
  const first = await cache.get('1', 'all', 1, () => Promise.resolve([record('a')]));
  t.equal(cache.hit('1', 'all', 1), first, 'the same body, without building it again');
  t.equal(cache.hit('1', 'all', 2), undefined, 'each representation is its own entry');
  t.equal(await cache.get('1', 'all', 1, () => Promise.resolve([record('changed')])), first, 'get returns the cached body too');
  t.same(rebuilt, ['all']);
  t.equal(cache.hit('2', 'all', 1), undefined, 'a new revision: the view is gone');
  t.equal(cache.hit('1', 'all', 1), undefined, 'and it does not come back with the old revision');
  const second = await cache.get('2', 'all', 1, () => Promise.resolve([record('b')]));
  t.match(second.body, /"id":"b"/);
  t.same(rebuilt, ['all', 'all']);
});

t.test('a body built for a revision superseded while it was built serves its read only', async (t) => {
  const { cache } = counted();
  const { release, after } = gate();
  const building = cache.get('1', 'all', 1, () => after([record('old')]));
  t.equal(cache.hit('2', 'all', 1), undefined, 'a write moved the revision meanwhile');
  release();
  const built = await building;
  t.match(built.body, /"id":"old"/, 'the read that built it gets it');
  t.equal(built.compressible, false, 'and it is not compressed for a single read');
  t.equal(cache.hit('2', 'all', 1), undefined, 'it is not served as the new revision');
  const fresh = await cache.get('2', 'all', 1, () => Promise.resolve([record('new')]));
  t.match(fresh.body, /"id":"new"/);
  t.equal(fresh.compressible, true, 'a body kept for later reads is offered compressed');
  t.equal(cache.hit('2', 'all', 1), fresh);
});

t.test('past MAX_VIEWS views at one revision the cache starts over, and not before', async (t) => {
  const { cache, rebuilt } = counted();
  const select = () => Promise.resolve([record('a', 'small')]);
  for (let i = 0; i < CatalogueCache.MAX_VIEWS; i++) await cache.get('1', `provider:p${i}`, 1, select);
  t.ok(cache.hit('1', 'provider:p0', 1), 'the first view is still cached at MAX_VIEWS views');
  t.ok(cache.hit('1', `provider:p${CatalogueCache.MAX_VIEWS - 1}`, 1), 'and the last');
  await cache.get('1', 'provider:one-more', 1, select);
  t.equal(cache.hit('1', 'provider:p0', 1), undefined, 'one more view clears the others');
  t.ok(cache.hit('1', 'provider:one-more', 1), 'and is kept itself');
  t.equal(rebuilt.length, CatalogueCache.MAX_VIEWS + 1);
});

t.test('a kept page is found at once at its revision with its next cursor; a new revision drops it with the views', async (t) => {
  const { cache } = counted();
  let selected = 0;
  const select = (id: string, next?: string) => () => {
    selected++;
    return Promise.resolve(next === undefined ? { records: [record(id)] } : { records: [record(id)], next });
  };
  t.equal(cache.pageHit('1', 'k'), undefined, 'nothing before the first read');
  const first = await cache.page('1', 'k', 1, select('a', 'cursor-2'));
  t.equal(first.next, 'cursor-2');
  t.equal(first.body.compressible, true, 'a kept page is offered compressed');
  t.equal(cache.pageHit('1', 'k'), first, 'the same page, without reading it again');
  t.equal(await cache.page('1', 'k', 1, select('changed')), first);
  t.equal(selected, 1);
  const last = await cache.page('1', 'k2', 2, select('b'));
  t.notOk('next' in last, 'the last page has no next cursor');
  await cache.get('1', 'all', 1, () => Promise.resolve([record('a')]));
  t.equal(cache.pageHit('2', 'k'), undefined, 'a new revision: the page is gone');
  t.equal(cache.hit('2', 'all', 1), undefined, 'and the views with it');
  t.equal(cache.pageHit('1', 'k'), undefined, 'and it does not come back with the old revision');
  t.match((await cache.page('2', 'k', 1, select('new'))).body.body, /"id":"new"/);
  await cache.page('2', 'v', 1, select('view'));
  t.ok(cache.pageHit('2', 'v'), 'a view read at the same revision keeps the pages');
  t.ok(cache.hit('2', 'all', 1) === undefined && cache.pageHit('2', 'k'), 'so does a view miss');
});

t.test('a page read while the revision moved serves its read only', async (t) => {
  const { cache } = counted();
  const { release, after } = gate();
  const reading = cache.page('1', 'k', 1, () => after({ records: [record('old')] }));
  t.equal(cache.pageHit('2', 'k'), undefined, 'a write moved the revision meanwhile');
  release();
  const page = await reading;
  t.match(page.body.body, /"id":"old"/, 'the read gets its page');
  t.equal(page.body.compressible, false, 'not compressed for a single read');
  t.equal(cache.pageHit('2', 'k'), undefined, 'and not kept under the new revision');
});

t.test('pages past their bound of bytes: the least recently read are forgotten first', async (t) => {
  const { cache } = counted();
  const size = Math.floor(DEFAULT_PAGE_CACHE_BYTES / 4) - 2000;
  const page = (id: string) => cache.page('1', id, 1, () => Promise.resolve({ records: [record(id, 'x'.repeat(size))] }));
  const pages = [await page('p0'), await page('p1'), await page('p2'), await page('p3')];
  t.equal(cache.pageHit('1', 'p0'), pages[0], 'four pages of a quarter of the bound each are kept');
  await page('p4');
  t.ok(cache.pageHit('1', 'p0'), 'the one read last is kept');
  t.equal(cache.pageHit('1', 'p1'), undefined, 'the least recently read is forgotten');
  t.ok(cache.pageHit('1', 'p2') && cache.pageHit('1', 'p3') && cache.pageHit('1', 'p4'), 'the others are kept');
  const huge = await cache.page('1', 'huge', 1, () => Promise.resolve({ records: [record('huge', 'x'.repeat(DEFAULT_PAGE_CACHE_BYTES))] }));
  t.equal(huge.body.bytes.length > DEFAULT_PAGE_CACHE_BYTES, true);
  t.equal(cache.pageHit('1', 'huge'), undefined, 'a page larger than the bound is never kept');
  t.ok(cache.pageHit('1', 'p4'), 'nor does it push out the others');
});

t.test(
  'the bound of bytes holds exactly (a page counts its body, key and entry): a page of its size is kept, pages that fill it are all kept',
  async (t) => {
    const one = catalogueBody([record('p0')], 1).bytes.length + 'p0'.length + PAGE_ENTRY_BYTES;
    const page = (cache: CatalogueCache, id: string) => cache.page('1', id, 1, () => Promise.resolve({ records: [record(id)] }));
    const exact = new CatalogueCache(undefined, undefined, { maxPageBytes: one });
    await page(exact, 'p0');
    t.ok(exact.pageHit('1', 'p0'), 'a page of exactly the bound is kept');
    const under = new CatalogueCache(undefined, undefined, { maxPageBytes: one - 1 });
    await page(under, 'p0');
    t.equal(under.pageHit('1', 'p0'), undefined, 'one byte over it is not');

    const two = new CatalogueCache(undefined, undefined, { maxPageBytes: 2 * one });
    const { release, after } = gate();
    const slow = () => two.page('1', 'p0', 1, () => after({ records: [record('p0')] }));
    const both = Promise.all([slow(), slow()]);
    release();
    await both;
    await page(two, 'p1');
    t.ok(two.pageHit('1', 'p0') && two.pageHit('1', 'p1'), 'a page built twice at once counts once: two pages fill the bound and stay');
    await page(two, 'p2');
    t.equal(two.pageHit('1', 'p0'), undefined, 'a third forgets the least recently read');
  },
);

t.test('pages that find nothing count their entries: a bound holds a bounded number of them', async (t) => {
  const cache = new CatalogueCache(undefined, undefined, { maxPageBytes: 10 * PAGE_ENTRY_BYTES });
  const keys = Array.from({ length: 30 }, (_, i) => JSON.stringify(['owner:all', 1, `nothing ${i}`]));
  for (const key of keys) await cache.page('1', key, 1, () => Promise.resolve({ records: [] }));
  const kept = keys.filter((key) => cache.pageHit('1', key));
  t.ok(kept.length > 0 && kept.length < 10, `${kept.length} of 30 empty pages kept`);
  t.same(kept, keys.slice(-kept.length), 'the most recently read');
});

t.test("a kept page's compressed copies are counted under the view label `page`", async (t) => {
  const encoded: string[] = [];
  const cache = new CatalogueCache(undefined, (view, coding) => encoded.push(`${viewLabel(view)} ${coding}`));
  const page = await cache.page('1', JSON.stringify(['canvas:c:machine:m', 1, 'web']), 1, () =>
    Promise.resolve({ records: [record('a')] }),
  );
  await page.body.encoded('br');
  await page.body.encoded('br');
  t.same(encoded, ['page br'], 'once per coding, never a key holding a canvas or machine ID');
});

t.test('a small page is kept too; a bound of 0 keeps none, and offers none compressed', async (t) => {
  const small = new CatalogueCache();
  const kept = await small.page('1', 'k', 1, () => Promise.resolve({ records: [record('a', 'small')] }));
  t.equal(small.pageHit('1', 'k'), kept, 'a page under 1 KiB is kept');
  t.equal(kept.body.compressible, false, 'and sent as it is');
  const none = new CatalogueCache(undefined, undefined, { maxPageBytes: 0 });
  let selected = 0;
  const select = () => {
    selected++;
    return Promise.resolve({ records: [record('a')] });
  };
  const first = await none.page('1', 'k', 1, select);
  t.equal(first.body.compressible, false);
  t.equal(none.pageHit('1', 'k'), undefined);
  await none.page('1', 'k', 1, select);
  t.equal(selected, 2, 'every read reads its page');
});

t.test("the tag an ETag of any coding names: a coding's suffix taken off the end, nothing else", (t) => {
  const body = catalogueBody([record('a')], 1);
  const tag = body.etag.slice(1, -1);
  t.equal(uncodedTag(body.etagFor('br').slice(1, -1)), tag);
  t.equal(uncodedTag(body.etagFor('gzip').slice(1, -1)), tag);
  t.equal(uncodedTag(tag), tag, 'an identity tag is itself');
  t.equal(uncodedTag('-brabc'), '-brabc', 'a suffix only counts at the end');
  t.equal(uncodedTag('abc-br-gz'), 'abc-br', 'one suffix is taken off');
  t.end();
});

t.test('If-None-Match: lists, weak tags and `*`, and nothing else', (t) => {
  const etag = '"abc"';
  t.ok(etagMatches('"abc"', etag));
  t.ok(etagMatches('"x", "abc"', etag), 'one of a list');
  t.ok(etagMatches('W/"abc"', etag), 'a weak tag compares by its value');
  t.ok(etagMatches(' * ', etag), '`*` with spaces around it');
  t.notOk(etagMatches(undefined, etag));
  t.notOk(etagMatches('', etag));
  t.notOk(etagMatches('"abc-br"', etag), "another coding's tag");
  t.notOk(etagMatches('"aW/bc"', etag), '`W/` counts only as a prefix');
  t.notOk(etagMatches('abc', etag), 'an unquoted value');
  t.end();
});

t.test('a per-request body is built as a cached one is, but kept by nobody and never compressed', async (t) => {
  const { cache, rebuilt } = counted();
  const records = [record('a'), record('b')];
  const cached = await cache.get('1', 'all', 1, () => Promise.resolve(records));
  const page = catalogueBody(records, 1, undefined, { kept: false });
  t.equal(page.body, cached.body, 'the same bytes for the same records');
  t.equal(page.etag, cached.etag, 'and the same ETag');
  t.equal(page.compressible, false, 'not compressed for one read');
  t.equal(cache.hit('1', 'all', 1), cached, 'the cache is untouched');
  t.same(rebuilt, ['all'], 'and counted no rebuild for it');
});

t.test("a view's metric label is its kind, never a provider or machine ID", (t) => {
  t.equal(viewLabel('all'), 'all');
  t.equal(viewLabel('provider:agentlet-a'), 'provider');
  t.equal(viewLabel('machine:m-0001'), 'machine');
  t.end();
});

t.test('a body is exactly the JSON of its records in the representation asked for, with what goes beside them', (t) => {
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const anyRecord = fc.oneof(
    fc
      .record({ id: fc.constantFrom('a', 'b-1', 'c'), description: text, instructions: text })
      .map((r): StoredResource => ({ schemaVersion: 1, name: r.id, provider: 'huabu', ...r })),
    fc
      .record({
        id: fc.constantFrom('s', 't-2'),
        description: text,
        body: text,
        userContent: text,
        provider: fc.constantFrom('huabu', 'm-1'),
      })
      .map((r): StoredResource => ({
        schemaVersion: 2,
        id: r.id,
        name: r.id,
        provider: r.provider,
        sourceContent: `---\ndescription: ${JSON.stringify(r.description)}\n---\n${r.body}`,
        userContent: r.userContent,
      })),
  );
  fc.assert(
    fc.property(
      fc.array(anyRecord, { maxLength: 6 }),
      fc.boolean(),
      fc.constantFrom<1 | 2>(1, 2),
      fc.option(fc.array(text)),
      (records, frozen, as, ids) => {
        const list = frozen ? records.map((r) => Object.freeze(r)) : records;
        const besides = ids === null ? undefined : () => ({ manageableResourceIds: ids });
        const expected = JSON.stringify({ resources: list.map((r) => represent(r, as)), ...besides?.() });
        for (const round of [1, 2]) {
          const body = catalogueBody(list, as, besides, { kept: false });
          if (body.body !== expected) throw new Error(`round ${round}: ${body.body} !== ${expected}`);
          if (!body.bytes.equals(Buffer.from(expected))) throw new Error('bytes differ from the text');
        }
      },
    ),
    { numRuns: 300 },
  );
  t.end();
});

t.test('a stored record is read for its JSON once: a body built again after a write reads only the records it changed', (t) => {
  let reads = 0;
  const readCounted = (id: string): StoredResource => {
    const fields = { schemaVersion: 2 as const, id, name: id, provider: 'm-1', userContent: '' };
    Object.defineProperty(fields, 'sourceContent', {
      enumerable: true,
      get() {
        reads++;
        return `---\ndescription: the ${id} skill\n---\nRun it.`;
      },
    });
    return fields as StoredResource;
  };
  const held = [Object.freeze(readCounted('a')), Object.freeze(readCounted('b'))];
  const first = catalogueBody(held, 1, undefined, { kept: false });
  t.ok(reads > 0, 'the first body reads each record');
  reads = 0;
  const replaced = Object.freeze(readCounted('b'));
  const again = catalogueBody([held[0]!, replaced], 1, undefined, { kept: false });
  const readsOfOne = reads;
  reads = 0;
  catalogueBody([replaced], 1, undefined, { kept: false });
  t.equal(reads, 0, 'a record already serialized is not read again');
  catalogueBody([held[0]!], 2, undefined, { kept: false });
  t.ok(reads > 0, 'each representation is its own');
  t.equal(again.body, first.body, 'the same content gives the same body');
  t.ok(readsOfOne > 0, 'the replaced record is read');
  reads = 0;
  const unfrozen = readCounted('c');
  catalogueBody([unfrozen], 1, undefined, { kept: false });
  const once = reads;
  catalogueBody([unfrozen], 1, undefined, { kept: false });
  t.equal(reads, once * 2, 'a record that is not frozen may change, so it is read every time');
  t.end();
});
