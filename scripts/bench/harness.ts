// Bench plumbing: prepared DATA_DIRs written directly in the store's versioned format, the server under
// test and the load generator as child processes (loopback only), and medians.
import { randomBytes } from 'node:crypto';
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { importJsonDataDir } from '../../src/storage/postgres/import-json.js';
import { generateToken, mintCanvasToken, TOKEN_PREFIX, tokenDigest } from '../../src/credentials/tokens.js';
import {
  writeBody,
  type LoadResult,
  type FsyncResult,
  type FsyncSpec,
  type LoadSpec,
  type PlainRecord,
  type ServerProbe,
  type ServerReady,
  type Writer,
} from './protocol.js';
import type { EventWorkerCommand } from './event-worker.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** `.js` when compiled, `.ts` when run by a TypeScript loader (the smoke test). */
const ext = path.extname(fileURLToPath(import.meta.url));
/**
 * The bench's server: the bundled one (scripts/bundle.mjs, as `npm start` runs the bundled server) when this
 * build has it, else the compiled module (a build from before the bundle, or a run under tsx).
 */
function benchServerEntry(dist: string | undefined): string {
  const bundled = dist && path.join(dist, 'bundle', 'bench-server.js');
  if (bundled && existsSync(bundled)) return bundled;
  return dist ? path.join(dist, 'scripts', 'bench', 'bench-server.js') : path.join(here, `bench-server${ext}`);
}
const SERVER_ENTRY = benchServerEntry(ext === '.js' ? path.resolve(here, '..', '..') : undefined);
const LOAD_ENTRY = path.join(here, `load-worker${ext}`);
const PLAIN_ENTRY = path.join(here, `plain-server${ext}`);
const FSYNC_ENTRY = path.join(here, `fsync-latency${ext}`);
const EVENT_WORKER_ENTRY = path.join(here, `event-worker${ext}`);

export const MACHINES = ['bm0', 'bm1', 'bm2', 'bm3'];
export const PROVIDERS = ['huabu', ...MACHINES];
export const CANVAS_ID = 'bench-canvas';

export interface Credentials {
  owner: string;
  huabu: string;
  secret: string;
  machines: Record<string, string>;
}

export function newCredentials(): Credentials {
  return {
    owner: generateToken(TOKEN_PREFIX.owner),
    huabu: generateToken(TOKEN_PREFIX.huabu),
    secret: generateToken(TOKEN_PREFIX.canvasSecret),
    machines: Object.fromEntries(MACHINES.map((m) => [m, generateToken(TOKEN_PREFIX.machine)])),
  };
}

/** Every seeded machine's enrollment (canvas tokens are bound to it). */
const BENCH_ENROLLED_AT = '2026-01-01T00:00:00.000Z';

export function canvasToken(creds: Credentials): string {
  return mintCanvasToken(
    { canvasId: CANVAS_ID, agentletId: MACHINES[0]!, enrolledAt: BENCH_ENROLLED_AT, exp: Math.floor(Date.now() / 1000) + 24 * 3600 },
    creds.secret,
  );
}

/** Record i belongs to provider i mod 5 (huabu, bm0..bm3). */
export const seededId = (provider: string, k: number) => `r-${provider}-${k}`;

/** Resources record i has: provider i mod 5, so a provider owns about count / 5 of them. */
const ownedBy = (count: number, p: number, providers = PROVIDERS.length) => Math.floor(count / providers) + (p < count % providers ? 1 : 0);

/**
 * The providers of a catalogue spread over `fleet` machines: the host, bm0..bm3, then `fm4`..`fm<fleet-1>`
 * (enrolled, with tokens nobody holds). A fleet of at most 4 is the host and bm0..bm3.
 */
export function fleetProviders(fleet: number): string[] {
  return [...PROVIDERS, ...Array.from({ length: Math.max(0, fleet - MACHINES.length) }, (_, k) => `fm${MACHINES.length + k}`)];
}

/** The host's required defaults of the launch scenarios (two seeded host records). */
export const BENCH_REQUIRED = [seededId('huabu', 0), seededId('huabu', 1)];

