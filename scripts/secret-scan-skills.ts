// Scans every skill folder (a folder holding SKILL.md) under the given directories as a skill import scans
// it (each file one field, binary files as their printable runs) and prints the skills with findings, each
// finding's file, line and rule, and a count: how many skills of a public collection the scan would refuse.
//   npx tsx scripts/secret-scan-skills.ts [--show] <dir>...     (--show: print the finding's line too)
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { scannedText } from '../src/agentlet/scanned-text.js';
import { SecretScanner } from '../src/secrets/secret-scanner.js';

const args = process.argv.slice(2);
const show = args.includes('--show');
const roots = args.filter((a) => a !== '--show');
if (roots.length === 0) {
  console.error('usage: npx tsx scripts/secret-scan-skills.ts [--show] <dir>...');
  process.exit(2);
}

async function* filesUnder(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== '.git') yield* filesUnder(full);
    else if (entry.isFile()) yield full;
  }
}

const scanner = new SecretScanner();
let skills = 0;
let files = 0;
const refused: string[] = [];
for (const root of roots) {
  const skillDirs: string[] = [];
  for await (const file of filesUnder(root)) if (path.basename(file) === 'SKILL.md') skillDirs.push(path.dirname(file));
  for (const dir of skillDirs.sort()) {
    skills++;
    const texts: [string, string][] = [];
    for await (const file of filesUnder(dir)) {
      files++;
      texts.push([`/files/${path.relative(dir, file)}`, scannedText(await readFile(file))]);
    }
    const findings = await scanner.scan(texts);
    if (findings.length === 0) continue;
    refused.push(path.relative(process.cwd(), dir));
    console.log(`${path.relative(process.cwd(), dir)}:`);
    for (const f of findings) {
      const lines = texts.find(([field]) => field === f.field)![1].split('\n');
      const line = show ? `: ${lines[f.line - 1]!.trim().slice(0, 160)}` : '';
      console.log(`  ${f.field.slice('/files/'.length)} line ${f.line} (${f.rule})${line}`);
    }
  }
}
console.log(`${refused.length} of ${skills} skills (${files} files) have a finding`);
