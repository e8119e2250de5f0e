// The storage contract of pages and search (src/registry/store.ts `findResources`), run against each store
// (test/storage/contract-search.test.ts: JSON files; test/postgres/storage-contract-search.test.ts:
// PostgreSQL), so both rank a fixed query set over real public skills (test/fixtures/skill-collections) the
// same, and a walk through the pages under concurrent writes yields what docs/decisions/search-and-pages.md
// promises.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { Test } from 'tap';
import { AppError } from '../../src/errors.js';
import { CataloguePages } from '../../src/registry/catalogue-pages.js';
import { parseSearch } from '../../src/registry/search.js';
import type { RegistryStore } from '../../src/registry/store.js';
import type { StoredResource } from '../../src/schemas/resource.js';

const COLLECTIONS = path.resolve('test/fixtures/skill-collections');
/** Which provider holds each collection's skills: the host, and two machines. */
const PROVIDER_OF: Record<string, string> = {
  'anthropics-skills': 'huabu',
  'obra-superpowers': 'machine-a',
  'vercel-labs-agent-skills': 'machine-b',
};

/** Every real skill of the fixtures as the record v2 a machine publishes (SKILL.md as its source content). */
export function realSkills(): StoredResource[] {
  return Object.entries(PROVIDER_OF).flatMap(([collection, provider]) =>
    readdirSync(path.join(COLLECTIONS, collection), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => ({
        schemaVersion: 2 as const,
        id: d.name,
        name: d.name,
        provider,
        sourceContent: readFileSync(path.join(COLLECTIONS, collection, d.name, 'SKILL.md'), 'utf8')
          .trim()
          .slice(0, 100_000),
        userContent: '',
      })),
  );
}

/**
 * The fixed query set and the top results every store must answer, best first (ties by provider, then
 * ID). Words in the ID or name rank first; a misspelt word of five letters or more still finds its skill;
 * the last word is a prefix.
 */
export const QUERY_SET: readonly { q: string; top: string[] }[] = [
  {
    q: 'react',
    top: ['react-best-practices', 'react-native-skills', 'react-view-transitions', 'web-artifacts-builder', 'composition-patterns'],
  },
  { q: 'debugging', top: ['systematic-debugging', 'webapp-testing'] },
  { q: 'code review', top: ['receiving-code-review', 'requesting-code-review', 'react-best-practices', 'web-design-guidelines'] },
  { q: 'vercel deploy', top: ['deploy-to-vercel', 'vercel-cli-with-tokens'] },
  { q: 'worktree', top: ['using-git-worktrees'] },
  { q: 'brainstormng', top: ['brainstorming'] },
  { q: 'systmatic', top: ['systematic-debugging'] },
  { q: 'gif', top: ['slack-gif-creator'] },
  { q: 'test driven', top: ['test-driven-development', 'subagent-driven-development', 'systematic-debugging'] },
  { q: 'frontend design', top: ['frontend-design', 'web-artifacts-builder', 'brainstorming', 'using-superpowers'] },
  { q: 'mcp server', top: ['mcp-builder', 'claude-api', 'brainstorming'] },
  { q: 'plan', top: ['executing-plans', 'writing-plans'] },
  { q: 'skill', top: ['skill-creator', 'writing-skills', 'react-native-skills'] },
  { q: 'tokens', top: ['vercel-cli-with-tokens', 'claude-api'] },
  { q: 'brand colors', top: ['brand-guidelines', 'frontend-design'] },
];

const ids = (found: readonly { record: StoredResource }[]) => found.map((f) => f.record.id);

/** The whole ranked answer of `q` over `providers` (every provider when absent). */
async function ranked(s: RegistryStore, q: string, providers?: string[]) {
  return s.findResources({ terms: parseSearch(q), limit: 500, ...(providers ? { providers } : {}) });
}

export interface SearchContractTarget {
  /** An empty store (closed by the contract in teardown). */
  fresh(t: Test): Promise<RegistryStore>;
  /** fast-check runs of the page-walk properties (PostgreSQL runs fewer: each run is a fresh table). */
  runs: number;
  /** Whether a failing walk is shrunk to its smallest form (cheap on the JSON store only). */
  shrink: boolean;
}

