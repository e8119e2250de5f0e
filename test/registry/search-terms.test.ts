// How a query becomes terms (src/registry/search.ts): its bounds, which words are prefixes and which are
// fuzzy, the canonical text a cursor is bound to, and the one-edit neighbours PostgreSQL looks up.
import t from 'tap';
import { AppError } from '../../src/errors.js';
import {
  FUZZY_MAX_LETTERS,
  FUZZY_MIN_LETTERS,
  MAX_WORD_CHARS,
  oneEditWords,
  parseSearch,
  PREFIX_MIN_LETTERS,
  SEARCH_MAX_CHARS,
  SEARCH_MAX_TERMS,
  searchKey,
  searchTextsOf,
} from '../../src/registry/search.js';

const refusal = (q: string) => {
  try {
    parseSearch(q);
  } catch (err) {
    return err instanceof AppError ? [err.code, err.details?.field, err.message] : ['not an AppError'];
  }
  return 'accepted';
};

t.test('a query of SEARCH_MAX_CHARS characters and SEARCH_MAX_TERMS words is accepted; one more of either is 400', (t) => {
  t.equal(refusal('a'.repeat(SEARCH_MAX_CHARS)), 'accepted', `${SEARCH_MAX_CHARS} characters`);
  t.same(
    refusal('a'.repeat(SEARCH_MAX_CHARS + 1)),
    ['validation_failed', '/q', `A search may hold at most ${SEARCH_MAX_CHARS} characters.`],
    `${SEARCH_MAX_CHARS + 1} characters`,
  );
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
  t.equal(refusal(words(SEARCH_MAX_TERMS)), 'accepted', `${SEARCH_MAX_TERMS} words`);
  t.same(
    refusal(words(SEARCH_MAX_TERMS + 1)),
    ['validation_failed', '/q', `A search may hold at most ${SEARCH_MAX_TERMS} words.`],
    `${SEARCH_MAX_TERMS + 1} words`,
  );
  t.equal(
    parseSearch(
      Array(SEARCH_MAX_TERMS + 4)
        .fill('plan')
        .join(' '),
    ).length,
    1,
    'a repeated word counts once',
  );
  t.same(parseSearch(' -- '), [], 'no word: no terms');
  t.end();
});

t.test('only the last word is a prefix, from PREFIX_MIN_LETTERS letters', (t) => {
  const prefixes = (q: string) => parseSearch(q).map((term) => term.prefix);
  t.same(prefixes('code review'), [false, true]);
  t.same(prefixes(`a ${'b'.repeat(PREFIX_MIN_LETTERS)}`), [false, true], `${PREFIX_MIN_LETTERS} letters`);
  t.same(prefixes(`ab ${'b'.repeat(PREFIX_MIN_LETTERS - 1)}`), [false, false], `${PREFIX_MIN_LETTERS - 1} letter`);
  t.same(prefixes('日本'), [true], 'letters, not UTF-16 units');
  t.end();
});

t.test(`a word of ${FUZZY_MIN_LETTERS} to ${FUZZY_MAX_LETTERS} letters is fuzzy`, (t) => {
  const fuzzy = (n: number, letter = 'k') => parseSearch(letter.repeat(n))[0]!.fuzzy;
  t.same(
    [FUZZY_MIN_LETTERS - 1, FUZZY_MIN_LETTERS, FUZZY_MAX_LETTERS, FUZZY_MAX_LETTERS + 1].map((n) => fuzzy(n)),
    [false, true, true, false],
  );
  t.equal(fuzzy(FUZZY_MIN_LETTERS, '𝐀'), true, 'letters outside the BMP count once');
  t.equal(fuzzy(FUZZY_MAX_LETTERS + 1, '𝐀'), false);
  t.end();
});

t.test("a cursor's query text names each word with its prefix and fuzziness, in the query's order", (t) => {
  t.equal(searchKey(parseSearch('Code  REVIEW')), 'code review*~');
  t.equal(searchKey(parseSearch('review code')), 'review~ code*');
  t.equal(searchKey(parseSearch('ab')), 'ab*');
  t.equal(searchKey(parseSearch('a')), 'a');
  t.not(searchKey(parseSearch('plans')), searchKey(parseSearch('plan')));
  t.equal(searchKey([]), '');
  t.end();
});

/** At most one insertion, deletion or substitution between `a` and `b`, counted in code points. */
function oneEditApart(a: string, b: string): boolean {
  const [x, y] = [[...a], [...b]];
  if (Math.abs(x.length - y.length) > 1) return false;
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  const rest = (m: number, n: number) => x.slice(i + m).join('') === y.slice(i + n).join('');
  return rest(1, 1) || rest(1, 0) || rest(0, 1);
}

t.test("a fuzzy word's neighbours: every deletion, and every substitution and insertion of a–z, 0–9 or its own letters", (t) => {
  const okapi = new Set(oneEditWords('okapi'));
  for (const w of ['kapi', 'okap', 'okpi', 'okapo', 'zkapi', '0kapi', 'okapis', 'xokapi', 'ok9api', 'okaapi']) t.ok(okapi.has(w), w);
  t.notOk(okapi.has('okapi'), 'not the word itself');
  t.notOk(okapi.has('okapé'), 'not a letter outside the alphabet');
  t.ok(
    [...okapi].every((w) => oneEditApart('okapi', w)),
    'each one edit away',
  );
  t.equal(okapi.size, 5 + 5 * 35 + 6 * 36 - 5, 'deletions, substitutions and insertions, each once');
  t.ok(new Set(oneEditWords('café')).has('cafée'), "the word's own letters too");
  const long = oneEditWords('x'.repeat(MAX_WORD_CHARS));
  t.ok(long.includes(`y${'x'.repeat(MAX_WORD_CHARS - 1)}`), 'a substitution as long as a word may be');
  t.ok(
    long.every((w) => w.length <= MAX_WORD_CHARS),
    'none longer',
  );
  t.notOk(oneEditWords('a').includes(''), 'never the empty word');
  t.end();
});

t.test("a record's texts by weight, the owner's apart, and none where the owner wrote none", (t) => {
  const v2 = {
    schemaVersion: 2 as const,
    id: 'pdf',
    name: 'PDF tools',
    provider: 'huabu',
    sourceContent: '---\nname: pdf\ndescription: Split and merge PDFs.\n---\nUse qpdf.',
    userContent: '',
  };
  t.same(searchTextsOf(v2), {
    key: 'pdf PDF tools',
    summary: 'Split and merge PDFs.',
    body: v2.sourceContent,
    ownerKey: '',
    ownerBody: '',
  });
  const v1 = { schemaVersion: 1 as const, id: 'grep', name: 'Grep', provider: 'huabu', description: 'Find text.', instructions: 'Run it.' };
  t.same(searchTextsOf(v1), { key: 'grep Grep', summary: 'Find text.', body: 'Run it.', ownerKey: '', ownerBody: '' }, 'record v1');
  const noted = searchTextsOf({ ...v2, displayName: 'Papers', userContent: 'Ask first.' });
  t.same([noted.ownerKey, noted.ownerBody], ['Papers', 'Ask first.']);
  t.end();
});
