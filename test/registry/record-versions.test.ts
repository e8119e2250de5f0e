// The conversions between record v1 and v2 as pure functions, and the capability projection over records
// of both versions (labels `displayName ?? name`, duplicate names across versions).
import t from 'tap';
import { buildSnapshot } from '../../src/capabilities/snapshot.js';
import { applyCustomization, toV1, toV2, v2ToV1, withOwnerFields } from '../../src/registry/resource-versions.js';
import { carryOwnerFields } from '../../src/registry/ownership.js';
import type { AgentResource, AgentResourceV2 } from '../../src/schemas/resource.js';

const v1: AgentResource = {
  schemaVersion: 1,
  id: 'pdf',
  name: ' PDF ',
  provider: 'mac-a',
  description: ' Split PDFs. ',
  instructions: 'Run it.\n',
};
const v2: AgentResourceV2 = {
  schemaVersion: 2,
  id: 'web',
  name: 'Web',
  provider: 'huabu',
  sourceContent: '\n# Web search\nAsk the host.',
  userContent: '',
};

t.test("v1 → v2 is upstream's migrateLegacyResource; v1 reads back exactly", (t) => {
  t.same(toV2(v1), {
    schemaVersion: 2,
    id: 'pdf',
    name: 'PDF',
    provider: 'mac-a',
    sourceContent: 'Split PDFs.\n\nRun it.',
    userContent: '',
  });
  t.same(toV1(v1), v1, 'exact, surrounding space included');
  const custom = withOwnerFields(v1, { displayName: 'Splitter', userContent: 'Ask first.' });
  t.same(toV1(custom), v1, "the owner's fields never change the v1 representation of a v1 record");
  t.same(toV2(custom), {
    schemaVersion: 2,
    id: 'pdf',
    name: 'PDF',
    displayName: 'Splitter',
    provider: 'mac-a',
    sourceContent: 'Split PDFs.\n\nRun it.',
    userContent: 'Ask first.',
  });
  t.same(Object.keys(toV2(custom)), ['schemaVersion', 'id', 'name', 'displayName', 'provider', 'sourceContent', 'userContent']);
  t.end();
});

t.test('v2 → v1: first non-empty line, the whole guidance, owner content under a heading', (t) => {
  t.same(v2ToV1(v2), {
    schemaVersion: 1,
    id: 'web',
    name: 'Web',
    provider: 'huabu',
    description: '# Web search',
    instructions: '\n# Web search\nAsk the host.',
  });
  const owned = v2ToV1({ ...v2, userContent: 'Prefer primary sources.' });
  t.equal(owned.instructions, '\n# Web search\nAsk the host.\n\n## Instructions from the owner\n\nPrefer primary sources.');
  t.equal(toV1(v2).schemaVersion, 1);
  t.end();
});

t.test('v2 → v1 at the bounds: never past v1, never a split surrogate pair, always a pointer to the rest', (t) => {
  const emoji = '😀';
  const big: AgentResourceV2 = { ...v2, sourceContent: `${emoji.repeat(400)}\n${'b'.repeat(99_000)}`, userContent: 'u'.repeat(20_000) };
  const out = v2ToV1(big);
  t.ok(out.description.length <= 512);
  t.ok(out.description.endsWith('…'));
  t.notMatch(out.description, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/, 'no lone high surrogate');
  t.ok(out.instructions.length <= 4000);
  t.match(
    out.instructions,
    /of 119\d\d\d characters of guidance\. Read all of it with GET \$HUABU_RFS_URL\/resources\/web\?schemaVersion=2/,
  );
  const exact: AgentResourceV2 = { ...v2, sourceContent: 'x'.repeat(4000) };
  t.equal(v2ToV1(exact).instructions, 'x'.repeat(4000), 'exactly at the bound: kept whole');
  t.match(v2ToV1({ ...v2, sourceContent: 'x'.repeat(4001) }).instructions, /Shortened/, 'one past: shortened with the note');
  t.end();
});

