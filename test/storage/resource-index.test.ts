// The JSON store's search index answers a query exactly as a scan of every record does: the same matches,
// tiers and order, the page cut after the cursor, under any sequence of registrations, replacements and
// withdrawals (the index is maintained record by record, never rebuilt).
import { deepStrictEqual } from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { comparePositions } from '../../src/registry/catalogue-pages.js';
import { FIELD_WEIGHT, parseSearch, searchTextsOf, searchWords, type SearchTerm } from '../../src/registry/search.js';
import type { PagePosition } from '../../src/registry/store.js';
import type { StoredResource } from '../../src/schemas/resource.js';
import { ResourceIndex, type IndexTuning } from '../../src/storage/resource-index.js';
import { turnsUntil } from '../helpers/wait.js';

/** At most one insertion, deletion or substitution between `a` and `b`. */
function oneEditApart(a: string, b: string): boolean {
  const x = [...a];
  const y = [...b];
  if (Math.abs(x.length - y.length) > 1) return false;
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  let j = 0;
  while (j < x.length - i && j < y.length - i && x[x.length - 1 - j] === y[y.length - 1 - j]) j++;
  return x.length - i - j <= 1 && y.length - i - j <= 1;
}

const wordMatches = (term: SearchTerm, word: string) =>
  word === term.word || (term.prefix && word.startsWith(term.word)) || (term.fuzzy && oneEditApart(term.word, word));

/** The reference: every record read, every term looked for in each field, tiers summed, sorted, cut. */
function scan(
  records: Iterable<StoredResource>,
  terms: SearchTerm[],
  providers: string[] | undefined,
  after: PagePosition | undefined,
  limit: number,
) {
  const found: PagePosition[] = [];
  for (const record of records) {
    if (providers && !providers.includes(record.provider)) continue;
    const t = searchTextsOf(record);
    const fields = { key: `${t.key} ${t.ownerKey}`, summary: t.summary, body: `${t.body} ${t.ownerBody}` };
    let tier = 0;
    let all = true;
    for (const term of terms) {
      const weights = Object.entries(fields)
        .filter(([, text]) => searchWords(text).some((w) => wordMatches(term, w)))
        .map(([field]) => FIELD_WEIGHT[field as keyof typeof fields]);
      if (weights.length === 0) all = false;
      else tier += Math.max(...weights);
    }
    if (all) found.push({ provider: record.provider, id: record.id, tier });
  }
  return found
    .sort(comparePositions)
    .filter((p) => !after || comparePositions(p, after) > 0)
    .slice(0, limit);
}

const WORDS = ['plan', 'plans', 'planner', 'skill', 'skills', 'review', 'reviwe', 'deploy', 'token', 'tokens', 'git', 'gif', 'zz'];
const text = fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }).map((w) => w.join(' '));
const recordArb = fc.record({
  id: fc.constantFrom('a-plan', 'b-skill', 'c-review', 'd', 'e', 'f-git', 'g', 'h'),
  provider: fc.constantFrom('huabu', 'm1', 'm2'),
  v2: fc.boolean(),
  name: text,
  body: text,
  displayName: fc.option(text, { nil: undefined }),
  userContent: text,
});
const toRecord = (r: typeof recordArb extends fc.Arbitrary<infer R> ? R : never): StoredResource =>
  r.v2
    ? {
        schemaVersion: 2,
        id: r.id,
        name: r.name || r.id,
        provider: r.provider,
        sourceContent: r.body,
        userContent: r.userContent,
        ...(r.displayName ? { displayName: r.displayName } : {}),
      }
    : { schemaVersion: 1, id: r.id, name: r.name || r.id, provider: r.provider, description: r.userContent, instructions: r.body };

const step = fc.oneof(
  recordArb.map((r) => ({ put: toRecord(r) })),
  fc.constantFrom('a-plan', 'b-skill', 'c-review', 'd', 'e').map((id) => ({ withdraw: id })),
);
const query = fc.array(fc.constantFrom('plan', 'skil', 'review', 'tokens', 'gi', 'deploy zz', 'plans review', 'z', 'nothing'), {
  minLength: 1,
  maxLength: 2,
});

/** A committed change as the store makes it: its records map changed first, then the index told. */
function applyStep(records: Map<string, StoredResource>, index: ResourceIndex, s: typeof step extends fc.Arbitrary<infer S> ? S : never) {
  const previous = records.get('put' in s ? s.put.id : s.withdraw);
  if ('put' in s) {
    records.set(s.put.id, s.put);
    index.put(s.put, previous);
  } else if (previous) {
    records.delete(s.withdraw);
    index.remove(previous);
  }
}

/** The defaults, then sizes that make every posting a byte array and every search one pass, then a mix. */
const TUNINGS: [string, Partial<IndexTuning>][] = [
  ['as configured', {}],
  ['every posting a byte array, every search one pass', { denseMin: 1, sparseQueryMax: 0 }],
  ['postings of 3 or more as byte arrays, searches of up to 2 matches by intersection', { denseMin: 3, sparseQueryMax: 2 }],
];

