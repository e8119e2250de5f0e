// The coverage report of `npm test`. Test files load their TypeScript through tsx (package.json `tap.node-arg`),
// whose inline source maps name each source but carry `sourcesContent: [null]`. c8 (v8-to-istanbul) then takes
// the null as the original text and counts every source file as one line. This drops such all-null
// `sourcesContent` arrays from the V8 coverage tap recorded (.tap/coverage/*.json), so the original is read from
// disk, then writes the report tap would have written (json-summary and text-summary, `tap report`).
// Usage: node dist/scripts/coverage-report.js
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

interface SourceMapEntry {
  data?: { sourcesContent?: unknown[] } | null;
}

/** Drops `sourcesContent` from every cached source map whose contents are all null; returns how many it dropped. */
export function dropEmptySourcesContent(coverage: { 'source-map-cache'?: Record<string, SourceMapEntry> }): number {
  let dropped = 0;
  for (const entry of Object.values(coverage['source-map-cache'] ?? {})) {
    const contents = entry.data?.sourcesContent;
    if (Array.isArray(contents) && contents.every((text) => text === null || text === undefined)) {
      delete entry.data!.sourcesContent;
      dropped++;
    }
  }
  return dropped;
}

/**
 * Rewrites each coverage file of `dir` that had such maps; returns how many maps it fixed. A file that does
 * not parse was cut short (its process was killed while writing it, as the kill tests may do just as the
 * process exits): it is removed, so the report reads whole files only, and named to `onCut`.
 */
export function restoreSourceMaps(dir: string, onCut: (name: string) => void = () => undefined): number {
  let fixed = 0;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.json')) continue;
    const file = path.join(dir, name);
    let coverage;
    try {
      coverage = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      rmSync(file);
      onCut(name);
      continue;
    }
    const dropped = dropEmptySourcesContent(coverage);
    if (dropped > 0) writeFileSync(file, JSON.stringify(coverage));
    fixed += dropped;
  }
  return fixed;
}

function main(): void {
  restoreSourceMaps(path.join(process.cwd(), '.tap', 'coverage'), (name) =>
    console.error(`coverage: .tap/coverage/${name} was cut short (its process was killed while writing it); left out of the report`),
  );
  const tap = path.join(process.cwd(), 'node_modules', '.bin', 'tap');
  const report = spawnSync(tap, ['report', 'json-summary', 'text-summary'], { stdio: 'inherit' });
  process.exit(report.status ?? 1);
}

if (process.argv[1] && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) main();