t.test("the owner's fields: carried over a provider's write, patched, cleared", (t) => {
  const existing = withOwnerFields(v2, { displayName: 'Search', userContent: 'Be brief.' });
  const incoming: AgentResource = { schemaVersion: 1, id: 'web', name: 'Web', provider: 'huabu', description: 'd', instructions: 'i' };
  t.same(carryOwnerFields(existing, incoming), { ...incoming, displayName: 'Search', userContent: 'Be brief.' }, 'kept across versions');
  t.same(carryOwnerFields({ ...existing, provider: 'other' }, incoming), incoming, "never another provider's customization");
  const cleared = applyCustomization(existing, { displayName: null, userContent: '' });
  t.same(cleared, { record: v2, changed: true });
  t.same(applyCustomization(v2, { userContent: '' }).changed, false);
  const v1Cleared = applyCustomization(withOwnerFields(v1, { userContent: 'x' }), { userContent: '' }).record;
  t.same(v1Cleared, v1, 'a v1 record with no customization has no owner keys');
  t.end();
});

t.test('capability projection: labels are displayName ?? name; duplicate names span both versions', (t) => {
  const a = withOwnerFields(v2, { displayName: 'Search', userContent: '' });
  const b: AgentResource = {
    schemaVersion: 1,
    id: 'search',
    name: 'search',
    provider: 'huabu',
    description: 'Old search.',
    instructions: 'Use it.',
  };
  const input = { resources: [a, b], profiles: [], machines: [], requiredResourceIds: [] };
  const snap = buildSnapshot(input);
  t.match(
    snap.components.find((c) => c.id === 'resource:web'),
    { name: 'Search', description: '# Web search' },
  );
  t.same(
    snap.diagnostics.map((d) => [d.code, d.components]),
    [['duplicate_resource_name', ['resource:search', 'resource:web']]],
  );
  const near = buildSnapshot({ ...input, resources: [v2, b] });
  t.same(
    near.diagnostics.map((d) => d.code),
    [],
    'near miss: without the displayName the names differ',
  );
  const vars = buildSnapshot({ ...input, resources: [{ ...v2, userContent: 'Read $NOT_A_VARIABLE.' }] });
  t.same(
    vars.diagnostics.map((d) => d.code),
    ['unknown_variable'],
    "the owner's content is guidance an agent reads too",
  );
  t.end();
});

const skillMd = [
  '---',
  'name: pdf-tools',
  'description: >-',
  '  Split, merge and search PDF files.',
  '  Use when the user hands over a PDF.',
  'license: Apache-2.0',
  'metadata:',
  '  version: "1.2"',
  '---',
  '',
  '# PDF tools',
  '',
  'Run `scripts/split.sh FILE` to split a PDF.',
].join('\n');
const skill: AgentResourceV2 = {
  schemaVersion: 2,
  id: 'pdf-tools',
  name: 'pdf-tools',
  provider: 'huabu',
  sourceContent: skillMd,
  userContent: '',
};

/** True when every code fence opened in `text` is closed again. */
function fencesClosed(text: string): boolean {
  let open: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (!m) continue;
    if (open === undefined) open = m[1];
    else if (m[1]![0] === open[0] && m[1]!.length >= open.length && line.trim() === m[1]) open = undefined;
  }
  return open === undefined;
}

t.test('a skill (front matter first): v1 describes it by its description and gives the body', (t) => {
  const out = v2ToV1(skill);
  t.equal(out.description, 'Split, merge and search PDF files. Use when the user hands over a PDF.');
  t.equal(out.instructions, '# PDF tools\n\nRun `scripts/split.sh FILE` to split a PDF.', 'the body, without the front matter');
  t.same(toV2(skill), skill, 'record v2 keeps the whole SKILL.md');
  const crlf = v2ToV1({ ...skill, sourceContent: skillMd.replace(/\n/g, '\r\n') });
  t.equal(crlf.description, out.description, 'CRLF line ends');
  t.notMatch(crlf.instructions, /^---/);
  const literal = v2ToV1({ ...skill, sourceContent: '---\nname: a\ndescription: |\n  One.\n  Two.\n---\nBody.' });
  t.equal(literal.description, 'One. Two.', 'a multi-line description reads as one line');
  const owned = v2ToV1({ ...skill, userContent: 'Ask before splitting.' });
  t.equal(
    owned.instructions,
    '# PDF tools\n\nRun `scripts/split.sh FILE` to split a PDF.\n\n## Instructions from the owner\n\nAsk before splitting.',
  );
  t.end();
});

