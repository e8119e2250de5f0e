// The crash-test harness: rounds of concurrent writers against a real server process, a SIGKILL at a seeded
// random moment, a restart on the same DATA_DIR, and a check of the recovered state against the history
// (test/crash/model.ts). Everything random comes from one seed; the scheduling of the machine varies, and so
// do the profile IDs the server assigns (the writers target the profiles the history has made known).
import { appendFile, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { readStoredResources } from '../../src/storage/json-file-store.js';
import { CANARY, recordIssuedToken, tempDataDir, testEnv } from '../helpers/build.js';
import {
  canonicalJson,
  checkProfiles,
  checkRound,
  checkWorkloads,
  sameState,
  threadKey,
  WorkloadLedger,
  type Content,
  type IdState,
  type Observation,
  type OpRecord,
  type ProfileView,
  type Snapshot,
  type Violation,
} from './model.js';
import {
  CANVASES,
  chooseKind,
  FIXED_RESOURCE_IDS,
  fixedContent,
  HOST,
  IdPool,
  OPERATION_KINDS,
  profileCreateBody,
  ProfilePool,
  profileViewOf,
  REQUIRED_RESOURCE_ID,
  ThreadPool,
  toBody,
  type OperationKind,
  type Reader,
  type Rng,
} from './operations.js';
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
  /**
   * After `rounds`, keep running rounds (at most `maxRounds` in all) until `done` holds: on a busy machine
   * a round may end before some kinds of write were acknowledged, and the run must still cover them.
   */
  extendUntil?: { done: (result: CrashResult) => boolean; maxRounds: number };
  log?: (line: string) => void;
}

