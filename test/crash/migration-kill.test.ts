// Migrations killed midway (docs/data-files.md): a registry file v1 with thousands of deployments (profiles to be), migrated by the real
// compiled migrate command or by the server at its start, SIGKILLed at seeded random moments: some spread
// over the whole run (most of which is starting Node and reading the file), most spread over its writes
// (from the moment the first temp file appears, as inotify reports it, to a little after the end). After each kill registry.json is byte-identical to the original or is the complete v4 file, and
// the backup, when present, holds the original bytes (it always is once the file is migrated). A restart
// (the migrate command, or the server) then finishes the migration or finds nothing to do, leaves no temp
// file, and the result is byte-identical to a migration nobody killed.
//
// MIGRATION_KILL_SEED (default random; printed) reproduces the delays:
//   npm run build && MIGRATION_KILL_SEED=<seed> MIGRATION_KILLS=<n> npx tap test/crash/migration-kill.test.ts
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, watch } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { rngFor } from './harness.js';
import { killAllServers, SERVER_ENTRY, startServer } from './server-process.js';

const MIGRATE_ENTRY = path.resolve('dist/scripts/migrate.js');
const PROFILES = 12_000;
/** MIGRATION_KILLS (default 3: about 9 s each on an idle two-core machine; `npm run test:slow` runs 12) sets how many runs are killed. */
const KILLS = Number(process.env.MIGRATION_KILLS ?? 3);
if (!Number.isInteger(KILLS) || KILLS < 2) throw new Error('MIGRATION_KILLS must be an integer of at least 2');
/** Kills at a random moment of the whole run (about a third); the rest land in its writes. */
const SPREAD_KILLS = Math.max(1, Math.round(KILLS * 0.3));
const seed = process.env.MIGRATION_KILL_SEED ? Number(process.env.MIGRATION_KILL_SEED) : randomInt(2 ** 31);

// The timeout only guards against a hang (tap's per-file timeout, 480 s, is the outer bound).
t.setTimeout(Math.max(240_000, KILLS * 30_000));
t.teardown(killAllServers);
t.comment(
  `migration kill seed ${seed} (reproduce: MIGRATION_KILL_SEED=${seed} MIGRATION_KILLS=${KILLS} npx tap test/crash/migration-kill.test.ts)`,
);

/**
 * The (upstream-shaped) v1 fixture with its first deployment repeated `n` times (unique ids and aliases), as
 * bytes. Without their setup logs, so the migration writes no JSONL file beside the registry file.
 */
async function largeV1(n: number): Promise<Buffer> {
  const doc = JSON.parse(await readFile(path.join('test', 'fixtures', 'registry', 'v1.json'), 'utf8')) as {
    state: { deployments: Record<string, unknown>[] };
  };
  const [first, second] = doc.state.deployments.map(({ setupLog: _log, ...d }) => d);
  const deployments = Array.from({ length: n }, (_, i) => ({
    ...first,
    id: `reviewer-${i}`,
    alias: `Reviewer ${i}`,
    workingDirPath: `/teams/reviewer/workspaces/w${i}`,
  }));
  return Buffer.from(JSON.stringify({ ...doc, state: { ...doc.state, deployments: [...deployments, second] } }, null, 2) + '\n');
}

const registryOf = (dataDir: string) => path.join(dataDir, 'agent-team', 'registry.json');
const backupOf = (dataDir: string) => `${registryOf(dataDir)}.v1.bak`;
const read = (file: string) => readFile(file).catch(() => undefined);

async function dataDirWith(bytes: Buffer): Promise<string> {
  const dataDir = await tempDataDir();
  await mkdir(path.dirname(registryOf(dataDir)), { recursive: true });
  await writeFile(registryOf(dataDir), bytes);
  return dataDir;
}

type Migrator = 'migrate command' | 'server';

