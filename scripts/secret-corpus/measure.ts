// Measures SecretScanner against the secret corpus: recall per credential family and group, the false-positive
// rate on real skill documents and agent instructions, and scan time on adversarial 1 MiB inputs.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';

export interface Positive {
  family: string;
  source: string;
  text: string;
}
export interface Negative {
  source: string;
  text: string;
}

/** Families by the kind of platform that issues them; the recall target (99 %) holds per group and overall. */
export const FAMILY_GROUPS: Record<string, readonly string[]> = {
  'ai-platforms': ['openai', 'anthropic', 'google', 'huggingface', 'tavily', 'groq', 'replicate', 'perplexity'],
  'developer-platforms': ['github', 'gitlab', 'slack', 'stripe', 'sendgrid', 'npm', 'pypi', 'dockerhub', 'digitalocean'],
  cloud: ['aws', 'azure'],
  'generic-formats': ['jwt', 'private-key', 'credentialed-url', 'generic-assignment'],
};

export const CORPUS_DIR = path.resolve('test/fixtures/secret-corpus');

function readJsonl<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

export function loadCorpus(dir = CORPUS_DIR): { positives: Positive[]; negatives: Negative[] } {
  return {
    positives: readJsonl<Positive>(path.join(dir, 'positives.jsonl')),
    negatives: readJsonl<Negative>(path.join(dir, 'negatives.jsonl')),
  };
}

export interface Rate {
  name: string;
  found: number;
  total: number;
  recall: number;
}
export interface Measurement {
  families: Rate[];
  groups: Rate[];
  overall: Rate;
  missed: (Positive & { index: number })[];
  flagged: (Negative & { index: number; rule: string })[];
  negatives: number;
  falsePositiveRate: number;
}

/** Scans each text as the registry scans a resource's instructions field. */
async function firstRule(scanner: SecretScanner, text: string): Promise<string | undefined> {
  const findings = await scanner.scan([['/instructions', text]]);
  return findings[0]?.rule;
}

const rate = (name: string, found: number, total: number): Rate => ({ name, found, total, recall: total === 0 ? 1 : found / total });

