// The secret-scanner corpus (test/fixtures/secrets/, sources in its README): recall per credential family,
// the false-positive rate on ordinary documents, and the worst time on 1 MiB of adversarial text.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

const DIR = path.resolve('test/fixtures/secrets');

interface Sample {
  family?: string;
  source: string;
  text: string;
}

function load(file: string): Sample[] {
  return JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as Sample[];
}

export interface CorpusFigures {
  recall: { family: string; found: number; total: number }[];
  positives: { found: number; total: number };
  negatives: { refused: number; total: number; rules: Record<string, number> };
  missed: string[];
  falsePositives: { source: string; rule: string; excerpt: string }[];
}

export async function measureCorpus(scanner = new SecretScanner()): Promise<CorpusFigures> {
  const positives = [...load('positives-gitleaks.json'), ...load('positives-agent-formats.json')];
  const negatives = [...load('negatives-public.json'), ...load('negatives-placeholders.json')];
  const families = new Map<string, { found: number; total: number }>();
  const missed: string[] = [];
  for (const sample of positives) {
    const family = families.get(sample.family!) ?? { found: 0, total: 0 };
    families.set(sample.family!, family);
    family.total++;
    if ((await scanner.scan([['/text', sample.text]])).length > 0) family.found++;
    else missed.push(`${sample.family} (${sample.source}): ${sample.text.slice(0, 60)}`);
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
  const recall = [...families].map(([family, f]) => ({ family, ...f })).sort((a, b) => a.family.localeCompare(b.family));
  const found = recall.reduce((n, f) => n + f.found, 0);
  return {
    recall,
    positives: { found, total: positives.length },
    negatives: { refused: falsePositives.length, total: negatives.length, rules },
    missed,
    falsePositives,
  };
}
