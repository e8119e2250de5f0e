// Writes test/fixtures/secrets/negatives-skill-files.jsonl: every text file of real public skill folders,
// whole (a file is what a skill import scans as one field), read from the collections' git object stores at
// the commits the fixture README names. Only skills whose licence lets the text be redistributed are read.
//   npx tsx scripts/secret-corpus/skill-files.ts --anthropics <git dir> --superpowers <git dir>
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const OUT = path.resolve('test/fixtures/secrets/negatives-skill-files.jsonl');
const COMMITS = {
  anthropics: '9d2f1ae187231d8199c64b5b762e1bdf2244733d',
  superpowers: '44c9b2d6e889982ac18c27d05a19fefe335194e1',
};
/** anthropics/skills: the Apache-2.0 skills (the document skills docx, pdf, pptx, xlsx are not open-licensed). */
const ANTHROPIC_SKILLS = [
  'algorithmic-art',
  'brand-guidelines',
  'canvas-design',
  'claude-api',
  'frontend-design',
  'internal-comms',
  'mcp-builder',
  'skill-creator',
  'slack-gif-creator',
  'theme-factory',
  'web-artifacts-builder',
  'webapp-testing',
];
/** A file larger than this is left out (none of a real skill's text files comes near). */
const MAX_BYTES = 512 * 1024;

function arg(name: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? process.argv[at + 1] : undefined;
  if (!value) throw new Error(`--${name} <git dir> is required`);
  return value;
}

function git(dir: string, ...args: string[]): Buffer {
  return execFileSync('git', ['--git-dir', dir, ...args], { maxBuffer: 64 * 1024 * 1024 });
}

function textFiles(repo: string, dir: string, commit: string, prefixes: string[]): { source: string; text: string }[] {
  const names = git(dir, 'ls-tree', '-r', '--name-only', commit, '--', ...prefixes)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .sort();
  const out: { source: string; text: string }[] = [];
  for (const name of names) {
    if (/(^|\/)LICENSE(\.txt|\.md)?$/.test(name)) continue;
    const bytes = git(dir, 'cat-file', 'blob', `${commit}:${name}`);
    if (bytes.includes(0) || bytes.length > MAX_BYTES || bytes.length === 0) continue;
    out.push({ source: `${repo}:${name}`, text: bytes.toString('utf8') });
  }
  return out;
}

const samples = [
  ...textFiles(
    'anthropics/skills',
    arg('anthropics'),
    COMMITS.anthropics,
    ANTHROPIC_SKILLS.map((s) => `skills/${s}/`),
  ),
  ...textFiles('obra/superpowers', arg('superpowers'), COMMITS.superpowers, ['skills/']),
];
writeFileSync(OUT, samples.map((s) => JSON.stringify(s)).join('\n') + '\n');
console.log(`${samples.length} files written to ${path.relative(process.cwd(), OUT)}`);
