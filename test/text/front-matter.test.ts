// Front matter as every reader sees it (the Agentlet's scan and import, the registry's views): the block
// between `---` lines at the top of SKILL.md, parsed as YAML, and the Agent Skills format's rules for a
// skill's fields, each breach with its code and whether it refuses the skill or only warns.
import t from 'tap';
import fc from 'fast-check';
import { parseDocument } from 'yaml';
import {
  checkSkillFrontMatter,
  FRONT_MATTER_BOUNDS,
  frontMatterYaml,
  keepParsedFrontMatter,
  parseFrontMatter,
  readFrontMatter,
  SKILL_FRONT_MATTER_ERRORS,
  SKILL_FRONT_MATTER_WARNINGS,
  splitFrontMatter,
} from '../../src/text/front-matter.js';

const codes = (text: string, folder?: string) => checkSkillFrontMatter(text, folder).issues.map((i) => `${i.severity}:${i.code}`);

t.test('splitFrontMatter: the mapping and the body after the closing fence', (t) => {
  t.same(splitFrontMatter('---\nname: pdf\ndescription: >\n  Folded\n  text\n---\n# PDF\n\nBody.\n'), {
    data: { name: 'pdf', description: 'Folded text\n' },
    body: '# PDF\n\nBody.\n',
  });
  t.same(splitFrontMatter('\uFEFF---\r\nname: a\r\n---\r\nBody'), { data: { name: 'a' }, body: 'Body' }, 'BOM and CRLF');
  t.same(splitFrontMatter('---\nname: a\n---'), { data: { name: 'a' }, body: '' }, 'nothing after the fence');
  t.equal(splitFrontMatter('# Title\n---\nname: a\n---\n'), undefined, 'not at the top');
  t.equal(splitFrontMatter('---\nname: a\nno closing fence\n'), undefined, 'no closing fence');
  t.equal(splitFrontMatter('---\nname: a\nname: b\n---\n'), undefined, 'duplicate keys');
  t.equal(splitFrontMatter('---\n- a\n- b\n---\n'), undefined, 'a list, not a mapping');
  t.equal(splitFrontMatter('---\n---\nBody'), undefined, 'an empty block is no mapping');
  t.equal(splitFrontMatter('---\na: &x [1]\nb: [*x,*x,*x,*x,*x,*x,*x,*x,*x,*x,*x]\n---\n'), undefined, 'more than 10 aliases');
  t.end();
});

