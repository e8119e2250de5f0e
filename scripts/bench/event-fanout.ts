// Scenario 11: change events fanned out to many subscribers. The server (JSON store) runs in its own process;
// two subscriber processes hold the `GET /api/acp/events` streams; a writer process registers new records at
// a fixed rate and notes when each 201 arrived. Delivery latency is, for every subscriber and every write,
// the time the subscriber received the write's event minus the time the write was acknowledged (both
// `performance.timeOrigin + performance.now()`, see event-worker.ts). Each run alternates a server without
// subscribers and one with them (fresh copies of the same DATA_DIR), so the write rates compare in one run.
// The run with subscribers then opens streams that never read, from the oldest event, and keeps writing past
// the stall time while it watches the server's memory. On loopback the kernel takes up to about 4 MiB per
// socket (net.ipv4.tcp_wmem's maximum) before the server's own buffer grows at all, so each server starts with
// a backlog of events already in its log (BENCH_EVENT_BACKLOG, 30,000 events, about 5 MiB as SSE text).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  copyDataDir,
  forkEventWorker,
  median,
  removeDir,
  startServer,
  writersFor,
  type Credentials,
  type RunningServer,
} from './harness.js';
import type { LoadResult, ServerProbe } from './protocol.js';
import { quantile, type Collected, type Written } from './event-worker.js';

export interface FanoutOptions {
  template: string;
  root: string;
  creds: Credentials;
  count: number;
  subscribers: number;
  /** Streams that never read, opened in the last phase. */
  stalled: number;
  /** Events already in the log when each server starts: the never-reading streams' backlog. */
  backlog: number;
  runs: number;
  durationSec: number;
  warmupSec: number;
  /** Writes per second of the paced writer. */
  rate: number;
  /** How long the never-reading streams stay open while writes go on (longer than the server's stall time). */
  stallSec: number;
  /** Full-speed writes (32 writers) against `url` for `durationSec`. */
  fullSpeed(url: string, durationSec: number): Promise<LoadResult>;
  log(message: string): void;
}

export interface FanoutRun {
  /** Paced writes per second and acknowledgement p99 (ms), without and with subscribers. */
  paced: { without: Written; with: Written };
  /** Server CPU time (ms) per paced write, without and with subscribers. */
  cpuPerWrite: { without: number; with: number };
  full: { without: LoadResult; with: LoadResult };
  delivery: { p50: number; p99: number; max: number; min: number; samples: number; missing: number };
  /** Server memory, after a full GC: before and after the subscribers connected. */
  idle: ServerProbe;
  subscribed: ServerProbe;
  stall: {
    before: ServerProbe;
    /** The largest RSS seen while the never-reading streams were open. */
    peakRss: number;
    after: ServerProbe;
    /** The paced writes meanwhile. */
    writes: Written;
    /** The reading subscribers' delivery meanwhile. */
    delivery: { p50: number; p99: number; max: number; samples: number; missing: number };
  };
}

const PROCESSES = 2;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function summarize(parts: Collected[]) {
  const all = Float64Array.from(parts.flatMap((p) => p.latencies)).sort();
  const missing = parts.reduce((s, p) => s + p.missing, 0);
  if (all.length === 0) return { p50: NaN, p99: NaN, max: NaN, min: NaN, samples: 0, missing };
  return { p50: quantile(all, 0.5), p99: quantile(all, 0.99), max: all[all.length - 1]!, min: all[0]!, samples: all.length, missing };
}

let tags = 0;

/**
 * `events.jsonl` holding `count` committed events, as the JSON store rewrites it (a `floor` line, then one
 * committed batch per line): replaces of the seeded host records, stamped now (within the retention).
 */
async function writeBacklog(dir: string, count: number): Promise<void> {
  const at = new Date().toISOString();
  const lines = [JSON.stringify({ floor: 0, last: count })];
  for (let i = 1; i <= count; i++) {
    lines.push(
      JSON.stringify({
        batch: [
          { id: String(i), type: 'resource.replaced', at, subject: { kind: 'resource', id: `r-huabu-${i % 10}`, provider: 'huabu' } },
        ],
      }),
    );
  }
  await writeFile(path.join(dir, 'events.jsonl'), lines.join('\n') + '\n', { mode: 0o600 });
}

async function withServer<T>(o: FanoutOptions, body: (server: RunningServer) => Promise<T>): Promise<T> {
  const dir = await copyDataDir(o.template, o.root);
  if (o.backlog > 0) await writeBacklog(dir, o.backlog);
  const server = await startServer(dir, o.creds);
  try {
    return await body(server);
  } finally {
    await server.stop();
    await removeDir(dir);
  }
}