export function runSearchContract(t: Test, name: string, target: SearchContractTarget): void {
  const open = async (t: Test) => {
    const store = await target.fresh(t);
    t.teardown(() => store.close());
    return store;
  };
  const pagesOf = (s: RegistryStore) => new CataloguePages(s, 'contract-secret-contract-secret-0');

  t.test(`${name}: pages walk (provider, id) within the scope, the scope applied first`, async (t) => {
    const s = await open(t);
    for (const r of realSkills()) await s.putResource(r);
    const all = realSkills().sort((a, b) => (a.provider + '\0' + a.id < b.provider + '\0' + b.id ? -1 : 1));
    const walk = async (providers?: string[]) => {
      const out: string[] = [];
      let after: { provider: string; id: string } | undefined;
      for (;;) {
        const page = await s.findResources({ limit: 4, ...(providers ? { providers } : {}), ...(after ? { after } : {}) });
        out.push(...ids(page));
        if (page.length < 4) return out;
        after = { provider: page.at(-1)!.record.provider, id: page.at(-1)!.record.id };
      }
    };
    t.same(await walk(), ids(all.map((record) => ({ record }))), 'every record once, in (provider, id) order');
    t.same(
      await walk(['machine-a', 'huabu']),
      all.filter((r) => r.provider !== 'machine-b').map((r) => r.id),
      "the host's and one machine's, nothing of the other machine",
    );
    t.same(await walk(['nobody']), [], 'an empty scope finds nothing');
  });

  t.test(`${name}: the fixed query set over real skills ranks the same top results`, async (t) => {
    const s = await open(t);
    for (const r of realSkills()) await s.putResource(r);
    for (const { q, top } of QUERY_SET) t.same(ids(await ranked(s, q)).slice(0, top.length), top, q);
  });

  t.test(`${name}: the scope applies before the search; the owner's fields are searched and weigh as theirs`, async (t) => {
    const s = await open(t);
    for (const r of realSkills()) await s.putResource(r);
    t.same(
      ids(await ranked(s, 'vercel', ['huabu', 'machine-a'])).filter(
        (id) => realSkills().find((r) => r.id === id)!.provider === 'machine-b',
      ),
      [],
      'no record of another machine, however well it matches',
    );
    t.same(ids(await ranked(s, 'quokka')), [], 'a word no record holds');
    await s.customizeResource('brainstorming', { displayName: 'Quokka ideas' });
    t.same(ids(await ranked(s, 'quokka')), ['brainstorming'], 'the display name, kept up to date by the customization');
    await s.customizeResource('webapp-testing', { userContent: 'Ask the quokka first.' });
    t.same(
      (await ranked(s, 'quokka')).map((f) => [f.record.id, f.tier]),
      [
        ['brainstorming', 3],
        ['webapp-testing', 1],
      ],
      'the display name weighs more than the owner notes (the body)',
    );
    const brainstorming = realSkills().find((r) => r.id === 'brainstorming')!;
    await s.putResource({ ...brainstorming, sourceContent: 'Replaced by its machine.' } as StoredResource);
    t.same(ids(await ranked(s, 'quokka')), ['brainstorming', 'webapp-testing'], "a provider's replace keeps the owner's words");
    await s.withdrawResource('machine-a', 'brainstorming');
    t.same(ids(await ranked(s, 'quokka')), ['webapp-testing'], 'a withdrawn record is found no more');
  });

  t.test(`${name}: any query text is answered, never an error of the store`, async (t) => {
    const s = await open(t);
    for (const r of realSkills()) await s.putResource(r);
    const nasty = [
      "'; DROP TABLE resources; --",
      '(.*)+[a-',
      'a & b | !c <-> d:* \\',
      'react\u0000\u0007\u001bnative',
      '%_ ** ?? $$ ${x} \'" `',
      'ǅungla 日本語 émoji 🙂',
      'r',
    ];
    for (const q of nasty) {
      const found = await ranked(s, q);
      t.ok(Array.isArray(found), `answered: ${JSON.stringify(q)}`);
    }
    t.same(ids(await ranked(s, 'react\u0000native')).slice(0, 1), ['react-native-skills'], 'control characters separate words');
  });

  t.test(`${name}: a walk under concurrent writes yields every record that existed throughout exactly once`, async (t) => {
    const s = await open(t);
    const pages = pagesOf(s);
    const rec = (provider: string, id: string, word: string, instructions = `Use the ${word} well.`): StoredResource => ({
      schemaVersion: 1,
      id,
      name: `Tool ${id}`,
      provider,
      description: `A ${word} helper.`,
      instructions,
    });
    const providers = ['huabu', 'm1', 'm2'];
    const op = fc.record({
      kind: fc.constantFrom('create', 'replace', 'withdraw'),
      n: fc.nat(40),
      provider: fc.constantFrom(...providers),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.nat(40), { maxLength: 25 }),
        fc.array(fc.array(op, { maxLength: 4 }), { maxLength: 12 }),
        fc.integer({ min: 1, max: 6 }),
        fc.boolean(),
        async (initial, writesPerPage, limit, searched) => {
          // Each run has its own IDs, so the runs share one store without seeing each other.
          const prefix = `r${run++}-`;
          const held = new Map<string, StoredResource>();
          const put = async (r: StoredResource) => {
            await s.putResource(r);
            held.set(r.id, r);
          };
          for (const n of initial) await put(rec(providers[n % 3]!, `${prefix}${n}`, 'walrus'));
          const scope = { binding: `run:${prefix}`, providers: ['huabu', 'm1'] };
          const inScope = (r: StoredResource) => scope.providers.includes(r.provider);
          // A record is its provider's: an ID withdrawn and taken by another provider is another record.
          const key = (r: StoredResource) => `${r.provider}/${r.id}`;
          const throughout = new Set([...held.values()].filter(inScope).map(key));
          const seen: string[] = [];
          let outOfScope = 0;
          let cursor: string | undefined;
          for (let page = 0; ; page++) {
            const answer = await pages.page(scope, { limit, ...(searched ? { q: 'walrus' } : {}), ...(cursor ? { cursor } : {}) });
            seen.push(...answer.records.filter((r) => r.id.startsWith(prefix)).map(key));
            outOfScope += answer.records.filter((r) => !scope.providers.includes(r.provider)).length;
            for (const w of writesPerPage[page] ?? []) {
              const id = `${prefix}${w.n}`;
              const existing = held.get(id);
              if (w.kind === 'withdraw' && existing) {
                await s.withdrawResource(existing.provider, id);
                held.delete(id);
                throughout.delete(key(existing));
              } else if (w.kind === 'replace' && existing) {
                // A replace that changes only words of equal weight keeps the record's tier.
                await put(rec(existing.provider, id, 'walrus', `Use the walrus again (${page}).`));
              } else if (w.kind === 'create' && !existing) {
                await put(rec(w.provider, id, 'walrus'));
              }
            }
            if (!answer.next) break;
            cursor = answer.next;
          }
          const counts = new Map<string, number>();
          for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
          for (const id of throughout) if (counts.get(id) !== 1) return false;
          for (const [, n] of counts) if (n !== 1) return false;
          return outOfScope === 0;
        },
      ),
      {
        numRuns: target.runs,
        examples: [
          // A record seen, withdrawn, and its ID taken by a provider later in the order: a new record.
          [
            [0, 3],
            [
              [
                { kind: 'withdraw', n: 0, provider: 'huabu' },
                { kind: 'create', n: 0, provider: 'm1' },
              ],
            ],
            1,
            false,
          ],
        ],
        // Each PostgreSQL run is a round of writes: a failure is reported as found, not shrunk for minutes.
        endOnFailure: !target.shrink,
      },
    );
    t.pass('every walk held');
  });

  t.test(`${name}: a cursor works only for the view and query it was handed out for`, async (t) => {
    const s = await open(t);
    for (const r of realSkills()) await s.putResource(r);
    const pages = pagesOf(s);
    const view = { binding: 'canvas:c1:machine:machine-a', providers: ['huabu', 'machine-a'] };
    const first = await pages.page(view, { limit: 2 });
    t.equal(first.records.length, 2);
    t.type(first.next, 'string');
    const second = await pages.page(view, { limit: 2, cursor: first.next });
    t.notSame(ids(second.records.map((record) => ({ record }))), ids(first.records.map((record) => ({ record }))));
    const refused = async (p: Promise<unknown>) => {
      try {
        await p;
        return 'accepted';
      } catch (err) {
        return err instanceof AppError ? err.code : 'other';
      }
    };
    t.equal(await refused(pages.page({ ...view, binding: 'canvas:c2:machine:machine-a' }, { cursor: first.next })), 'invalid_cursor');
    t.equal(await refused(pages.page(view, { q: 'react', cursor: first.next })), 'invalid_cursor', 'another query');
    t.equal(await refused(pages.page(view, { cursor: `${first.next}x` })), 'invalid_cursor', 'altered');
    t.equal(await refused(pages.page(view, { cursor: 'e30.AAAA' })), 'invalid_cursor', 'forged');
    t.equal(await refused(pages.page(view, { limit: 0 })), 'validation_failed');
    t.equal(await refused(pages.page(view, { q: 'x'.repeat(10_000) })), 'validation_failed');
  });
}
