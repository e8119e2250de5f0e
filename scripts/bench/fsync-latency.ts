// The disk's durable-write latency, outside the service.
// - Run directly: N small appends each followed by fdatasync (a journal's durable write) and N whole-file
//   replacements by writeFileDurably (temp file, fsync, rename, directory fsync: what a per-canvas workload
//   file costs), interleaved so both see the same moments. Prints p50 / p90 / p99 / max in ms.
//   Run: npm run build && node dist/scripts/bench/fsync-latency.js [N]
// - Forked by the bench runner (scenario 5): appends + fdatasync in a given directory at a given rate (or
//   back to back) for a given time, and answers the latencies' p50 / p99: the disk's floor for a launch,
//   measured on the launch server's own data directory in the same run.
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileDurably } from '../../src/storage/durable-file.js';
import type { FsyncResult, FsyncSpec } from './protocol.js';

const line = 'x'.repeat(750) + '\n';

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/**
 * Appends a ~750-byte line and fdatasyncs it, one write at a time, for `durationSec`: every 1/`rate` s when a
 * rate is given (a write that is late starts as soon as the one before it ends), else back to back. The file
 * is removed afterwards.
 */
export async function measureFsync(spec: FsyncSpec): Promise<FsyncResult> {
  const file = path.join(spec.dir, `bench-fsync-${process.pid}.journal`);
  const journal = await open(file, 'a');
  const times: number[] = [];
  const start = performance.now();
  const end = start + spec.durationSec * 1000;
  try {
    for (let i = 0; ; i++) {
      if (spec.rate) {
        const due = start + (i * 1000) / spec.rate;
        if (due >= end) break;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      } else if (performance.now() >= end) break;
      const t = performance.now();
      await journal.write(line);
      await journal.datasync();
      times.push(performance.now() - t);
    }
  } finally {
    await journal.close();
    await rm(file, { force: true });
  }
  times.sort((a, b) => a - b);
  return { writes: times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99), perSecond: times.length / spec.durationSec };
}

async function standalone(n: number): Promise<void> {
  const dir = await mkdtemp(path.join(process.env.BENCH_TMPDIR ?? tmpdir(), 'arr-fsync-'));
  const journal = await open(path.join(dir, 'journal'), 'a');
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
    const at = (q: number) => quantile(s, q).toFixed(2);
    return `p50 ${at(0.5)} · p90 ${at(0.9)} · p99 ${at(0.99)} · max ${at(1)} ms`;
  };
  console.log(`${n} durable writes each, interleaved`);
  console.log(`append 750 B + fdatasync:          ${summary(append)}`);
  console.log(`writeFileDurably 7.5 KB (2 fsyncs): ${summary(replace)}`);
}

if (process.send) {
  process.once('message', (spec: FsyncSpec) => {
    measureFsync(spec).then(
      (result) => process.send!(result, () => process.disconnect()),
      (err: unknown) => process.send!({ error: String(err) }, () => process.disconnect()),
    );
  });
} else {
  await standalone(Number(process.argv[2] ?? 500));
}