t.test('readFrontMatter says why there is none, with the line of a YAML error in the file', (t) => {
  t.match(readFrontMatter('# Title\n'), { ok: false, problem: 'missing', message: /no YAML front matter/ });
  t.match(readFrontMatter('---\nname: a\ndescription: Use when: it breaks\n---\n'), {
    ok: false,
    problem: 'invalid',
    message: /not valid YAML \(line 3/,
  });
  t.end();
});

t.test('a skill that follows the format has no issue', (t) => {
  const text =
    '---\nname: pdf-tools\ndescription: Reads PDFs.\nlicense: Apache-2.0\ncompatibility: Needs python3\nmetadata:\n  author: someone\n  version: "1.0"\nallowed-tools: Bash(git:*) Read\n---\nBody\n';
  t.same(checkSkillFrontMatter(text, 'pdf-tools'), {
    name: 'pdf-tools',
    description: 'Reads PDFs.',
    data: {
      name: 'pdf-tools',
      description: 'Reads PDFs.',
      license: 'Apache-2.0',
      compatibility: 'Needs python3',
      metadata: { author: 'someone', version: '1.0' },
      'allowed-tools': 'Bash(git:*) Read',
    },
    issues: [],
  });
  t.end();
});

t.test('errors refuse the skill: no front matter, invalid YAML, no name, no description', (t) => {
  t.same(codes('# Title\n'), ['error:skill_front_matter_missing']);
  t.same(codes('---\nname: [a\n---\n'), ['error:skill_front_matter_invalid']);
  t.same(codes('---\njust text\n---\n'), ['error:skill_front_matter_invalid']);
  t.same(codes('---\ndescription: d\n---\n'), ['error:skill_name_missing']);
  t.same(codes('---\nname: 12\ndescription: d\n---\n'), ['error:skill_name_missing'], 'a number is no name');
  t.same(codes('---\nname: a\ndescription: "  "\n---\n'), ['error:skill_description_missing']);
  const refused = checkSkillFrontMatter('---\nname: a\n---\n');
  t.equal(refused.name, undefined, 'no name is given back for a refused skill');
  t.match(refused.issues[0]!.message, /no description/);
  t.end();
});

t.test('warnings: the format bounds real public skills often depart from', (t) => {
  t.same(codes('---\nname: pdf\ndescription: d\n---\n', 'pdf-tools'), ['warning:skill_name_mismatch']);
  t.same(codes('---\nname: PDF Tools\ndescription: d\n---\n'), ['warning:skill_name_format']);
  for (const bad of ['-pdf', 'pdf-', 'pdf--tools', 'pdf_tools', 'a'.repeat(65)])
    t.same(codes(`---\nname: ${bad}\ndescription: d\n---\n`), ['warning:skill_name_format'], bad);
  t.same(codes(`---\nname: ${'a'.repeat(64)}\ndescription: d\n---\n`), [], '64 characters is the bound');
  t.same(codes(`---\nname: a\ndescription: ${'d'.repeat(1024)}\n---\n`), []);
  t.same(codes(`---\nname: a\ndescription: ${'d'.repeat(1025)}\n---\n`), ['warning:skill_description_too_long']);
  t.same(codes('---\nname: a\ndescription: d\nlicense: 2\n---\n'), ['warning:skill_field_invalid']);
  t.same(codes(`---\nname: a\ndescription: d\ncompatibility: ${'c'.repeat(501)}\n---\n`), ['warning:skill_field_invalid']);
  t.same(codes(`---\nname: a\ndescription: d\ncompatibility: ${'c'.repeat(500)}\n---\n`), []);
  t.same(codes('---\nname: a\ndescription: d\nmetadata:\n  version: 1\n---\n'), ['warning:skill_field_invalid']);
  t.same(codes('---\nname: a\ndescription: d\nmetadata: [a]\n---\n'), ['warning:skill_field_invalid']);
  t.same(codes('---\nname: a\ndescription: d\nallowed-tools: [Read, Bash]\n---\n'), ['warning:skill_field_invalid']);
  t.same(codes('---\nname: a\ndescription: d\nversion: 1.0\nauthor: me\n---\n'), ['warning:skill_field_unknown']);
  const warned = checkSkillFrontMatter('---\nname: My Skill\ndescription: d\n---\n', 'my-skill');
  t.equal(warned.name, 'My Skill', 'a warned skill keeps its name');
  t.match(warned.issues, [{ message: /"My Skill"/ }, { message: /"My Skill" differs from its folder's name "my-skill"/ }]);
  t.end();
});

t.test('front matter of many small items within the character bound is refused by its tokens, before it is parsed', (t) => {
  // One-character flow items: 16,000 characters of them parsed for about 40 ms, on every first read.
  const items = `list: [${Array.from({ length: FRONT_MATTER_BOUNDS.tokens }, () => '1').join(',')}]`;
  t.ok(items.length < FRONT_MATTER_BOUNDS.chars, 'within the character bound');
  const read = readFrontMatter(`---\n${items}\n---\nBody`);
  t.match(read, { ok: false, problem: 'invalid', body: 'Body' });
  t.match(read.ok ? '' : read.message, new RegExp(`more than ${FRONT_MATTER_BOUNDS.tokens} YAML tokens`));
  t.match(
    checkSkillFrontMatter(`---\nname: a\ndescription: d\n${items}\n---\n`).issues,
    [{ code: 'skill_front_matter_invalid', severity: 'error', message: /more than \d+ YAML tokens/ }],
    'a skill with such front matter is refused with that reason',
  );
  const fewer = `list: [${Array.from({ length: FRONT_MATTER_BOUNDS.tokens / 8 }, () => '1').join(', ')}]`;
  t.match(readFrontMatter(`---\n${fewer}\n---\n`), { ok: true }, 'a long list within the bound is read');
  t.end();
});

t.test('a parse made elsewhere (a worker thread) is the one later reads get, frozen, and agrees with a parse here', (t) => {
  const text = `---\nname: kept-${Date.now()}\nmetadata: {a: [1, 2]}\n---\nBody`;
  const yaml = frontMatterYaml(text)!;
  t.equal(yaml, text.slice(4, text.indexOf('\n---\n')));
  // What a worker sends back is a structured clone: plain, unfrozen.
  const fromWorker = structuredClone(parseFrontMatter(yaml));
  t.notOk(Object.isFrozen(fromWorker.ok ? fromWorker.data : null), 'a clone is not frozen');
  keepParsedFrontMatter(yaml, fromWorker);
  const read = readFrontMatter(text);
  t.ok(read.ok && fromWorker.ok && read.data === fromWorker.data, 'the read gets the kept mapping itself');
  t.ok(read.ok && Object.isFrozen(read.data) && Object.isFrozen(read.data.metadata), 'frozen, nested values too');
  t.same(read.ok ? read.data : null, { name: yaml.slice(6, yaml.indexOf('\n')), metadata: { a: [1, 2] } }, 'the mapping parsed');
  t.match(parseFrontMatter('a: 1\na: 2'), { ok: false, message: /DUPLICATE_KEY/ }, 'refusals are the same');
  t.equal(frontMatterYaml('no front matter'), undefined);
  t.equal(frontMatterYaml('---\n---\nBody'), '', 'an empty block is empty YAML');
  t.end();
});

t.test('front matter past its bounds is refused before it is parsed, with the bound named', (t) => {
  const flow = (keys: number) => `{${Array.from({ length: keys }, (_, i) => `k${i}: ${i}`).join(', ')}}`;
  // The shape that once stalled every read: one flow mapping of 11,000 keys, about 140,000 characters.
  const huge = readFrontMatter(`---\n${flow(11_000)}\n---\n# Body\n`);
  t.match(huge, { ok: false, problem: 'invalid', body: '# Body\n' });
  t.match(huge.ok ? '' : huge.message, new RegExp(`longer than ${FRONT_MATTER_BOUNDS.chars} characters`));
  // Short keys fit many to the character bound: the key bound refuses them.
  const many = readFrontMatter(`---\n${flow(FRONT_MATTER_BOUNDS.keys + 1)}\n---\nBody`);
  t.match(many, { ok: false, problem: 'invalid', body: 'Body' });
  t.match(many.ok ? '' : many.message, new RegExp(`more than ${FRONT_MATTER_BOUNDS.keys} keys`));
  const nested = `---\nname: a\nmetadata:\n${Array.from({ length: FRONT_MATTER_BOUNDS.keys }, (_, i) => `  m${i}: v`).join('\n')}\n---\n`;
  t.match(readFrontMatter(nested), { ok: false, message: /more than \d+ keys/ }, 'keys of nested mappings count too');
  t.match(readFrontMatter(`---\n${flow(FRONT_MATTER_BOUNDS.keys)}\n---\n`), { ok: true }, 'at the bound it is read');
  const atSize = `---\nname: a\ndescription: ${'x'.repeat(FRONT_MATTER_BOUNDS.chars - 'name: a\ndescription: '.length)}\n---\n`;
  t.match(readFrontMatter(atSize), { ok: true }, 'exactly the character bound is read');
  t.match(readFrontMatter(atSize.replace('name: a', 'name: ab')), { ok: false, message: /longer than/ }, 'one more is not');
  t.match(
    checkSkillFrontMatter(`---\n${flow(11_000)}\n---\n`).issues,
    [{ code: 'skill_front_matter_invalid', severity: 'error', message: /longer than \d+ characters/ }],
    'a skill with such front matter is refused with that reason',
  );
  t.end();
});

t.test('duplicate keys are refused at the line of the second, in nested mappings too', (t) => {
  t.match(readFrontMatter('---\nname: a\ndescription: d\nname: b\n---\n'), {
    ok: false,
    problem: 'invalid',
    message: 'the front matter is not valid YAML (line 4: DUPLICATE_KEY)',
  });
  t.match(readFrontMatter('---\nname: a\nmetadata: {x: 1, y: 2, x: 3}\n---\n'), { ok: false, message: /line 3: DUPLICATE_KEY/ });
  t.match(readFrontMatter('---\n"1": a\n1: b\n---\n'), { ok: false, message: /DUPLICATE_KEY/ }, 'the same key, quoted or not');
  t.match(readFrontMatter('---\na: {k: 1}\nb: {k: 2}\n---\n'), { ok: true }, 'the same key in two mappings');
  t.end();
});

t.test('one content is parsed once: every read of it shares one frozen mapping', (t) => {
  const text = '---\nname: pdf\ndescription: Reads PDFs.\nmetadata:\n  author: someone\n---\nBody\n';
  const first = readFrontMatter(text);
  const again = readFrontMatter(`${text}`);
  t.ok(first.ok && again.ok && first.data === again.data, 'the same mapping, not a second parse');
  t.ok(first.ok && Object.isFrozen(first.data) && Object.isFrozen(first.data.metadata), 'which no reader can change');
  t.equal(again.ok && again.body, 'Body\n');
  const other = readFrontMatter('---\nname: pdf\ndescription: Reads PDFs.\nmetadata:\n  author: someone\n---\nAnother body\n');
  t.ok(other.ok && first.ok && other.data === first.data && other.body === 'Another body\n', 'the body is not part of the parse');
  t.end();
});

t.test("duplicate keys are found as yaml's own check finds them, whatever the mapping's shape", (t) => {
  // Keys from a small alphabet so duplicates are common; block and flow mappings, nested one level.
  const key = fc.constantFrom('a', 'b', 'c', 'd', 'name', '"a"', "'b'");
  const flow = fc
    .array(fc.tuple(key, fc.constantFrom('1', 'x', '[1, 2]')), { maxLength: 6 })
    .map((pairs) => `{${pairs.map(([k, v]) => `${k}: ${v}`).join(', ')}}`);
  const entry = fc.tuple(key, fc.oneof(fc.constantFrom('1', 'text', '[a, b]'), flow));
  const block = fc.array(entry, { minLength: 1, maxLength: 8 }).map((entries) => entries.map(([k, v]) => `${k}: ${v}`).join('\n'));
  fc.assert(
    fc.property(block, (yaml) => {
      const theirs = parseDocument(yaml, { uniqueKeys: true }).errors.some((e) => e.code === 'DUPLICATE_KEY');
      const ours = readFrontMatter(`---\n${yaml}\n---\n`);
      return theirs === (!ours.ok && /DUPLICATE_KEY/.test(ours.message));
    }),
    { numRuns: 500 },
  );
  t.pass('500 mappings agree');
  t.end();
});

t.test('what each refusal and warning says, for the person fixing the skill', (t) => {
  const messages = (text: string, folder?: string) => checkSkillFrontMatter(text, folder).issues.map((i) => i.message);
  t.same(messages('# Title\n'), ['SKILL.md has no YAML front matter (a block between --- lines at the top)']);
  t.same(messages('---\n- a\n---\n'), ['SKILL.md: the front matter is not a YAML mapping']);
  t.same(messages('---\na: &x [1]\nb: [*x,*x,*x,*x,*x,*x,*x,*x,*x,*x,*x]\n---\n'), [
    'SKILL.md: the front matter expands too many YAML aliases',
  ]);
  t.same(messages('---\ndescription: d\n---\n'), ["SKILL.md's front matter has no name (a non-empty string)"]);
  t.same(messages(`---\nname: a\ndescription: ${'d'.repeat(1025)}\n---\n`), [
    'the description has 1025 characters; the format allows 1024',
  ]);
  t.same(messages('---\nname: a\ndescription: d\nlicense: 2\n---\n'), ['license must be a string']);
  t.same(messages('---\nname: a\ndescription: d\ncompatibility: 2\n---\n'), ['compatibility must be a string']);
  t.same(messages(`---\nname: a\ndescription: d\ncompatibility: ${'c'.repeat(501)}\n---\n`), [
    'compatibility must be at most 500 characters',
  ]);
  t.same(
    messages('---\nname: a\ndescription: d\nmetadata: {a: x, b: 1}\n---\n'),
    ['metadata must map strings to strings'],
    'every value a string',
  );
  t.same(messages('---\nname: a\ndescription: d\nallowed-tools: [Read]\n---\n'), [
    'allowed-tools must be a string (tool names separated by spaces)',
  ]);
  t.same(messages('---\nname: a\ndescription: d\nx1: 1\nx2: 2\nx3: 3\nx4: 4\nx5: 5\n---\n'), [
    'the format defines no field "x1", "x2", "x3", "x4", "x5"',
  ]);
  t.same(messages('---\nname: a\ndescription: d\nx1: 1\nx2: 2\nx3: 3\nx4: 4\nx5: 5\nx6: 6\nx7: 7\n---\n'), [
    'the format defines no field "x1", "x2", "x3", "x4", "x5" (and 2 more)',
  ]);
  t.same(
    messages(`---\nname: ${'N'.repeat(80)}\ndescription: d\n---\n`)[0],
    `the name "${'N'.repeat(80)}" is not the format's: at most 64 lower-case letters, digits and single hyphens, no hyphen first or last`,
    'a name of 80 characters is quoted whole',
  );
  const long = 'N'.repeat(90);
  t.same(messages(`---\nname: ${long}\ndescription: d\n---\n`), [
    `the name "${'N'.repeat(80)}…" is not the format's: at most 64 lower-case letters, digits and single hyphens, no hyphen first or last`,
  ]);
  t.same(
    checkSkillFrontMatter('---\nname: "  pdf  "\ndescription: "  Reads.  "\n---\n', 'pdf'),
    {
      name: 'pdf',
      description: 'Reads.',
      data: { name: '  pdf  ', description: '  Reads.  ' },
      issues: [],
    },
    'name and description are read trimmed',
  );
  t.end();
});

t.test('the fences: trailing blanks allowed, nothing else on the line; an empty block is no mapping', (t) => {
  t.match(readFrontMatter('--- \t\nname: a\n---  \nBody'), { ok: true, data: { name: 'a' }, body: 'Body' });
  t.match(readFrontMatter('---yaml\nname: a\n---\nBody'), { ok: false, problem: 'missing' });
  t.match(readFrontMatter('---\n---\nBody'), {
    ok: false,
    problem: 'invalid',
    message: 'the front matter is not a YAML mapping',
    body: 'Body',
  });
  t.end();
});

t.test('a duplicate is found in a mapping that is exactly at the key bound', (t) => {
  const keys = Array.from({ length: FRONT_MATTER_BOUNDS.keys }, (_, i) => `k${i === FRONT_MATTER_BOUNDS.keys - 1 ? 0 : i}: v`);
  t.match(readFrontMatter(`---\n${keys.join('\n')}\n---\n`), { ok: false, message: /DUPLICATE_KEY/ });
  t.end();
});

t.test('the parses kept are bounded: the oldest is parsed again, the newest is not', (t) => {
  // About 15,900 characters each: 300 of them pass the 4 M characters kept.
  const text = (i: number) => `---\nname: n${i}\ndescription: ${`${i} `.padEnd(15_880, 'x')}\n---\n`;
  const first = readFrontMatter(text(0));
  const reads = [first];
  for (let i = 1; i < 300; i++) reads.push(readFrontMatter(text(i)));
  const firstAgain = readFrontMatter(text(0));
  t.ok(
    first.ok && firstAgain.ok && first.data !== firstAgain.data && firstAgain.data.name === 'n0',
    'the oldest was let go and is read anew',
  );
  for (const i of [299, 298, 200]) {
    const [before, again] = [reads[i]!, readFrontMatter(text(i))];
    t.ok(before.ok && again.ok && before.data === again.data, `a recent one is still kept (${i})`);
  }
  t.end();
});

t.test('the front matter ends at the first closing fence: a `---` rule in the body stays in the body', (t) => {
  const body = '# Title\n\n---\n\nmore: text\n---\nEnd.\n';
  t.same(splitFrontMatter(`---\nname: a\ndescription: d\n---\n${body}`), { data: { name: 'a', description: 'd' }, body });
  t.end();
});

t.test('collection keys are told apart as yaml tells them apart', (t) => {
  const yaml = '? [a]\n: 1\n? [b]\n: 2';
  t.equal(parseDocument(yaml, { uniqueKeys: true }).errors.length, 0, "yaml's own check finds no duplicate");
  t.match(readFrontMatter(`---\n${yaml}\n---\nBody`), { ok: true, body: 'Body' });
  t.end();
});

t.test('metadata that is empty or plain text is no mapping of strings: a warning, not a crash', (t) => {
  for (const metadata of ['', ' ~', ' some text'])
    t.same(
      checkSkillFrontMatter(`---\nname: a\ndescription: d\nmetadata:${metadata}\n---\n`).issues,
      [{ code: 'skill_field_invalid', severity: 'warning', message: 'metadata must map strings to strings' }],
      JSON.stringify(metadata),
    );
  t.end();
});

t.test('the codes the API declares are the codes the check gives, each with its severity', (t) => {
  const samples = [
    '# no front matter\n',
    '---\n- a list\n---\n',
    '---\ndescription: d\n---\n',
    '---\nname: a\n---\n',
    '---\nname: Not The Format\ndescription: d\n---\n',
    `---\nname: a\ndescription: ${'d'.repeat(1025)}\nlicense: 2\nversion: 1\n---\n`,
  ];
  const given = new Map<string, string>();
  for (const text of samples) for (const i of checkSkillFrontMatter(text, 'other-folder').issues) given.set(i.code, i.severity);
  t.same(
    [...given].sort(),
    [...SKILL_FRONT_MATTER_ERRORS.map((code) => [code, 'error']), ...SKILL_FRONT_MATTER_WARNINGS.map((code) => [code, 'warning'])].sort(),
  );
  t.end();
});
