// Scanning never obeys directives in the scanned text (here and in the Agentlet
// CLI), and catches what it missed: a token glued to a preceding word, bare AWS access key IDs.
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { validateResourceRoot } from '../../src/agentlet/receipt.js';
import { GitleaksRules } from '../../src/secrets/gitleaks-engine.js';
import vendored from '../../src/secrets/gitleaks-rules.json' with { type: 'json' };
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

/** A fresh private key in PEM (PKCS#8). */
const PEM = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
/** A P-256 key in SEC1 form (short key material). */
const EC_PEM = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }).toString();
const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

const DIRECTIVES = [
  'secretlint-disable',
  '// secretlint-disable',
  '<!-- secretlint-disable -->',
  '# secretlint-disable-next-line',
  '/* secretlint-disable-line */',
  '# gitleaks:allow',
  'gitleaks:allow',
];

t.test('a secretlint or gitleaks directive in a field never switches the scan off', async (t) => {
  const scanner = new SecretScanner();
  for (const directive of DIRECTIVES) {
    for (const [what, secret] of [
      ['PEM key', PEM],
      ['EC PEM key', EC_PEM],
      ['GitHub token', GITHUB],
    ] as const) {
      const text = `${directive}\n${secret}\n`;
      const findings = await scanner.scan([['/instructions', text]]);
      t.not(findings.length, 0, `${what} after "${directive}" is found`);
      const sameLine = await scanner.scan([['/instructions', `${secret} ${directive}`]]);
      t.not(sameLine.length, 0, `${what} before "${directive}" on the same line is found`);
    }
  }
});

t.test('the Agentlet CLI refuses a receipt that hides a key behind a directive', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'arr-root-'));
  t.teardown(() => import('node:fs/promises').then((fs) => fs.rm(root, { recursive: true, force: true })));
  for (const dir of ['skills/hidden-key', 'receipts', 'tools', 'connectors']) await mkdir(path.join(root, dir), { recursive: true });
  await writeFile(path.join(root, 'skills/hidden-key/SKILL.md'), '# x\n');
  const receipt = {
    schemaVersion: 1,
    id: 'hidden-key',
    kind: 'skill',
    name: 'Hidden key',
    description: 'A skill.',
    instructions: `<!-- secretlint-disable -->\n${PEM}`,
    entrypoint: 'skills/hidden-key',
    installedAt: '2026-01-31T12:00:00.000Z',
  };
  await writeFile(path.join(root, 'receipts/hidden-key.json'), JSON.stringify(receipt));
  const report = await validateResourceRoot(root, new SecretScanner());
  t.equal(report.valid, false, 'invalid');
  t.match(report.reports[0]!.problems.join('\n'), /secret/);
});

t.test('own tokens and JWTs glued to a preceding word are found', async (t) => {
  const scanner = new SecretScanner();
  const own = 'arr_machine_' + 'Q'.repeat(43);
  const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.' + 'x'.repeat(43);
  for (const glued of [`TOKEN${own}`, `x${own}`, `_${own}`, `Bearer${jwt}`, `jwt_${jwt}`, `a${jwt}`]) {
    t.equal((await scanner.scan([['/name', glued]])).length, 1, glued.slice(0, 12));
  }
});

t.test('bare AWS access key IDs are found', async (t) => {
  const scanner = new SecretScanner();
  for (const id of ['AKIA2E3A7F3B244CQDZM', 'ASIAY34FZKBOKMUTVV7A']) {
    const findings = await scanner.scan([['/instructions', `key id ${id} for the bucket`]]);
    t.equal(findings[0]?.rule, 'aws-access-key-id', id);
    t.not((await scanner.scan([['/instructions', `key=${id}`]])).length, 0, `${id} after =`);
  }
  t.same(
    await scanner.scan([['/instructions', 'AKIA is a prefix; AKIAX is not a key; THEAKIA2E3A7F3B244CQDZMX neither']]),
    [],
    'no false positive',
  );
});

t.test('every vendored gitleaks rule compiles, and still finds its secret when it is compiled late', (t) => {
  // A rule compiles the first time a text names one of its keywords: a text naming them all compiles every one.
  const rules = new GitleaksRules();
  const keywords = [...new Set(vendored.rules.flatMap((r) => r.keywords ?? []))];
  t.ok(keywords.length > 100, `the vendored rules name ${keywords.length} keywords`);
  t.equal(rules.firstRule(keywords.join(' ')), undefined, 'a text of bare keywords holds no secret');
  t.equal(new GitleaksRules().firstRule(`token ${GITHUB}`), 'github-pat', 'a rule compiled on its first text finds its secret');
  t.equal(rules.firstRule(`token ${GITHUB}`), 'github-pat', 'and so does one compiled earlier');
  t.end();
});
