// Scenario 12: owner reads while a machine's Agentlet publishes its whole set of skills, as `serve` does
// when it (re)connects. A real server process on a copy of the scale's DATA_DIR (machine bm0 enrolled);
// 100 skill records whose `sourceContent` are real public skill documents: the Markdown of anthropics/skills
// in the test corpus (test/fixtures/skill-collections/README.md gives its commit and licence).
// Each round: a first publish (every record new) on a fresh server; a re-publish of the same set after a
// restart (every record unchanged); and the steady state (a restarted server, no publish). Owner reads of
// `GET /api/acp/resources` run at a fixed rate from before each publish until after it was answered.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool, request } from 'undici';
import { copyDataDir, median, MACHINES, removeDir, startServer, type Credentials, type RunningServer } from './harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The repository's root: two levels up from scripts/bench, three from dist/scripts/bench. */
const repoRoot = path.resolve(here, ...(path.extname(fileURLToPath(import.meta.url)) === '.js' ? ['..', '..', '..'] : ['..', '..']));
const SKILLS_DIR = path.join(repoRoot, 'test', 'fixtures', 'skill-collections', 'anthropics-skills');
/** Record v2's bound on `sourceContent`. */
const SOURCE_BOUND = 100_000;
const PUBLISHER = MACHINES[0]!;

export interface ReadStats {
  count: number;
  p50: number;
  p99: number;
  max: number;
  /** Answers per status code (503 is `overloaded`); transport errors under `error`. */
  statuses: Record<string, number>;
}

export interface PublishPhase {
  reads: ReadStats;
  /** The publish's answer time and status (absent in the steady state). */
  publish?: { ms: number; status: number; created: number; unchanged: number };
}

export interface ReconnectRound {
  first: PublishPhase;
  republish: PublishPhase;
  steady: PublishPhase;
}

export interface ReconnectOptions {
  template: string;
  root: string;
  creds: Credentials;
  skills: number;
  rounds: number;
  /** Owner reads per second, and how long they run at least (seconds); they go on 0.5 s past the publish's answer. */
  readRate: number;
  minReadSec: number;
  warmupSec: number;
  /** Another build's `dist` whose server runs the same rounds, alternated with this one's. */
  baselineBuild?: string;
  log(message: string): void;
}

/** `skills` reconcile entries (record v2) built from the vendored skill documents, in path order. */
export async function skillEntries(skills: number): Promise<{ id: string; schemaVersion: 2; name: string; sourceContent: string }[]> {
  const files = (await readdir(SKILLS_DIR, { recursive: true })).filter((f) => f.endsWith('.md')).sort();
  const texts = await Promise.all(files.map(async (f) => (await readFile(path.join(SKILLS_DIR, f), 'utf8')).trim()));
  const cut = (text: string) => {
    if (text.length <= SOURCE_BOUND) return text;
    return text.slice(0, text.lastIndexOf('\n', SOURCE_BOUND)).trimEnd();
  };
  return Array.from({ length: skills }, (_, i) => {
    const n = i % files.length;
    const round = Math.floor(i / files.length);
    // Past the last file, two files joined (so no two records carry the same text).
    const text = round === 0 ? texts[n]! : `${texts[n]!}\n\n${texts[(n + round * 7) % files.length]!}`;
    const name = files[n]!.replace(/\.md$/, '').replaceAll(path.sep, '/');
    return {
      id: `bench-skill-${i}`,
      schemaVersion: 2 as const,
      name: `${name}${round ? ` (${round + 1})` : ''}`,
      sourceContent: cut(text),
    };
  });
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/**
 * Owner catalogue reads at a fixed rate (sent on schedule whether or not earlier ones were answered, so a
 * stalled server queues them as it would real readers), from now until `minSec` have passed and `until`
 * settled `tailSec` ago. Latency: from the scheduled send to the last body byte.
 */
async function pacedReads(
  server: RunningServer,
  owner: string,
  rate: number,
  minSec: number,
  until: Promise<unknown>,
  tailSec: number,
): Promise<ReadStats> {
  const pool = new Pool(server.url, { connections: 2 });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const count = (key: string) => (statuses[key] = (statuses[key] ?? 0) + 1);
  let stopAt = Infinity;
  const minEnd = performance.now() + minSec * 1000;
  void until.finally(() => (stopAt = Math.max(minEnd, performance.now() + tailSec * 1000)));
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; ; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (due > stopAt) break;
    pending.push(
      pool
        .request({ path: '/api/acp/resources', method: 'GET', headers: { authorization: `Bearer ${owner}` } })
        .then(async (res) => {
          await res.body.arrayBuffer();
          latencies.push(performance.now() - due);
          count(String(res.statusCode));
        })
        .catch(() => void count('error')),
    );
  }
  await Promise.all(pending);
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.at(-1) ?? NaN, statuses };
}