/** Profile j: `prf-bench-<j>` on machine bm(j mod 4), selecting one host record and one of its machine's. */
export const benchProfileId = (j: number) => `prf-bench-${j}`;

function benchProfile(j: number, count: number, providers: number) {
  const machine = MACHINES[j % MACHINES.length]!;
  const hostOwned = ownedBy(count, 0, providers);
  const machineOwned = ownedBy(count, PROVIDERS.indexOf(machine), providers);
  const resourceIds = [
    ...(hostOwned > BENCH_REQUIRED.length ? [seededId('huabu', BENCH_REQUIRED.length + (j % (hostOwned - BENCH_REQUIRED.length)))] : []),
    ...(machineOwned > 0 ? [seededId(machine, j % machineOwned)] : []),
  ];
  return {
    schemaVersion: 2,
    id: benchProfileId(j),
    alias: `Bench agent ${j}`,
    agentletId: machine,
    workingDirPath: `/home/bench/project-${j % 97}`,
    launch: { kind: 'acp-command', command: `bench-agent-acp --profile ${j}` },
    customData: { color: 'teal', order: j },
    resourceIds,
  };
}

/**
 * A DATA_DIR holding `count` resources, `count` Agent Profiles (agent-team/registry.json v4) and the four
 * enrolled bench machines; with `fleet`, the resources are spread over `fleetProviders(fleet)`, all enrolled.
 */
export async function prepareDataDir(root: string, count: number, creds: Credentials, fleet = MACHINES.length): Promise<string> {
  const providers = fleetProviders(fleet);
  const dir = path.join(root, `template-${count}${fleet > MACHINES.length ? `-fleet-${fleet}` : ''}`);
  await mkdir(path.join(dir, 'agent-resources'), { recursive: true, mode: 0o700 });
  await mkdir(path.join(dir, 'agent-team'), { recursive: true, mode: 0o700 });
  const profiles = Array.from({ length: count }, (_, j) => benchProfile(j, count, providers.length)).sort((a, b) => (a.id < b.id ? -1 : 1));
  await writeFile(
    path.join(dir, 'agent-team', 'registry.json'),
    JSON.stringify({ schemaVersion: 4, state: { profiles } }, null, 2) + '\n',
    { mode: 0o600 },
  );
  const resources = Array.from({ length: count }, (_, i) => {
    const provider = providers[i % providers.length]!;
    const id = seededId(provider, Math.floor(i / providers.length));
    return { ...writeBody(id, 'seed'), id, provider };
  }).sort((a, b) => (a.id < b.id ? -1 : 1));
  await writeFile(path.join(dir, 'agent-resources', 'resources.json'), JSON.stringify({ schemaVersion: 1, state: { resources } }), {
    mode: 0o600,
  });
  const enrolledAt = BENCH_ENROLLED_AT;
  const machines = providers.slice(1).map((machineId) => ({
    machineId,
    tokenDigest: tokenDigest(creds.machines[machineId] ?? generateToken(TOKEN_PREFIX.machine)).toString('hex'),
    enrolledAt,
  }));
  await writeFile(path.join(dir, 'machines.json'), JSON.stringify({ schemaVersion: 1, state: { machines } }), { mode: 0o600 });
  return dir;
}

/** 32 writers (connections) share these: every provider with the seeded records it owns. */
export function writersFor(count: number, creds: Credentials): Writer[] {
  return PROVIDERS.map((provider, p) => {
    const owned = ownedBy(count, p);
    return {
      provider,
      token: provider === 'huabu' ? creds.huabu : creds.machines[provider]!,
      ids: Array.from({ length: Math.max(owned, 1) }, (_, k) => seededId(provider, k)),
    };
  });
}

/**
 * Adds `canvases` x `threadsPerCanvas` realized workloads, one file per canvas (`workloads/<canvas>.json`,
 * written as the store writes it), launched from the bench profiles.
 */