async function runOnce(o: FanoutOptions, order: 'without-first' | 'with-first'): Promise<FanoutRun> {
  const writers = writersFor(o.count, o.creds);
  const writer = forkEventWorker();
  const paced = (server: RunningServer, durationSec: number) =>
    writer.ask<Written>({ kind: 'write', url: server.url, writers, rate: o.rate, durationSec, tag: `e${++tags}` });
  try {
    const without = () =>
      withServer(o, async (server) => {
        if (o.warmupSec > 0) await paced(server, o.warmupSec);
        const cpu = (await server.probe(false)).cpuMs;
        const p = await paced(server, o.durationSec);
        const cpuPerWrite = ((await server.probe(false)).cpuMs - cpu) / Object.keys(p.acks).length;
        const f = await o.fullSpeed(server.url, o.durationSec);
        return { paced: p, full: f, cpuPerWrite };
      });
    const withSubscribers = () =>
      withServer(o, async (server) => {
        const subs = Array.from({ length: PROCESSES }, () => forkEventWorker());
        const stalledWorker = forkEventWorker();
        try {
          if (o.warmupSec > 0) await paced(server, o.warmupSec);
          const idle = await server.probe();
          const share = (i: number) => Math.floor(o.subscribers / PROCESSES) + (i < o.subscribers % PROCESSES ? 1 : 0);
          await Promise.all(
            subs.map((s, i) => s.ask({ kind: 'subscribe', url: server.url, token: o.creds.owner, count: share(i), concurrency: 16 })),
          );
          await pause(500);
          const subscribed = await server.probe();
          const collect = (acks: Record<string, number>) => Promise.all(subs.map((s) => s.ask<Collected>({ kind: 'collect', acks })));
          await collect({}); // the warm-up's events, if any arrived late
          const cpu = (await server.probe(false)).cpuMs;
          const p = await paced(server, o.durationSec);
          const delivery = summarize(await collect(p.acks));
          // After every event reached every subscriber: the fan-out's CPU is in.
          const cpuPerWrite = ((await server.probe(false)).cpuMs - cpu) / Object.keys(p.acks).length;
          const f = await o.fullSpeed(server.url, o.durationSec);
          await pause(1000);
          await collect({});
          // Streams that never read, from the oldest event: the backlog (more than the kernel's socket buffers
          // take) and every event of this run so far.
          const before = await server.probe();
          await stalledWorker.ask({ kind: 'stall', url: server.url, token: o.creds.owner, count: o.stalled, since: '0' });
          let peakRss = before.rss;
          let writing = true;
          const watching = (async () => {
            while (writing) {
              await pause(1000);
              peakRss = Math.max(peakRss, (await server.probe()).rss);
            }
          })();
          const during = await paced(server, o.stallSec);
          writing = false;
          await watching;
          const stallDelivery = summarize(await collect(during.acks));
          const after = await server.probe();
          return {
            paced: p,
            full: f,
            cpuPerWrite,
            delivery,
            idle,
            subscribed,
            stall: { before, peakRss: Math.max(peakRss, after.rss), after, writes: during, delivery: stallDelivery },
          };
        } finally {
          await Promise.all([...subs, stalledWorker].map((s) => s.ask({ kind: 'close' }).catch(() => undefined)));
          for (const s of [...subs, stalledWorker]) s.stop();
        }
      });
    if (order === 'without-first') {
      const a = await without();
      const b = await withSubscribers();
      return {
        ...b,
        paced: { without: a.paced, with: b.paced },
        full: { without: a.full, with: b.full },
        cpuPerWrite: { without: a.cpuPerWrite, with: b.cpuPerWrite },
      };
    }
    const b = await withSubscribers();
    const a = await without();
    return {
      ...b,
      paced: { without: a.paced, with: b.paced },
      full: { without: a.full, with: b.full },
      cpuPerWrite: { without: a.cpuPerWrite, with: b.cpuPerWrite },
    };
  } finally {
    writer.stop();
  }
}

export async function measureEventFanout(o: FanoutOptions): Promise<FanoutRun[]> {
  const runs: FanoutRun[] = [];
  for (let i = 0; i < o.runs; i++) {
    const run = await runOnce(o, i % 2 === 0 ? 'without-first' : 'with-first');
    o.log(
      `scenario 11 run ${i + 1}: delivery p99 ${run.delivery.p99.toFixed(1)} ms, paced ${run.paced.with.perSecond.toFixed(1)} vs ${run.paced.without.perSecond.toFixed(1)} writes/s, full ${run.full.with.perSecond.toFixed(0)} vs ${run.full.without.perSecond.toFixed(0)}, server CPU ${run.cpuPerWrite.with.toFixed(1)} vs ${run.cpuPerWrite.without.toFixed(1)} ms per write, ${((run.subscribed.rss - run.idle.rss) / o.subscribers / 1024).toFixed(1)} KiB/subscriber, stalled: +${((run.stall.peakRss - run.stall.before.rss) / 2 ** 20).toFixed(1)} MiB, connections ${run.stall.before.connections} → ${run.stall.after.connections}`,
    );
    runs.push(run);
  }
  return runs;
}

export { median };
