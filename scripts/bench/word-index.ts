// The JSON store's word index, in process: the first search's build of the index over BENCH_INDEX_RECORDS
// (5,000) records made from the vendored skill collections (each skill's SKILL.md, made unique), then one
// replace of every record (each replace takes the old words out and posts the new ones). Medians of
// BENCH_RUNS (5) rounds. With BENCH_BASELINE_BUILD (another build's `dist`), that build's index runs too,
// alternated with this one round by round, and the ratios are printed side by side.
//   Run: npm run build && node dist/scripts/bench/word-index.js
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SearchTerm } from '../../src/registry/search.js';
import type { StoredResource } from '../../src/schemas/resource.js';

const COLLECTIONS = path.resolve('test/fixtures/skill-collections');
const records = Number(process.env.BENCH_INDEX_RECORDS ?? 5000);
const runs = Number(process.env.BENCH_RUNS ?? 5);
const baseline = process.env.BENCH_BASELINE_BUILD;

interface IndexModule {
  ResourceIndex: new (records: ReadonlyMap<string, StoredResource>) => {
    put(record: StoredResource, previous: StoredResource | undefined): void;
    find(request: { terms: SearchTerm[]; limit: number }): unknown[];
  };
}
interface Build {
  name: string;
  index: IndexModule;
  parseSearch: (q: string) => SearchTerm[];
}

async function load(name: string, dist: string): Promise<Build> {
  const from = (file: string) => pathToFileURL(path.resolve(dist, file)).href;
  const index = (await import(from('src/storage/resource-index.js'))) as IndexModule;
  const { parseSearch } = (await import(from('src/registry/search.js'))) as { parseSearch: Build['parseSearch'] };
  return { name, index, parseSearch };
}

function skillTexts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) return skillTexts(at);
    return entry.name === 'SKILL.md' ? [readFileSync(at, 'utf8')] : [];
  });
}

/** One round on `build`: milliseconds to build the index, and to replace every record once. */
function round(build: Build, stored: Map<string, StoredResource>): [number, number] {
  const index = new build.index.ResourceIndex(stored);
  const terms = build.parseSearch('skill');
  let started = performance.now();
  index.find({ terms, limit: 5 }); // the first search builds the whole index
  const built = performance.now() - started;
  started = performance.now();
  for (const record of stored.values()) {
    const next = Object.freeze({ ...record, name: `${record.name} again` }) as StoredResource;
    index.put(next, record);
  }
  index.find({ terms, limit: 5 }); // a search does the pending word work first
  return [built, performance.now() - started];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const texts = skillTexts(COLLECTIONS);
const stored = new Map<string, StoredResource>();
for (let i = 0; i < records; i++) {
  const record: StoredResource = Object.freeze({
    schemaVersion: 2,
    id: `skill-${i}`,
    name: `skill-${i}`,
    provider: `machine-${i % 10}`,
    sourceContent: `${texts[i % texts.length]!}\nrevision ${i} token${i}`,
    userContent: '',
  });
  stored.set(record.id, record);
}
const builds = [await load('this build', path.resolve(import.meta.dirname, '../..'))];
if (baseline) builds.push(await load('baseline', baseline));
const times = new Map(builds.map((b) => [b.name, { build: [] as number[], replace: [] as number[] }]));
for (let r = 0; r < runs; r++) {
  for (const build of r % 2 === 0 ? builds : [...builds].reverse()) {
    const [built, replaced] = round(build, stored);
    times.get(build.name)!.build.push(built);
    times.get(build.name)!.replace.push(replaced);
  }
}
const chars = [...stored.values()].reduce((n, r) => n + (r.schemaVersion === 2 ? r.sourceContent.length : 0), 0);
console.log(
  `word index over ${records} records from ${texts.length} vendored skills (${(chars / 1e6).toFixed(1)} M chars), medians of ${runs}`,
);
console.log('build | index built (ms) | every record replaced (ms)');
for (const build of builds) {
  const t = times.get(build.name)!;
  console.log(`${build.name} | ${median(t.build).toFixed(0)} | ${median(t.replace).toFixed(0)}`);
}
if (baseline) {
  const [now, before] = builds.map((b) => times.get(b.name)!);
  console.log(
    `ratio (this / baseline) | ${(median(now!.build) / median(before!.build)).toFixed(2)}× | ${(median(now!.replace) / median(before!.replace)).toFixed(2)}×`,
  );
}
