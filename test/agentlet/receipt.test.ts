// The receipt validator on its own: record rules shared with the server, ID = file name, entrypoint
// containment (.., absolute, symbolic links, kind directory), secrets, and what `receipts/` may hold.
import t from 'tap';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initResourceRoot, resolveResourceRoot } from '../../src/agentlet/resource-root.js';
import {
  formatReport,
  MAX_RECEIPT_BYTES,
  publishableSet,
  receiptProblems,
  serializeReceipt,
  toReconcileEntry,
  validateResourceRoot,
  type Receipt,
} from '../../src/agentlet/receipt.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { LINE_CONTROL_CHARACTER } from '../../src/text/control-characters.js';
import { FAKE_GITHUB_TOKEN, installFile, receiptJson, tempDir, writeReceipt } from '../helpers/agentlet.js';

const scanner = new SecretScanner();

async function makeRoot(t: Parameters<typeof tempDir>[0]): Promise<{ root: string; dir: string }> {
  const dir = await tempDir(t);
  const root = path.join(dir, 'res');
  await initResourceRoot(root);
  await installFile(root, 'skills/good/SKILL.md', '# good\n');
  await installFile(root, 'tools/t/run.sh');
  return { root, dir };
}

t.test('a valid receipt has no problems and publishes only the record fields', async (t) => {
  const { root } = await makeRoot(t);
  const receipt = receiptJson('good', { entrypoint: 'skills/good/SKILL.md', source: 'https://example.org/good' }) as Receipt;
  t.same(await receiptProblems(root, 'good', receipt, scanner), []);
  t.same(await receiptProblems(root, 'good', { ...receipt, entrypoint: 'skills/good' }, scanner), [], 'a directory entrypoint');
  t.same(await receiptProblems(root, 'good', { ...receipt, entrypoint: './skills/good/' }, scanner), [], 'normalized');
  t.same(toReconcileEntry(receipt), {
    schemaVersion: 1,
    id: 'good',
    name: 'Name of good',
    description: 'About good.',
    instructions: 'Read $AGENT_RESOURCE_DIR/skills/good/SKILL.md before using good.',
  });
  t.same(Object.keys(JSON.parse(serializeReceipt(receipt))), [
    'schemaVersion',
    'id',
    'kind',
    'name',
    'description',
    'instructions',
    'entrypoint',
    'source',
    'installedAt',
  ]);
});

