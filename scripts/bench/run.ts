// `npm run bench`: the performance scenarios at several catalogue sizes, printed as one table
// of medians and ratios. Every measurement runs the real server in a child process on loopback and the
// load generator (autocannon) in another; the runner itself only orchestrates.
//
// Knobs (environment): BENCH_SCALES (100,1000,10000), BENCH_RUNS (5), BENCH_DURATION (2 s per run),
// BENCH_WARMUP (1 s), BENCH_CONNECTIONS (10, read scenarios), BENCH_WRITERS (32), BENCH_READ_RATE
// (100 req/s, the fixed read load of scenario 6), BENCH_LAUNCH_RATE (100 launches/s, the fixed load of
// scenario 5's latency row), BENCH_THREADS_PER_CANVAS (10: scenario 5's launches and scenario 7's
// workloads on disk), BENCH_INVOKE_CALLS (2000: scenario 9's calls each way), BENCH_ONLY (e.g. `4,6`: run only these scenarios),
// BENCH_LOG_LEVEL (warn), BENCH_TMPDIR, BENCH_SERVER_NODE_ARGS (e.g. `--cpu-prof`), BENCH_SERVER_TIMING (1: each
// server prints its own p50 / p99 / max per route at stop, to tell server time from client time),
// BENCH_PACED_ONLY (1: scenario 5 runs only its paced latency row, not the full-speed one), BENCH_SUBSCRIBERS
// (1000: scenario 11's event subscribers), BENCH_STALLED_SUBSCRIBERS (50: its streams that never read),
// BENCH_EVENT_RATE (100 writes/s while they listen), BENCH_STALL_SEC (15 s of writes with the never-reading streams open),
// BENCH_EVENT_BACKLOG (30000 events in the log at start: what the never-reading streams are sent),
// BENCH_RECONNECT_SKILLS (100: scenario 12's skill records published at once), BENCH_DRIFT_WORKLOADS (100: scenario 16's
// threads pinning the written record; the issue's figure is at 1000), BENCH_DRIFT_WRITES (30: its writes per round),
// BENCH_IMPORT_SKILLS (220: scenario 17's skills imported one at a time onto one machine), BENCH_PUBLISH_MACHINES and BENCH_PUBLISH_RECORDS (10 and 1000:
// scenario 18's machines publishing at once, and each one's records; BENCH_PUBLISH_SEARCH=1: a search first, so the
// JSON store's word index is kept up to date by the publishes; BENCH_PUBLISH_UNIQUE=1: each record's front matter its
// own), BENCH_TRACES_SAMPLER and
// BENCH_TRACES_SAMPLER_ARG (scenario 14's traced server's OTEL_TRACES_SAMPLER and its argument), BENCH_TRACES_JSON
// (1: scenario 14 also runs a traced server exporting JSON bodies, beside the default protobuf). Scenario 13 uses
// BENCH_CONNECTIONS, BENCH_DURATION, BENCH_RUNS (its reads) and BENCH_INVOKE_CALLS (its calls).
// Scenario 8 (PostgreSQL next to the JSON store) runs when BENCH_DATABASE_URL names a server where databases
// may be created (not DATABASE_URL, which test runs set for other reasons); BENCH_PG_POOL sets its servers' DATABASE_POOL_SIZE; BENCH_BASELINE_BUILD (another build's
// `dist`, e.g. of the previous commit) adds that build's PostgreSQL rows to the same run.
// `--smoke`: one small scale, one short run each; checks the harness, not the service.
import {
  addWorkloads,
  BENCH_REQUIRED,
  benchProfileId,
  canvasToken,
  CANVAS_ID,
  compare,
  copyDataDir,
  killChildren,
  measureStartup,
  median,
  newCredentials,
  prepareDataDir,
  removeDir,
  runFsync,
  runLoad,
  startPlainServer,
  startServer,
  tempRoot,
  writersFor,
  type Compared,
  type Credentials,
  type RunningServer,
  type StartupTimes,
  type Variant,
} from './harness.js';
import type { LoadResult, LoadSpec } from './protocol.js';
import { measureInvocationOverhead } from './invocation-overhead.js';
import { measureMcpOverhead } from './mcp-overhead.js';
import { measurePinnedReads } from './pinned-reads.js';
import { measureDriftWrite } from './drift-write.js';
import { measureEventFanout } from './event-fanout.js';
import { measureReconnectPublish, summarize } from './reconnect-publish.js';
import { at, measureSkillImports } from './skill-imports.js';
import { measurePublishReads, type PublishReadsRound } from './publish-reads.js';
import { startOtlpSink } from './otlp-sink.js';
import { loadavg } from 'node:os';
import { request } from 'undici';

interface Options {
  scales: number[];
  runs: number;
  durationSec: number;
  warmupSec: number;
  connections: number;
  writers: number;
  readRate: number;
  launchRate: number;
  threadsPerCanvas: number;
  /** Scenario 9: calls each way (direct, through the service). */
  invokeCalls: number;
  /** Scenario 11: subscribers, streams that never read, writes/s, seconds the never-reading streams stay. */
  subscribers: number;
  stalled: number;
  eventRate: number;
  stallSec: number;
  backlog: number;
  /** Scenario 12: skill records in the publish. */
  reconnectSkills: number;
  /** Scenario 16: threads pinning the written record, and writes per round. */
  driftWorkloads: number;
  driftWrites: number;
  /** Scenario 17: skills imported one at a time onto one machine. */
  importSkills: number;
  /** Scenario 18: machines publishing at once, and each one's records. */
  publishMachines: number;
  publishRecords: number;
  only: Set<string> | undefined;
}

function options(argv: string[], env: NodeJS.ProcessEnv): Options {
  const num = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
    return value;
  };
  if (argv.includes('--smoke')) {
    // A short warm-up even here: a variant's first requests pay one-time costs (the secret scanner's rules
    // compile on the first write), and a 0.3 s run that spends them all on a loaded machine measures nothing.
    return {
      scales: [100],
      runs: 1,
      durationSec: 0.3,
      warmupSec: 0.3,
      connections: 4,
      writers: 8,
      readRate: 50,
      launchRate: 50,
      threadsPerCanvas: 10,
      invokeCalls: 20,
      subscribers: 20,
      stalled: 3,
      eventRate: 50,
      stallSec: 1,
      backlog: 1000,
      reconnectSkills: 20,
      driftWorkloads: 60,
      driftWrites: 5,
      importSkills: 15,
      publishMachines: 2,
      publishRecords: 50,
      only: undefined,
    };
  }
  return {
    scales: (env.BENCH_SCALES ?? '100,1000,10000')
      .split(',')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0)
      .sort((a, b) => a - b),
    runs: Math.max(1, Math.round(num('BENCH_RUNS', 5))),
    durationSec: num('BENCH_DURATION', 2),
    warmupSec: num('BENCH_WARMUP', 1),
    connections: Math.round(num('BENCH_CONNECTIONS', 10)),
    writers: Math.round(num('BENCH_WRITERS', 32)),
    readRate: num('BENCH_READ_RATE', 100),
    launchRate: num('BENCH_LAUNCH_RATE', 100),
    threadsPerCanvas: Math.round(num('BENCH_THREADS_PER_CANVAS', 10)),
    invokeCalls: Math.round(num('BENCH_INVOKE_CALLS', 2000)),
    subscribers: Math.round(num('BENCH_SUBSCRIBERS', 1000)),
    stalled: Math.round(num('BENCH_STALLED_SUBSCRIBERS', 50)),
    eventRate: num('BENCH_EVENT_RATE', 100),
    stallSec: num('BENCH_STALL_SEC', 15),
    backlog: Math.round(num('BENCH_EVENT_BACKLOG', 30_000)),
    reconnectSkills: Math.round(num('BENCH_RECONNECT_SKILLS', 100)),
    driftWorkloads: Math.round(num('BENCH_DRIFT_WORKLOADS', 100)),
    driftWrites: Math.round(num('BENCH_DRIFT_WRITES', 30)),
    importSkills: Math.max(10, Math.round(num('BENCH_IMPORT_SKILLS', 220))),
    publishMachines: Math.round(num('BENCH_PUBLISH_MACHINES', 10)),
    publishRecords: Math.min(1000, Math.round(num('BENCH_PUBLISH_RECORDS', 1000))),
    only: env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(',').map((s) => s.trim())) : undefined,
  };
}