export interface CrashResult {
  seed: number;
  dataDir: string;
  roundsRun: number;
  acknowledged: number;
  rejected: number;
  unknown: number;
  /** The same counts by operation kind. */
  byKind: Record<string, { acknowledged: number; rejected: number; unknown: number }>;
  /** Kills after which audit.jsonl was given a torn last line (as a kill mid-append leaves it). */
  tornAuditLines: number;
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
    // The lock's socket (.control/service.sock) is not data.
    else if (!entry.isSocket()) out.push(full);
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

/** A line of a .jsonl file that a kill left torn (no final newline): it may stay unparsed, as it is, for ever. */
export interface TornLine {
  file: string;
  offset: number;
  length: number;
}

/** Checks a JSON-lines file: every line parses except torn ones recorded after a kill, which keep their exact length. */
function checkJsonLines(rel: string, bytes: Buffer, torn: readonly TornLine[]): void {
  if (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) throw new Error('the last line is incomplete');
  let offset = 0;
  let line = 0;
  while (offset < bytes.length) {
    const next = bytes.indexOf(0x0a, offset);
    const length = next - offset;
    line++;
    try {
      JSON.parse(bytes.subarray(offset, next).toString('utf8'));
    } catch {
      if (!torn.some((t) => t.file === rel && t.offset === offset && t.length === length)) throw new Error(`line ${line} does not parse`);
    }
    offset = next + 1;
  }
}

interface ObserveInput {
  server: RunningServer;
  dataDir: string;
  tokens: Map<string, string>;
  round: number;
  /** Threads whose launch was acknowledged in the round: read back one by one, as bytes. */
  ackedThreads: Iterable<{ canvasId: string; threadId: string }>;
  torn: readonly TornLine[];
}

/**
 * Reads the recovered state from disk (every file must parse; no temp file may be left), and checks that
 * the restarted server serves exactly that and that every provider's token still works.
 */
async function observe({
  server,
  dataDir,
  tokens,
  round,
  ackedThreads,
  torn,
}: ObserveInput): Promise<{ snapshot: Snapshot; violations: Violation[] }> {
  const inv = now();
  const violations: Violation[] = [];
  const states = new Map<string, IdState>();
  const profiles = new Map<string, ProfileView>();
  const workloads = new Map<string, string>();
  const canvases = new Set<string>(CANVASES);
  for (const file of await filesUnder(dataDir)) {
    const rel = path.relative(dataDir, file);
    if (rel.endsWith('.tmp')) {
      violations.push({ kind: 'temp-file-left', round, message: `${rel} remains after the restart` });
      continue;
    }
    const bytes = await readFile(file);
    try {
      if (rel.endsWith('.jsonl')) {
        checkJsonLines(rel, bytes, torn);
      } else if (rel.endsWith('.json')) {
        const doc = JSON.parse(bytes.toString('utf8')) as {
          state?: { profiles?: unknown[]; workloads?: { canvasId: string; threadId: string }[] };
        };
        if (rel === path.join('agent-team', 'registry.json')) {
          for (const p of doc.state?.profiles ?? []) {
            if ((p as { launch?: { kind?: string } }).launch?.kind === 'acp-command')
              profiles.set((p as { id: string }).id, profileViewOf(p));
          }
        } else if (path.dirname(rel) === 'workloads') {
          canvases.add(path.basename(rel, '.json'));
          for (const w of doc.state?.workloads ?? []) workloads.set(threadKey(w.canvasId, w.threadId), canonicalJson(w));
        }
      }
    } catch (err) {
      violations.push({ kind: 'file-does-not-parse', round, message: `${rel}: ${(err as Error).message}` });
    }
  }
  // resources.json with its journal replayed: what is durable (a start compacts the journal into the file,
  // but before the first kill the setup's writes are in the journal only).
  try {
    for (const r of await readStoredResources(dataDir)) states.set(r.id, contentOf(r));
  } catch (err) {
    violations.push({ kind: 'file-does-not-parse', round, message: `agent-resources: ${(err as Error).message}` });
  }
  const served = await getJson(server.origin, '/api/acp/resources', CANARY.owner);
  const servedStates = new Map(
    ((served.body as { resources?: (Content & { id: string })[] })?.resources ?? []).map((r) => [r.id, contentOf(r)] as const),
  );
  if (served.status !== 200 || !sameStates(servedStates, states)) {
    violations.push({
      kind: 'served-differs-from-disk',
      round,
      message: `GET /api/acp/resources answered ${served.status} with ${servedStates.size} records; resources.json holds ${states.size}`,
    });
  }
  for (const [provider, token] of tokens) {
    const own = await getJson(server.origin, `/api/acp/providers/${provider}/resources`, token);
    const listed = ((own.body as { resources?: { id: string }[] })?.resources ?? []).map((r) => r.id).join(',');
    const expected = [...states]
      .filter(([, s]) => s?.provider === provider)
      .map(([id]) => id)
      .sort()
      .join(',');
    if (own.status !== 200 || listed !== expected) {
      violations.push({
        kind: 'machine-token-failed',
        round,
        message: `${provider}'s token after the restart: ${own.status}, listed [${listed}], expected [${expected}]`,
      });
    }
  }
  const servedProfiles = await getJson(server.origin, '/api/acp/profiles', CANARY.owner);
  const servedViews = ((servedProfiles.body as { profiles?: unknown[] })?.profiles ?? [])
    .filter((p) => (p as { launch?: { kind?: string } }).launch?.kind === 'acp-command')
    .map((p) => JSON.stringify(profileViewOf(p)));
  const diskViews = [...profiles.keys()].sort().map((id) => JSON.stringify(profiles.get(id)));
  if (servedProfiles.status !== 200 || JSON.stringify(servedViews) !== JSON.stringify(diskViews)) {
    violations.push({
      kind: 'served-differs-from-disk',
      round,
      message: `GET /api/acp/profiles answered ${servedProfiles.status} with ${servedViews.length} acp-command profiles; registry.json holds ${diskViews.length}`,
    });
  }
  for (const canvasId of canvases) {
    const list = await getJson(server.origin, `/api/acp/workloads?canvasId=${canvasId}`, CANARY.owner);
    const servedKeys = ((list.body as { workloads?: { canvasId: string; threadId: string }[] })?.workloads ?? []).map((w) => [
      threadKey(w.canvasId, w.threadId),
      canonicalJson(w),
    ]);
    const diskKeys = [...workloads].filter(([key]) => key.startsWith(`${canvasId}/`)).sort(([a], [b]) => (a < b ? -1 : 1));
    if (list.status !== 200 || JSON.stringify(servedKeys) !== JSON.stringify(diskKeys)) {
      violations.push({
        kind: 'served-differs-from-disk',
        round,
        message: `GET /api/acp/workloads?canvasId=${canvasId} answered ${list.status} with ${servedKeys.length} records; workloads/${canvasId}.json holds ${diskKeys.length}`,
      });
    }
  }
  // The audit trail after the restart: every stored realization has exactly one `realized` entry, and no
  // such entry names a thread that has none (a launch's entry is made durable with its record).
  const realized = new Map<string, number>();
  for (const line of (await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8').catch(() => '')).split('\n')) {
    let entry: { action?: string; id?: string; outcome?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue; // the empty last line, or a torn one
    }
    if (entry.action === 'workload.launch' && entry.outcome === 'realized') realized.set(entry.id!, (realized.get(entry.id!) ?? 0) + 1);
  }
  for (const key of new Set([...workloads.keys(), ...realized.keys()])) {
    const count = realized.get(key) ?? 0;
    if (count !== 1 || !workloads.has(key)) {
      violations.push({
        kind: 'launch-audit-differs',
        round,
        id: key,
        message: `${key}: ${workloads.has(key) ? 'stored' : 'not stored'}, ${count} "realized" audit entries`,
      });
    }
  }
  const servedWorkloads = new Map<string, string>();
  for (const { canvasId, threadId } of ackedThreads) {
    const res = await request(`${server.origin}/api/acp/workloads/${canvasId}/${threadId}`, {
      headers: bearer(CANARY.owner),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    const text = await res.body.text();
    if (res.statusCode === 200) servedWorkloads.set(threadKey(canvasId, threadId), text);
  }
  return { snapshot: { states, profiles, workloads, servedWorkloads, inv, cmp: now() }, violations };
}

/** After a kill, before the restart: notes a torn last line of audit.jsonl, or (tear) makes one, as a kill mid-append would. */
async function noteTornAudit(dataDir: string, tear: boolean): Promise<TornLine | undefined> {
  const file = path.join(dataDir, 'audit.jsonl');
  let bytes = await readFile(file).catch(() => undefined);
  if (bytes === undefined) return undefined;
  if (tear && (bytes.length === 0 || bytes[bytes.length - 1] === 0x0a)) {
    await appendFile(file, '{"at":"2026-01-01T00:00:00.000Z","actor":"owner","act');
    bytes = await readFile(file);
  }
  if (bytes.length === 0 || bytes[bytes.length - 1] === 0x0a) return undefined;
  const offset = bytes.lastIndexOf(0x0a) + 1;
  return { file: 'audit.jsonl', offset, length: bytes.length - offset };
}

/** What a rejection (4xx) proves: a conflict names the holder; "not found" proves absence. */
function rejectionObservations(answer: unknown, label: string, inv: number, cmp: number): Observation[] {
  const a = answer as { code?: string; details?: { id?: string; conflicts?: { id: string; provider: string }[] } } | undefined;
  if (a?.code === 'resource_conflict')
    return (a.details?.conflicts ?? []).map((c) => ({ id: c.id, owner: c.provider, inv, cmp, source: `409 to ${label}` }));
  if (a?.code === 'resource_not_found' && a.details?.id) return [{ id: a.details.id, owner: null, inv, cmp, source: `404 to ${label}` }];
  return [];
}

async function send(origin: string, method: string, url: string, token: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await request(`${origin}${url}`, {
    method: method as 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify(body),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** Every this-many kills, the harness tears audit.jsonl's last line itself (a kill mid-append is rare). */
const TEAR_AUDIT_EVERY = 7;

export async function runCrashRounds(options: CrashOptions): Promise<CrashResult> {
  const started = now();
  const { seed, writers, machines } = options;
  const kinds = options.kinds ?? OPERATION_KINDS;
  const log = options.log ?? (() => undefined);
  const dataDir = await tempDataDir();
  const env = testEnv(dataDir, {
    SEED_HUABU_RESOURCES: 'false',
    // The required default of every launch: a host resource registered before the first round.
    REQUIRED_RESOURCE_IDS: REQUIRED_RESOURCE_ID,
    // Limits that would turn writes into 429/503 answers (ignored by versions without them).
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    // Fold the workloads journal into the canvas files every few launches (not every ~1,500), so kills land
    // during compactions running beside the launches (ignored by versions without it).
    WORKLOADS_COMPACT_AT_BYTES: '2048',
    ...options.env,
  });
  const result: CrashResult = {
    seed,
    dataDir,
    roundsRun: 0,
    acknowledged: 0,
    rejected: 0,
    unknown: 0,
    byKind: {},
    tornAuditLines: 0,
    violations: [],
    maxRestartMs: 0,
    durationMs: 0,
  };

  let server = await startServer(env);
  const tokens = new Map<string, string>([[HOST, CANARY.huabu]]);
  for (const machineId of machines) {
    const res = await send(server.origin, 'POST', '/api/acp/machines', CANARY.owner, { machineId });
    const token = (res.body as { token?: string }).token;
    if (res.status !== 201 || !token) throw new Error(`enrolling ${machineId}: ${res.status}`);
    recordIssuedToken(token);
    tokens.set(machineId, token);
  }
  // The host's fixed resources (launches and profiles can count on them) and one stable profile per machine.
  for (const id of FIXED_RESOURCE_IDS) {
    const res = await send(
      server.origin,
      'PUT',
      `/api/acp/providers/${HOST}/resources/${id}`,
      CANARY.huabu,
      toBody(id, fixedContent(HOST, id)),
    );
    if (res.status !== 201 && res.status !== 200) throw new Error(`registering ${id}: ${res.status}`);
  }
  const profiles = new ProfilePool(machines);
  for (const [i, agentletId] of machines.entries()) {
    const body = profileCreateBody({
      alias: `Stable agent ${i}`,
      agentletId,
      workingDirPath: `/work/crash/stable-${i}`,
      command: 'crash-agent --acp',
      resourceIds: [FIXED_RESOURCE_IDS[1]],
      tag: `stable-${i}`,
    });
    const res = await send(server.origin, 'POST', '/api/acp/profiles', CANARY.owner, body);
    if (res.status !== 201) throw new Error(`creating a stable profile: ${res.status} ${JSON.stringify(res.body)}`);
    profiles.add({ id: (res.body as { id: string }).id, agentletId, stable: true });
  }
  if (options.settleMs) await sleep(options.settleMs);
  const providers = [...tokens.keys()];
  const pool = new IdPool(providers);
  const threads = new ThreadPool();
  const ledger = new WorkloadLedger();
  const torn: TornLine[] = [];
  const initial = await observe({ server, dataDir, tokens, round: 0, ackedThreads: [], torn });
  let start = initial.snapshot;
  result.violations.push(...initial.violations, ...checkWorkloads({ round: 0, start, ops: [], end: start }, ledger));

  try {
    const more = (round: number) =>
      round <= options.rounds ||
      (options.extendUntil !== undefined && round <= options.extendUntil.maxRounds && !options.extendUntil.done(result));
    for (let round = 1; more(round); round++) {
      const roundRng = rngFor(seed, round, 0);
      const [min, max] = options.killAfterMs;
      const killAfter = min + roundRng() * (max - min);
      const ops: OpRecord[] = [];
      const violations: Violation[] = [];
      const http = new Pool(server.origin, { connections: writers, headersTimeout: 15_000, bodyTimeout: 15_000, connectTimeout: 5_000 });
      let stopping = false;
      // The kill delay counts from the round's first acknowledged write, not from when the writers start or
      // from a refusal (answered at once, where a durable write waits for the disk): after a restart the
      // first writes can take seconds on a busy machine, and a kill before any acknowledgement proves
      // nothing about acknowledged writes.
      let answered!: () => void;
      const firstAnswer = new Promise<void>((resolve) => (answered = resolve));
      const read: Reader = async (url) => {
        const res = await http.request({ method: 'GET', path: url, headers: bearer(CANARY.owner) });
        await res.body.text();
        const etag = res.headers.etag;
        return { status: res.statusCode, etag: typeof etag === 'string' ? etag : undefined };
      };

      const writer = async (w: number) => {
        const rng = rngFor(seed, round, w + 1);
        const provider = providers[w % providers.length]!;
        for (let n = 0; !stopping; n++) {
          const kind = chooseKind(rng, kinds);
          let planned;
          try {
            planned = await kind.plan({ rng, provider, tag: `r${round}w${w}n${n}`, pool, profiles, threads, read });
          } catch {
            continue; // the read before the write failed (the kill): nothing was sent
          }
          if (stopping) break;
          const { method, path: url, body, asOwner, headers } = planned.request;
          const op: OpRecord = {
            seq: ops.length,
            kind: planned.kind ?? kind.name,
            writer: w,
            provider,
            label: `${method} ${url}`,
            inv: now(),
            cmp: undefined,
            outcome: 'unknown',
            effects: [],
            observations: [],
          };
          ops.push(op);
          const record = (effects: ReturnType<typeof planned.possible>) => {
            op.effects = effects.resources ?? [];
            op.profileEffects = effects.profiles ?? [];
            if (effects.profileCreate) op.profileCreate = effects.profileCreate;
            if (effects.launch) op.launch = effects.launch;
          };
          try {
            const res = await http.request({
              method,
              path: url,
              headers: {
                ...bearer(asOwner ? CANARY.owner : tokens.get(provider)!),
                ...(body === undefined ? {} : { 'content-type': 'application/json' }),
                ...headers,
              },
              ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            });
            const text = await res.body.text();
            op.cmp = now();
            op.status = res.statusCode;
            const answer: unknown = text ? JSON.parse(text) : undefined;
            if (res.statusCode >= 200 && res.statusCode < 300) {
              try {
                record(planned.acknowledged(res.statusCode, answer, text));
                op.outcome = 'acknowledged';
                answered();
                op.observations = op.effects.map((e) => ({
                  id: e.id,
                  owner: provider,
                  inv: op.inv,
                  cmp: op.cmp!,
                  source: `${res.statusCode} to ${op.label}`,
                }));
              } catch (err) {
                violations.push({ kind: 'bad-response', round, message: `${op.label}: ${(err as Error).message}` });
                record(planned.possible());
              }
            } else if (res.statusCode >= 500) {
              record(planned.possible()); // the server's fault: judge it as unknown
            } else {
              op.outcome = 'rejected';
              op.observations = rejectionObservations(answer, op.label, op.inv, op.cmp);
            }
          } catch (err) {
            op.error = (err as { code?: string }).code ?? (err as Error).message;
            record(planned.possible());
          }
        }
      };

      const running = Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
      await Promise.race([firstAnswer, sleep(30_000, undefined, { ref: false })]);
      await sleep(killAfter);
      stopping = true;
      await server.kill();
      const settled = await Promise.race([running.then(() => true), sleep(30_000, false, { ref: false })]);
      if (!settled) throw new Error(`round ${round}: writers still waiting 30 s after the kill`);
      await http.destroy();

      const tornLine = await noteTornAudit(dataDir, round % TEAR_AUDIT_EVERY === 0);
      if (tornLine) {
        torn.push(tornLine);
        result.tornAuditLines++;
      }
      server = await startServer(env);
      result.maxRestartMs = Math.max(result.maxRestartMs, server.startMs);
      const ackedThreads = ops.filter((op) => op.outcome === 'acknowledged' && op.launch).map((op) => op.launch!);
      const end = await observe({ server, dataDir, tokens, round, ackedThreads, torn });
      const history = { round, start, ops, end: end.snapshot };
      violations.push(...end.violations, ...checkRound(history), ...checkProfiles(history), ...checkWorkloads(history, ledger));
      start = end.snapshot;
      profiles.reset(end.snapshot.profiles!.values());

      const counts = { acknowledged: 0, rejected: 0, unknown: 0 };
      for (const op of ops) {
        counts[op.outcome]++;
        const byKind = (result.byKind[op.kind] ??= { acknowledged: 0, rejected: 0, unknown: 0 });
        byKind[op.outcome]++;
      }
      result.acknowledged += counts.acknowledged;
      result.rejected += counts.rejected;
      result.unknown += counts.unknown;
      result.violations.push(...violations);
      result.roundsRun = round;
      if (violations.length > 0) {
        log(
          `round ${round}: kill after ${killAfter.toFixed(0)} ms, ${ops.length} ops (${counts.acknowledged} acknowledged, ${counts.unknown} unknown); ${violations.length} violation(s):`,
        );
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