export async function addWorkloads(dir: string, count: number, canvases: number, threadsPerCanvas: number): Promise<void> {
  const workloadsDir = path.join(dir, 'workloads');
  await mkdir(workloadsDir, { recursive: true, mode: 0o700 });
  const realizedAt = new Date().toISOString();
  const pending: Promise<void>[] = [];
  for (let c = 0; c < canvases; c++) {
    const canvasId = `canvas-${String(c).padStart(6, '0')}`;
    const workloads = Array.from({ length: threadsPerCanvas }, (_, t) => {
      const threadId = `thread-${String(t).padStart(4, '0')}`;
      const profile = benchProfile((c * threadsPerCanvas + t) % Math.max(count, 1), count, PROVIDERS.length);
      const resourceIds = [...new Set([...BENCH_REQUIRED, ...profile.resourceIds])];
      return {
        driverSchemaVersion: 1,
        canvasId,
        threadId,
        realizedAt,
        spec: {
          binding: { profileId: profile.id, alias: profile.alias },
          agentletId: profile.agentletId,
          cwd: profile.workingDirPath,
          resourceIds,
          resourceScope: { canvasId, threadId },
          initialPreamble: [`Your resources: ${resourceIds.join(', ')}. Read $HUABU_RFS_URL/resources/<id> for each before you start.`],
          env: { HUABU_RFS_URL: `http://127.0.0.1:3000/api/rfs/${canvasId}`, HUABU_THREAD_ID: threadId },
        },
      };
    });
    const text = JSON.stringify({ schemaVersion: 1, state: { workloads } }, null, 2) + '\n';
    pending.push(writeFile(path.join(workloadsDir, `${canvasId}.json`), text, { mode: 0o600 }));
    if (pending.length >= 64) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
}

export async function copyDataDir(template: string, root: string): Promise<string> {
  const dir = await mkdtemp(path.join(root, 'run-'));
  await cp(template, dir, { recursive: true });
  return dir;
}

export interface RunningServer {
  ready: ServerReady;
  url: string;
  /** The server's memory (after a full GC unless `gc` is false), its open connections and CPU time, right now. */
  probe(gc?: boolean): Promise<ServerProbe>;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
/** Children never outlive the runner. */
export function killChildren(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Runs a bench script's `main`; on a failure prints it, stops every child and exits 1. */
export function runBench(main: () => Promise<void>): void {
  process.on('exit', killChildren);
  main().catch((err: unknown) => {
    console.error(err);
    killChildren();
    process.exit(1);
  });
}

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * BENCH_STORE=postgres (with DATABASE_URL naming a server): each bench server gets a fresh database holding
 * `dataDir`'s records (through `npm run import`), dropped when it stops. With BENCH_DATABASE_TEMPLATE, the
 * fresh database is a copy of that one instead (`CREATE DATABASE … TEMPLATE`): it must hold what an import of
 * the same size and fleet made (an import of a million records takes ten minutes; a copy, seconds).
 */
async function benchDatabase(dataDir: string, store: string | undefined): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  if (store !== 'postgres') return undefined;
  const base = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!base) throw new Error('BENCH_STORE=postgres needs BENCH_DATABASE_URL or DATABASE_URL (a server where databases may be created)');
  const name = `arr_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  const template = process.env.BENCH_DATABASE_TEMPLATE;
  if (template !== undefined && !/^[a-z_][a-z0-9_]*$/.test(template)) throw new Error('BENCH_DATABASE_TEMPLATE: a plain database name');
  await admin(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  if (!template) await importJsonDataDir(dataDir, url.toString());
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function startServer(dataDir: string, creds: Credentials, env: Record<string, string> = {}): Promise<RunningServer> {
  return (await launchServer(dataDir, creds, env)).server;
}

/** A port free right now (the kernel's pick), for a server whose /readyz is polled before it reports. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

export interface StartupTimes {
  /** Child's clock: process start to listening. */
  listeningMs: number;
  /** Runner's clock: fork to the first 200 from /readyz (polled every 2 ms from the fork on). */
  readyzMs: number;
  rss: number;
}

/** Starts a server on a known port, polls /readyz from the fork on, and stops it. */
export async function measureStartup(dataDir: string, creds: Credentials, env: Record<string, string> = {}): Promise<StartupTimes> {
  const port = await freePort();
  const forked = performance.now();
  const launching = launchServer(dataDir, creds, { ...env, PORT: String(port), BENCH_STARTUP_ONLY: '1' });
  let readyzMs: number | undefined;
  const url = `http://127.0.0.1:${port}/readyz`;
  for (;;) {
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) {
      readyzMs = performance.now() - forked;
      break;
    }
    if (performance.now() - forked > 120_000) throw new Error('/readyz did not answer 200 within 120 s');
    await new Promise((r) => setTimeout(r, 2));
  }
  const { server } = await launching;
  await server.stop();
  return { listeningMs: server.ready.startupMs, readyzMs, rss: server.ready.rss };
}

