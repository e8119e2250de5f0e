// A finding names where it is (field, 1-based line) and which secret it is (rule + SHA-256 of the matched
// text), never the value; an allowlist entry lets exactly that fingerprint through (optionally only in one
// field or file, or on one route), and nothing else does. The scan reads the ordinary shapes real SDK samples
// use (a call, an environment lookup, a placeholder) as no secret, and still finds real keys beside them.
import { createHash } from 'node:crypto';
import t from 'tap';
import { SecretScanner, secretDetected, secretFingerprint, stringLeaves, type SecretFinding } from '../../src/secrets/secret-scanner.js';

const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const ASSIGNED = 'Xk9#mQ2$vL7pR4tZ8wN3';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

t.test('a finding names its field, line, rule and fingerprint, never the value', async (t) => {
  const scanner = new SecretScanner();
  const text = `# Setup\n\nExport the token:\n\n    export GITHUB_TOKEN=${GITHUB}\n`;
  const [finding] = await scanner.scan([['/files/references/setup.md', text]]);
  t.ok(finding);
  t.equal(finding!.field, '/files/references/setup.md');
  t.equal(finding!.line, 5);
  t.equal(finding!.fingerprint, `${finding!.rule}:${sha(GITHUB)}`);
  t.equal(secretFingerprint(finding!.rule, GITHUB), finding!.fingerprint);
  t.notMatch(JSON.stringify(finding), GITHUB.slice(4, 20), 'the value is not in the finding');
});

t.test('a one-line field is line 1; a later line is counted from the field start', async (t) => {
  const scanner = new SecretScanner();
  const [one] = await scanner.scan([['/name', `token ${GITHUB}`]]);
  t.equal(one!.line, 1);
  const [third] = await scanner.scan([['/instructions', `a\r\nb\r\npassword = "${ASSIGNED}"`]]);
  t.equal(third!.rule, 'credential-assignment');
  t.equal(third!.line, 3);
  t.equal(third!.fingerprint, `credential-assignment:${sha(ASSIGNED)}`);
});

t.test('an allowed fingerprint lets exactly that secret through, and the scan goes on past it', async (t) => {
  const fingerprint = secretFingerprint('credential-assignment', ASSIGNED);
  const scanner = new SecretScanner([], { allowlist: () => Promise.resolve([{ fingerprint }]) });
  t.same(await scanner.scan([['/sourceContent', `password = "${ASSIGNED}"`]]), [], 'allowed');
  const other = 'Zq8!nB3@cV6mK1xW5rT0';
  const [next] = await scanner.scan([['/sourceContent', `password = "${ASSIGNED}"\n\npassword = "${other}"`]]);
  t.equal(next?.line, 3, 'a second, different secret in the same field is still found');
  t.equal(next?.fingerprint, secretFingerprint('credential-assignment', other));
  const [gh] = await scanner.scan([['/sourceContent', `password = "${ASSIGNED}" ${GITHUB}`]]);
  t.match(gh?.rule, /github/, 'another rule after an allowed one is still found');
});

t.test('an entry limited to a file or field or route applies only there', async (t) => {
  const fingerprint = secretFingerprint('credential-assignment', ASSIGNED);
  const text = `password = "${ASSIGNED}"`;
  const scoped = new SecretScanner([], {
    allowlist: () =>
      Promise.resolve([
        { fingerprint, file: 'references/setup.md' },
        { fingerprint, file: '/instructions', route: 'resource.validate' },
      ]),
  });
  t.same(await scoped.scan([['/files/references/setup.md', text]]), [], 'the named file of a skill');
  t.same(
    await scoped.scan([['/files/references/setup.md', text]], { route: 'resource.import' }),
    [],
    'an entry naming no route applies on every route',
  );
  t.equal((await scoped.scan([['/files/references/other.md', text]])).length, 1, 'another file');
  t.equal((await scoped.scan([['/files/x/references/setup.md', text]])).length, 0, 'a path ending in the named file');
  t.equal((await scoped.scan([['/files/xreferences/setup.md', text]])).length, 1, 'only at a path boundary');
  t.same(await scoped.scan([['/instructions', text]], { route: 'resource.validate' }), [], 'field and route');
  t.equal((await scoped.scan([['/instructions', text]], { route: 'resource.register' })).length, 1, 'another route');
  t.equal((await scoped.scan([['/instructions', text]])).length, 1, 'no route named');
  t.same(await scoped.scan([['/resources/3/instructions', text]], { route: 'resource.validate' }), [], 'a field of a set');
  const perCall = new SecretScanner();
  t.same(await perCall.scan([['/files/a.md', text]], { allowed: [{ fingerprint }] }), [], 'entries given with the call');
});

