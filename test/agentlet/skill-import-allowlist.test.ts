// The machine's side of a false finding: an import refused for a secret names each file, line, rule and
// fingerprint (never the value; the fingerprints travel as data beside the message), and the owner's
// allowlist entries the job carries let exactly those fingerprints through, in the file and on the route
// they name. Ordinary SDK samples (calls, environment lookups, placeholders) are no finding at all.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { JOBS, type JobContext } from '../../src/agentlet/jobs.js';
import { ALLOWED_FINDINGS_FILE, machineScanner } from '../../src/agentlet/allowed-findings.js';
import { validateResourceRoot } from '../../src/agentlet/receipt.js';
import { importJob, readSkill, removeJob, scanJob } from '../../src/agentlet/skill-jobs.js';
import { SecretScanner, secretFingerprint } from '../../src/secrets/secret-scanner.js';
import { tempDir } from '../helpers/agentlet.js';

const SKILL = (name: string, body = 'Body.') => `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n${body}\n`;
const VALUE = 'Xk9#mQ2$vL7pR4tZ8wN3';
const SETUP = `# Setup\n\n    password = "${VALUE}"\n`;
const FINGERPRINT = secretFingerprint('credential-assignment', VALUE);

async function world(t: Parameters<typeof tempDir>[0], files: Record<string, string>) {
  const dir = await tempDir(t, 'skill-allow-');
  const root = path.join(dir, 'root');
  await mkdir(path.join(root, 'receipts'), { recursive: true, mode: 0o700 });
  await mkdir(path.join(root, 'skills'), { recursive: true, mode: 0o700 });
  const src = path.join(dir, 'src', 'guide');
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(src, rel)), { recursive: true });
    await writeFile(path.join(src, rel), content);
  }
  const context: JobContext = {
    machineId: 'agentlet-x',
    root,
    publish: () => Promise.resolve({ dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] }),
    scanner: new SecretScanner(),
  };
  const { sourceRevision } = (await readSkill(src)).candidate;
  return {
    root,
    src,
    context,
    job: (extra: Record<string, unknown> = {}) => ({ id: 'guide', sourcePath: src, expectedRevision: sourceRevision, ...extra }),
  };
}

t.test('SDK samples with calls, environment lookups and placeholders import as they are', async (t) => {
  const { root, context, job } = await world(t, {
    'SKILL.md': SKILL('Guide'),
    'csharp/README.md':
      '```csharp\nvar client = new AnthropicClient(new() {\n    ApiKey = Environment.GetEnvironmentVariable("ANTHROPIC_API_KEY")\n});\n```\n',
    'go/README.md':
      '```go\n\t\t\tAccessToken: anthropic.String("xoxp-new-..."),\n\t\t\tRefreshToken: anthropic.String("xoxe-1-new-..."),\n```\n',
    'python/auth.py': 'import jwt, os\ntoken = jwt.encode(payload, key)\napi_key = os.environ["ANTHROPIC_API_KEY"]\n',
  });
  t.match(await importJob(job(), context), { id: 'guide', created: true });
  t.same(await readdir(path.join(root, 'skills')), ['guide']);
});

t.test('a refused import names file, line, rule and fingerprint as data; its message holds no value or fingerprint', async (t) => {
  const { root, context, job } = await world(t, { 'SKILL.md': SKILL('Guide'), 'references/setup.md': SETUP });
  const answer = await JOBS.run('skill.import', job(), context);
  t.equal(answer.ok, false);
  if (answer.ok) return;
  t.equal(answer.error.code, 'secret_detected');
  t.same(answer.error.findings, [
    { field: '/files/references/setup.md', line: 3, rule: 'credential-assignment', fingerprint: FINGERPRINT, route: 'resource.import' },
  ]);
  t.match(answer.error.message, 'references/setup.md line 3 (rule credential-assignment)');
  t.notOk(answer.error.message.includes(VALUE), 'no value');
  t.notOk(answer.error.message.includes(FINGERPRINT.split(':')[1]!), 'no fingerprint in the words (the registry scans them)');
  t.same(await readdir(path.join(root, 'skills')), [], 'nothing copied');
});

const PASSWORD = (i: number) => `Xk9#mQ2$vL7pR4tZ${String(i).padStart(2, '0')}wN`;
const PASSWORDS = (from: number, n: number) => Array.from({ length: n }, (_, i) => `    password = "${PASSWORD(from + i)}"`).join('\n');

t.test('a refused import names every finding of every file at once, and one round of allowing imports it', async (t) => {
  const { root, context, job } = await world(t, {
    'SKILL.md': SKILL('Guide'),
    'references/setup.md': `# Setup\n\n${PASSWORDS(0, 3)}\n`,
    'scripts/run.sh': `#!/bin/sh\n${PASSWORDS(3, 1)}\n`,
  });
  const answer = await JOBS.run('skill.import', job(), context);
  t.equal(answer.ok, false);
  if (answer.ok) return;
  const expected = [
    ['/files/references/setup.md', 3, 0],
    ['/files/references/setup.md', 4, 1],
    ['/files/references/setup.md', 5, 2],
    ['/files/scripts/run.sh', 2, 3],
  ] as const;
  t.same(
    answer.error.findings,
    expected.map(([field, line, i]) => ({
      field,
      line,
      rule: 'credential-assignment',
      fingerprint: secretFingerprint('credential-assignment', PASSWORD(i)),
      route: 'resource.import',
    })),
  );
  for (const [field, line] of expected)
    t.match(answer.error.message, `${field.slice('/files/'.length)} line ${line} (rule credential-assignment)`);
  t.same(await readdir(path.join(root, 'skills')), [], 'nothing copied');
  const secretAllowlist = answer.error.findings!.map((f) => ({ fingerprint: f.fingerprint }));
  t.match(await importJob(job({ secretAllowlist }), context), { id: 'guide', created: true }, 'one round');
});