/** Spawns the migrate command or the server on `dataDir`; resolves with its exit code or signal (and output). */
function spawnMigrator(kind: Migrator, dataDir: string) {
  const child =
    kind === 'migrate command'
      ? spawn(process.execPath, [MIGRATE_ENTRY, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, [SERVER_ENTRY], {
          env: { PATH: process.env.PATH ?? '', ...testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false' }), HOST: '127.0.0.1', PORT: '0' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output = (output + c.toString('utf8')).slice(-4000)));
  child.stderr.on('data', (c: Buffer) => (output = (output + c.toString('utf8')).slice(-4000)));
  const exited = new Promise<{ code: number | null; signal: string | null; output: string }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, output })),
  );
  return { child, exited };
}

/** Resolves when the first temp file appears in the registry's directory (the migration starts writing). */
function firstTempFile(dataDir: string): { appeared: Promise<number>; close(): void } {
  let close = () => undefined as void;
  const appeared = new Promise<number>((resolve) => {
    const watcher = watch(path.dirname(registryOf(dataDir)), (_event, name) => {
      if (name?.endsWith('.tmp')) resolve(performance.now());
    });
    close = () => watcher.close();
  });
  return { appeared, close };
}

/** Runs the migrate command to its end; `writeMs` is how long it ran after its first temp file appeared. */
async function migrateToEnd(dataDir: string) {
  const started = performance.now();
  const temp = firstTempFile(dataDir);
  const result = await spawnMigrator('migrate command', dataDir).exited;
  const ended = performance.now();
  const firstTemp = await Promise.race([temp.appeared, Promise.resolve(undefined)]);
  temp.close();
  return { ...result, ms: ended - started, writeMs: firstTemp === undefined ? undefined : ended - firstTemp };
}

