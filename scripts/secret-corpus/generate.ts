// Writes the secret-scanner corpus (test/fixtures/secret-corpus): positives from gitleaks' documented true
// positives plus keys drawn from a seeded PRNG in each platform's format, set in agent-instruction contexts;
// negatives from skill documents and MCP server READMEs (read from git object stores) plus hard negatives.
//   npm run build && node dist/scripts/secret-corpus/generate.js [--skills <git dir>] [--servers <git dir>]
// Without --skills/--servers only positives.jsonl is rewritten.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const DIR = path.resolve('test/fixtures/secret-corpus');
const SEED = 20261201;

// mulberry32: small, deterministic, good enough to draw key characters.
let state = SEED >>> 0;
function random(): number {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n: number) => Math.floor(random() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const ALPHA = UPPER + LOWER;
const URLSAFE = ALNUM + '_-';
const B64 = ALNUM + '+/';
const HEX = '0123456789abcdef';
const B32 = UPPER + '234567';
const str = (chars: string, n: number) => Array.from({ length: n }, () => chars[int(chars.length)]).join('');
const b64url = (s: string) => Buffer.from(s).toString('base64url');

type Maker = () => string;
/** Key formats per family; the key is then placed in a context. */
const FORMATS: Record<string, Maker[]> = {
  openai: [
    () => `sk-${str(ALNUM, 20)}T3BlbkFJ${str(ALNUM, 20)}`,
    () => `sk-proj-${str(URLSAFE, 74)}T3BlbkFJ${str(URLSAFE, 74)}`,
    () => `sk-proj-${str(URLSAFE, 58)}T3BlbkFJ${str(URLSAFE, 58)}`,
    () => `sk-svcacct-${str(URLSAFE, 74)}T3BlbkFJ${str(URLSAFE, 74)}`,
    () => `sk-admin-${str(URLSAFE, 58)}T3BlbkFJ${str(URLSAFE, 58)}`,
    () => `sk-${str(ALNUM, 48)}`,
  ],
  anthropic: [() => `sk-ant-api03-${str(URLSAFE, 93)}AA`, () => `sk-ant-admin01-${str(URLSAFE, 93)}AA`],
  google: [() => `AIza${str(URLSAFE, 35)}`],
  huggingface: [() => `hf_${str(ALPHA, 34)}`, () => `api_org_${str(ALPHA, 34)}`],
  tavily: [() => `tvly-${str(ALNUM, 32)}`, () => `tvly-dev-${str(ALNUM, 32)}`],
  groq: [() => `gsk_${str(ALNUM, 52)}`],
  replicate: [() => `r8_${str(ALNUM, 37)}`],
  perplexity: [() => `pplx-${str(ALNUM, 48)}`],
  github: [
    () => `${pick(['ghp', 'gho', 'ghu', 'ghs', 'ghr'])}_${str(ALNUM, 36)}`,
    () => `github_pat_${str(ALNUM, 22)}_${str(ALNUM, 59)}`,
    () => `ghp_${str(ALNUM, 38)}`,
  ],
  gitlab: [
    () => `glpat-${str(URLSAFE, 20)}`,
    () => `glpat-${str(URLSAFE, 27)}.01.${str(ALNUM.toLowerCase(), 9)}`,
    () => `gldt-${str(URLSAFE, 20)}`,
    () => `glrt-${str(URLSAFE, 20)}`,
    () => `glptt-${str(HEX, 40)}`,
    () => `glcbt-${str(HEX, 2)}_${str(URLSAFE, 20)}`,
    () => `glft-${str(URLSAFE, 20)}`,
    () => `glsoat-${str(URLSAFE, 20)}`,
  ],
  slack: [
    () => `xoxb-${str(DIGITS, 12)}-${str(DIGITS, 13)}-${str(ALNUM, 24)}`,
    () => `xoxp-${str(DIGITS, 12)}-${str(DIGITS, 12)}-${str(DIGITS, 13)}-${str(HEX, 32)}`,
    () => `xapp-1-A${str(UPPER + DIGITS, 10)}-${str(DIGITS, 13)}-${str(HEX, 64)}`,
    () => `https://hooks.slack.com/services/T${str(UPPER + DIGITS, 8)}/B${str(UPPER + DIGITS, 10)}/${str(ALNUM, 24)}`,
  ],
  stripe: [
    () => `sk_live_${str(ALNUM, 99)}`,
    () => `rk_live_${str(ALNUM, 99)}`,
    () => `sk_test_${str(ALNUM, 99)}`,
    () => `sk_live_${str(ALNUM, 24)}`,
  ],
  sendgrid: [() => `SG.${str(URLSAFE, 22)}.${str(URLSAFE, 43)}`],
  npm: [() => `npm_${str(ALNUM, 36)}`],
  pypi: [() => `pypi-AgEIcHlwaS5vcmc${str(URLSAFE, 50 + int(120))}`],
  dockerhub: [() => `dckr_pat_${str(URLSAFE, 27)}`],
  digitalocean: [() => `dop_v1_${str(HEX, 64)}`, () => `doo_v1_${str(HEX, 64)}`],
  aws: [
    () => `${pick(['AKIA', 'ASIA', 'ABIA', 'ACCA'])}${str(B32, 16)}`,
    () => `aws_secret_access_key = ${str(B64, 40)}`,
    () => `AWS_SECRET_ACCESS_KEY=${str(B64, 40)}`,
  ],
  azure: [
    () =>
      `DefaultEndpointsProtocol=https;AccountName=${str(LOWER + DIGITS, 12)};AccountKey=${str(B64, 86)}==;EndpointSuffix=core.windows.net`,
    () => `AccountKey=${str(B64, 86)}==`,
  ],
  jwt: [
    () =>
      `${b64url(JSON.stringify({ alg: pick(['HS256', 'RS256', 'ES256']), typ: 'JWT' }))}.${b64url(
        JSON.stringify({ sub: str(HEX, 12), iat: 1_700_000_000 + int(9e7), scope: pick(['read', 'admin', 'agent']) }),
      )}.${str(URLSAFE, pick([43, 86, 342]))}`,
  ],
  'private-key': [
    () => pemBlock(pick(['RSA PRIVATE KEY', 'PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY'])),
    () => '-----BEGIN RSA PRIVATE KEY-----',
  ],
  'credentialed-url': [
    () => `postgres://${pick(['app', 'agent', 'admin'])}:${str(ALNUM, 16)}@db.${pick(['internal', 'example.net'])}:5432/registry`,
    () => `https://${pick(['deploy', 'x-access-token', 'oauth2'])}:${str(ALNUM, 24)}@git.example.org/team/repo.git`,
    () => `mongodb+srv://svc:${str(ALNUM, 20)}@cluster0.${str(LOWER, 5)}.mongodb.net/agents`,
    () => `redis://default:${str(ALNUM, 32)}@cache.example.com:6379`,
    () => `amqp://worker:${str(ALNUM, 18)}@mq.example.com:5672/vhost`,
    () => `ftp://backup:${str(ALNUM, 14)}@files.example.com/dumps`,
  ],
  'generic-assignment': [
    () => `api_key=${str(HEX, 32)}`,
    () => `API_KEY="${str(ALNUM, 40)}"`,
    () => `secret: ${str(B64, 40)}`,
    () => `password = "${str(ALNUM + '!#%&*', 20)}"`,
    () => `key=${str(ALNUM, 32)}`,
    () => `client_secret: "${str(URLSAFE, 36)}"`,
    () => `"access_token": "${str(ALNUM, 40)}"`,
  ],
};

function pemBlock(kind: string): string {
  const lines = Array.from({ length: 4 + int(20) }, () => str(B64, 64));
  return `-----BEGIN ${kind}-----\n${lines.join('\n')}\n${str(B64, 20)}==\n-----END ${kind}-----`;
}

const SERVICES = [
  'the search API',
  'the model gateway',
  'the deploy hook',
  'the package registry',
  'the issue tracker',
  'the vector store',
];
const ENV = ['API_KEY', 'TOKEN', 'SERVICE_KEY', 'AUTH_TOKEN', 'CREDENTIAL'];
/** Contexts an agent instruction puts a credential in; `K` is the secret. */
const CONTEXTS: ((k: string) => string)[] = [
  (k) => `Before running the tool, set the environment:\nexport ${pick(ENV)}=${k}\nthen start the server.`,
  (k) => `Call ${pick(SERVICES)} with header Authorization: Bearer ${k} and parse the JSON answer.`,
  (k) => `curl -sS https://api.example.com/v1/search -H "Authorization: Bearer ${k}" -d '{"query":"weather"}'`,
  (k) => `{\n  "mcpServers": {\n    "search": {\n      "command": "npx",\n      "env": { "${pick(ENV)}": "${k}" }\n    }\n  }\n}`,
  (k) => `config:\n  provider: remote\n  credentials:\n    token: ${k}\n  timeout: 30`,
  (k) => `Use the key ${k} when you query ${pick(SERVICES)}; never print it.`,
  (k) => `## Setup\n\n\`\`\`bash\n${pick(ENV)}="${k}" node server.js\n\`\`\`\n\nThe server listens on port 3000.`,
  (k) => `The agent authenticates (token:${k}) and retries twice.`,
  (k) => `- credentials: "${k}",\n- region: eu-west-1`,
  (k) => `If the request fails, re-run with ${k}.`,
  (k) => `[${pick(ENV)}]\nvalue=${k}\n`,
  (k) => `Paste \`${k}\` into the settings page of ${pick(SERVICES)}.`,
];
/** Contexts for values that already carry their own name (`api_key=...`, a connection string, a PEM block). */
const FRAMED: ((k: string) => string)[] = [
  (k) => `Configuration for ${pick(SERVICES)}:\n${k}\nRestart the agent afterwards.`,
  (k) => `\`\`\`\n${k}\n\`\`\``,
  (k) => `Add this line to .env: ${k}`,
  (k) => `${k}`,
];
const SELF_NAMED = new Set(['aws', 'azure', 'private-key', 'credentialed-url', 'generic-assignment']);

interface Positive {
  family: string;
  source: string;
  text: string;
}

function positives(): Positive[] {
  const out: Positive[] = [];
  const literals = JSON.parse(readFileSync(path.join(DIR, 'gitleaks-true-positives.json'), 'utf8')) as {
    family: string;
    rule: string;
    text: string;
  }[];
  for (const l of literals)
    out.push({ family: l.family, source: `gitleaks:cmd/generate/config/rules/${l.rule}.go`, text: `Notes for the agent:\n${l.text}` });
  for (const [family, makers] of Object.entries(FORMATS)) {
    const perFamily = family === 'generic-assignment' || family === 'openai' || family === 'github' || family === 'gitlab' ? 40 : 28;
    for (let i = 0; i < perFamily; i++) {
      const maker = makers[i % makers.length]!;
      const key = maker();
      // The bare PEM header is a key on its own; it is not wrapped in prose that could break it.
      const contexts = SELF_NAMED.has(family) || key.includes('AWS_') ? FRAMED : CONTEXTS;
      const source =
        i % makers.length === 0 && family in GITLEAKS_FORMAT
          ? `generated:gitleaks-format:${GITLEAKS_FORMAT[family]}`
          : 'generated:invented';
      out.push({ family, source, text: contexts[i % contexts.length]!(key) });
    }
  }
  return out;
}

/** Families whose first format follows the gitleaks rule named here (gitleaks generates those keys at random). */
const GITLEAKS_FORMAT: Record<string, string> = {
  openai: 'openai.go',
  anthropic: 'anthropic.go',
  google: 'gcp.go',
  huggingface: 'huggingface.go',
  perplexity: 'perplexity.go',
  github: 'github.go',
  gitlab: 'gitlab.go',
  slack: 'slack.go',
  stripe: 'stripe.go',
  sendgrid: 'sendgrid.go',
  npm: 'npm.go',
  pypi: 'pypi.go',
  digitalocean: 'digitalocean.go',
  aws: 'aws.go',
  jwt: 'jwt.go',
  'private-key': 'privatekey.go',
};

/** Paragraphs and fenced code blocks of a markdown file, each whole. */
function blocks(markdown: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let fenced = false;
  const flush = () => {
    const text = current.join('\n').trim();
    if (text.length >= 40) out.push(text.length > 1500 ? text.slice(0, 1500) : text);
    current = [];
  };
  for (const line of markdown.replace(/^---\n[\s\S]*?\n---\n/, (m) => m.replaceAll('---', '')).split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) {
      if (!fenced) flush();
      current.push(line);
      fenced = !fenced;
      if (!fenced) flush();
      continue;
    }
    if (!fenced && line.trim() === '') flush();
    else current.push(line);
  }
  flush();
  return out;
}

