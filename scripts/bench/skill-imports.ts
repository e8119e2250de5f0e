// Scenario 16: what one skill import, refresh and delete costs as the machine fills. A real server process
// on a copy of the scale's DATA_DIR (machine bm0 enrolled) and a real `agentlet-resources serve` for bm0 on
// a fresh resource root; the owner imports `skills` skill folders one at a time through
// `POST /api/acp/resources/import`, then refreshes and deletes a few at the full size. The folders are the
// real public skills in test/fixtures/skill-collections (README.md there gives their commits and licences),
// each copied as often as needed under a numbered folder and `name` so no two are the same skill.
// The import answer's time at the 10th and at the `skills`-th import (the median of the five imports around
// each) is what the scenario compares.
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { readSkill } from '../../src/agentlet/skill-jobs.js';
import { copyDataDir, MACHINES, median, removeDir, startServer, type Credentials } from './harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = path.extname(fileURLToPath(import.meta.url)) === '.js';
/** The repository's root: two levels up from scripts/bench, three from dist/scripts/bench. */
const repoRoot = path.resolve(here, ...(compiled ? ['..', '..', '..'] : ['..', '..']));
const COLLECTIONS = path.join(repoRoot, 'test', 'fixtures', 'skill-collections');
/** The Agentlet's CLI of the same build as this script. */
const CLI = path.resolve(here, '..', '..', 'src', 'agentlet', compiled ? 'cli.js' : 'cli.ts');
const MACHINE = MACHINES[0]!;

export interface ImportRound {
  /** Milliseconds of each import's answer, in order. */
  imports: number[];
  /** Milliseconds of refreshes and deletes at the full size. */
  refreshes: number[];
  deletes: number[];
  /** Any answer that was not 200 (status and code), which makes the round's figures suspect. */
  failures: string[];
}

export interface ImportOptions {
  template: string;
  root: string;
  creds: Credentials;
  skills: number;
  rounds: number;
  /** Another build's `dist` whose server (and Agentlet) runs the same rounds, alternated with this one's. */
  baselineBuild?: string;
  log(message: string): void;
}

/** Every folder holding SKILL.md in the vendored collections, sorted. */
async function realSkillFolders(): Promise<string[]> {
  const entries = await readdir(COLLECTIONS, { recursive: true });
  return entries
    .filter((e) => path.basename(e) === 'SKILL.md')
    .map((e) => path.join(COLLECTIONS, path.dirname(e)))
    .sort();
}

/**
 * `count` skill folders under `into`: the real ones in turn, the k-th copy of folder `x` as `x-k` with its
 * front matter's `name` the same. Returns each one's path and revision (what a scan would answer).
 */
export async function skillSources(into: string, count: number): Promise<{ id: string; sourcePath: string; revision: string }[]> {
  const folders = await realSkillFolders();
  const out: { id: string; sourcePath: string; revision: string }[] = [];
  for (let i = 0; i < count; i++) {
    const from = folders[i % folders.length]!;
    const id = `${path.basename(from)}-${Math.floor(i / folders.length) + 1}`;
    const sourcePath = path.join(into, id);
    await cp(from, sourcePath, { recursive: true });
    const skillFile = path.join(sourcePath, 'SKILL.md');
    const text = await readFile(skillFile, 'utf8');
    await writeFile(skillFile, text.replace(/^name:.*$/m, `name: ${id}`));
    out.push({ id, sourcePath, revision: (await readSkill(sourcePath)).candidate.sourceRevision });
  }
  return out;
}

async function runCli(cli: string, args: string[], env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, [...process.execArgv, cli, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`agentlet-resources ${args[0]} exited with ${code}: ${err}`);
}

