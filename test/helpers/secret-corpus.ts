// The secret-scanner corpus (test/fixtures/secrets/, sources in its README): recall per credential family,
// the false-positive rate on ordinary documents, and the worst time on 1 MiB of adversarial text.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

const DIR = path.resolve('test/fixtures/secrets');

export const MIB = 1024 * 1024;

export function fill(unit: string, length: number): string {
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
}

/** Real prose and code of this repository's docs, the size of the adversarial texts. */
export const ORDINARY = fill(readFileSync('README.md', 'utf8') + readFileSync('docs/CONTRACT.md', 'utf8'), MIB);

/** Repeated prefixes of credential rules and the characters their patterns repeat over. */
export const ADVERSARIAL: Record<string, string> = {
  eyJ: fill('eyJ', MIB),
  'eyJ segments': fill('eyJabcdefgh.', MIB),
  'eyJ two segments': fill('eyJabcdefghij.eyJabcdefghij', MIB),
  ghp_: fill('ghp_', MIB),
  github_pat_: fill('github_pat_', MIB),
  'xoxb-': fill('xoxb-', MIB),
  AKIA: fill('AKIA', MIB),
  '-----BEGIN': fill('-----BEGIN ', MIB),
  'PEM header': fill('-----BEGIN PRIVATE KEY-----', MIB),
  'postgres://': fill('postgres://', MIB),
  'user:pass@': fill('postgres://a:b', MIB),
  'sk-': fill('sk-', MIB),
  'sk-ant-api03-': fill('sk-ant-api03-', MIB),
  'sk-proj-': fill('sk-proj-', MIB),
  '= run': fill('=', MIB),
  'key= run': fill('api_key=', MIB),
  'password: run': fill('password: ', MIB),
  'SG.': fill('SG.', MIB),
  npm_: fill('npm_', MIB),
  'AccountKey=': fill('AccountKey=', MIB),
  AIza: fill('AIza', MIB),
  hf_: fill('hf_', MIB),
  'tvly-': fill('tvly-', MIB),
  'glpat-': fill('glpat-', MIB),
  arr_machine_: fill('arr_machine_', MIB),
  'word characters': fill('a', MIB),
  spaces: fill(' ', MIB),
  'keywords mixed': fill('token key secret=x password:y api auth access creds "AKIA ghp_ sk- eyJ. xoxb- -----BEGIN ', MIB),
};

interface Sample {
  family?: string;
  source: string;
  text: string;
}

function load(file: string): Sample[] {
  if (file.endsWith('.jsonl')) {
    return readFileSync(path.join(DIR, file), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Sample);
  }
  return JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as Sample[];
}

const rate = (found: number, total: number) => ({ found, total });

export interface CorpusFigures {
  recall: { family: string; found: number; total: number }[];
  positives: { found: number; total: number };
  /** Recall on gitleaks' rule-test true positives, and on the invented keys of agent-host formats. */
  bySource: { gitleaks: { found: number; total: number }; agentFormats: { found: number; total: number } };
  /** Whole files of real public skill folders, each scanned as one field (as a skill import scans it). */
  skillFiles: { refused: number; total: number };
  negatives: { refused: number; total: number; rules: Record<string, number> };
  missed: string[];
  falsePositives: { source: string; rule: string; excerpt: string }[];
}

export async function measureCorpus(scanner = new SecretScanner()): Promise<CorpusFigures> {
  const gitleaks = load('positives-gitleaks.json');
  const agentFormats = load('positives-agent-formats.json');
  const positives = [...gitleaks, ...agentFormats];
  const negatives = [...load('negatives-public.json'), ...load('negatives-placeholders.json')];
  const families = new Map<string, { found: number; total: number }>();
  const missed: string[] = [];
  const bySource = { gitleaks: rate(0, gitleaks.length), agentFormats: rate(0, agentFormats.length) };
  for (const sample of positives) {
    const family = families.get(sample.family!) ?? { found: 0, total: 0 };
    families.set(sample.family!, family);
    family.total++;
    if ((await scanner.scan([['/text', sample.text]])).length > 0) {
      family.found++;
      bySource[gitleaks.includes(sample) ? 'gitleaks' : 'agentFormats'].found++;
    } else missed.push(`${sample.family} (${sample.source}): ${sample.text.slice(0, 60)}`);
  }
  const falsePositives: CorpusFigures['falsePositives'] = [];
  const rules: Record<string, number> = {};
  for (const sample of negatives) {
    const [finding] = await scanner.scan([['/text', sample.text]]);
    if (finding) {
      rules[finding.rule] = (rules[finding.rule] ?? 0) + 1;
      falsePositives.push({ source: sample.source, rule: finding.rule, excerpt: sample.text.slice(0, 80) });
    }
  }
  const skillFiles = load('negatives-skill-files.jsonl');
  let skillFilesRefused = 0;
  for (const sample of skillFiles) {
    const [finding] = await scanner.scan([[`/files/${sample.source}`, sample.text]]);
    if (finding) {
      skillFilesRefused++;
      rules[finding.rule] = (rules[finding.rule] ?? 0) + 1;
      falsePositives.push({ source: `${sample.source} line ${finding.line}`, rule: finding.rule, excerpt: '' });
    }
  }
  const recall = [...families].map(([family, f]) => ({ family, ...f })).sort((a, b) => a.family.localeCompare(b.family));
  const found = recall.reduce((n, f) => n + f.found, 0);
  return {
    recall,
    positives: { found, total: positives.length },
    bySource,
    skillFiles: { refused: skillFilesRefused, total: skillFiles.length },
    negatives: { refused: falsePositives.length - skillFilesRefused, total: negatives.length, rules },
    missed,
    falsePositives,
  };
}

/** The best of `runs` scans (two by default) of `text` as one field, in milliseconds. */
export async function timedScan(scanner: SecretScanner, text: string, runs = 2): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await scanner.scan([['/sourceContent', text]]);
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

/** The slowest scan of 1 MiB of adversarial text, and the scan of 1 MiB of ordinary text (best of two each). */
export async function worstCase(scanner = new SecretScanner()): Promise<{ ordinaryMs: number; worst: { what: string; ms: number } }> {
  const timed = (text: string) => timedScan(scanner, text);
  await scanner.scan([['/warm', 'warm up']]);
  const ordinaryMs = await timed(ORDINARY);
  let worst = { what: '', ms: 0 };
  for (const [what, text] of Object.entries(ADVERSARIAL)) {
    const ms = await timed(text);
    if (ms > worst.ms) worst = { what, ms };
  }
  return { ordinaryMs, worst };
}