/** Starts the server (which migrates at start), checks it serves the profiles, and stops it. */
async function serverToReady(dataDir: string): Promise<number> {
  const server = await startServer(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false' }), 60_000);
  try {
    const res = await request(`${server.origin}/api/acp/profiles`, { headers: { authorization: `Bearer ${CANARY.owner}` } });
    const body = (await res.body.json()) as { profiles?: unknown[] };
    return body.profiles?.length ?? -1;
  } finally {
    await server.kill();
  }
}

const tempFiles = async (dataDir: string) => (await readdir(path.dirname(registryOf(dataDir)))).filter((n) => n.endsWith('.tmp'));
const otherFiles = async (dataDir: string) =>
  (await readdir(path.dirname(registryOf(dataDir)))).filter(
    (n) => !n.endsWith('.tmp') && n !== 'registry.json' && n !== 'registry.json.v1.bak',
  );

t.test('a registry migration killed at any moment leaves the original or the migrated file, with the backup intact', async (t) => {
  for (const entry of [MIGRATE_ENTRY, SERVER_ENTRY])
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
  const original = await largeV1(PROFILES);

  // The reference: a migration nobody kills.
  const referenceDir = await dataDirWith(original);
  const reference = await migrateToEnd(referenceDir);
  t.equal(reference.code, 0, `the migrate command succeeds (${reference.output.split('\n')[0]})`);
  const migrated = (await read(registryOf(referenceDir)))!;
  t.equal(JSON.parse(migrated.toString('utf8')).schemaVersion, 4, 'the reference is a v4 file');
  t.ok((await read(backupOf(referenceDir)))?.equals(original), 'the reference backup holds the original bytes');
  const again = await migrateToEnd(referenceDir);
  t.match(again.output, /nothing to do/, 're-running finds nothing to do');
  t.ok(reference.writeMs !== undefined, 'the migration writes through temp files');
  const writeSpan = (reference.writeMs ?? 100) * 1.5;
  t.comment(
    `${PROFILES + 1} profiles, ${(original.length / 1e6).toFixed(1)} MB: a migration takes ${reference.ms.toFixed(0)} ms, ` +
      `${reference.writeMs?.toFixed(0)} ms of it from the first temp file to the end; a run with nothing to do ${again.ms.toFixed(0)} ms`,
  );

  const phases = { untouched: 0, 'backed up': 0, migrated: 0, 'temp file left': 0 };
  const rng = rngFor(seed);
  const killAt = async (i: number, fromStart: boolean, delay: number) => {
    const killer: Migrator = i % 4 < 2 ? 'migrate command' : 'server';
    const restarter: Migrator = i % 2 === 0 ? 'migrate command' : 'server';
    const dataDir = await dataDirWith(original);
    const temp = firstTempFile(dataDir);
    const run = spawnMigrator(killer, dataDir);
    const anchor = fromStart ? performance.now() : await Promise.race([temp.appeared, run.exited.then(() => performance.now())]);
    await sleep(Math.max(0, anchor + delay - performance.now()));
    run.child.kill('SIGKILL');
    const exit = await run.exited;
    temp.close();
    const label = `kill ${i + 1} (${killer}, ${delay.toFixed(0)} ms after ${fromStart ? 'the spawn' : 'the first temp file'}${exit.signal ? '' : `, had exited ${exit.code}`})`;

    const file = await read(registryOf(dataDir));
    const backup = await read(backupOf(dataDir));
    const isOriginal = file?.equals(original) ?? false;
    const isMigrated = file?.equals(migrated) ?? false;
    t.ok(isOriginal || isMigrated, `${label}: registry.json is the original or the complete v4 file`);
    if (backup) t.ok(backup.equals(original), `${label}: the backup holds the original bytes`);
    if (isMigrated) t.ok(backup, `${label}: the migrated file has its backup`);
    t.same(await otherFiles(dataDir), [], `${label}: nothing else beside it`);
    const temps = await tempFiles(dataDir);
    phases[isMigrated ? 'migrated' : backup ? 'backed up' : 'untouched']++;
    if (temps.length > 0) phases['temp file left']++;

    if (restarter === 'migrate command') {
      const restart = await migrateToEnd(dataDir);
      t.equal(restart.code, 0, `${label}: the migrate command finishes it: ${restart.output.split('\n')[0]}`);
    } else {
      t.equal(await serverToReady(dataDir), PROFILES + 1, `${label}: the server starts and serves every profile`);
    }
    t.ok(
      (await read(registryOf(dataDir)))?.equals(migrated),
      `${label}: after the ${restarter} ran, registry.json equals the unkilled migration`,
    );
    t.ok((await read(backupOf(dataDir)))?.equals(original), `${label}: the backup still holds the original bytes`);
    t.same(await tempFiles(dataDir), [], `${label}: no temp file remains after the ${restarter} ran`);
    // 12 MB a directory: do not leave them for the canary scan.
    await rm(dataDir, { recursive: true, force: true });
  };
  for (let i = 0; i < KILLS; i++) {
    // A few kills anywhere in the run (stratified over it); the others stratified over the writes, from the
    // first temp file to a little after the end: mid-backup, between backup and file, mid-write, after.
    const fromStart = i < SPREAD_KILLS;
    const k = fromStart ? i : i - SPREAD_KILLS;
    const n = fromStart ? SPREAD_KILLS : KILLS - SPREAD_KILLS;
    await killAt(i, fromStart, ((fromStart ? reference.ms : writeSpan) * (k + rng())) / n);
  }
  // A busy machine can make every kill land on the same side of the migrated file's rename (the reference
  // run's timing is not the killed run's): then a few more kills aim at the side not yet covered, earlier
  // and earlier in the writes, or after their end.
  for (let extra = 0; extra < 4; extra++) {
    const before = phases.untouched + phases['backed up'] > 0;
    if (before && phases.migrated > 0) break;
    await killAt(KILLS + extra, false, before ? writeSpan * (1 + extra) : (writeSpan * rng()) / 4 ** (extra + 1));
  }
  await rm(referenceDir, { recursive: true, force: true });
  t.comment(
    `after the kills: ${Object.entries(phases)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  t.ok(
    phases.untouched + phases['backed up'] > 0 && phases.migrated > 0,
    'kills landed both before and after the migrated file was in place',
  );
  if (phases['backed up'] === 0) t.comment('no kill landed between the backup and the migrated file this time');
});