t.test('record fields follow the server rules', async (t) => {
  const { root } = await makeRoot(t);
  const base = receiptJson('good', { entrypoint: 'skills/good/SKILL.md' });
  const cases: [string, Record<string, unknown>, string | RegExp][] = [
    ['bad ID', { id: 'Not_Kebab' }, '/id must be kebab-case: lower-case letters and digits in groups joined by single hyphens'],
    ['long name', { name: 'n'.repeat(129) }, '/name must not have more than 128 characters'],
    ['empty description', { description: '' }, '/description must not have fewer than 1 characters'],
    ['long instructions', { instructions: 'i'.repeat(4001) }, '/instructions must not have more than 4000 characters'],
    ['control character', { name: 'bell\u0007' }, '/name must not be blank or hold control characters other than newline and tab'],
    ['invisible character', { name: 'zero\u200bwidth' }, '/name: The name holds an invisible or bidirectional-control character.'],
    ['bidi control', { name: 'flip\u202eped' }, '/name: The name holds an invisible or bidirectional-control character.'],
    ['blank text', { description: ' \n\t' }, '/description must not be blank or hold control characters other than newline and tab'],
    ['unknown kind', { kind: 'plugin' }, '/kind must be one of skill, tool, connector'],
    ['wrong version', { schemaVersion: 3 }, '/schemaVersion must be 1 or 2'],
    ['extra field', { availability: 'now' }, 'unknown field(s): availability'],
    [
      'provider of another machine',
      { provider: 'agentlet-other' },
      '/provider is "agentlet-other" but this machine is "agentlet-7f3a"; a receipt publishes as the machine that holds it, so its provider must be this machine\'s ID',
    ],
    ['bad date', { installedAt: 'yesterday' }, /\/installedAt must be an RFC 3339 date-time/],
    ["the host's required default ID", { id: 'huabu-access' }, '/id: huabu-access is a required default ID; it belongs to the host alone.'],
    ["the host's other default ID", { id: 'local-resource-management' }, /^\/id: local-resource-management is a required default ID/],
    ['multi-line entrypoint', { entrypoint: 'skills/good\nSKILL.md' }, '/entrypoint must be one line without control characters'],
  ];
  for (const [name, override, problem] of cases) {
    const problems = await receiptProblems(
      root,
      typeof override.id === 'string' ? override.id : 'good',
      { ...base, ...override },
      scanner,
      'agentlet-7f3a',
    );
    t.ok(
      problems.some((p) => (typeof problem === 'string' ? p === problem : problem.test(p))),
      `${name}: ${problems.join(' | ')}`,
    );
  }
  t.same(
    await receiptProblems(root, 'good', { ...base, provider: 'agentlet-7f3a' }, scanner, 'agentlet-7f3a'),
    [],
    "provider equal to the machine ID (upstream's receipts carry it)",
  );
  const { name: _n, instructions: _i, ...missing } = base;
  t.same(await receiptProblems(root, 'good', missing, scanner), ['missing field(s): name, instructions']);
  t.same(await receiptProblems(root, 'good', [base], scanner), ['a receipt must be a JSON object']);
  t.same(await receiptProblems(root, 'other', base, scanner), ['/id does not match the file name (expected "other")']);
});

t.test('the entrypoint stays inside its kind directory of the real root', async (t) => {
  const { root, dir } = await makeRoot(t);
  await installFile(dir, 'outside/evil.sh');
  await symlink(path.join(dir, 'outside'), path.join(root, 'skills', 'escape'));
  await symlink(path.join(root, 'tools', 't'), path.join(root, 'skills', 'to-tools'));
  await symlink(path.join(root, 'skills', 'good'), path.join(root, 'skills', 'inside'));
  await symlink('loop', path.join(root, 'skills', 'loop'));
  const check = (entrypoint: string, kind = 'skill') => receiptProblems(root, 'good', receiptJson('good', { kind, entrypoint }), scanner);

  t.same(await check('skills/../../outside/evil.sh'), ['/entrypoint must not contain ".." segments']);
  t.same(
    await check('skills/good/../good/SKILL.md'),
    ['/entrypoint must not contain ".." segments'],
    '.. is refused even when it stays inside',
  );
  t.same(await check(path.join(root, 'skills/good/SKILL.md')), ['/entrypoint must be relative to the resource root, not absolute']);
  t.match(
    (await check('skills/escape/evil.sh'))[0],
    /^\/entrypoint skills\/escape\/evil\.sh resolves outside the resource root \(to .*outside\/evil\.sh\)/,
  );
  t.same(await check('skills/to-tools/run.sh'), [
    '/entrypoint skills/to-tools/run.sh resolves to tools/t/run.sh, which is not under skills/',
  ]);
  t.same(await check('skills/inside/SKILL.md'), [], 'a symbolic link that stays inside is fine');
  t.same(await check('skills/missing.md'), ['/entrypoint skills/missing.md does not exist']);
  t.same(await check('skills/loop'), ['/entrypoint skills/loop is a symbolic link loop']);
  t.same(await check('tools/t/run.sh'), ['/entrypoint of a skill must lie under skills/ (got tools/t/run.sh)']);
  t.same(await check('tools/t/run.sh', 'tool'), []);
  t.same(await check('skills', 'skill'), ['/entrypoint of a skill must lie under skills/ (got skills)'], 'not the kind directory itself');
  t.same(await check('receipts/good.json', 'connector'), [
    '/entrypoint of a connector must lie under connectors/ (got receipts/good.json)',
  ]);

  // The root itself reached through a symbolic link: containment is judged on real paths.
  const linkedRoot = path.join(dir, 'linked-root');
  await symlink(root, linkedRoot);
  await writeReceipt(root, receiptJson('good', { entrypoint: 'skills/good/SKILL.md' }));
  t.same((await validateResourceRoot(linkedRoot, scanner)).reports.map(formatReport), ['ok good']);
});

