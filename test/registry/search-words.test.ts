// The catalogue's tokenizer: every text's words are what the rule says (src/registry/search.ts), for text
// of any script, for characters NFKC or lower-casing change, and for the skills of the vendored collections.
import fc from 'fast-check';
import t from 'tap';
import { MAX_WORD_CHARS, searchWords } from '../../src/registry/search.js';
import { realSkills } from '../helpers/storage-contract-search.js';

/** The rule as written: NFKC, lower case, split at anything not a letter or a digit, long words left out. */
const byRule = (text: string) =>
  text
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && w.length <= MAX_WORD_CHARS);

// Letters and digits of several scripts, separators, and characters that NFKC or lower-casing turn into
// others: decomposed and fullwidth letters, a ligature, a dotted capital I (lower-cased with a combining
// mark), letters outside the BMP, a lone surrogate, other scripts' digits.
const pieces = [
  'a',
  'Z',
  '7',
  ' ',
  '-',
  '_',
  '.',
  '\n',
  '$',
  '—',
  '’',
  'é',
  'e\u0301',
  'Ａ',
  'ﬁ',
  'İ',
  'ß',
  'Σ',
  'ж',
  '中',
  '日本',
  '𝐀',
  '😀',
  '\ud800',
  '\uffff',
  '\udc00',
  '٣',
  'Ⅻ',
  '\u00a0',
  '\u200b',
  'x'.repeat(MAX_WORD_CHARS - 1),
];

t.test('the words of any text are those the rule gives', (t) => {
  const texts = fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ maxLength: 8 })), {
    maxLength: 40,
  });
  // fast-check names the shortest text whose words differ.
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(texts, (parts) => JSON.stringify(searchWords(parts.join(''))) === JSON.stringify(byRule(parts.join('')))),
      { numRuns: 5000 },
    ),
  );
  t.end();
});

t.test('a word of MAX_WORD_CHARS characters is kept and one longer is left out, wherever it stands', (t) => {
  for (const n of [MAX_WORD_CHARS - 1, MAX_WORD_CHARS, MAX_WORD_CHARS + 1]) {
    const word = 'w'.repeat(n);
    for (const text of [word, `${word} end`, `start ${word}`, `${'𝐀'.repeat(n / 2)}`])
      t.same(searchWords(text), byRule(text), `${n}: ${text.length}`);
  }
  t.end();
});

t.test('the skills of the vendored collections have the words the rule gives', (t) => {
  const skills = realSkills();
  t.ok(skills.length > 20, `${skills.length} skills`);
  for (const skill of skills) {
    const text = skill.schemaVersion === 2 ? skill.sourceContent : skill.instructions;
    t.same(searchWords(text), byRule(text), skill.id);
  }
  t.end();
});