export interface Row {
  scenario: string;
  title: string;
  scale: string;
  measured: string;
  baseline: string;
  ratio: string;
  target: string;
}

/** What a scenario gets for one scale. */
interface ScaleContext {
  count: number;
  creds: Credentials;
  template: string;
  root: string;
  opts: Options;
  /** One server per scale for the read scenarios (started on first use). */
  shared(): Promise<RunningServer>;
  /** The same on BENCH_BASELINE_BUILD, when set (before/after in one run). */
  baseline(): Promise<RunningServer | undefined>;
  /** Results a scenario leaves for a later one or for the cross-scale rows. */
  notes: Map<string, Compared>;
  /** The smallest scale's context, at every larger scale (a size compared with it side by side). */
  smallest?: ScaleContext;
}

interface Scenario {
  id: string;
  title: string;
  /** Set while the feature does not exist yet: printed as `n/a (<reason>)`. */
  unavailable?: string;
  /** Run at every scale (default), only at the largest or only at the smallest. */
  at?: 'every' | 'largest' | 'smallest';
  run?(ctx: ScaleContext): Promise<Omit<Row, 'scenario' | 'title' | 'scale'>[]>;
  /** Rows comparing scales, after every scale ran. */
  across?(byScale: Map<number, ScaleContext>): Omit<Row, 'scenario' | 'title'>[];
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const rate = (c: Compared[string], unit = 'req/s') =>
  `${fmt(c.perSecond)} ${unit} (p99 ${fmt(c.p99, 1)} ms)${c.unexpected + c.errors ? ` ⚠ ${c.unexpected} unexpected, ${c.errors} errors` : ''}`;
const scaleName = (n: number) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));

function verdict(ratio: number, rule: string, holds: boolean): string {
  return `${rule} ${holds ? '✓' : '✗'}`;
}

function getSpec(
  server: { url: string },
  path: string,
  headers: Record<string, string>,
  ctx: ScaleContext,
  expect = 200,
  extra: Partial<LoadSpec> = {},
) {
  return (durationSec: number): Promise<LoadResult> =>
    runLoad({
      url: server.url,
      connections: ctx.opts.connections,
      durationSec,
      expectStatus: [expect],
      request: { kind: 'get', path, headers },
      ...extra,
    });
}

function writesSpec(url: string, ctx: ScaleContext, mode: 'replace' | 'create', durationSec: number, tag: string): LoadSpec {
  return {
    url,
    connections: ctx.opts.writers,
    durationSec,
    expectStatus: mode === 'create' ? [201] : [200],
    request: { kind: 'writes', mode, writers: writersFor(ctx.count, ctx.creds), tag },
  };
}

let runCounter = 0;
/** One write run on a fresh copy of the scale's DATA_DIR: start, warm up, measure, stop. */
function writeVariant(ctx: ScaleContext, name: string, mode: 'replace' | 'create', env: Record<string, string>): Variant {
  return {
    name,
    async run(durationSec) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const server = await startServer(dir, ctx.creds, env);
      try {
        const tag = `r${++runCounter}`;
        if (ctx.opts.warmupSec > 0) await runLoad(writesSpec(server.url, ctx, mode, Math.min(ctx.opts.warmupSec, 1), `${tag}w`));
        return await runLoad(writesSpec(server.url, ctx, mode, durationSec, tag));
      } finally {
        await server.stop();
        await removeDir(dir);
      }
    },
  };
}

/** BENCH_BASELINE_BUILD: another build's `dist` (e.g. of main) whose server some scenarios also run, alternated with this one. */
const baselineBuild = process.env.BENCH_BASELINE_BUILD;
const owner = (ctx: ScaleContext) => ({ authorization: `Bearer ${ctx.creds.owner}` });
const BATCH_OFF = { STORE_MAX_BATCH: '1' };
/** The launch server: two seeded host records as required defaults (every bench server runs without the write rate limit). */
const LAUNCH_ENV = { REQUIRED_RESOURCE_IDS: BENCH_REQUIRED.join(',') };

/** Quantiles of a Prometheus histogram as bucket upper bounds, from the server's /metrics text. */
export function histogramSummary(
  metrics: string,
  name: string,
  labels: string,
): { count: number; mean: number; at(q: number): number; shareUpTo(le: number): number } | undefined {
  const buckets: [number, number][] = [];
  let sum = 0;
  let count = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(name) || !line.includes(labels)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith(`${name}_bucket`)) {
      const le = /le="([^"]+)"/.exec(line)?.[1];
      if (le) buckets.push([le === '+Inf' ? Infinity : Number(le), value]);
    } else if (line.startsWith(`${name}_sum`)) sum = value;
    else if (line.startsWith(`${name}_count`)) count = value;
  }
  if (count === 0) return undefined;
  buckets.sort((a, b) => a[0] - b[0]);
  return {
    count,
    mean: sum / count,
    at: (q) => buckets.find(([, c]) => c >= q * count)?.[0] ?? Infinity,
    shareUpTo: (le) => (buckets.find(([b]) => b === le)?.[1] ?? NaN) / count,
  };
}

async function workloadWrites(url: string): Promise<string> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  const writes = histogramSummary(text, 'registry_store_write_duration_seconds', 'file="workloads"');
  const batch = histogramSummary(text, 'registry_store_batch_operations', 'file="workloads"');
  if (!writes || !batch) return 'no workload writes';
  const ms = (s: number) => (s === Infinity ? '> 1 s' : `≤ ${fmt(s * 1000, 1)} ms`);
  const shares = [0.001, 0.0025, 0.005, 0.01, 0.025].map((le) => `${fmt(writes.shareUpTo(le) * 100, 1)}`).join(' / ');
  return `durable writes (workloads): ${fmt(writes.count)}, mean ${fmt(writes.mean * 1000, 1)} ms, p50 ${ms(writes.at(0.5))}, p99 ${ms(writes.at(0.99))} (% ≤ 1 / 2.5 / 5 / 10 / 25 ms: ${shares}); ${fmt(batch.mean, 1)} launches per write`;
}