for (const [name, tuning] of TUNINGS)
  t.test(`a search finds what a scan of every record finds, in the same order, however the records changed (${name})`, (t) => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 30 }),
        query,
        fc.option(fc.subarray(['huabu', 'm1', 'm2'], { minLength: 1 }), { nil: undefined }),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        (steps, words, providers, limit, searchFirst) => {
          const records = new Map<string, StoredResource>();
          const index = new ResourceIndex(records, tuning);
          const terms = parseSearch(words.join(' '));
          // Searching once before the changes builds the index early, so the changes are maintained, not indexed.
          if (searchFirst) index.find({ terms, limit: 1 });
          for (const s of steps) applyStep(records, index, s);
          const expected = scan(records.values(), terms, providers, undefined, 1000);
          // Page by page: each page is the next `limit` of the scan's answer, the last one shorter.
          let after: PagePosition | undefined;
          for (let at = 0; ; at += limit) {
            const page = index.find({ terms, limit, ...(providers ? { providers } : {}), ...(after ? { after } : {}) });
            const positions = page.map(({ record, tier }) => ({ provider: record.provider, id: record.id, tier }));
            deepStrictEqual(positions, expected.slice(at, at + limit));
            if (page.length < limit) break;
            after = positions.at(-1);
          }
        },
      ),
      { numRuns: 300 },
    );
    t.pass('300 runs agreed with the scan');
    t.end();
  });

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** `n` records v2 named `plan <i>`, of one machine. */
const planRecords = (n: number): StoredResource[] =>
  Array.from({ length: n }, (_, i) => ({
    schemaVersion: 2,
    id: `r-${i}`,
    name: `plan ${i}`,
    provider: 'm1',
    sourceContent: 'review',
    userContent: '',
  }));

t.test("a committed change's word work is left to later turns, a few records a turn, and a search does what is left first", async (t) => {
  const records = new Map<string, StoredResource>();
  const index = new ResourceIndex(records, { drainTurnRecords: 10, drainTurnMs: Infinity });
  index.find({ terms: parseSearch('plan'), limit: 1 }); // the word index is built
  for (const record of planRecords(50)) {
    records.set(record.id, record);
    index.put(record, undefined);
  }
  t.equal(index.pendingWords, 50, 'nothing indexed in the turn of the change');
  await turn();
  t.equal(index.pendingWords, 40, 'ten records a turn');
  t.equal(index.find({ terms: parseSearch('plan'), limit: 100 }).length, 50, 'a search first does what is left: all 50 found');
  t.equal(index.pendingWords, 0);
  const gone = records.get('r-3')!;
  records.delete('r-3');
  index.remove(gone);
  t.equal(index.pendingWords, 1, 'a withdrawal too');
  for (let i = 0; i < 3 && index.pendingWords > 0; i++) await turn();
  t.equal(index.pendingWords, 0, 'done in later turns without a search');
  t.equal(index.find({ terms: parseSearch('plan'), limit: 100 }).length, 49);
});

t.test("a turn's word work stops at its time bound, after at least one record", async (t) => {
  const records = new Map<string, StoredResource>();
  const index = new ResourceIndex(records, { drainTurnMs: 0 });
  index.find({ terms: parseSearch('plan'), limit: 1 });
  for (const record of planRecords(5)) {
    records.set(record.id, record);
    index.put(record, undefined);
  }
  await turn();
  t.equal(index.pendingWords, 4, 'one record in a turn whose time is already spent');
  await turn();
  t.equal(index.pendingWords, 3);
});

t.test('a search between turns of pending word work finds what a scan finds (one record a turn)', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(step, fc.nat(2)), { maxLength: 30 }),
      query,
      fc.integer({ min: 1, max: 5 }),
      async (steps, words, limit) => {
        const records = new Map<string, StoredResource>();
        const index = new ResourceIndex(records, { drainTurnRecords: 1, denseMin: 3, sparseQueryMax: 2 });
        const terms = parseSearch(words.join(' '));
        index.find({ terms, limit: 1 });
        for (const [s, turns] of steps) {
          applyStep(records, index, s);
          for (let i = 0; i < turns; i++) await turn();
        }
        const positions = index.find({ terms, limit }).map(({ record, tier }) => ({ provider: record.provider, id: record.id, tier }));
        deepStrictEqual(positions, scan(records.values(), terms, undefined, undefined, limit));
      },
    ),
    { numRuns: 200 },
  );
  t.pass('200 runs agreed with the scan');
});

t.test('current() resolves once the pending word work is done in its turns, other work answered between them', async (t) => {
  const records = new Map<string, StoredResource>();
  const index = new ResourceIndex(records, { drainTurnRecords: 10 });
  await index.current();
  t.pass('nothing pending: resolved at once');
  index.find({ terms: parseSearch('plan'), limit: 1 });
  for (const record of planRecords(50)) {
    records.set(record.id, record);
    index.put(record, undefined);
  }
  const turns = await turnsUntil(index.current());
  t.equal(index.pendingWords, 0, 'all done when it resolves');
  t.ok(turns >= 4, `the event loop turned between the slices (${turns} turns)`);
  t.equal(index.find({ terms: parseSearch('plan'), limit: 100 }).length, 50);
});

t.test('the word index is first built in turns too when a search waits for current()', async (t) => {
  const records = new Map<string, StoredResource>();
  for (const record of planRecords(50)) records.set(record.id, record);
  const index = new ResourceIndex(records, { drainTurnRecords: 10 });
  const built = index.current();
  t.equal(index.pendingWords, 50, 'every record waits for a later turn');
  const turns = await turnsUntil(built);
  t.equal(index.pendingWords, 0);
  t.ok(turns >= 4, `built over several turns (${turns})`);
  t.equal(index.find({ terms: parseSearch('plan'), limit: 100 }).length, 50);
});
