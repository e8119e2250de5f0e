// The disk's durable-write latency, outside the service: N small appends each followed by fdatasync (a
// journal's durable write) and N whole-file replacements by writeFileDurably (temp file, fsync, rename,
// directory fsync: what a per-canvas workload file costs), interleaved so both see the same moments.
// Prints p50 / p90 / p99 / max in ms. Run: npm run build && node dist/scripts/bench/fsync-latency.js [N]
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileDurably } from '../../src/storage/durable-file.js';

const n = Number(process.argv[2] ?? 500);
const dir = await mkdtemp(path.join(process.env.BENCH_TMPDIR ?? tmpdir(), 'arr-fsync-'));
const journal = await open(path.join(dir, 'journal'), 'a');
const line = 'x'.repeat(750) + '\n';
const doc = 'y'.repeat(7500);
const append: number[] = [];
const replace: number[] = [];
for (let i = 0; i < n; i++) {
  let t = performance.now();
  await journal.write(line);
  await journal.datasync();
  append.push(performance.now() - t);
  t = performance.now();
  await writeFileDurably(path.join(dir, `canvas-${i % 50}.json`), doc);
  replace.push(performance.now() - t);
}
await journal.close();
await rm(dir, { recursive: true, force: true });
const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(2);
  return `p50 ${at(0.5)} · p90 ${at(0.9)} · p99 ${at(0.99)} · max ${at(1)} ms`;
};
console.log(`${n} durable writes each, interleaved`);
console.log(`append 750 B + fdatasync:          ${summary(append)}`);
console.log(`writeFileDurably 7.5 KB (2 fsyncs): ${summary(replace)}`);