/** The scenario table. Add a scenario by adding an entry; rows print in this order. */
export const SCENARIOS: Scenario[] = [
  {
    id: '1',
    title: 'owner catalogue GET (identity, br) and RFS catalogue GET vs a plain node:http server sending the same bytes',
    async run(ctx) {
      const s = await ctx.shared();
      const rfsPath = `/api/rfs/${CANVAS_ID}/resources`;
      const rfsHeaders = { authorization: `Bearer ${canvasToken(ctx.creds)}` };
      const brHeaders = { ...owner(ctx), 'accept-encoding': 'br' };
      const plain = await startPlainServer(s.url, [
        { path: '/api/acp/resources', headers: owner(ctx) },
        { path: '/api/acp/resources', headers: brHeaders },
        { path: rfsPath, headers: rfsHeaders },
      ]);
      const b = await ctx.baseline();
      try {
        const r = await compare(
          [
            ...(b
              ? [
                  { name: 'base-identity', run: getSpec(b, '/api/acp/resources', owner(ctx), ctx) },
                  { name: 'base-br', run: getSpec(b, '/api/acp/resources', brHeaders, ctx) },
                  { name: 'base-rfs', run: getSpec(b, rfsPath, rfsHeaders, ctx) },
                ]
              : []),
            { name: 'catalogue', run: getSpec(s, '/api/acp/resources', owner(ctx), ctx) },
            { name: 'plain', run: getSpec(plain, '/api/acp/resources', owner(ctx), ctx) },
            { name: 'constant', run: getSpec(s, '/bench/constant', {}, ctx) },
            { name: 'br', run: getSpec(s, '/api/acp/resources', brHeaders, ctx) },
            { name: 'plain-br', run: getSpec(plain, '/api/acp/resources', brHeaders, ctx) },
            { name: 'rfs', run: getSpec(s, rfsPath, rfsHeaders, ctx) },
            { name: 'plain-rfs', run: getSpec(plain, rfsPath, rfsHeaders, ctx) },
          ],
          ctx.opts.runs,
          ctx.opts.durationSec,
          ctx.opts.warmupSec,
        );
        const [identityBytes, brBytes, rfsBytes] = plain.sizes.map((b) => `${fmt(b / 1024, 0)} KiB`);
        const judged = ctx.count >= 1000;
        const row = (what: string, a: Compared[string], b: Compared[string], bytes: string) => {
          const ratio = a.perSecond / b.perSecond;
          return {
            measured: `${what}: ${rate(a)}`,
            baseline: `plain node:http: ${rate(b)} · ${bytes}`,
            ratio: `${fmt(ratio, 2)}×`,
            target: judged ? verdict(ratio, '≥ 0.9×', ratio >= 0.9) : '(≥ 0.9× at 1k and 10k)',
          };
        };
        const inApp = r.catalogue!.perSecond / r.constant!.perSecond;
        const before = (what: string, now: Compared[string], base: Compared[string], plainOf: Compared[string]) => ({
          measured: `baseline build, ${what}: ${rate(base)}`,
          baseline: `plain node:http: ${rate(plainOf)}`,
          ratio: `${fmt(base.perSecond / plainOf.perSecond, 2)}×`,
          target: `this build vs the baseline build: ${fmt(now.perSecond / base.perSecond, 2)}×`,
        });
        return [
          row('identity', r.catalogue!, r.plain!, identityBytes!),
          ...(b ? [before('identity', r.catalogue!, r['base-identity']!, r.plain!)] : []),
          row('br', r.br!, r['plain-br']!, brBytes!),
          ...(b ? [before('br', r.br!, r['base-br']!, r['plain-br']!)] : []),
          row('RFS (canvas token)', r.rfs!, r['plain-rfs']!, rfsBytes!),
          ...(b ? [before('RFS', r.rfs!, r['base-rfs']!, r['plain-rfs']!)] : []),
          {
            measured: `identity: ${rate(r.catalogue!)}`,
            baseline: `the same bytes from a constant route in the app: ${rate(r.constant!)}`,
            ratio: `${fmt(inApp, 2)}×`,
            target: '—',
          },
        ];
      } finally {
        await plain.stop();
      }
    },
  },
  {
    id: '2',
    title: 'catalogue GET with If-None-Match (304) vs /healthz, 10 and 32 connections',
    async run(ctx) {
      const s = await ctx.shared();
      const b = await ctx.baseline();
      const rows: Omit<Row, 'scenario' | 'title' | 'scale'>[] = [];
      for (const connections of [10, 32]) {
        const at = { connections };
        const notModified = (server: RunningServer) =>
          getSpec(server, '/api/acp/resources', { ...owner(ctx), 'if-none-match': server.ready.etag }, ctx, 304, at);
        // /healthz also with the 304's request headers (ignored there): what the larger request alone costs
        // the parser and the load generator sharing the two cores.
        const sameHeaders = { ...owner(ctx), 'if-none-match': s.ready.etag };
        const r = await compare(
          [
            { name: '304', run: notModified(s) },
            { name: 'healthz', run: getSpec(s, '/healthz', {}, ctx, 200, at) },
            { name: 'healthz-headers', run: getSpec(s, '/healthz', sameHeaders, ctx, 200, at) },
            ...(b
              ? [
                  { name: '304-baseline', run: notModified(b) },
                  { name: 'healthz-baseline', run: getSpec(b, '/healthz', {}, ctx, 200, at) },
                ]
              : []),
          ],
          ctx.opts.runs,
          ctx.opts.durationSec,
          ctx.opts.warmupSec,
        );
        const ratio = r['304']!.perSecond / r.healthz!.perSecond;
        rows.push({
          measured: `${connections} connections: ${rate(r['304']!)}`,
          baseline: rate(r.healthz!),
          ratio: `${fmt(ratio, 2)}×`,
          target: verdict(ratio, '≥ 0.9×', ratio >= 0.9),
        });
        rows.push({
          measured: `${connections} connections: ${rate(r['304']!)}`,
          baseline: `/healthz sent the 304's request headers: ${rate(r['healthz-headers']!)}`,
          ratio: `${fmt(r['304']!.perSecond / r['healthz-headers']!.perSecond, 2)}×`,
          target: '—',
        });
        if (b) {
          const before = r['304-baseline']!.perSecond / r['healthz-baseline']!.perSecond;
          rows.push({
            measured: `baseline build, ${connections} connections: ${rate(r['304-baseline']!)}`,
            baseline: `baseline build: ${rate(r['healthz-baseline']!)}`,
            ratio: `${fmt(before, 2)}×`,
            target: `304/s vs the baseline build's: ${fmt(r['304']!.perSecond / r['304-baseline']!.perSecond, 2)}×`,
          });
        }
      }
      return rows;
    },
  },
  {
    id: '4',
    title: 'acknowledged registrations/s, 32 writers: batched vs one write per request',
    async run(ctx) {
      const r = await compare(
        [
          writeVariant(ctx, 'replace', 'replace', {}),
          writeVariant(ctx, 'replace-1', 'replace', BATCH_OFF),
          writeVariant(ctx, 'create', 'create', {}),
          writeVariant(ctx, 'create-1', 'create', BATCH_OFF),
          // The smallest catalogue in the same rounds, so the size comparison is side by side.
          ...(ctx.smallest
            ? [writeVariant(ctx.smallest, 'replace-small', 'replace', {}), writeVariant(ctx.smallest, 'create-small', 'create', {})]
            : []),
          ...(baselineBuild
            ? [
                writeVariant(ctx, 'replace-base', 'replace', { BENCH_BUILD: baselineBuild }),
                writeVariant(ctx, 'create-base', 'create', { BENCH_BUILD: baselineBuild }),
              ]
            : []),
        ],
        ctx.opts.runs,
        ctx.opts.durationSec,
        0,
      );
      ctx.notes.set('writes', r);
      return (['replace', 'create'] as const).flatMap((mode) => {
        const name = mode === 'replace' ? 'replace own' : 'new IDs';
        const ratio = r[mode]!.perSecond / r[`${mode}-1`]!.perSecond;
        const base = r[`${mode}-base`];
        return [
          {
            measured: `${name}: ${rate(r[mode]!, 'writes/s')}`,
            baseline: `STORE_MAX_BATCH=1: ${rate(r[`${mode}-1`]!, 'writes/s')}`,
            ratio: `${fmt(ratio, 1)}×`,
            target: verdict(ratio, '≥ 4×', ratio >= 4),
          },
          ...(base
            ? [
                {
                  measured: `${name}: ${rate(r[mode]!, 'writes/s')}`,
                  baseline: `baseline build: ${rate(base, 'writes/s')}`,
                  ratio: `${fmt(r[mode]!.perSecond / base.perSecond, 2)}×`,
                  target: 'this build vs the baseline build',
                },
              ]
            : []),
        ];
      });
    },
    across(byScale) {
      const scales = [...byScale.keys()].sort((a, b) => a - b);
      const small = scales[0]!;
      if (scales.length < 2)
        return [
          { scale: `${scaleName(small)} vs ${scaleName(small)}`, measured: 'n/a (needs two scales)', baseline: '', ratio: '', target: '' },
        ];
      // Every larger scale against the smallest: the cost of one write must not grow with the catalogue.
      return scales.slice(1).flatMap((large) =>
        (['replace', 'create'] as const).map((mode) => {
          const writes = byScale.get(large)!.notes.get('writes')!;
          const a = writes[mode]!;
          const b = writes[`${mode}-small`]!;
          const ratio = a.perSecond / b.perSecond;
          return {
            scale: `${scaleName(large)} vs ${scaleName(small)}`,
            measured: `${mode === 'replace' ? 'replace own' : 'new IDs'} at ${scaleName(large)}: ${fmt(a.perSecond)} writes/s`,
            baseline: `at ${scaleName(small)}: ${fmt(b.perSecond)} writes/s`,
            ratio: `${fmt(ratio, 2)}×`,
            target: verdict(ratio, '≥ 0.8×', ratio >= 0.8),
          };
        }),
      );
    },
  },
  {
    id: '5',
    title: "launches of new threads (req/s, p99) vs the disk's append + fdatasync in the same data directory",
    async run(ctx) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const server = await startServer(dir, ctx.creds, LAUNCH_ENV);
      // With BENCH_BASELINE_BUILD, that build's server launches too, on its own copy, alternated with this one.
      const baseDir = baselineBuild ? await copyDataDir(ctx.template, ctx.root) : undefined;
      const base = baseDir ? await startServer(baseDir, ctx.creds, { ...LAUNCH_ENV, BENCH_BUILD: baselineBuild! }) : undefined;
      try {
        const profileIds = Array.from({ length: ctx.count }, (_, j) => benchProfileId(j));
        const spec = (durationSec: number, connections: number, overallRate?: number, on = server): LoadSpec => ({
          url: on.url,
          connections,
          durationSec,
          ...(overallRate ? { overallRate } : {}),
          expectStatus: [201],
          request: {
            kind: 'launches',
            token: ctx.creds.owner,
            profileIds,
            threadsPerCanvas: ctx.opts.threadsPerCanvas,
            tag: `L${++runCounter}`,
          },
        });
        // The disk's floor in the same run: appends + fdatasync on the same data directory, in a process of
        // its own, back to back (beside full speed) and at the paced rate (beside the paced launches).
        const disk =
          (rate?: number) =>
          async (durationSec: number): Promise<LoadResult> => {
            const f = await runFsync({ dir, durationSec, ...(rate ? { rate } : {}) });
            return { perSecond: f.perSecond, expected: f.writes, unexpected: 0, errors: 0, p50: f.p50, p99: f.p99, durationSec };
          };
        const r = await compare(
          [
            ...(process.env.BENCH_PACED_ONLY
              ? []
              : [
                  { name: 'max', run: (d: number) => runLoad(spec(d, ctx.opts.connections)) },
                  { name: 'disk-max', run: disk() },
                ]),
            { name: 'paced', run: (d) => runLoad(spec(d, 2, ctx.opts.launchRate)) },
            { name: 'disk-paced', run: disk(ctx.opts.launchRate) },
            ...(base
              ? [
                  { name: 'paced-base', run: (d: number) => runLoad(spec(d, 2, ctx.opts.launchRate, base)) },
                  ...(process.env.BENCH_PACED_ONLY
                    ? []
                    : [{ name: 'max-base', run: (d: number) => runLoad(spec(d, ctx.opts.connections, undefined, base)) }]),
                ]
              : []),
          ],
          ctx.opts.runs,
          ctx.opts.durationSec,
          ctx.opts.warmupSec,
        );
        const writes = await workloadWrites(server.url);
        const judged = ctx.count === 10_000;
        const versus = (launch: Compared[string], floor: Compared[string]) => {
          const ratio = launch.p99 / floor.p99;
          return {
            ratio: `${fmt(ratio, 2)}× the disk's p99`,
            target: judged ? verdict(ratio, '≤ 1.5×', ratio <= 1.5) : '(≤ 1.5× at 10k)',
          };
        };
        const problems = (c: Compared[string]) => (c.unexpected + c.errors ? ` ⚠ ${c.unexpected} unexpected, ${c.errors} errors` : '');
        const perRun = r.paced!.runs.map((x) => fmt(x.p99, 1)).join(', ');
        return [
          ...(r.max
            ? [
                {
                  measured: `full speed, ${ctx.opts.connections} connections: ${rate(r.max, 'launches/s')}`,
                  baseline: `append + fdatasync back to back in its data directory: p99 ${fmt(r['disk-max']!.p99, 2)} ms (p50 ${fmt(r['disk-max']!.p50, 2)}; ${fmt(r['disk-max']!.perSecond)}/s)`,
                  ...versus(r.max, r['disk-max']!),
                },
              ]
            : []),
          {
            measured: `${fmt(ctx.opts.launchRate)} launches/s: p99 ${fmt(r.paced!.p99, 1)} ms (p50 ${fmt(r.paced!.p50, 1)}; p99 per run ${perRun})${problems(r.paced!)}`,
            baseline: `append + fdatasync at ${fmt(ctx.opts.launchRate)}/s in its data directory: p99 ${fmt(r['disk-paced']!.p99, 2)} ms (p50 ${fmt(r['disk-paced']!.p50, 2)})`,
            ...versus(r.paced!, r['disk-paced']!),
          },
          ...(r['paced-base']
            ? [
                {
                  measured: `baseline build, ${fmt(ctx.opts.launchRate)} launches/s: p99 ${fmt(r['paced-base'].p99, 1)} ms (p50 ${fmt(r['paced-base'].p50, 1)}; p99 per run ${r['paced-base'].runs.map((x) => fmt(x.p99, 1)).join(', ')})${problems(r['paced-base'])}`,
                  baseline: `this build: p99 ${fmt(r.paced!.p99, 1)} ms`,
                  ratio: `${fmt(r['paced-base'].p99 / r['disk-paced']!.p99, 2)}× the disk's p99`,
                  target: `this build's p99 vs the baseline build's: ${fmt(r.paced!.p99 / r['paced-base'].p99, 2)}×`,
                },
              ]
            : []),
          ...(r['max-base'] && r.max
            ? [
                {
                  measured: `baseline build, full speed: ${rate(r['max-base'], 'launches/s')}`,
                  baseline: `this build: ${rate(r.max, 'launches/s')}`,
                  ratio: `${fmt(r['max-base'].p99 / r['disk-max']!.p99, 2)}× the disk's p99`,
                  target: `this build's launches/s vs the baseline build's: ${fmt(r.max.perSecond / r['max-base'].perSecond, 2)}×`,
                },
              ]
            : []),
          {
            measured: writes,
            baseline: `${ctx.count} profiles, ${ctx.opts.threadsPerCanvas} new threads per new canvas`,
            ratio: '',
            target: '—',
          },
        ];
      } finally {
        await server.stop();
        await removeDir(dir);
        await base?.stop();
        if (baseDir) await removeDir(baseDir);
      }
    },
  },
  {
    id: '6',
    title: 'catalogue GET p99 while 32 writers run vs idle (fixed read rate)',
    async run(ctx) {
      const s = await ctx.shared();
      const read = (durationSec: number) =>
        runLoad({
          url: s.url,
          connections: 2,
          durationSec,
          overallRate: ctx.opts.readRate,
          expectStatus: [200],
          request: { kind: 'get', path: '/api/acp/resources', headers: owner(ctx) },
        });
      const r = await compare(
        [
          { name: 'idle', run: read },
          {
            name: 'loaded',
            async run(durationSec) {
              const writes = runLoad(writesSpec(s.url, ctx, 'replace', durationSec + 0.5, `l${++runCounter}`));
              await new Promise((res) => setTimeout(res, 200));
              const [result] = await Promise.all([read(durationSec), writes]);
              return result;
            },
          },
        ],
        ctx.opts.runs,
        ctx.opts.durationSec,
        ctx.opts.warmupSec,
      );
      const ratio = r.loaded!.p99 / r.idle!.p99;
      return [
        {
          measured: `p99 ${fmt(r.loaded!.p99, 1)} ms (p50 ${fmt(r.loaded!.p50, 1)}) under writes`,
          baseline: `p99 ${fmt(r.idle!.p99, 1)} ms (p50 ${fmt(r.idle!.p50, 1)}) idle, ${fmt(ctx.opts.readRate)} req/s`,
          ratio: `${fmt(ratio, 2)}×`,
          target: verdict(ratio, '≤ 2×', ratio <= 2),
        },
      ];
    },
  },
  {
    id: '7',
    title: 'start-up time and RSS',
    at: 'largest',
    async run(ctx) {
      const n = scaleName(ctx.count);
      const canvases = ctx.count;
      const threads = ctx.opts.threadsPerCanvas;
      const withWorkloads = await copyDataDir(ctx.template, ctx.root);
      await addWorkloads(withWorkloads, ctx.count, canvases, threads);
      const variants: [string, string][] = [
        [ctx.template, `${n} resources, ${n} profiles`],
        [
          withWorkloads,
          `${n} resources, ${n} profiles, ${scaleName(canvases * threads)} workloads (${scaleName(canvases)} canvases × ${threads} threads)`,
        ],
      ];
      const rows: Omit<Row, 'scenario' | 'title' | 'scale'>[] = [];
      for (const [template, what] of variants) {
        // Start-up writes nothing the next start depends on, so one copy serves every run (page cache warm).
        const dir = await copyDataDir(template, ctx.root);
        // With BENCH_BASELINE_BUILD, that build starts on the same directory, alternating with this one.
        const build = process.env.BENCH_BASELINE_BUILD;
        const runs: StartupTimes[] = [];
        const before: StartupTimes[] = [];
        for (let i = 0; i < ctx.opts.runs; i++) {
          runs.push(await measureStartup(dir, ctx.creds));
          if (build) before.push(await measureStartup(dir, ctx.creds, { BENCH_BUILD: build }));
        }
        await removeDir(dir);
        const times = (r: StartupTimes[]) =>
          `${fmt(median(r.map((x) => x.listeningMs)))} ms to listening, ${fmt(median(r.map((x) => x.readyzMs)))} ms to /readyz 200, RSS ${fmt(median(r.map((x) => x.rss)) / 2 ** 20)} MiB`;
        rows.push({
          measured: times(runs),
          baseline: build ? `${what}; baseline build: ${times(before)}` : what,
          ratio: build ? `${fmt(median(runs.map((r) => r.readyzMs)) / median(before.map((r) => r.readyzMs)), 2)}× (to /readyz)` : '',
          target: '—',
        });
      }
      await removeDir(withWorkloads);
      return rows;
    },
  },
  {
    id: '8',
    title: 'PostgreSQL registrations/s vs the JSON store, 32 writers',
    ...(process.env.BENCH_DATABASE_URL
      ? {}
      : { unavailable: 'set BENCH_DATABASE_URL to a PostgreSQL server where databases may be created' }),
    async run(ctx) {
      const r = await compare([...storeVariants(ctx, 'replace'), ...storeVariants(ctx, 'create')], ctx.opts.runs, ctx.opts.durationSec, 0);
      const pool = process.env.BENCH_PG_POOL ?? '10';
      return (['replace', 'create'] as const).flatMap((mode) => {
        const json = r[`json-${mode}`]!;
        const pg = r[`pg-${mode}`]!;
        const before = r[`pg-${mode}-baseline`];
        const name = mode === 'replace' ? 'replace own' : 'new IDs';
        const ratio = pg.perSecond / json.perSecond;
        return [
          {
            measured: `${name}, PostgreSQL (pool ${pool}): ${rate(pg, 'writes/s')}`,
            baseline: `JSON store: ${rate(json, 'writes/s')}`,
            ratio: `${fmt(ratio, 2)}×`,
            target: verdict(ratio, '≥ 0.8×', ratio >= 0.8),
          },
          ...(before
            ? [
                {
                  measured: `${name}, PostgreSQL on the baseline build: ${rate(before, 'writes/s')}`,
                  baseline: `JSON store: ${rate(json, 'writes/s')}`,
                  ratio: `${fmt(before.perSecond / json.perSecond, 2)}×`,
                  target: `(this build / baseline: ${fmt(pg.perSecond / before.perSecond, 1)}×)`,
                },
              ]
            : []),
        ];
      });
    },
  },
  {
    id: '9',
    title: 'hosted invocation overhead',
    at: 'largest',
    async run(ctx) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const load = loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
      const r = await measureInvocationOverhead(dir, ctx.root, ctx.creds, ctx.opts.invokeCalls);
      await removeDir(dir);
      return [
        {
          measured: `through the service p50 ${fmt(r.service.p50, 2)} ms, p99 ${fmt(r.service.p99, 2)} ms (overhead p50 +${fmt(r.service.p50 - r.direct.p50, 2)} ms, p99 +${fmt(r.service.p99 - r.direct.p99, 2)} ms)`,
          baseline: `direct p50 ${fmt(r.direct.p50, 2)} ms, p99 ${fmt(r.direct.p99, 2)} ms; ${fmt(r.calls)} sequential calls each, alternating; load average ${load}`,
          ratio: `${fmt(r.service.p50 / r.direct.p50, 2)}×`,
          target: '—',
        },
      ];
    },
  },
  {
    id: '10',
    title: 'owner catalogue GET compressed (gzip, br) vs as it is: req/s and bytes per response',
    async run(ctx) {
      const s = await ctx.shared();
      const path = '/api/acp/resources';
      const codings = ['identity', 'gzip', 'br'] as const;
      const headers = (coding: (typeof codings)[number]) =>
        coding === 'identity' ? owner(ctx) : { ...owner(ctx), 'accept-encoding': coding };
      const bytes = new Map<string, number>();
      for (const coding of codings) bytes.set(coding, await responseBytes(s, path, headers(coding), coding));
      const r = await compare(
        codings.map((coding) => ({ name: coding, run: getSpec(s, path, headers(coding), ctx) })),
        ctx.opts.runs,
        ctx.opts.durationSec,
        ctx.opts.warmupSec,
      );
      const kib = (n: number) => `${fmt(n / 1024, n < 10 * 1024 ? 1 : 0)} KiB`;
      const identity = r.identity!;
      const plain = bytes.get('identity')!;
      return (['gzip', 'br'] as const).map((coding) => {
        const speed = r[coding]!.perSecond / identity.perSecond;
        const fewer = plain / bytes.get(coding)!;
        const holds = fewer >= 5 && speed >= 1;
        return {
          measured: `${coding}: ${rate(r[coding]!)} · ${kib(bytes.get(coding)!)} per response`,
          baseline: `identity: ${rate(identity)} · ${kib(plain)}`,
          ratio: `${fmt(speed, 2)}× req/s, ${fmt(fewer, 1)}× fewer bytes`,
          target: ctx.count === 10_000 ? verdict(0, '≥ 5× fewer bytes, ≥ 1× req/s', holds) : '(at 10k)',
        };
      });
    },
  },
  {
    id: '11',
    title: 'change events fanned out to subscribers (JSON store)',
    at: 'largest',
    async run(ctx) {
      const o = ctx.opts;
      const runs = await measureEventFanout({
        template: ctx.template,
        root: ctx.root,
        creds: ctx.creds,
        count: ctx.count,
        subscribers: o.subscribers,
        stalled: o.stalled,
        backlog: o.backlog,
        runs: o.runs,
        durationSec: o.durationSec,
        warmupSec: o.warmupSec,
        rate: o.eventRate,
        stallSec: o.stallSec,
        fullSpeed: (url, durationSec) => runLoad(writesSpec(url, ctx, 'create', durationSec, `f${++runCounter}`)),
        log: (m) => process.stderr.write(`[bench] ${m}\n`),
      });
      const m = (f: (r: (typeof runs)[number]) => number) => median(runs.map(f));
      const n = o.subscribers;
      const load = loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
      const kib = (bytes: number) => `${fmt(bytes / 1024, 1)} KiB`;
      const mib = (bytes: number) => `${fmt(bytes / 2 ** 20, 1)} MiB`;
      const p99 = m((r) => r.delivery.p99);
      const perRun = runs.map((r) => fmt(r.delivery.p99, 1)).join(', ');
      const missing = runs.reduce((s, r) => s + r.delivery.missing, 0);
      const paced = m((r) => r.paced.with.perSecond) / m((r) => r.paced.without.perSecond);
      const full = m((r) => r.full.with.perSecond) / m((r) => r.full.without.perSecond);
      const perSubscriber = m((r) => (r.subscribed.rss - r.idle.rss) / n);
      const heapPerSubscriber = m((r) => (r.subscribed.heapUsed + r.subscribed.external - r.idle.heapUsed - r.idle.external) / n);
      const growth = Math.max(...runs.map((r) => r.stall.peakRss - r.stall.before.rss));
      const closed = runs.map((r) => r.stall.before.connections + o.stalled - r.stall.after.connections);
      const stalledP99 = m((r) => r.stall.delivery.p99);
      const stalledMissing = runs.reduce((s, r) => s + r.stall.delivery.missing, 0);
      // Per stream: the 256 KiB unsent bound and one page of events (about 64 KiB), twice over for the
      // allocator and the collector's lag.
      const bound = o.stalled * 2 * 320 * 1024;
      const writesDuring = `${fmt(o.eventRate)} writes/s`;
      /** Writes not acknowledged with 201 over all runs (e.g. 503 `overloaded` when the event loop fell behind). */
      const refused = (n: number) => (n ? ` ⚠ ${fmt(n)} writes not acknowledged` : '');
      const pacedRefused = (k: 'with' | 'without') => refused(runs.reduce((s, r) => s + r.paced[k].errors, 0));
      const fullRefused = (k: 'with' | 'without') => refused(runs.reduce((s, r) => s + r.full[k].unexpected + r.full[k].errors, 0));
      const stallRefused = refused(runs.reduce((s, r) => s + r.stall.writes.errors, 0));
      return [
        {
          measured: `delivery after the 201: p99 ${fmt(p99, 1)} ms (p50 ${fmt(
            m((r) => r.delivery.p50),
            1,
          )}, max ${fmt(
            m((r) => r.delivery.max),
            1,
          )}, min ${fmt(
            m((r) => r.delivery.min),
            1,
          )}; p99 per run ${perRun})${missing ? ` ⚠ ${fmt(missing)} never received` : ''}`,
          baseline: `${fmt(n)} subscribers × ${fmt(m((r) => r.delivery.samples / n))} events at ${writesDuring} (2 subscriber processes); load average ${load}`,
          ratio: '',
          target: verdict(0, '≤ 200 ms', p99 <= 200 && missing === 0),
        },
        {
          measured: `with ${fmt(n)} subscribers: ${fmt(
            m((r) => r.paced.with.perSecond),
            1,
          )} writes/s (p99 ${fmt(
            m((r) => r.paced.with.p99),
            1,
          )} ms)${pacedRefused('with')}`,
          baseline: `without: ${fmt(
            m((r) => r.paced.without.perSecond),
            1,
          )} writes/s (p99 ${fmt(
            m((r) => r.paced.without.p99),
            1,
          )} ms)${pacedRefused('without')}, paced at ${writesDuring}; server CPU per write ${fmt(
            m((r) => r.cpuPerWrite.with),
            2,
          )} ms with, ${fmt(
            m((r) => r.cpuPerWrite.without),
            2,
          )} ms without (${fmt(((m((r) => r.cpuPerWrite.with) - m((r) => r.cpuPerWrite.without)) * 1000) / n, 1)} µs per event per subscriber)`,
          ratio: `${fmt(paced, 2)}×`,
          target: verdict(paced, '≥ 0.9×', paced >= 0.9),
        },
        {
          measured: `with ${fmt(n)} subscribers, ${o.writers} writers: ${fmt(m((r) => r.full.with.perSecond))} writes/s (p99 ${fmt(
            m((r) => r.full.with.p99),
            1,
          )} ms)${fullRefused('with')}`,
          baseline: `without: ${fmt(m((r) => r.full.without.perSecond))} writes/s (p99 ${fmt(
            m((r) => r.full.without.p99),
            1,
          )} ms)${fullRefused('without')}, full speed`,
          ratio: `${fmt(full, 2)}×`,
          target: '—',
        },
        {
          measured: `${kib(perSubscriber)} RSS per subscriber (JS heap + external: ${kib(heapPerSubscriber)})`,
          baseline: `server RSS after a full GC: ${mib(m((r) => r.idle.rss))} idle, ${mib(m((r) => r.subscribed.rss))} with ${fmt(n)} idle subscribers`,
          ratio: '',
          target: verdict(0, '≤ 50 KiB', perSubscriber <= 50 * 1024),
        },
        {
          measured: `${o.stalled} streams that never read, ${fmt(o.stallSec)} s of ${writesDuring}: server RSS +${mib(growth)} at most (${kib(growth / o.stalled)} per stream, each owed the ${fmt(o.backlog)}-event backlog; bound ${mib(bound)}); closed by the stall rule: ${closed.join(', ')} of ${o.stalled} per run${stallRefused}`,
          baseline: `the reading subscribers meanwhile: p99 ${fmt(stalledP99, 1)} ms (p50 ${fmt(
            m((r) => r.stall.delivery.p50),
            1,
          )})${stalledMissing ? ` ⚠ ${fmt(stalledMissing)} never received` : ''}, without them ${fmt(p99, 1)} ms`,
          ratio: `${fmt(stalledP99 / p99, 2)}× p99`,
          target: verdict(0, 'bounded, p99 ≤ 200 ms', growth <= bound && stalledP99 <= 200 && stalledMissing === 0),
        },
      ];
    },
  },
  {
    id: '12',
    title: "owner catalogue reads while a machine publishes its whole set of skills (serve's reconnect)",
    at: 'smallest',
    async run(ctx) {
      const o = ctx.opts;
      const { rounds, baseline, bytes } = await measureReconnectPublish({
        template: ctx.template,
        root: ctx.root,
        creds: ctx.creds,
        skills: o.reconnectSkills,
        rounds: o.runs,
        readRate: o.readRate,
        minReadSec: o.durationSec,
        warmupSec: Math.min(o.warmupSec, 1),
        ...(baselineBuild ? { baselineBuild } : {}),
        log: (m) => process.stderr.write(`[bench] ${m}\n`),
      });
      const reads = (s: ReturnType<typeof summarize>) =>
        `p99 ${fmt(s.p99, 1)} ms (p50 ${fmt(s.p50, 1)}, max ${fmt(s.max, 1)}), ${fmt(s.overloaded)} × 503 of ${fmt(s.reads)} reads${s.otherFailures ? ` ⚠ ${fmt(s.otherFailures)} other failures` : ''}`;
      const mib = `${fmt(bytes / 2 ** 20, 1)} MiB`;
      const rowsOf = (of: typeof rounds, build: string) => {
        const steady = summarize(of.map((r) => r.steady));
        return (
          [
            ['first publish', summarize(of.map((r) => r.first))],
            ['re-publish after a restart, unchanged', summarize(of.map((r) => r.republish))],
          ] as const
        ).map(([what, s]) => {
          const refused = s.publishStatuses.filter((c) => c !== 200);
          return {
            measured: `${build}${what} of ${fmt(o.reconnectSkills)} skills (${mib}), answered in ${fmt(s.publishMs)} ms${refused.length ? ` ⚠ publish answered ${refused.join(', ')}` : ''}: reads ${reads(s)}`,
            baseline: `steady state (no publish): ${reads(steady)}; ${fmt(o.readRate)} reads/s`,
            ratio: `${fmt(s.p99 / steady.p99, 2)}× p99`,
            target: verdict(0, 'p99 ≤ 100 ms, no 503', s.p99 <= 100 && s.overloaded === 0 && refused.length === 0),
          };
        });
      };
      return [...rowsOf(rounds, ''), ...(baseline.length ? rowsOf(baseline, 'baseline build, ') : [])];
    },
  },
  {
    id: '13',
    title: 'MCP next to RFS: resources/read vs the same GET, tools/call vs /invoke',
    at: 'smallest',
    async run(ctx) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const r = await measureMcpOverhead(dir, ctx.root, ctx.creds, {
        calls: ctx.opts.invokeCalls,
        connections: ctx.opts.connections,
        durationSec: ctx.opts.durationSec,
        runs: ctx.opts.runs,
      });
      await removeDir(dir);
      const readRatio = r.read.mcp / r.read.rfs;
      const added = r.call.mcp - r.call.invoke;
      return [
        {
          measured: `MCP resources/read of ${r.read.record}: ${fmt(r.read.mcp)} req/s, ${fmt(r.read.mcpCpuMs, 3)} ms CPU/request`,
          baseline: `GET <rfs>/resources/${r.read.record}?schemaVersion=2: ${fmt(r.read.rfs)} req/s, ${fmt(r.read.rfsCpuMs, 3)} ms CPU/request (${ctx.opts.connections} connections)`,
          ratio: `${fmt(readRatio, 2)}× (CPU ${fmt(r.read.rfsCpuMs / r.read.mcpCpuMs, 2)}×)`,
          target: verdict(readRatio, '≥ 0.7×', readRatio >= 0.7),
        },
        {
          measured: `MCP tools/call p50 ${fmt(r.call.mcp, 2)} ms (+${fmt(added, 2)} ms)`,
          baseline: `POST /invoke p50 ${fmt(r.call.invoke, 2)} ms; ${fmt(r.call.calls)} sequential calls each, alternating`,
          ratio: `${fmt(r.call.mcp / r.call.invoke, 2)}×`,
          target: verdict(added, '≤ +2 ms median', added <= 2),
        },
      ];
    },
  },
  {
    id: '15',
    title: "a launched thread's read at its pin vs an ordinary read of the same bytes (RFS GET and MCP resources/read)",
    at: 'smallest',
    async run(ctx) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const r = await measurePinnedReads(dir, ctx.creds, {
        connections: ctx.opts.connections,
        durationSec: ctx.opts.durationSec,
        runs: ctx.opts.runs,
      });
      await removeDir(dir);
      return (['rfs', 'mcp'] as const).map((face) => {
        const ratio = r[face].pinned / r[face].plain;
        const what = face === 'rfs' ? 'GET <rfs>/resources/<id>?schemaVersion=2' : 'MCP resources/read';
        return {
          measured: `${what} with X-Huabu-Thread-Id, served at the pin: ${fmt(r[face].pinned)} req/s`,
          baseline: `the same ${fmt(r.bytes)} bytes read without it: ${fmt(r[face].plain)} req/s (${ctx.opts.connections} connections)`,
          ratio: `${fmt(ratio, 2)}×`,
          target: verdict(ratio, '≥ 0.9×', ratio >= 0.9),
        };
      });
    },
  },
  {
    id: '16',
    title: 'a provider write of a record pinned by BENCH_DRIFT_WORKLOADS launched threads vs the write of an unpinned record',
    at: 'smallest',
    async run(ctx) {
      const dir = await copyDataDir(ctx.template, ctx.root);
      const r = await measureDriftWrite(dir, ctx.creds, {
        workloads: ctx.opts.driftWorkloads,
        writes: ctx.opts.driftWrites,
        runs: Math.max(3, ctx.opts.runs),
      });
      await removeDir(dir);
      const ratio = r.pinned / r.unpinned;
      return [
        {
          measured: `PUT of a record ${fmt(r.workloads)} threads pin, each write moving every pin (${fmt(r.eventsPerWrite)} workload.drifted events): p50 ${fmt(r.pinned, 2)} ms`,
          baseline: `PUT of an unpinned record: p50 ${fmt(r.unpinned, 2)} ms (${fmt(r.writes)} sequential writes a round, median of ${Math.max(3, ctx.opts.runs)} rounds)`,
          ratio: `${fmt(ratio, 2)}×`,
          target: verdict(ratio, '≤ 2×', ratio <= 2),
        },
      ];
    },
  },
  {
    id: '17',
    title: 'one skill import (refresh, delete) onto a machine as it fills: the 10th vs the last, through a real Agentlet',
    at: 'smallest',
    async run(ctx) {
      const n = ctx.opts.importSkills;
      const { rounds, baseline } = await measureSkillImports({
        template: ctx.template,
        root: ctx.root,
        creds: ctx.creds,
        skills: n,
        rounds: Math.max(ctx.opts.runs, 3),
        ...(baselineBuild ? { baselineBuild } : {}),
        log: (m) => process.stderr.write(`[bench] ${m}\n`),
      });
      const rowOf = (of: typeof rounds, build: string) => {
        const tenth = median(of.map((r) => at(r.imports, 10)));
        const last = median(of.map((r) => at(r.imports, n)));
        const refresh = median(of.map((r) => median(r.refreshes)));
        const remove = median(of.map((r) => median(r.deletes)));
        const failures = of.reduce((k, r) => k + r.failures.length, 0);
        const ratio = last / tenth;
        return {
          measured: `${build}import #${fmt(n)}: ${fmt(last, 1)} ms; at ${fmt(n)} skills a refresh ${fmt(refresh, 1)} ms, a delete ${fmt(remove, 1)} ms${failures ? ` ⚠ ${fmt(failures)} answers not 200` : ''}`,
          baseline: `import #10: ${fmt(tenth, 1)} ms (medians of 5 imports around each, ${of.length} rounds)`,
          ratio: `${fmt(ratio, 2)}×`,
          target: verdict(ratio, '≤ 2×', ratio <= 2 && failures === 0),
        };
      };
      return [rowOf(rounds, ''), ...(baseline.length ? [rowOf(baseline, 'baseline build, ')] : [])];
    },
  },
  {
    id: '18',
    title: 'single-record reads while many machines publish their sets at once (secret scan in worker threads)',
    at: 'smallest',
    async run(ctx) {
      const o = ctx.opts;
      const { rounds, baseline } = await measurePublishReads({
        template: ctx.template,
        root: ctx.root,
        creds: ctx.creds,
        machines: o.publishMachines,
        records: o.publishRecords,
        rounds: Math.max(o.runs, 3),
        readRate: o.readRate,
        searchFirst: process.env.BENCH_PUBLISH_SEARCH === '1',
        uniqueFrontMatter: process.env.BENCH_PUBLISH_UNIQUE === '1',
        ...(baselineBuild ? { baselineBuild } : {}),
        log: (m) => process.stderr.write(`[bench] ${m}\n`),
      });
      const of = (r: PublishReadsRound[]) => ({
        p99: median(r.map((x) => x.p99)),
        p50: median(r.map((x) => x.p50)),
        publishMs: median(r.map((x) => x.publishMs)),
        catalogueMs: median(r.map((x) => x.catalogueMs)),
        catalogueAgainMs: median(r.map((x) => x.catalogueAgainMs)),
        failed: r.reduce((n, x) => n + x.failedReads + x.failedPublishes.length, 0),
      });
      const now = of(rounds);
      const before = baseline.length ? of(baseline) : undefined;
      const what = `${fmt(o.publishMachines)} machines × ${fmt(o.publishRecords)} records`;
      return [
        {
          measured: `GET one record p99 ${fmt(now.p99, 1)} ms (p50 ${fmt(now.p50, 1)}) while ${what} publish; all published in ${fmt(now.publishMs)} ms${now.failed ? ` ⚠ ${fmt(now.failed)} failed` : ''}; then the v1 catalogue in ${fmt(now.catalogueMs)} ms, after one more write ${fmt(now.catalogueAgainMs)} ms`,
          baseline: before
            ? `baseline build: p99 ${fmt(before.p99, 1)} ms (p50 ${fmt(before.p50, 1)}); published in ${fmt(before.publishMs)} ms${before.failed ? ` ⚠ ${fmt(before.failed)} failed` : ''}; v1 catalogue ${fmt(before.catalogueMs)} ms, after one more write ${fmt(before.catalogueAgainMs)} ms`
            : `${fmt(o.readRate)} reads/s (no BENCH_BASELINE_BUILD)`,
          ratio: before ? `${fmt(now.p99 / before.p99, 2)}× p99` : '—',
          target: verdict(0, 'p99 ≤ 100 ms', now.p99 <= 100 && now.failed === 0),
        },
      ];
    },
  },
  {
    id: '14',
    title:
      'owner catalogue GET with OpenTelemetry traces off (no OTEL_*), on (exporting to a local OTLP receiver), and a plain node:http server',
    async run(ctx) {
      const s = await ctx.shared();
      const path = '/api/acp/resources';
      const sink = await startOtlpSink();
      const otel = {
        // BENCH_TRACES_SAMPLER (e.g. `always_off`, or `traceidratio` with BENCH_TRACES_SAMPLER_ARG): the traced server's sampler.
        ...(process.env.BENCH_TRACES_SAMPLER ? { OTEL_TRACES_SAMPLER: process.env.BENCH_TRACES_SAMPLER } : {}),
        ...(process.env.BENCH_TRACES_SAMPLER_ARG ? { OTEL_TRACES_SAMPLER_ARG: process.env.BENCH_TRACES_SAMPLER_ARG } : {}),
      };
      const traced = await startServer(await copyDataDir(ctx.template, ctx.root), ctx.creds, {
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin,
        ...otel,
      });
      // BENCH_TRACES_JSON=1: a third server exporting JSON bodies (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) to a sink of its own, alternated with the others.
      const jsonSink = process.env.BENCH_TRACES_JSON === '1' ? await startOtlpSink() : undefined;
      const tracedJson = jsonSink
        ? await startServer(await copyDataDir(ctx.template, ctx.root), ctx.creds, {
            OTEL_EXPORTER_OTLP_ENDPOINT: jsonSink.origin,
            OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
            ...otel,
          })
        : undefined;
      const plain = await startPlainServer(s.url, [{ path, headers: owner(ctx) }]);
      const b = await ctx.baseline();
      try {
        // Requests each server answered and the CPU it spent meanwhile: CPU per request is the cost, and it
        // holds on a busy machine, where req/s measures the neighbours too.
        const served = { off: 0, on: 0, json: 0 };
        const counted = (which: 'off' | 'on' | 'json', run: (d: number) => Promise<LoadResult>) => async (d: number) => {
          const r = await run(d);
          served[which] += r.expected + r.unexpected;
          return r;
        };
        const cpuBefore = {
          off: (await s.probe(false)).cpuMs,
          on: (await traced.probe(false)).cpuMs,
          json: tracedJson ? (await tracedJson.probe(false)).cpuMs : 0,
        };
        const r = await compare(
          [
            { name: 'off', run: counted('off', getSpec(s, path, owner(ctx), ctx)) },
            { name: 'on', run: counted('on', getSpec(traced, path, owner(ctx), ctx)) },
            { name: 'plain', run: getSpec(plain, path, owner(ctx), ctx) },
            ...(tracedJson ? [{ name: 'json', run: counted('json', getSpec(tracedJson, path, owner(ctx), ctx)) }] : []),
            ...(b ? [{ name: 'base', run: getSpec(b, path, owner(ctx), ctx) }] : []),
          ],
          ctx.opts.runs,
          ctx.opts.durationSec,
          ctx.opts.warmupSec,
        );
        const cpuPer = {
          off: ((await s.probe(false)).cpuMs - cpuBefore.off) / Math.max(1, served.off),
          on: ((await traced.probe(false)).cpuMs - cpuBefore.on) / Math.max(1, served.on),
          json: tracedJson ? ((await tracedJson.probe(false)).cpuMs - cpuBefore.json) / Math.max(1, served.json) : 0,
        };
        await new Promise((done) => setTimeout(done, 6000)); // the batch processor's last export (every 5 s)
        const { spans, bytes } = sink.counts();
        const spansPer = spans / Math.max(1, served.on);
        const on = r.on!.perSecond / r.off!.perSecond;
        const mib = (n: number) => `${fmt(n / 2 ** 20, 1)} MiB`;
        return [
          {
            measured: `traces on: ${rate(r.on!)} · ${fmt(spansPer, 2)} spans per request received (${mib(bytes)} of OTLP) · RSS at start ${mib(traced.ready.rss)}`,
            baseline: `traces off: ${rate(r.off!)} · RSS at start ${mib(s.ready.rss)}`,
            ratio: `${fmt(on, 2)}×`,
            target: verdict(on, '≥ 0.9× (traces cost ≤ 10 %)', on >= 0.9),
          },
          {
            measured: `traces on: ${fmt(cpuPer.on, 3)} ms of server CPU per request`,
            baseline: `traces off: ${fmt(cpuPer.off, 3)} ms`,
            ratio: `${fmt(cpuPer.off / cpuPer.on, 2)}× (off / on)`,
            target: verdict(0, '≥ 0.9× (traces cost ≤ 10 %)', cpuPer.off / cpuPer.on >= 0.9),
          },
          {
            measured: `traces off: ${rate(r.off!)}`,
            baseline: `plain node:http: ${rate(r.plain!)}`,
            ratio: `${fmt(r.off!.perSecond / r.plain!.perSecond, 2)}×`,
            target: `traces on vs plain: ${fmt(r.on!.perSecond / r.plain!.perSecond, 2)}×`,
          },
          ...(tracedJson
            ? [
                {
                  measured: `traces on, protobuf bodies: ${rate(r.on!)} · ${fmt(cpuPer.on, 3)} ms of server CPU per request`,
                  baseline: `traces on, JSON bodies: ${rate(r.json!)} · ${fmt(cpuPer.json, 3)} ms · ${fmt(jsonSink!.counts().spans / Math.max(1, served.json), 2)} spans per request received`,
                  ratio: `${fmt(r.on!.perSecond / r.json!.perSecond, 2)}× req/s; CPU over off ${fmt((cpuPer.on - cpuPer.off) * 1000, 1)} vs ${fmt((cpuPer.json - cpuPer.off) * 1000, 1)} µs`,
                  target: '—',
                },
              ]
            : []),
          ...(b
            ? [
                {
                  measured: `traces off: ${rate(r.off!)} · RSS at start ${mib(s.ready.rss)}`,
                  baseline: `baseline build: ${rate(r.base!)} · RSS at start ${mib(b.ready.rss)}`,
                  ratio: `${fmt(r.off!.perSecond / r.base!.perSecond, 2)}×`,
                  target: '≈ 1× (off costs nothing measurable)',
                },
              ]
            : []),
        ];
      } finally {
        await plain.stop();
        await traced.stop();
        await tracedJson?.stop();
        await sink.close();
        await jsonSink?.close();
      }
    },
  },
];