/** One round on one build: a fresh server, a fresh resource root and its `serve`, the imports, refreshes and deletes. */
async function oneRound(
  o: ImportOptions,
  sources: Awaited<ReturnType<typeof skillSources>>,
  build: string | undefined,
): Promise<ImportRound> {
  const dir = await copyDataDir(o.template, o.root);
  const machineDir = path.join(dir, 'machine');
  const resourceRoot = path.join(machineDir, 'resources');
  await mkdir(machineDir, { recursive: true, mode: 0o700 });
  const tokenFile = path.join(machineDir, 'token');
  await writeFile(tokenFile, o.creds.machines[MACHINE]!, { mode: 0o600 });
  const server = await startServer(dir, o.creds, build ? { BENCH_BUILD: build } : {});
  const cli = build ? path.join(build, 'src', 'agentlet', 'cli.js') : CLI;
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), AGENT_RESOURCE_DIR: resourceRoot };
  let daemon: ChildProcess | undefined;
  const owner = { authorization: `Bearer ${o.creds.owner}`, 'content-type': 'application/json' };
  const call = async (method: 'POST' | 'DELETE', url: string, body?: unknown) => {
    const headers = body ? owner : { authorization: owner.authorization };
    const started = performance.now();
    const res = await request(`${server.url}${url}`, { method, headers, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.body.text();
    return { ms: performance.now() - started, status: res.statusCode, text };
  };
  const round: ImportRound = { imports: [], refreshes: [], deletes: [], failures: [] };
  const check = (what: string, r: { status: number; text: string }) => {
    if (r.status !== 200) round.failures.push(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
  };
  try {
    await runCli(cli, ['init'], env);
    daemon = spawn(
      process.execPath,
      [...(build ? [] : process.execArgv), cli, 'serve', '--registry', server.url, '--machine-id', MACHINE, '--token-file', tokenFile],
      { env: { ...env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    for (let i = 0; ; i++) {
      const res = await request(`${server.url}/api/acp/machines`, { headers: owner });
      const { machines } = (await res.body.json()) as { machines: { machineId: string; status: string }[] };
      if (machines.some((m) => m.machineId === MACHINE && m.status === 'connected')) break;
      if (i > 300) throw new Error(`machine ${MACHINE} did not connect`);
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const s of sources) {
      const r = await call('POST', `/api/acp/resources/import?agentletId=${MACHINE}`, {
        id: s.id,
        sourcePath: s.sourcePath,
        expectedRevision: s.revision,
      });
      check(`import ${s.id}`, r);
      round.imports.push(r.ms);
    }
    for (const s of sources.slice(-5)) {
      const r = await call('POST', `/api/acp/resources/${s.id}/refresh?agentletId=${MACHINE}`, { expectedRevision: s.revision });
      check(`refresh ${s.id}`, r);
      round.refreshes.push(r.ms);
    }
    for (const s of sources.slice(-5)) {
      const r = await call('DELETE', `/api/acp/resources/${s.id}?agentletId=${MACHINE}`);
      check(`delete ${s.id}`, r);
      round.deletes.push(r.ms);
    }
  } finally {
    if (daemon && daemon.exitCode === null) {
      const exited = new Promise((r) => daemon!.once('exit', r));
      daemon.kill('SIGTERM');
      await exited;
    }
    await server.stop();
    await removeDir(dir);
  }
  return round;
}

/** `rounds` rounds; with `baselineBuild`, that build's too, alternated with this one's. */
export async function measureSkillImports(o: ImportOptions): Promise<{ rounds: ImportRound[]; baseline: ImportRound[] }> {
  const sourcesDir = path.join(o.root, 'skill-sources');
  const sources = await skillSources(sourcesDir, o.skills);
  const rounds: ImportRound[] = [];
  const baseline: ImportRound[] = [];
  try {
    for (let round = 0; round < o.rounds; round++) {
      const builds = [
        async () => rounds.push(await oneRound(o, sources, undefined)),
        ...(o.baselineBuild ? [async () => baseline.push(await oneRound(o, sources, o.baselineBuild))] : []),
      ];
      for (const run of round % 2 === 0 ? builds : builds.reverse()) await run();
      const last = rounds.at(-1)!;
      o.log(
        `skill imports round ${round + 1}: 10th ${at(last.imports, 10).toFixed(0)} ms, ${o.skills}th ${at(last.imports, o.skills).toFixed(0)} ms${last.failures.length ? `; ${last.failures.length} failures, first: ${last.failures[0]}` : ''}`,
      );
    }
  } finally {
    await removeDir(sourcesDir);
  }
  return { rounds, baseline };
}

/** The median of the five imports around the n-th (1-based), within the list. */
export function at(ms: readonly number[], n: number): number {
  const end = Math.min(ms.length, Math.max(5, n + 2));
  return median(ms.slice(Math.max(0, end - 5), end));
}