t.test('a skill with a front matter that gives no description, or is broken, still never reads as its fence', (t) => {
  const noDescription = v2ToV1({ ...skill, sourceContent: '---\nname: x\n---\n\n# Heading\n\nText.' });
  t.equal(noDescription.description, '# Heading', 'the first line of the body');
  t.equal(noDescription.instructions, '# Heading\n\nText.');
  const broken = v2ToV1({ ...skill, sourceContent: '---\nname: [unclosed\n---\nBody line.' });
  t.equal(broken.description, 'Body line.');
  const notFrontMatter = v2ToV1({ ...skill, sourceContent: '---\n\nA thematic break, then text.' });
  t.equal(notFrontMatter.description, 'A thematic break, then text.', 'an unclosed fence is not front matter; the rule line is no summary');
  const onlyFrontMatter = v2ToV1({ ...skill, sourceContent: '---\nname: x\ndescription: Just this.\n---' });
  t.equal(onlyFrontMatter.description, 'Just this.');
  t.equal(onlyFrontMatter.instructions, 'Just this.', 'no body: the description is the guidance');
  t.end();
});

t.test("a skill's long description is cut at a word to 512", (t) => {
  const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
  const out = v2ToV1({ ...skill, sourceContent: `---\nname: x\ndescription: ${words}\n---\nBody.` });
  t.ok(out.description.length <= 512, `${out.description.length} <= 512`);
  t.ok(out.description.endsWith('…'));
  const kept = out.description.slice(0, -1);
  t.ok(words.startsWith(kept) && words[kept.length] === ' ', 'ends at a whole word');
  t.end();
});

t.test("a skill's long body is cut at a block boundary, never inside a code fence, with the pointer to v2", (t) => {
  const blocks: string[] = [];
  for (let i = 0; blocks.join('\n\n').length < 9000; i++) {
    blocks.push(
      i % 3 === 1
        ? ['```python', ...Array.from({ length: 12 }, (_, j) => `x${j} = call(${i})`), '', 'y = 2', '```'].join('\n')
        : `Paragraph ${i}. ${'text '.repeat(30).trim()}`,
    );
  }
  const body = blocks.join('\n\n');
  for (const extra of [0, 37, 211, 402, 777]) {
    const source = `---\nname: x\ndescription: Long one.\n---\n\n${'p'.repeat(extra)}\n\n${body}`;
    const out = v2ToV1({ ...skill, sourceContent: source });
    t.ok(out.instructions.length <= 4000, `${out.instructions.length} <= 4000`);
    const [kept, note] = out.instructions.split('\n\n[Shortened for schemaVersion 1');
    t.ok(note, 'ends with the note');
    t.match(out.instructions, /GET \$HUABU_RFS_URL\/resources\/pdf-tools\?schemaVersion=2/);
    t.ok(fencesClosed(kept!), `no open code fence (prefix ${extra})`);
    const whole = `${'p'.repeat(extra)}\n\n${body}`.trim();
    t.ok(whole.startsWith(kept!), 'a prefix of the body');
    const next = whole.slice(kept!.length);
    t.match(next, /^\n\n/, 'cut where a block ends');
    t.ok(kept!.length > 2500, `most of the room used (${kept!.length})`);
  }
  const oneHugeFence = v2ToV1({ ...skill, sourceContent: `---\nname: x\ndescription: d\n---\n\`\`\`\n${'line\n'.repeat(2000)}\`\`\`` });
  t.ok(oneHugeFence.instructions.length <= 4000);
  t.ok(fencesClosed(oneHugeFence.instructions.split('\n\n[Shortened')[0]!), 'a block larger than the room is closed where it is cut');
  t.end();
});

t.test("a machine's skill names its folder under $AGENT_RESOURCE_DIR in the v1 view", (t) => {
  const out = v2ToV1({ ...skill, provider: 'mac-a' });
  t.match(out.instructions, /^This skill's files are in \$AGENT_RESOURCE_DIR\/skills\/pdf-tools\/ on the machine mac-a/);
  t.match(out.instructions, /# PDF tools\n\nRun `scripts\/split.sh FILE` to split a PDF\.$/);
  t.notMatch(v2ToV1(skill).instructions, /AGENT_RESOURCE_DIR/, "the host's skills live on no machine");
  t.notMatch(
    v2ToV1({ ...v2, provider: 'mac-a' }).instructions,
    /AGENT_RESOURCE_DIR\/skills/,
    'a machine record that is no skill names no folder',
  );
  t.end();
});

t.test('a record written as v1 reads back as written, front matter or not', (t) => {
  const written: AgentResource = { schemaVersion: 1, id: 'pdf', name: 'PDF', provider: 'mac-a', description: '---', instructions: skillMd };
  t.same(toV1(written), written);
  t.end();
});
