// A finding names where it is (field, 1-based line) and which secret it is (rule + SHA-256 of the matched
// text), never the value; an allowlist entry lets exactly that fingerprint through (optionally only in one
// field or file, or on one route), and nothing else does. The scan reads the ordinary shapes real SDK samples
// use (a call, an environment lookup, a placeholder) as no secret, and still finds real keys beside them.
import { createHash } from 'node:crypto';
import t from 'tap';
import { SecretScanner, secretFingerprint } from '../../src/secrets/secret-scanner.js';

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