/**
 * `env` may also hold two bench-only keys, not passed to the server: BENCH_STORE (`postgres` or `json`,
 * overriding the environment's for this server) and BENCH_BUILD (another build's `dist` directory, whose
 * bench server runs instead of this one: a before/after comparison in one run).
 */
async function launchServer(dataDir: string, creds: Credentials, allEnv: Record<string, string>): Promise<{ server: RunningServer }> {
  const { BENCH_STORE: store = process.env.BENCH_STORE, BENCH_BUILD: build, ...env } = allEnv;
  const database = await benchDatabase(dataDir, store);
  const entry = build ? benchServerEntry(build) : SERVER_ENTRY;
  const child = track(
    fork(entry, [], {
      env: {
        PATH: process.env.PATH ?? '',
        ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
        ...(process.env.BENCH_SERVER_TIMING ? { BENCH_SERVER_TIMING: process.env.BENCH_SERVER_TIMING } : {}),
        HOST: '127.0.0.1',
        PORT: '0',
        DATA_DIR: dataDir,
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
        OWNER_TOKEN: creds.owner,
        HUABU_PROVIDER_TOKEN: creds.huabu,
        CANVAS_TOKEN_SECRET: creds.secret,
        SEED_HUABU_RESOURCES: 'false',
        ...(database ? { DATABASE_URL: database.url } : {}),
        // The bench measures the service, not the limiter: 1200 writes/min per credential would cap a run
        // of 32 writers over five providers after a few seconds and turn the rest into fast 429s.
        RATE_LIMIT_WRITES_PER_MINUTE: '0',
        // Its machines hold up to 2,000 seeded records each (scale 10,000 over five providers), past the default
        // record quota; the bench measures the store's throughput, not a machine's quota.
        RECORDS_PER_MACHINE: '0',
        RECORD_BYTES_PER_MACHINE: '0',
        ...env,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // BENCH_SERVER_NODE_ARGS, e.g. `--cpu-prof --cpu-prof-dir=prof`, to profile the server under test.
      execArgv: [...process.execArgv, ...(process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
    }),
  );
  const ready = await new Promise<ServerReady>((resolve, reject) => {
    child.once('message', (m: ServerReady) => resolve(m));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code} before it was ready`)));
  });
  return {
    server: {
      ready,
      url: `http://127.0.0.1:${ready.port}`,
      probe: (gc = true) =>
        new Promise<ServerProbe>((resolve) => {
          const onMessage = (m: ServerProbe) => {
            if (m?.type !== 'probe') return;
            child.off('message', onMessage);
            resolve(m);
          };
          child.on('message', onMessage);
          child.send({ type: 'probe', gc });
        }),
      async stop() {
        if (child.exitCode === null) {
          const exited = new Promise<void>((r) => child.once('exit', () => r()));
          child.send({ type: 'stop' });
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
        }
        await database?.drop();
      },
    },
  };
}

export interface PlainServer {
  url: string;
  /** Body bytes of each recorded answer, in the order asked. */
  sizes: number[];
  stop(): Promise<void>;
}

/**
 * The plain `node:http` reference in its own process, answering `records` (path and request headers) with
 * the status, headers and body `source` gave for the same request, sent from a constant.
 */
export async function startPlainServer(source: string, records: PlainRecord[]): Promise<PlainServer> {
  const child = track(fork(PLAIN_ENTRY, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: { type?: string }) => {
        if (m?.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      const onExit = (code: number | null) => reject(new Error(`plain server exited with ${code}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const { port } = await next<{ port: number }>('listening');
  const recorded = next<{ sizes?: number[]; error?: string }>('recorded');
  child.send({ type: 'record', source, records });
  const { sizes, error } = await recorded;
  if (error || !sizes) throw new Error(`plain server could not record: ${error}`);
  return {
    url: `http://127.0.0.1:${port}`,
    sizes,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

/** Runs `entry` in its own process, sends it `spec`, and resolves with the one result it sends back. */
function runWorker<Spec, Result>(entry: string, name: string, spec: Spec): Promise<Result> {
  const child = track(fork(entry, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  return new Promise<Result>((resolve, reject) => {
    let result: Result | undefined;
    child.once('message', (m: Result | { error: string }) => {
      if (m !== null && typeof m === 'object' && 'error' in m) reject(new Error(m.error));
      else result = m;
    });
    child.once('exit', (code) => (result ? resolve(result) : reject(new Error(`${name} exited with ${code} without a result`))));
    child.send(spec as object);
  });
}

/** The disk's floor in its own process: appends + fdatasync in `spec.dir` (scripts/bench/fsync-latency.ts). */
export function runFsync(spec: FsyncSpec): Promise<FsyncResult> {
  return runWorker(FSYNC_ENTRY, 'fsync worker', spec);
}

/** One autocannon pass in its own process. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return runWorker(LOAD_ENTRY, 'load worker', spec);
}

/** A scenario-11 process of its own (subscribers or a writer); `ask` sends one command and waits for its answer. */
export function forkEventWorker(): { ask<T>(command: EventWorkerCommand): Promise<T>; stop(): void } {
  const child = track(fork(EVENT_WORKER_ENTRY, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  let queue: Promise<unknown> = Promise.resolve();
  const once = <T>(command: EventWorkerCommand) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`event worker exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (m: { ok: boolean; result?: T; error?: string }) => {
        child.off('exit', onExit);
        if (m.ok) resolve(m.result as T);
        else reject(new Error(m.error));
      });
      child.send(command);
    });
  return {
    ask<T>(command: EventWorkerCommand): Promise<T> {
      const answer = queue.then(() => once<T>(command));
      queue = answer.catch(() => undefined);
      return answer;
    },
    stop() {
      if (child.connected) child.disconnect();
    },
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Variant {
  name: string;
  run(durationSec: number): Promise<LoadResult>;
}

export interface Compared {
  [name: string]: {
    perSecond: number;
    p99: number;
    p50: number;
    /** Medians of the rounds' exact percentiles, when every round has them. */
    exact?: { p50: number; p99: number };
    runs: LoadResult[];
    unexpected: number;
    errors: number;
  };
}

/**
 * Warm-up pass of each variant, then `runs` rounds; the order flips every round (A B, B A, ...) so drift
 * (thermal, page cache, other tenants) hits every variant alike. Medians per variant.
 */
export async function compare(variants: Variant[], runs: number, durationSec: number, warmupSec: number): Promise<Compared> {
  if (warmupSec > 0) for (const v of variants) await v.run(warmupSec);
  const results = new Map<string, LoadResult[]>(variants.map((v) => [v.name, []]));
  for (let round = 0; round < runs; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) results.get(v.name)!.push(await v.run(durationSec));
  }
  const out: Compared = {};
  for (const [name, rs] of results) {
    out[name] = {
      perSecond: median(rs.map((r) => r.perSecond)),
      p99: median(rs.map((r) => r.p99)),
      p50: median(rs.map((r) => r.p50)),
      ...(rs.every((r) => r.exact)
        ? { exact: { p50: median(rs.map((r) => r.exact!.p50)), p99: median(rs.map((r) => r.exact!.p99)) } }
        : {}),
      runs: rs,
      unexpected: rs.reduce((s, r) => s + r.unexpected, 0),
      errors: rs.reduce((s, r) => s + r.errors, 0),
    };
  }
  return out;
}

export async function tempRoot(): Promise<string> {
  return mkdtemp(path.join(process.env.BENCH_TMPDIR ?? tmpdir(), 'arr-bench-'));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
