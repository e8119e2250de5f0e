// Each credential format the scan knows is found under its own rule, with the fingerprint an allowlist entry
// names (the rule and the SHA-256 of the secret itself, without the format's fixed prefix where the rule reads
// only the secret's body), and each format's documented placeholder is no finding. A finding carries the route
// it was scanned on; the scan reads every field of nested data and lets other work run during a large write.
import { createHash } from 'node:crypto';
import t from 'tap';
import { SecretScanner, stringLeaves } from '../../src/secrets/secret-scanner.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** 40 characters of high entropy, sliced into each format's body. */
const BODY = 'q8Zt3Lm9Xv2Rk7Wp4Ns6Jd1FhB5cY0gE3uT7aK2w';
const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

/** [rule, text, the secret its fingerprint hashes]. */
const FORMATS: [rule: string, text: string, secret: string][] = [
  ['registry-token', `use arr_canvas_${BODY.slice(0, 20)} here`, `arr_canvas_${BODY.slice(0, 20)}`],
  [
    'jwt-like',
    `Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${BODY}`,
    `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${BODY}`,
  ],
  ['aws-access-key-id', 'key id AKIA2E3A7F3B244CQDZM for the bucket', 'AKIA2E3A7F3B244CQDZM'],
  [
    'private-key',
    '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----',
    '-----BEGIN PRIVATE KEY-----',
  ],
  ['github-token', `export GITHUB_TOKEN=${GITHUB}`, GITHUB.slice(4)],
  ['openai-api-key', `OPENAI_API_KEY=sk-proj-${BODY}${BODY.slice(0, 10)}`, `${BODY}${BODY.slice(0, 10)}`],
  ['openai-api-key', `key sk-${BODY}${BODY.slice(0, 8)} end`, `${BODY}${BODY.slice(0, 8)}`],
  ['slack-token', `xoxb-123456789012-1234567890123-${BODY.slice(0, 24)}`, BODY.slice(0, 24)],
  ['tavily-api-key', `TAVILY_API_KEY=tvly-dev-${BODY.slice(0, 32)}`, BODY.slice(0, 32)],
  ['groq-api-key', `GROQ_API_KEY=gsk_${BODY}${BODY.slice(0, 12)}`, `${BODY}${BODY.slice(0, 12)}`],
  ['replicate-api-token', `REPLICATE_API_TOKEN=r8_${BODY.slice(0, 37)}`, BODY.slice(0, 37)],
  ['dockerhub-pat', `docker login -p dckr_pat_${BODY.slice(0, 27)}`, BODY.slice(0, 27)],
  [
    'azure-storage-account-key',
    `DefaultEndpointsProtocol=https;AccountName=x;AccountKey=${BODY}${BODY.slice(0, 24)}==;`,
    `${BODY}${BODY.slice(0, 24)}==`,
  ],
  ['aws-secret-access-key', `aws_secret_access_key = ${BODY}`, BODY],
  ['credentialed-url', `DATABASE_URL=postgres://admin:${BODY.slice(0, 16)}@db.example.com/app`, BODY.slice(0, 16)],
  ['credential-assignment', `password = "${BODY.slice(0, 20)}"`, BODY.slice(0, 20)],
  ['curl-auth-header', `curl -H "Authorization: Bearer ${BODY.slice(0, 30)}" https://api.example.com/v1/items`, ''],
  ['curl-auth-user', `curl -u "admin:${BODY.slice(0, 20)}" https://api.example.com/v1/items`, ''],
  ['gcp-api-key', 'key AIzaSyD8kQ2mX9vL4nR7tZ1pW5cB3jH6fS0gE2y', ''],
  ['generic-api-key', `my_service_key = "${BODY.slice(0, 24)}"`, ''],
];

t.test('each format is found under its own rule, fingerprinted by its secret', async (t) => {
  const scanner = new SecretScanner();
  for (const [rule, text, secret] of FORMATS) {
    const findings = await scanner.scan([['/instructions', text]]);
    const mine = findings.filter((f) => f.rule === rule);
    t.not(mine.length, 0, `${rule}: found in ${text.slice(0, 30)}`);
    // The gitleaks rules (no secret given here) hash what gitleaks' rule captures; the scanner's own hash exactly this.
    if (secret !== '')
      t.ok(
        mine.some((f) => f.fingerprint === `${rule}:${sha(secret)}`),
        `${rule}: the fingerprint of the secret`,
      );
  }
});

