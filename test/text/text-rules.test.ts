// The text rules: each pattern and expression built from one list of refused characters, so a schema, the
// domain's checks and the audit trail refuse exactly the same characters.
import t from 'tap';
import * as rules from '../../src/text/text-rules.js';

const chars = [
  ...Array.from({ length: 0xa0 }, (_, i) => String.fromCharCode(i)),
  '\u061c',
  '\u200e',
  '\u2028',
  '\u202e',
  '\u2069',
  'é',
  '😀',
];
const code = (c: string) => `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`;

t.test('text refuses every C0 control and DEL but tab and newline; a line refuses those too', (t) => {
  const safe = new RegExp(rules.SAFE_TEXT_PATTERN, 'u');
  const line = new RegExp(rules.SINGLE_LINE_PATTERN, 'u');
  for (const c of chars) {
    const cp = c.codePointAt(0)!;
    const textControl = (cp <= 0x1f && c !== '\t' && c !== '\n') || cp === 0x7f;
    t.equal(safe.test(`a${c}b`), !textControl, `${code(c)} in text`);
    t.equal(rules.TEXT_CONTROL_CHARACTER.test(c), textControl, `${code(c)}: the text expression agrees with the pattern`);
    const lineControl = cp <= 0x1f || cp === 0x7f;
    t.equal(line.test(`a${c}b`), !lineControl, `${code(c)} in a line`);
    t.equal(rules.LINE_CONTROL_CHARACTER.test(c), lineControl, `${code(c)}: the line expression agrees with the pattern`);
    const printable = new RegExp(rules.PRINTABLE_LINE_PATTERN, 'u');
    t.equal(printable.test(`a${c}b`), !(lineControl || (cp >= 0x80 && cp <= 0x9f)), `${code(c)} in a printable line`);
  }
  t.end();
});

t.test('blank and edge rules', (t) => {
  const safe = new RegExp(rules.SAFE_TEXT_PATTERN, 'u');
  t.notOk(safe.test(' \n\t'), 'text must hold something visible');
  t.ok(safe.test(' a\n'), 'surrounding space is text');
  const trimmed = new RegExp(rules.TRIMMED_TEXT_PATTERN, 'u');
  t.notOk(trimmed.test(' a'));
  t.notOk(trimmed.test('a\n'));
  t.ok(trimmed.test('a\nb'));
  t.ok(trimmed.test(''), 'empty: a minLength decides');
  t.ok(new RegExp(rules.OPTIONAL_TEXT_PATTERN, 'u').test(''));
  t.notOk(new RegExp(rules.VISIBLE_LINE_PATTERN, 'u').test('   '));
  t.notOk(new RegExp(rules.TRIMMED_LINE_PATTERN, 'u').test(' a'));
  t.end();
});

t.test('what a log or audit field may not hold as it is', (t) => {
  const unsafe = (s: string) => s.replace(rules.UNSAFE_FOR_LOGS, '?');
  t.equal(unsafe('a\u001b[31mb\u009bc\u202ed\u2028e\ud800f'), 'a?[31mb?c?d?e?f');
  t.equal(unsafe('é😀\t'), 'é😀?', 'a pair is kept, a tab is a control');
  t.end();
});
