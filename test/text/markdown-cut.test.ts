// Shortening Markdown for v1's instructions: within the room, never ending inside a code fence, at a block's
// end whenever that keeps at least half of the room.
import fc from 'fast-check';
import t from 'tap';
import { cutMarkdownAtBlock } from '../../src/text/markdown-cut.js';

/** The fence still open at the end of `text` (CommonMark's rules for backtick and tilde fences). */
function openFence(text: string): string | undefined {
  let open: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) continue;
    if (open === undefined) {
      if (!(m[1]![0] === '`' && m[2]!.includes('`'))) open = m[1];
    } else if (m[1]![0] === open[0] && m[1]!.length >= open.length && m[2]!.trim() === '') open = undefined;
  }
  return open;
}

const paragraph = fc.array(fc.stringMatching(/^[A-Za-z ]{1,60}$/), { minLength: 1, maxLength: 6 }).map((ls) => ls.join('\n'));
const fenced = fc
  .tuple(
    fc.constantFrom('```', '````', '~~~'),
    fc.constantFrom('', 'python', 'sh'),
    fc.array(fc.stringMatching(/^[a-z =()]{0,50}$/), { maxLength: 30 }),
  )
  .map(([marker, lang, body]) => [`${marker}${lang}`, ...body, marker].join('\n'));
const markdown = fc
  .array(fc.oneof(paragraph, fenced, fc.constant('# Heading'), fc.constant('---')), { minLength: 1, maxLength: 40 })
  .map((bs) => bs.join('\n\n'));

t.test('within the room, a prefix of the text, no fence left open, at least half the room kept', (t) => {
  fc.assert(
    fc.property(markdown, fc.integer({ min: 40, max: 1500 }), (text, max) => {
      const out = cutMarkdownAtBlock(text, max);
      if (text.length <= max) return out === text;
      const closedHere = openFence(out) === undefined;
      const marker = /\n(`{3,}|~{3,})$/.exec(out)?.[1];
      const kept = marker !== undefined && !text.startsWith(out) ? out.slice(0, -marker.length - 1) : out;
      return out.length <= max && closedHere && text.startsWith(kept) && out.length >= Math.min(max / 2, max) - 60;
    }),
    { numRuns: 400 },
  );
  t.end();
});

t.test('the cut is where a block ends when one keeps half the room', (t) => {
  const text = ['One paragraph\nof two lines.', '```sh\necho a\n\necho b\n```', 'Last words here.'].join('\n\n');
  t.equal(cutMarkdownAtBlock(text, text.length - 3), 'One paragraph\nof two lines.\n\n```sh\necho a\n\necho b\n```');
  t.equal(cutMarkdownAtBlock(text, 40), 'One paragraph\nof two lines.', 'the blank line inside the fence is no block end');
  t.end();
});

t.test('a block larger than the room: cut at a line, the open fence closed on a line of its own', (t) => {
  const text = `Intro.\n\n~~~~text\n${'a line of code\n'.repeat(50)}~~~~\n\nAfter.`;
  const out = cutMarkdownAtBlock(text, 200);
  t.ok(out.length <= 200);
  t.match(out, /a line of code\n~~~~$/);
  const oneLine = cutMarkdownAtBlock(`\`\`\`\n${'x'.repeat(500)}\n\`\`\``, 100);
  t.equal(oneLine, `\`\`\`\n${'x'.repeat(92)}\n\`\`\``, 'within one long line, fence closed');
  t.equal(cutMarkdownAtBlock('😀'.repeat(100), 51), '😀'.repeat(25), 'never half a surrogate pair');
  t.end();
});
