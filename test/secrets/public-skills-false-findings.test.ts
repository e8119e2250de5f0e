// Ordinary text of real public skill collections that the secret scan once read as secrets: Rust paths
// (`token::transfer(…)`), constructor and codec names, identifiers in prose, curl headers with placeholders,
// public demo keys, file paths and environment lookups assigned to key-named variables, a documented
// placeholder-shaped cloud key, a PEM header around `...`. Each excerpt (test/fixtures/secrets/
// negatives-public-skills.json, its source, commit and licence beside it) is scanned as one field, as a skill
// import scans a file, and must hold no finding; real values in the same shapes are still found.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

interface Excerpt {
  repo: string;
  commit: string;
  licence: string;
  path: string;
  line: number;
  rule: string;
  excerpt: string;
  /** The 1-based line of the excerpt that `line` is. */
  excerptLine: number;
}

// From the checkout's root, as every suite reads its fixtures (the compiled suite runs from dist/).
const excerpts = JSON.parse(await readFile('test/fixtures/secrets/negatives-public-skills.json', 'utf8')) as Excerpt[];

t.test('no excerpt of the public skill collections is a finding', async (t) => {
  const scanner = new SecretScanner();
  t.ok(excerpts.length >= 25, 'the committed excerpts');
  const refused: string[] = [];
  for (const e of excerpts) {
    const findings = await scanner.scan([[`/files/${e.path}`, e.excerpt]]);
    for (const f of findings) refused.push(`${e.repo}:${e.path} line ${e.line - e.excerptLine + f.line} (${f.rule})`);
  }
  t.same(refused, [], `false findings: ${refused.length}`);
});

t.test('real values in those shapes are still found', async (t) => {
  const scanner = new SecretScanner();
  const secrets = [
    'curl -H "Authorization: Bearer ghp_R8kL2mQ9vX4nT7pW1zY5cB3dF6hJ0sA8eG2i" https://api.github.com/user',
    'curl -H "Token: 9fK2xQ7mB4vN8cL1zR5tY3wPq6Hs0Dj" https://www.ncei.noaa.gov/cdo-web/api/v2/datasets',
    'https://api.nasa.gov/planetary/apod?api_key=q8Zt3Lm9Xv2Rk7Wp4Ns6Jd1F&date=2024-01-15',
    "export OPENROUTER_API_KEY='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'",
    "fs = gcsfs.GCSFileSystem(token='q8Zt3Lm9/Xv2Rk7Wp4Ns6Jd1F')",
    'sessionSecret: "Xk9#mQ2$vL7pR4tZ8wN3",',
    'password: "Zq8!nB3@cV6mK1xW5rT0"',
    'token:  9fK2xQ7mB4vN8cL1zR5tY3wP',
    'Example: AIzaSyD8kQ2mX9vL4nR7tZ1pW5cB3jH6fS0gE2y',
    '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----',
    '-----BEGIN RSA PRIVATE KEY-----',
  ];
  for (const text of secrets) t.not((await scanner.scan([['/f', text]])).length, 0, text.split('\n')[0]!);
});