t.test('nothing in the text switches the scan off, and a configured credential is never allowed', async (t) => {
  const scanner = new SecretScanner(['arr_owner_' + 'q'.repeat(8) + 'Zx81Kp0Lm2Nb']);
  for (const pragma of ['gitleaks:allow', 'secretlint-disable', 'secret-scan: allow', 'nosec', 'pragma: allowlist secret']) {
    t.not((await scanner.scan([['/f', `${GITHUB} # ${pragma}`]])).length, 0, pragma);
  }
  const known = 'arr_owner_' + 'q'.repeat(8) + 'Zx81Kp0Lm2Nb';
  const [f] = await scanner.scan([['/f', `use ${known}`]]);
  const open = new SecretScanner([known], { allowlist: () => Promise.resolve([{ fingerprint: f!.fingerprint }]) });
  t.not((await open.scan([['/f', `use ${known}`]])).length, 0, 'still refused');
});

t.test('ordinary SDK shapes are no secret: calls, environment lookups, placeholders', async (t) => {
  const scanner = new SecretScanner();
  const ordinary = [
    '    ApiKey = Environment.GetEnvironmentVariable("ANTHROPIC_API_KEY")',
    '            AccessToken: anthropic.String("xoxp-new-..."),',
    '            RefreshToken: anthropic.String("xoxe-1-new-..."),',
    "        'access_token' => 'xoxp-new-...',",
    '    access_token: "xoxp-new-...",',
    'token = jwt.encode(payload, key)',
    'api_key = os.environ["ANTHROPIC_API_KEY"]',
    "api_key = os.environ.get('OPENAI_API_KEY')",
    'apiKey: process.env.ANTHROPIC_API_KEY,',
    'const token = process.env["GITHUB_TOKEN"] ?? "";',
    'secret := os.Getenv("WEBHOOK_SECRET")',
    'password = getpass.getpass("Password: ")',
    'api_key = "sk-ant-api03-..."',
    'api_key: "<your-api-key>"',
    'ANTHROPIC_API_KEY=YOUR_API_KEY_HERE',
    'token = "your-token-here"',
    'accessToken: config.getString("slack.accessToken")',
    'secret = ENV.fetch("SECRET_KEY_BASE")',
  ];
  for (const line of ordinary) t.same(await scanner.scan([['/f', line]]), [], line);
});

t.test('real values beside those shapes are still found', async (t) => {
  const scanner = new SecretScanner();
  const secrets = [
    `password = "${ASSIGNED}"`,
    'api_key = "q8Zt3Lm9Xv2Rk7Wp4Ns6"',
    'token: 9fK2xQ7mB4vN8cL1zR5tY3wP',
    'AccessToken: anthropic.String("xoxp-1234567890-1234567890123-1234567890123-a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"),',
    `token = os.environ.get("GH", "${GITHUB}")`,
  ];
  for (const line of secrets) t.not((await scanner.scan([['/f', line]])).length, 0, line);
});

t.test('neither a registry token nor a configured credential is let through by an entry naming its own fingerprint', async (t) => {
  const own = 'arr_machine_' + 'Q7x'.repeat(15);
  const configured = 'plain-configured-value';
  const found = await new SecretScanner([configured]).scan([['/f', `use ${own} and ${configured}`]]);
  t.same(
    found.map((f) => f.rule),
    ['registry-token', 'configured-credential'],
  );
  const open = new SecretScanner([configured], { allowlist: () => Promise.resolve(found.map((f) => ({ fingerprint: f.fingerprint }))) });
  t.same(await open.scan([['/f', `use ${own} and ${configured}`]]), found, 'each still refused');
});