async function publish(server: RunningServer, token: string, body: string): Promise<NonNullable<PublishPhase['publish']>> {
  const started = performance.now();
  const res = await request(`${server.url}/api/acp/providers/${PUBLISHER}/resources`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
  const answer = (await res.body.json()) as { created?: string[]; unchanged?: string[] };
  return {
    ms: performance.now() - started,
    status: res.statusCode,
    created: answer.created?.length ?? 0,
    unchanged: answer.unchanged?.length ?? 0,
  };
}

/** Reads at the fixed rate, with the publish sent 200 ms after they start (none for the steady state). */
async function phase(server: RunningServer, o: ReconnectOptions, body: string | undefined): Promise<PublishPhase> {
  if (o.warmupSec > 0) await pacedReads(server, o.creds.owner, o.readRate, o.warmupSec, Promise.resolve(), 0);
  // A start that held the event loop (on a busy machine) leaves the server answering 503 `overloaded` for a
  // moment; the publish is measured once a read is answered again.
  for (let i = 0; i < 100; i++) {
    const res = await request(`${server.url}/api/acp/resources`, { headers: { authorization: `Bearer ${o.creds.owner}` } });
    await res.body.dump();
    if (res.statusCode === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  let sent: Promise<NonNullable<PublishPhase['publish']>> | undefined;
  const publishing = body
    ? new Promise((r) => setTimeout(r, 200)).then(() => (sent = publish(server, o.creds.machines[PUBLISHER]!, body)))
    : Promise.resolve(undefined);
  const reads = await pacedReads(server, o.creds.owner, o.readRate, o.minReadSec, publishing, Math.min(0.5, o.minReadSec));
  await publishing;
  return { reads, ...(sent ? { publish: await sent } : {}) };
}

/** One round on one build (`env` may name another build's `dist` as BENCH_BUILD): first publish, re-publish after a restart, steady state. */
async function oneRound(
  o: ReconnectOptions,
  body: string,
  round: number,
  env: Record<string, string>,
  label: string,
): Promise<ReconnectRound> {
  const dir = await copyDataDir(o.template, o.root);
  try {
    const run = async (what: string, withBody: string | undefined) => {
      const server = await startServer(dir, o.creds, env);
      try {
        const r = await phase(server, o, withBody);
        o.log(
          `round ${round + 1}${label} ${what}: reads p99 ${r.reads.p99.toFixed(1)} ms, max ${r.reads.max.toFixed(1)} ms, statuses ${JSON.stringify(r.reads.statuses)}${r.publish ? `; publish ${r.publish.status} in ${r.publish.ms.toFixed(0)} ms` : ''}`,
        );
        return r;
      } finally {
        await server.stop();
      }
    };
    const first = await run('first publish', body);
    // The re-publish and the steady state alternate in order from round to round.
    if (round % 2 === 0) {
      const republish = await run('re-publish after a restart', body);
      return { first, republish, steady: await run('steady state', undefined) };
    }
    const steady = await run('steady state', undefined);
    return { first, republish: await run('re-publish after a restart', body), steady };
  } finally {
    await removeDir(dir);
  }
}

/**
 * `rounds` rounds of first publish, re-publish after a restart and steady state; with `baselineBuild`
 * (another build's `dist`), that build's rounds too, alternated with this one's.
 */
export async function measureReconnectPublish(
  o: ReconnectOptions,
): Promise<{ rounds: ReconnectRound[]; baseline: ReconnectRound[]; bytes: number }> {
  const body = JSON.stringify({ resources: await skillEntries(o.skills) });
  const rounds: ReconnectRound[] = [];
  const baseline: ReconnectRound[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const builds = [
      async () => rounds.push(await oneRound(o, body, round, {}, '')),
      ...(o.baselineBuild
        ? [async () => baseline.push(await oneRound(o, body, round, { BENCH_BUILD: o.baselineBuild! }, ' (baseline build)'))]
        : []),
    ];
    for (const run of round % 2 === 0 ? builds : builds.reverse()) await run();
  }
  return { rounds, baseline, bytes: Buffer.byteLength(body) };
}

/** Medians over rounds of one phase's figures, and its 503s summed. */
export function summarize(phases: PublishPhase[]): {
  p50: number;
  p99: number;
  max: number;
  reads: number;
  overloaded: number;
  otherFailures: number;
  publishMs: number;
  publishStatuses: number[];
} {
  const sum = (f: (s: Record<string, number>) => number) => phases.reduce((n, p) => n + f(p.reads.statuses), 0);
  return {
    p50: median(phases.map((p) => p.reads.p50)),
    p99: median(phases.map((p) => p.reads.p99)),
    max: median(phases.map((p) => p.reads.max)),
    reads: sum((s) => Object.values(s).reduce((a, b) => a + b, 0)),
    overloaded: sum((s) => s['503'] ?? 0),
    otherFailures: sum((s) => Object.entries(s).reduce((n, [k, v]) => n + (k === '200' || k === '503' ? 0 : v), 0)),
    publishMs: phases[0]?.publish ? median(phases.map((p) => p.publish!.ms)) : NaN,
    publishStatuses: [...new Set(phases.flatMap((p) => (p.publish ? [p.publish.status] : [])))],
  };
}