/** The body's size as sent in the coding asked for; fails when another coding answers. */
async function responseBytes(server: RunningServer, path: string, headers: Record<string, string>, coding: string): Promise<number> {
  // undici's request, not fetch: fetch adds an Accept-Encoding of its own and decodes the body.
  const res = await request(`${server.url}${path}`, { headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  const got = res.headers['content-encoding'] ?? 'identity';
  if (res.statusCode !== 200 || got !== coding)
    throw new Error(`${path} with ${coding}: ${res.statusCode}, content-encoding ${String(got)}`);
  return body.length;
}

/** Scenario 8's variants: the JSON store, PostgreSQL, and PostgreSQL on the baseline build if given. */
function storeVariants(ctx: ScaleContext, mode: 'replace' | 'create'): Variant[] {
  const pg = { BENCH_STORE: 'postgres', ...(process.env.BENCH_PG_POOL ? { DATABASE_POOL_SIZE: process.env.BENCH_PG_POOL } : {}) };
  const baseline = process.env.BENCH_BASELINE_BUILD;
  return [
    writeVariant(ctx, `json-${mode}`, mode, { BENCH_STORE: 'json' }),
    writeVariant(ctx, `pg-${mode}`, mode, pg),
    ...(baseline ? [writeVariant(ctx, `pg-${mode}-baseline`, mode, { ...pg, BENCH_BUILD: baseline })] : []),
  ];
}

function printTable(rows: Row[]): string {
  const header = ['#', 'scenario', 'scale', 'measured (median)', 'baseline (median)', 'ratio', 'target'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) lines.push(`| ${[r.scenario, r.title, r.scale, r.measured, r.baseline, r.ratio, r.target].join(' | ')} |`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2), process.env);
  const root = await tempRoot();
  const creds = newCredentials();
  const rows: Row[] = [];
  const byScale = new Map<number, ScaleContext>();
  const largest = Math.max(...opts.scales);
  const smallest = Math.min(...opts.scales);
  const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
  const started = performance.now();
  log(`scales ${opts.scales.join(', ')}; ${opts.runs} runs of ${opts.durationSec} s per variant after ${opts.warmupSec} s warm-up`);
  try {
    for (const count of opts.scales) {
      const template = await prepareDataDir(root, count, creds);
      let shared: RunningServer | undefined;
      let sharedDir: string | undefined;
      let baselineServer: RunningServer | undefined;
      let baselineDir: string | undefined;
      const ctx: ScaleContext = {
        count,
        creds,
        template,
        root,
        opts,
        notes: new Map(),
        ...(byScale.size > 0 ? { smallest: byScale.get(Math.min(...byScale.keys()))! } : {}),
        async shared() {
          if (!shared) {
            sharedDir = await copyDataDir(template, root);
            shared = await startServer(sharedDir, creds);
          }
          return shared;
        },
        async baseline() {
          const build = process.env.BENCH_BASELINE_BUILD;
          if (!build) return undefined;
          if (!baselineServer) {
            baselineDir = await copyDataDir(template, root);
            baselineServer = await startServer(baselineDir, creds, { BENCH_BUILD: build });
          }
          return baselineServer;
        },
      };
      byScale.set(count, ctx);
      for (const s of SCENARIOS) {
        if (
          s.unavailable ||
          !s.run ||
          (s.at === 'largest' && count !== largest) ||
          (s.at === 'smallest' && count !== smallest) ||
          (opts.only && !opts.only.has(s.id))
        )
          continue;
        log(`${scaleName(count)}: scenario ${s.id} (${s.title}) at +${((performance.now() - started) / 1000).toFixed(1)} s`);
        for (const r of await s.run(ctx)) {
          const row = { scenario: s.id, title: s.title, scale: scaleName(count), ...r };
          rows.push(row);
          // As each scenario ends, so a later failure does not lose the rows measured so far.
          log(`row: ${printTable([row]).split('\n')[2]}`);
        }
      }
      await shared?.stop();
      if (sharedDir) await removeDir(sharedDir);
      await baselineServer?.stop();
      if (baselineDir) await removeDir(baselineDir);
    }
  } finally {
    killChildren();
    await removeDir(root);
  }
  // Rows in table order: per-scale rows, cross-scale rows, and the scenarios not built yet.
  const ordered: Row[] = [];
  for (const s of SCENARIOS) {
    if (opts.only && !opts.only.has(s.id)) continue;
    if (s.unavailable) {
      ordered.push({ scenario: s.id, title: s.title, scale: '—', measured: `n/a (${s.unavailable})`, baseline: '', ratio: '', target: '' });
      continue;
    }
    if (opts.only && !opts.only.has(s.id)) continue;
    ordered.push(...rows.filter((r) => r.scenario === s.id && r.title === s.title));
    if (s.across) for (const r of s.across(byScale)) ordered.push({ scenario: s.id, title: s.title, ...r });
  }
  process.stdout.write(printTable(ordered) + '\n');
}

process.on('SIGINT', () => {
  killChildren();
  process.exit(130);
});
await main();
