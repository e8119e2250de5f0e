// The crash-test harness: rounds of concurrent writers against a real server process, a SIGKILL at a seeded
// random moment, a restart on the same DATA_DIR, and a check of the recovered state against the history
// (test/crash/model.ts). Everything random comes from one seed; only the scheduling of the machine varies.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { CANARY, recordIssuedToken, tempDataDir, testEnv } from '../helpers/build.js';
import { checkRound, sameState, type Content, type IdState, type Observation, type OpRecord, type Snapshot, type Violation } from './model.js';
import { chooseKind, IdPool, OPERATION_KINDS, type OperationKind, type Rng } from './operations.js';
import { startServer, type RunningServer } from './server-process.js';

export interface CrashOptions {
  seed: number;
  rounds: number;
  /** Concurrent writers per round, spread over the providers. */
  writers: number;
  /** The kill comes this many ms (uniform in the range) after the writers start. */
  killAfterMs: [number, number];
  machines: string[];
  kinds?: readonly OperationKind[];
  /** Extra server environment (the negative check's unsafe switches). */
  env?: Record<string, string>;
  /** Pause after enrolling the machines, before the first round. */
  settleMs?: number;
  /** Stop early once this returns true for the violations so far. */
  stopWhen?: (violations: Violation[]) => boolean;
  log?: (line: string) => void;
}

export interface CrashResult {
  seed: number;
  dataDir: string;
  roundsRun: number;
  acknowledged: number;
  rejected: number;
  unknown: number;
  violations: Violation[];
  maxRestartMs: number;
  durationMs: number;
}