t.test('a configured credential is looked for from 12 characters on: shorter ones would match ordinary words', async (t) => {
  const scanner = new SecretScanner(['abcdefghijkl', 'mnopqrstuvw']);
  const found = await scanner.scan([['/f', 'see abcdefghijkl and mnopqrstuvw']]);
  t.same(
    found.map((f) => f.fingerprint),
    [secretFingerprint('configured-credential', 'abcdefghijkl')],
  );
  t.same(
    (await scanner.scan([['/token', 'abcdefghijkl']])).map((f) => f.rule),
    ['configured-credential'],
    'a field that is the credential alone',
  );
  t.same(await scanner.scan([['/f', 'plain text without it']]), [], 'a text without it holds no finding');
});

t.test("an entry naming SKILL.md lets its finding through in a record's sourceContent, and nowhere else", async (t) => {
  const fingerprint = secretFingerprint('credential-assignment', ASSIGNED);
  const text = `password = "${ASSIGNED}"`;
  const scanner = new SecretScanner([], { allowlist: () => Promise.resolve([{ fingerprint, file: 'SKILL.md' }]) });
  t.same(await scanner.scan([['/sourceContent', text]]), [], 'the record written');
  t.same(await scanner.scan([['/resources/2/sourceContent', text]]), [], 'one record of a set');
  t.same(await scanner.scan([['/files/SKILL.md', text]]), [], 'the skill file');
  t.equal((await scanner.scan([['/instructions', text]])).length, 1, 'another field');
  t.equal((await scanner.scan([['/files/docs/other.md', text]])).length, 1, 'another file');
  const other = new SecretScanner([], { allowlist: () => Promise.resolve([{ fingerprint, file: 'references/setup.md' }]) });
  t.equal((await other.scan([['/sourceContent', text]])).length, 1, "an entry naming another file does not reach a record's sourceContent");
});

t.test("findings of one field come in line order, whichever rule found them; every field's are named", async (t) => {
  const scanner = new SecretScanner();
  const found = await scanner.scan([
    ['/description', `${GITHUB}\n\npassword = "${ASSIGNED}"`],
    ['/instructions', `intro\npassword = "${ASSIGNED}"\n\n${GITHUB}`],
  ]);
  t.same(
    found.map((f) => [f.field, f.line]),
    [
      ['/description', 1],
      ['/description', 1],
      ['/description', 3],
      ['/instructions', 2],
      ['/instructions', 4],
      ['/instructions', 4],
    ],
  );
});

t.test('a secret in a long field is named once, wherever it sits', async (t) => {
  const scanner = new SecretScanner();
  const prose = 'lorem ipsum dolor sit amet '.repeat(400);
  // The scan reads a long field in overlapping windows; at about 1,800 characters the token is in two of them.
  for (const at of [10, 1800, 6000]) {
    const text = `${prose.slice(0, at)}\n${GITHUB}\n${prose}`;
    const found = await scanner.scan([['/instructions', text]]);
    t.same(
      found.map((f) => [f.rule, f.line]),
      [
        ['github-pat', 2],
        ['github-token', 2],
      ],
      `at ${at}`,
    );
  }
});

t.test('a field with more candidates than the scan reads is refused where the reading stopped', async (t) => {
  const scanner = new SecretScanner();
  // AWS's documented example key is let through one at a time; hundreds of them are no text to read on.
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `key id AKIAIOSFODNN7EXAMPLE for bucket ${i}`).join('\n');
  t.same(await scanner.scan([['/f', lines(100)]]), [], 'a hundred are read through');
  const over = await scanner.scan([['/f', lines(300)]]);
  t.equal(over.length, 1, 'one finding: the scan stopped there');
  t.match(over[0], { field: '/f', rule: 'aws-access-key-id' });
  t.ok(over[0]!.line > 100 && over[0]!.line < 300, `at line ${over[0]!.line}`);
});

t.test("an object key that is a secret ends the scan: no finding's field names it", async (t) => {
  const scanner = new SecretScanner();
  const found = await scanner.scan(stringLeaves({ [GITHUB]: { note: `password = "${ASSIGNED}"` }, later: GITHUB }));
  t.ok(found.length > 0);
  t.same(new Set(found.map((f) => f.field)), new Set(['#key']));
  t.notMatch(JSON.stringify(found), GITHUB.slice(4, 20));
  const nested = await scanner.scan(stringLeaves({ [GITHUB]: { note: `password = "${ASSIGNED}"` }, later: GITHUB }, '/customData'));
  t.same(new Set(nested.map((f) => f.field)), new Set(['/customData#key']), 'in nested data too');
});