t.test('a refused import with many findings carries the first 20 and says how many more', async (t) => {
  const { context, job } = await world(t, { 'SKILL.md': SKILL('Guide'), 'references/setup.md': `# Setup\n\n${PASSWORDS(0, 25)}\n` });
  const answer = await JOBS.run('skill.import', job(), context);
  t.equal(answer.ok, false);
  if (answer.ok) return;
  t.equal(answer.error.findings?.length, 20);
  t.same(
    answer.error.findings?.map((f) => f.line),
    Array.from({ length: 20 }, (_, i) => i + 3),
  );
  t.match(answer.error.message, 'references/setup.md line 22 (rule credential-assignment)');
  t.notMatch(answer.error.message, 'line 23 ');
  t.match(answer.error.message, 'and 5 more');
});

t.test("the job's allowlist entries let exactly that fingerprint through, in that file, on that route", async (t) => {
  const { root, context, job } = await world(t, { 'SKILL.md': SKILL('Guide'), 'references/setup.md': SETUP });
  for (const [label, entry] of [
    ['another file', { fingerprint: FINGERPRINT, file: 'references/other.md' }],
    ['another route', { fingerprint: FINGERPRINT, route: 'resource.refresh' }],
    ['another fingerprint', { fingerprint: secretFingerprint('credential-assignment', 'Zq8!nB3@cV6mK1xW5rT0') }],
  ] as const) {
    await t.rejects(importJob(job({ secretAllowlist: [entry] }), context), { code: 'secret_detected' }, label);
  }
  await t.rejects(importJob(job({ secretAllowlist: [{ file: 'x' }] }), context), { code: 'invalid_payload' }, 'a malformed list');
  await t.rejects(importJob(job({ secretAllowlist: 'all' }), context), { code: 'invalid_payload' });
  t.match(
    await importJob(
      job({ secretAllowlist: [{ fingerprint: FINGERPRINT, file: 'references/setup.md', route: 'resource.import' }] }),
      context,
    ),
    { created: true },
  );
  t.same(await readdir(path.join(root, 'skills')), ['guide']);
});

t.test('a scan lists a skill whose SKILL.md finding is allowed (SKILL.md names its sourceContent)', async (t) => {
  const { src, context } = await world(t, { 'SKILL.md': SKILL('Guide', `Sign in:\n\npassword = "${VALUE}"`) });
  const refused = await scanJob({ rootPath: src }, context);
  t.equal(refused.candidates.length, 0);
  t.match(refused.diagnostics[0]?.message, /line \d+, rule credential-assignment/);
  const allowed = await scanJob({ rootPath: src, secretAllowlist: [{ fingerprint: FINGERPRINT, file: 'SKILL.md' }] }, context);
  t.equal(allowed.candidates.length, 1);
});

t.test(
  "an allowed finding in SKILL.md: the machine's own check before publishing lets it through, and forgets it at removal",
  async (t) => {
    const { root, context, job } = await world(t, { 'SKILL.md': SKILL('Guide', `Sign in:\n\npassword = "${VALUE}"`) });
    const TOKEN = 'arr_m_machineTokenForThisTest0000000000';
    const receiptValid = async () => (await validateResourceRoot(root, machineScanner(root, TOKEN), 'agentlet-x')).valid;
    await importJob(job({ secretAllowlist: [{ fingerprint: FINGERPRINT, file: 'SKILL.md' }] }), context);
    t.ok(await receiptValid(), 'the receipt passes the check serve and sync run before they publish');
    t.notMatch(
      await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8'),
      VALUE,
      'the kept entry holds the fingerprint, never the value',
    );

    const routeOnly = await world(t, { 'SKILL.md': SKILL('Guide', `Sign in:\n\npassword = "${VALUE}"`) });
    await importJob(
      routeOnly.job({ secretAllowlist: [{ fingerprint: FINGERPRINT, file: 'SKILL.md', route: 'resource.import' }] }),
      routeOnly.context,
    );
    t.notOk(
      (await validateResourceRoot(routeOnly.root, machineScanner(routeOnly.root, TOKEN), 'agentlet-x')).valid,
      'an entry limited to the import route does not cover publishing',
    );

    await removeJob({ id: 'guide' }, context);
    t.same(JSON.parse(await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8')), {}, 'removal forgets the skill’s entries');
  },
);

t.test(
  "a scan whose findings cannot be checked against the machine's kept entries names that skill unreadable, and lists the rest",
  async (t) => {
    const { root, src, context } = await world(t, { 'SKILL.md': SKILL('Guide', `Sign in:\n\npassword = "${VALUE}"`) });
    const collection = path.dirname(src);
    await mkdir(path.join(collection, 'plain'));
    await writeFile(path.join(collection, 'plain', 'SKILL.md'), SKILL('plain'));
    const machine: JobContext = { ...context, scanner: machineScanner(root, 'arr_m_machineTokenForThisTest0000000000') };
    await writeFile(path.join(root, ALLOWED_FINDINGS_FILE), '[]');
    t.match(await scanJob({ rootPath: collection }, machine), {
      candidates: [{ id: 'plain' }],
      diagnostics: [{ path: src, code: 'skill_unreadable', message: 'cannot read it (error)' }],
    });
    await rm(path.join(root, ALLOWED_FINDINGS_FILE));
    await mkdir(path.join(root, ALLOWED_FINDINGS_FILE));
    const scanned = await scanJob({ rootPath: collection }, machine);
    t.same(
      scanned.candidates.map((c) => c.id),
      ['plain'],
    );
    t.same(scanned.diagnostics, [{ path: src, code: 'skill_unreadable', message: 'cannot read it (EISDIR)' }]);
  },
);