/** A small seeded PRNG (mulberry32) keyed by several numbers, so each writer of each round has its own stream. */
export function rngFor(...parts: number[]): Rng {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h = Math.imul(h ^ (p >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const now = () => performance.now();

async function getJson(origin: string, url: string, token: string): Promise<{ status: number; body: unknown }> {
  const res = await request(`${origin}${url}`, { headers: bearer(token), headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else out.push(full);
  }
  return out;
}

const contentOf = (r: { provider: string; name: string; description: string; instructions: string }): Content => ({
  provider: r.provider,
  name: r.name,
  description: r.description,
  instructions: r.instructions,
});

function sameStates(a: Map<string, IdState>, b: Map<string, IdState>): boolean {
  return a.size === b.size && [...a].every(([id, s]) => b.has(id) && sameState(s, b.get(id)!));
}

/**
 * Reads the recovered state from disk (every file must parse; no temp file may be left), and checks that
 * the restarted server serves exactly that and that every provider's token still works.
 */
async function observe(server: RunningServer, dataDir: string, tokens: Map<string, string>, round: number): Promise<{ snapshot: Snapshot; violations: Violation[] }> {
  const inv = now();
  const violations: Violation[] = [];
  const states = new Map<string, IdState>();
  for (const file of await filesUnder(dataDir)) {
    const rel = path.relative(dataDir, file);
    if (rel.endsWith('.tmp')) {
      violations.push({ kind: 'temp-file-left', round, message: `${rel} remains after the restart` });
      continue;
    }
    const text = await readFile(file, 'utf8');
    try {
      if (rel.endsWith('.jsonl')) {
        const lines = text.split('\n');
        if (lines.pop() !== '') throw new Error('the last line is incomplete');
        lines.forEach((line, i) => {
          try {
            JSON.parse(line);
          } catch {
            throw new Error(`line ${i + 1} does not parse`);
          }
        });
      } else if (rel.endsWith('.json')) {
        const doc = JSON.parse(text) as { state?: { resources?: Content[] } };
        if (rel === path.join('agent-resources', 'resources.json')) {
          for (const r of (doc.state?.resources ?? []) as (Content & { id: string })[]) states.set(r.id, contentOf(r));
        }
      }
    } catch (err) {
      violations.push({ kind: 'file-does-not-parse', round, message: `${rel}: ${(err as Error).message}` });
    }
  }
  const served = await getJson(server.origin, '/api/acp/resources', CANARY.owner);
  const servedStates = new Map(((served.body as { resources?: (Content & { id: string })[] })?.resources ?? []).map((r) => [r.id, contentOf(r)] as const));
  if (served.status !== 200 || !sameStates(servedStates, states)) {
    violations.push({ kind: 'served-differs-from-disk', round, message: `GET /api/acp/resources answered ${served.status} with ${servedStates.size} records; resources.json holds ${states.size}` });
  }
  for (const [provider, token] of tokens) {
    const own = await getJson(server.origin, `/api/acp/providers/${provider}/resources`, token);
    const listed = ((own.body as { resources?: { id: string }[] })?.resources ?? []).map((r) => r.id).join(',');
    const expected = [...states].filter(([, s]) => s?.provider === provider).map(([id]) => id).sort().join(',');
    if (own.status !== 200 || listed !== expected) {
      violations.push({ kind: 'machine-token-failed', round, message: `${provider}'s token after the restart: ${own.status}, listed [${listed}], expected [${expected}]` });
    }
  }
  return { snapshot: { states, inv, cmp: now() }, violations };
}

/** What a rejection (4xx) proves: a conflict names the holder; "not found" proves absence. */
function rejectionObservations(answer: unknown, label: string, inv: number, cmp: number): Observation[] {
  const a = answer as { code?: string; details?: { id?: string; conflicts?: { id: string; provider: string }[] } } | undefined;
  if (a?.code === 'resource_conflict') return (a.details?.conflicts ?? []).map((c) => ({ id: c.id, owner: c.provider, inv, cmp, source: `409 to ${label}` }));
  if (a?.code === 'resource_not_found' && a.details?.id) return [{ id: a.details.id, owner: null, inv, cmp, source: `404 to ${label}` }];
  return [];
}

export async function runCrashRounds(options: CrashOptions): Promise<CrashResult> {
  const started = now();
  const { seed, writers, machines } = options;
  const kinds = options.kinds ?? OPERATION_KINDS;
  const log = options.log ?? (() => undefined);
  const dataDir = await tempDataDir();
  const env = testEnv(dataDir, {
    SEED_HUABU_RESOURCES: 'false',
    // Limits that would turn writes into 429/503 answers (ignored by versions without them).
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...options.env,
  });
  const result: CrashResult = { seed, dataDir, roundsRun: 0, acknowledged: 0, rejected: 0, unknown: 0, violations: [], maxRestartMs: 0, durationMs: 0 };

  let server = await startServer(env);
  const tokens = new Map<string, string>([['huabu', CANARY.huabu]]);
  for (const machineId of machines) {
    const res = await request(`${server.origin}/api/acp/machines`, {
      method: 'POST',
      headers: { ...bearer(CANARY.owner), 'content-type': 'application/json' },
      body: JSON.stringify({ machineId }),
    });
    const body = (await res.body.json()) as { token?: string };
    if (res.statusCode !== 201 || !body.token) throw new Error(`enrolling ${machineId}: ${res.statusCode}`);
    recordIssuedToken(body.token);
    tokens.set(machineId, body.token);
  }
  if (options.settleMs) await sleep(options.settleMs);
  const providers = [...tokens.keys()];
  const pool = new IdPool(providers);
  let start = (await observe(server, dataDir, tokens, 0)).snapshot;

  try {
    for (let round = 1; round <= options.rounds; round++) {
      const roundRng = rngFor(seed, round, 0);
      const [min, max] = options.killAfterMs;
      const killAfter = min + roundRng() * (max - min);
      const ops: OpRecord[] = [];
      const violations: Violation[] = [];
      const http = new Pool(server.origin, { connections: writers, headersTimeout: 15_000, bodyTimeout: 15_000, connectTimeout: 5_000 });
      let stopping = false;

      const writer = async (w: number) => {
        const rng = rngFor(seed, round, w + 1);
        const provider = providers[w % providers.length]!;
        for (let n = 0; !stopping; n++) {
          const kind = chooseKind(rng, kinds);
          const planned = kind.plan({ rng, provider, tag: `r${round}w${w}n${n}`, pool });
          const { method, path: url, body } = planned.request;
          const op: OpRecord = { seq: ops.length, kind: kind.name, writer: w, provider, label: `${method} ${url}`, inv: now(), cmp: undefined, outcome: 'unknown', effects: [], observations: [] };
          ops.push(op);
          try {
            const res = await http.request({
              method,
              path: url,
              headers: { ...bearer(tokens.get(provider)!), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            });
            const text = await res.body.text();
            op.cmp = now();
            op.status = res.statusCode;
            const answer: unknown = text ? JSON.parse(text) : undefined;
            if (res.statusCode >= 200 && res.statusCode < 300) {
              try {
                op.effects = planned.acknowledged(res.statusCode, answer);
                op.outcome = 'acknowledged';
                op.observations = op.effects.map((e) => ({ id: e.id, owner: provider, inv: op.inv, cmp: op.cmp!, source: `${res.statusCode} to ${op.label}` }));
              } catch (err) {
                violations.push({ kind: 'bad-response', round, message: `${op.label}: ${(err as Error).message}` });
                op.effects = planned.possible();
              }
            } else if (res.statusCode >= 500) {
              op.effects = planned.possible(); // the server's fault: judge it as unknown
            } else {
              op.outcome = 'rejected';
              op.observations = rejectionObservations(answer, op.label, op.inv, op.cmp);
            }
          } catch (err) {
            op.error = (err as { code?: string }).code ?? (err as Error).message;
            op.effects = planned.possible();
          }
        }
      };

      const running = Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
      await sleep(killAfter);
      stopping = true;
      await server.kill();
      const settled = await Promise.race([running.then(() => true), sleep(30_000, false, { ref: false })]);
      if (!settled) throw new Error(`round ${round}: writers still waiting 30 s after the kill`);
      await http.destroy();

      server = await startServer(env);
      result.maxRestartMs = Math.max(result.maxRestartMs, server.startMs);
      const end = await observe(server, dataDir, tokens, round);
      violations.push(...end.violations, ...checkRound({ round, start, ops, end: end.snapshot }));
      start = end.snapshot;

      const counts = { acknowledged: 0, rejected: 0, unknown: 0 };
      for (const op of ops) counts[op.outcome]++;
      result.acknowledged += counts.acknowledged;
      result.rejected += counts.rejected;
      result.unknown += counts.unknown;
      result.violations.push(...violations);
      result.roundsRun = round;
      if (violations.length > 0) {
        log(`round ${round}: kill after ${killAfter.toFixed(0)} ms, ${ops.length} ops (${counts.acknowledged} acknowledged, ${counts.unknown} unknown); ${violations.length} violation(s):`);
        for (const v of violations.slice(0, 5)) log(`  ${v.kind}: ${v.message}`);
      }
      if (options.stopWhen?.(result.violations)) break;
    }
  } finally {
    await server.kill();
  }
  result.durationMs = now() - started;
  return result;
}