const git = (dir: string, ...args: string[]) =>
  execFileSync('git', [`--git-dir=${dir}`, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });

/** Skills whose folder carries the Apache-2.0 LICENSE.txt (the others are "all rights reserved"). */
function skillFiles(dir: string): string[] {
  const files = git(dir, 'ls-tree', '-r', '--name-only', 'HEAD').split('\n');
  const apache = new Set(
    files
      .filter((f) => /^skills\/[^/]+\/LICENSE\.txt$/.test(f))
      .filter((f) => git(dir, 'show', `HEAD:${f}`).includes('Apache License'))
      .map((f) => path.dirname(f)),
  );
  // The skill documents and agent instructions themselves, not the API reference pages bundled with them.
  return files.filter((f) => /(?:\/SKILL\.md|\/agents\/[^/]+\.md)$/.test(f) && apache.has(f.split('/').slice(0, 2).join('/')));
}

const HARD_NEGATIVES: string[] = [
  'Set OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx in your shell before starting.',
  'export GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
  'Replace <YOUR_API_KEY> with the key from the dashboard.',
  'The client reads $OPENAI_API_KEY from the environment.',
  '"env": { "TAVILY_API_KEY": "${TAVILY_API_KEY}" }',
  'Authenticate with Authorization: Bearer $AGENTLET_TOKEN.',
  'AWS documents the example access key ID AKIAIOSFODNN7EXAMPLE.',
  'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  '[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  'The archive digest is sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, verify it before unpacking.',
  'Pin the image by digest: node@sha256:3e1f7a8b9c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8e0f2a4b6c8d0e2f',
  'Fixed in commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 on main.',
  'See 76d64c822f5125032f89eb71dbdb94e42b434821 for the change that added the fetch server.',
  'The profile id is 123e4567-e89b-12d3-a456-426614174000 and the machine id is 9b2f0c1e-7a4d-4f0b-8c3e-2d1a5b6c7e8f.',
  'Images are embedded as data:image/png;base64,<BASE64_DATA> in the HTML output.',
  'Return the screenshot as data:image/png;base64,iVBORw0KGgo... (truncated)',
  'Fetch https://api.github.com/repos/owner/repo/contents/README.md and summarize it.',
  'Docs live at https://docs.example.com/v2/auth#tokens; the status page is https://status.example.com.',
  'password=$DB_PASSWORD',
  'password: ${POSTGRES_PASSWORD}',
  'DATABASE_URL=postgres://localhost:5432/app',
  'api_key = os.environ["API_KEY"]',
  'const apiKey = process.env.ANTHROPIC_API_KEY;',
  'token: "{{ secrets.GITHUB_TOKEN }}"',
  'Set ANTHROPIC_API_KEY=sk-ant-... (starts with sk-ant-).',
  'Keys look like sk-proj-... and are shown only once.',
  'Hugging Face tokens start with hf_ and can be created in your settings.',
  'GitLab personal access tokens begin with glpat- followed by 20 characters.',
  'Slack bot tokens start with xoxb-; app-level tokens start with xapp-.',
  'Use a Stripe test key (sk_test_...) in development, never sk_live_.',
  'HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'PERPLEXITY_API_KEY=pplx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'GROQ_API_KEY=gsk_your_key_here',
  'TAVILY_API_KEY=tvly-YOUR_API_KEY',
  'The password must be at least 12 characters; the key is rotated every 90 days.',
  'The function key=value pairs are separated by semicolons: mode=fast;retries=3;region=eu.',
  'Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 reverted the change.',
  'md5: d41d8cd98f00b204e9800998ecf8427e',
  "Content-Security-Policy: default-src 'self'; script-src 'sha256-B2yPHKaXnvFWtRChIbabYmUBFZdVfKKXHbWtWidDVF8='",
  'integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"',
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl agent@example',
  'The public key starts with -----BEGIN PUBLIC KEY----- and may be shared.',
  'Use the placeholder `YOUR_TOKEN_HERE` in examples.',
  'Connect to redis://localhost:6379/0 for the cache.',
  'git clone https://github.com/modelcontextprotocol/servers.git',
  'The request ID was req_01HZX4Q8V6W3B2N7M5K9J0P1R and took 120 ms.',
  'Session cookies are named sid and expire after 30 minutes.',
  'Run `openssl rand -hex 32` to create a secret, then store it in your vault, not here.',
  'The token is passed as --token "$HF_TOKEN" on the command line.',
  'base64 of "hello world" is aGVsbG8gd29ybGQ=.',
  'The grid uses keys like row_12_col_7 and cell_key_a1b2.',
];

function negatives(skills: string, servers: string): { source: string; text: string }[] {
  const out: { source: string; text: string }[] = [];
  for (const f of skillFiles(skills))
    for (const b of blocks(git(skills, 'show', `HEAD:${f}`))) out.push({ source: `anthropics/skills:${f}`, text: b });
  const readmes = git(servers, 'ls-tree', '-r', '--name-only', 'HEAD')
    .split('\n')
    .filter((f) => f.endsWith('README.md'));
  for (const f of readmes)
    for (const b of blocks(git(servers, 'show', `HEAD:${f}`))) out.push({ source: `modelcontextprotocol/servers:${f}`, text: b });
  for (const text of HARD_NEGATIVES) out.push({ source: 'hard-negative', text });
  return out;
}

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

writeFileSync(path.join(DIR, 'positives.jsonl'), jsonl(positives()));
const skills = arg('--skills');
const servers = arg('--servers');
if (skills && servers) writeFileSync(path.join(DIR, 'negatives.jsonl'), jsonl(negatives(skills, servers)));