t.test('secrets are found in every text field and never quoted', async (t) => {
  const { root } = await makeRoot(t);
  for (const field of ['name', 'description', 'instructions', 'source']) {
    const problems = await receiptProblems(
      root,
      'good',
      receiptJson('good', { entrypoint: 'skills/good/SKILL.md', [field]: `x ${FAKE_GITHUB_TOKEN} y` }),
      scanner,
    );
    t.match(
      problems,
      [
        new RegExp(
          `^/${field} looks like it contains a secret \\(line 1, rule github-pat, fingerprint github-pat:[0-9a-f]{64}\\); secrets never belong in a receipt$`,
        ),
      ],
      field,
    );
    t.ok(
      problems.every((p) => p.startsWith(`/${field} looks like it contains a secret (line 1, rule `)),
      'every problem is a finding of that field (one a rule that finds the token)',
    );
  }
  const own = await receiptProblems(
    root,
    'good',
    receiptJson('good', { entrypoint: 'skills/good/SKILL.md', instructions: 'Bearer arr_machine_0123456789abcdefXYZ' }),
    scanner,
  );
  t.match(own, [
    /^\/instructions looks like it contains a secret \(line 1, rule registry-token, fingerprint registry-token:[0-9a-f]{64}\); secrets never/,
  ]);
  const configured = new SecretScanner(['exact-machine-token-value-123']);
  const known = await receiptProblems(
    root,
    'good',
    receiptJson('good', { entrypoint: 'skills/good/SKILL.md', description: 'has exact-machine-token-value-123' }),
    configured,
  );
  t.match(known, [
    /^\/description looks like it contains a secret \(line 1, rule configured-credential, fingerprint configured-credential:[0-9a-f]{64}\); secrets never/,
  ]);
  const inPath = await receiptProblems(root, 'good', receiptJson('good', { entrypoint: `skills/${FAKE_GITHUB_TOKEN}` }), scanner);
  t.match(
    inPath,
    [
      /^\/entrypoint looks like it contains a secret \(line 1, rule github-pat, fingerprint github-pat:[0-9a-f]{64}\); secrets never belong in a receipt$/,
    ],
    'the path is not quoted',
  );
});

t.test('receipts/ holds only <id>.json regular files', async (t) => {
  const { root, dir } = await makeRoot(t);
  await writeReceipt(root, receiptJson('good', { entrypoint: 'skills/good/SKILL.md' }));
  await writeReceipt(root, '{ "id": "broken", "instructions": "sk-not-quoted', 'broken.json');
  await writeReceipt(root, 'notes', 'README.txt');
  await writeReceipt(root, receiptJson('renamed', { entrypoint: 'skills/good/SKILL.md' }), 'other-name.json');
  await writeReceipt(root, 'x'.repeat(MAX_RECEIPT_BYTES + 1), 'huge.json');
  await writeFile(path.join(dir, 'elsewhere.json'), JSON.stringify(receiptJson('linked', { entrypoint: 'skills/good/SKILL.md' })));
  await symlink(path.join(dir, 'elsewhere.json'), path.join(root, 'receipts', 'linked.json'));
  await mkdir(path.join(root, 'receipts', 'sub.json'));
  await writeReceipt(root, 'left by an interrupted write', 'good.json.123-abc.tmp');
  await writeReceipt(root, 'editor state', '.good.json.swp');

  const report = await validateResourceRoot(root, scanner);
  t.equal(report.valid, false);
  t.same(report.reports.map(formatReport), [
    'invalid receipts/README.txt: not a receipt: receipt files are named <id>.json',
    'invalid receipts/broken.json: not valid JSON',
    'ok good',
    `invalid receipts/huge.json: larger than ${MAX_RECEIPT_BYTES} bytes`,
    'invalid receipts/linked.json: a receipt must be a regular file, not a symbolic link',
    'invalid receipts/other-name.json: /id does not match the file name (expected "other-name")',
    'invalid receipts/sub.json: a receipt must be a regular file',
  ]);
});