t.test("each format's placeholder or documented example is no finding", async (t) => {
  const scanner = new SecretScanner();
  const placeholders = [
    'aws_access_key_id = AKIAIOSFODNN7EXAMPLE',
    'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    '-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----',
    '-----BEGIN RSA PRIVATE KEY-----\n<your key>\n-----END RSA PRIVATE KEY-----',
    '-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----',
    `TAVILY_API_KEY=tvly-dev-${'ab'.repeat(16)}`,
    `GROQ_API_KEY=gsk_${'ab'.repeat(20)}`,
    `REPLICATE_API_TOKEN=r8_${'ab'.repeat(18)}`,
    `docker login -p dckr_pat_${'ab'.repeat(14)}`,
    `OPENAI_API_KEY=sk-proj-${'ab'.repeat(25)}`,
    `AccountKey=${'ab'.repeat(32)}==`,
    'DATABASE_URL=postgres://admin:password@db.example.com/app',
    'DATABASE_URL=postgres://admin:${DB_PASSWORD}@db.example.com/app',
    'DATABASE_URL=postgres://admin:<password>@db.example.com/app',
    'DATABASE_URL=postgres://admin:changeme@db.example.com/app',
    'curl -H "Authorization: Bearer YOUR_TOKEN" https://api.example.com/v1/items',
    'curl -H "Authorization: Bearer your_access_token" https://api.example.com/v1/items',
    'curl -u "admin:your_password" https://api.example.com/v1/items',
    'curl -u "admin:password_here" https://api.example.com/v1/items',
    'key AIzaSyA1B2C3D4E5F6G7H8I9J0K1L2M3N4O5P6Q',
    'my_service_key = "sk-or-v1-project1-key"',
    'service_key = "path/to/credentials.json"',
    'api_key = "PLACEHOLDER-value-123"',
    'api_key = "replace_me_with_the_key"',
    'session_key = KeyAgreement.PrivateKey()',
    'token = settings.auth.token_for_user',
  ];
  for (const text of placeholders) t.same(await scanner.scan([['/f', text]]), [], text);
});

t.test('a finding carries the route it was scanned on, and none without one', async (t) => {
  const scanner = new SecretScanner();
  const [routed] = await scanner.scan([['/instructions', `password = "${BODY.slice(0, 20)}"`]], { route: 'resource.register' });
  t.equal(routed?.route, 'resource.register');
  const [plain] = await scanner.scan([['/instructions', `password = "${BODY.slice(0, 20)}"`]]);
  t.ok(plain);
  t.notOk('route' in plain!, 'no route named');
});

t.test('an empty field is no finding, and the fields after it are still read', async (t) => {
  const scanner = new SecretScanner();
  t.same(await scanner.scan([['/description', '']]), []);
  const found = await scanner.scan([
    ['/description', ''],
    ['/instructions', `use ${GITHUB}`],
  ]);
  t.same([...new Set(found.map((f) => f.field))], ['/instructions']);
});

t.test("a clean object key does not end the scan: the secret under it is found under its value's pointer", async (t) => {
  const scanner = new SecretScanner();
  const found = await scanner.scan(stringLeaves({ note: 'plain', nested: { deploy: GITHUB } }, '/customData'));
  t.same([...new Set(found.map((f) => f.field))], ['/customData/nested/deploy']);
});

t.test('a large write lets other work run while it is scanned', async (t) => {
  const scanner = new SecretScanner();
  await scanner.scan([['/f', 'warm the engines']]);
  /** Whether a callback queued before the scan ran before the scan answered. */
  const interleaves = async (fields: [string, string][]) => {
    let ran = false;
    setImmediate(() => (ran = true));
    await scanner.scan(fields);
    return ran;
  };
  const short = (n: number) => Array.from({ length: n }, (_, i): [string, string] => [`/resources/${i}/name`, `Skill ${i}`]);
  t.equal(await interleaves(short(32)), true, 'a write of 32 fields yields at least once');
  t.equal(await interleaves([['/sourceContent', 'a'.repeat(4096)]]), true, 'a field of 4 KiB gets a turn of its own');
});