t.test('every string of nested data is scanned under its JSON pointer', (t) => {
  t.same(
    [...stringLeaves({ 'a/b': { 'c~d': 'v' }, l: ['x', 'y'], n: null, k: 3 }, '/customData')],
    [
      ['/customData#key', 'a/b'],
      ['/customData/a~1b#key', 'c~d'],
      ['/customData/a~1b/c~0d', 'v'],
      ['/customData#key', 'l'],
      ['/customData/l/0', 'x'],
      ['/customData/l/1', 'y'],
      ['/customData#key', 'n'],
      ['/customData#key', 'k'],
    ],
  );
  t.end();
});

t.test('the refusal names each finding (route included), up to 20, and counts the rest', (t) => {
  const finding = (line: number, route?: string): SecretFinding => ({
    field: '/instructions',
    line,
    rule: 'credential-assignment',
    fingerprint: `credential-assignment:${String(line).padStart(64, '0')}`,
    ...(route === undefined ? {} : { route }),
  });
  const one = secretDetected([finding(4)]);
  t.equal(one.code, 'secret_detected');
  t.equal(
    one.message,
    `Field /instructions line 4 (rule credential-assignment, fingerprint ${finding(4).fingerprint}) looks like it contains a secret; secrets never belong in the registry. If it is none, the owner can allow this fingerprint.`,
  );
  t.same(one.details, { findings: [finding(4)] });
  const two = secretDetected([finding(1, 'resource.register'), finding(2)]);
  t.equal(
    two.message,
    `2 findings look like secrets: /instructions line 1 (rule credential-assignment, fingerprint ${finding(1).fingerprint}, route resource.register); /instructions line 2 (rule credential-assignment, fingerprint ${finding(2).fingerprint}). Secrets never belong in the registry. If one is none, the owner can allow its fingerprint.`,
  );
  t.same(two.details, { findings: [finding(1, 'resource.register'), finding(2)] });
  const many = Array.from({ length: 23 }, (_, i) => finding(i + 1));
  const capped = secretDetected(many);
  t.same(capped.details, { findings: many.slice(0, 20), moreFindings: 3 });
  t.match(capped.message, /^23 findings look like secrets: .*line 20 \(rule [^)]*\), and 3 more\. Secrets never/);
  t.notMatch(capped.message, /line 21 /);
  const exactly = secretDetected(many.slice(0, 20));
  t.same(exactly.details, { findings: many.slice(0, 20) }, 'twenty: none left to count');
  t.notMatch(exactly.message, /more/);
  t.end();
});

t.test('a GitHub-shaped placeholder of three repeated letters is no finding; a patterned real token is', async (t) => {
  const scanner = new SecretScanner();
  // 1.5 bits a character, the bound the GitHub format is held to (an x-filled placeholder has none).
  t.same(await scanner.scan([['/f', `export GITHUB_TOKEN=ghp_${'a'.repeat(18)}${'b'.repeat(9)}${'c'.repeat(9)}`]]), []);
  t.not((await scanner.scan([['/f', `export GITHUB_TOKEN=ghp_${'a1B2'.repeat(9)}`]])).length, 0);
});

t.test('a write with no finding passes; one with findings is refused as secret_detected naming each of them', async (t) => {
  const scanner = new SecretScanner();
  await t.resolves(
    scanner.assertClean([
      ['/name', 'A plain skill'],
      ['/instructions', ''],
    ]),
    'clean',
  );
  const fields: [string, string][] = [
    ['/name', 'A plain skill'],
    ['/instructions', `password = "${ASSIGNED}"\n${GITHUB}`],
  ];
  const findings = await scanner.scan(fields, { route: 'resource.register' });
  t.equal(findings.length, 3);
  await t.rejects(scanner.assertClean(fields, { route: 'resource.register' }), {
    code: 'secret_detected',
    statusCode: 422,
    details: { findings },
  });
});