export async function measure(scanner = new SecretScanner(), corpus = loadCorpus()): Promise<Measurement> {
  const found = new Map<string, number>();
  const total = new Map<string, number>();
  const missed: Measurement['missed'] = [];
  for (const [index, p] of corpus.positives.entries()) {
    total.set(p.family, (total.get(p.family) ?? 0) + 1);
    if (await firstRule(scanner, p.text)) found.set(p.family, (found.get(p.family) ?? 0) + 1);
    else missed.push({ ...p, index });
  }
  const flagged: Measurement['flagged'] = [];
  for (const [index, n] of corpus.negatives.entries()) {
    const rule = await firstRule(scanner, n.text);
    if (rule) flagged.push({ ...n, index, rule });
  }
  const families = [...total.keys()].sort().map((f) => rate(f, found.get(f) ?? 0, total.get(f)!));
  const sum = (names: readonly string[], m: Map<string, number>) => names.reduce((s, f) => s + (m.get(f) ?? 0), 0);
  const grouped = new Set(Object.values(FAMILY_GROUPS).flat());
  const ungrouped = [...total.keys()].filter((f) => !grouped.has(f));
  const groups = Object.entries({ ...FAMILY_GROUPS, ...(ungrouped.length > 0 ? { other: ungrouped } : {}) }).map(([g, names]) =>
    rate(g, sum(names, found), sum(names, total)),
  );
  const overall = rate('overall', sum([...total.keys()], found), corpus.positives.length);
  return {
    families,
    groups,
    overall,
    missed,
    flagged,
    negatives: corpus.negatives.length,
    falsePositiveRate: flagged.length / Math.max(1, corpus.negatives.length),
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const SHORT_TEXT = 100;

/** The per-family and per-group table, the FP rate and the flagged negatives (text only when short). */
export function report(m: Measurement, options: { missed?: boolean } = {}): string {
  const lines = ['family                 found/total  recall'];
  const row = (r: Rate) => `${r.name.padEnd(22)} ${`${r.found}/${r.total}`.padStart(11)}  ${pct(r.recall).padStart(7)}`;
  for (const r of m.families) lines.push(row(r));
  lines.push('', 'group');
  for (const r of m.groups) lines.push(row(r));
  lines.push(row(m.overall), '');
  lines.push(`false positives: ${m.flagged.length}/${m.negatives} = ${pct(m.falsePositiveRate)}`);
  for (const f of m.flagged) {
    lines.push(`  negative #${f.index} ${f.source} -> ${f.rule}${f.text.length <= SHORT_TEXT ? `: ${JSON.stringify(f.text)}` : ''}`);
  }
  if (options.missed) {
    lines.push('', `missed positives: ${m.missed.length}`);
    for (const p of m.missed)
      lines.push(
        `  positive #${p.index} ${p.family} ${p.source}: ${JSON.stringify(p.text.length <= 160 ? p.text : `${p.text.slice(0, 160)}...`)}`,
      );
  }
  return lines.join('\n');
}

export const MIB = 1024 * 1024;
const fill = (unit: string) => unit.repeat(Math.ceil(MIB / unit.length)).slice(0, MIB);

/** Inputs that make a careless pattern backtrack or a tokenizer build huge candidates, and one of ordinary prose. */
export function adversarialInputs(prose: string): Record<string, string> {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  return {
    'prose (baseline)': fill(`${prose}\n\n`),
    "'eyJ' repeated": fill('eyJ'),
    "'ghp_' repeated": fill('ghp_'),
    "'AKIA' repeated": fill('AKIA'),
    "'-----BEGIN ' repeated": fill('-----BEGIN '),
    "'a=' + 'x' repeated": `a=${'x'.repeat(MIB - 2)}`,
    "'https://u:' repeated": fill('https://u:'),
    'random base64': Array.from({ length: MIB }, () => B64[Math.floor(random() * 64)]).join(''),
  };
}

export interface Timing {
  input: string;
  /** Infinity when a run exceeded the limit. */
  medianMs: number;
  ratio: number;
  /** The rule that reported the input, if any: such a scan may end at the first match. */
  rule?: string | undefined;
}

/** The skill documents and READMEs of the corpus, without the hard negatives (a scan that finds something ends early). */
function ordinaryProse(): string {
  return loadCorpus()
    .negatives.filter((n) => n.source !== 'hard-negative')
    .map((n) => n.text)
    .join('\n\n');
}

/** One scan in a worker thread, stopped after `limitMs` (a regular expression cannot be interrupted in place). */
function timedScan(text: string, limitMs: number): Promise<{ ms: number; rule?: string }> {
  const worker = new Worker(new URL('./time-scan.js', import.meta.url), { workerData: { text } });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => void worker.terminate().then(() => resolve({ ms: Infinity })), limitMs);
    worker.once('message', (result: { ms: number; rule?: string }) => {
      clearTimeout(timer);
      void worker.terminate().then(() => resolve(result));
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * Median of `runs` scans of each 1 MiB input and its ratio to the prose baseline's median; a run longer than
 * `limitMs` ends that input's runs and is reported as Infinity. `onTiming` sees each result as it comes.
 */
export async function scanTimes(
  options: { prose?: string; runs?: number; limitMs?: number; onTiming?: (t: Timing) => void } = {},
): Promise<Timing[]> {
  const { prose = ordinaryProse(), runs = 3, limitMs = 60_000, onTiming } = options;
  const out: Timing[] = [];
  for (const [input, text] of Object.entries(adversarialInputs(prose))) {
    const times: number[] = [];
    let rule: string | undefined;
    for (let i = 0; i < runs; i++) {
      const result = await timedScan(text, limitMs);
      times.push(result.ms);
      rule = result.rule;
      if (result.ms === Infinity) break;
    }
    const medianMs = times.includes(Infinity) ? Infinity : times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
    const timing = { input, medianMs, ratio: medianMs / (out[0]?.medianMs ?? medianMs), rule };
    out.push(timing);
    onTiming?.(timing);
  }
  return out;
}

export function timingLine(t: Timing, limitMs = 60_000): string {
  const ms = t.medianMs === Infinity ? `> ${limitMs / 1000} s (stopped)` : `${t.medianMs.toFixed(0)} ms`;
  const ratio = Number.isFinite(t.ratio) ? `${t.ratio.toFixed(1)}x prose` : '';
  return `${t.input.padEnd(24)} ${ms.padStart(20)}  ${ratio.padEnd(12)}${t.rule ? ` flagged by ${t.rule}` : ''}`;
}