t.test('the resource root override must be absolute', (t) => {
  t.equal(resolveResourceRoot(undefined, undefined, '/home/u'), '/home/u/.agentlet/resources');
  t.equal(resolveResourceRoot(undefined, '/srv/res/', '/home/u'), '/srv/res/');
  t.equal(resolveResourceRoot('/opt/r', '/srv/res', '/home/u'), '/opt/r', 'the flag wins');
  t.throws(() => resolveResourceRoot('rel', undefined), { message: /--resource-dir must be an absolute path/, exitCode: 2 });
  t.throws(() => resolveResourceRoot(undefined, './rel'), { message: /AGENT_RESOURCE_DIR must be an absolute path/, exitCode: 2 });
  t.end();
});

t.test('the set serve publishes: every valid receipt, and one bounded, one-line problem per invalid one', async (t) => {
  const { root } = await makeRoot(t);
  await writeReceipt(root, receiptJson('good', { entrypoint: 'skills/good' }));
  await writeReceipt(root, receiptJson('gone', { entrypoint: 'skills/gone/SKILL.md' }));
  await writeReceipt(root, receiptJson('odd', { entrypoint: 'skills/gone', name: '' }));
  await writeReceipt(root, '{', 'not json.json');
  await writeReceipt(root, receiptJson('leaky', { description: `token ${FAKE_GITHUB_TOKEN}` }));
  const { reports } = await validateResourceRoot(root, scanner);
  const set = await publishableSet(reports, scanner);
  t.same(
    set.entries.map((e) => e.id),
    ['good'],
    'the valid receipt is published beside the invalid ones',
  );
  t.same(
    set.problems.map((p) => [p.receipt, p.id, p.code]),
    [
      ['receipts/gone.json', 'gone', 'entrypoint_missing'],
      ['receipts/leaky.json', 'leaky', 'receipt_invalid'],
      ['receipts/not json.json', undefined, 'receipt_invalid'],
      ['receipts/odd.json', 'odd', 'receipt_invalid'],
    ],
    'a deleted folder is entrypoint_missing; anything else receipt_invalid; an ID only when the file name is one',
  );
  t.notOk(JSON.stringify(set).includes(FAKE_GITHUB_TOKEN), 'no secret in any problem');

  const many = Array.from({ length: 70 }, (_, i) => ({
    file: `receipts/r${i}.json`,
    problems: ['x'.repeat(2000)],
    code: 'receipt_invalid' as const,
  }));
  const bounded = await publishableSet(
    [...many, { file: 'receipts/a\nb.json', problems: [`leaks ${FAKE_GITHUB_TOKEN}`], code: 'receipt_invalid' }],
    scanner,
  );
  t.equal(bounded.problems.length, 64, 'at most 64 problems');
  t.match(
    bounded.problems[63],
    { receipt: 'receipts', message: /^8 more receipt\(s\) not published: receipts\/r63\.json/ },
    'the rest summed up',
  );
  t.ok(
    bounded.problems.every((p) => p.message.length <= 1000 && !LINE_CONTROL_CHARACTER.test(p.message + p.receipt)),
    'each message one line of at most 1000 characters',
  );
  const secretOnly = await publishableSet(
    [{ file: 'receipts/x.json', problems: [`leaks ${FAKE_GITHUB_TOKEN}`], code: 'receipt_invalid' }],
    scanner,
  );
  t.match(
    secretOnly.problems[0]!.message,
    /^not shown: it looks like it contains a secret \(rule /,
    'a message holding a secret is not quoted',
  );
});
