// `npm run backup` killed midway: SIGKILL of the compiled backup command at each of its steps
// (the ARR_BACKUP_TRACE lines) and at moments spread over a run, and SIGKILL of the server during a backup,
// leave the target absent or complete (a start refuses an unfinished copy, which carries BACKUP-INCOMPLETE)
// and the running service unharmed (nothing left paused). The refusals are in test/backup/online-backup.test.ts.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { killAllServers, startServer, type RunningServer } from '../crash/server-process.js';
import { backup, call, filesUnder, START_MS } from '../helpers/backup.js';

// Many process starts: minutes on a machine shared with a CI run (tap's per-file limit, 300 s, still applies).
t.setTimeout(290_000);
t.teardown(killAllServers);

t.test('killing the backup (at each step and at spread moments) or the server leaves the target absent or complete', async (t) => {
  const dataDir = await tempDataDir();
  // Bulk beside the service's own files (Huabu keeps other files in agent-team/), so the copy takes a while.
  await mkdir(path.join(dataDir, 'agent-team', 'attachments'), { recursive: true });
  for (let i = 0; i < 4; i++)
    await writeFile(path.join(dataDir, 'agent-team', 'attachments', `blob-${i}.bin`), Buffer.alloc(1024 * 1024, i));
  let server: RunningServer = await startServer(testEnv(dataDir), START_MS);
  for (let i = 0; i < 10; i++) {
    const res = await call(server.origin, 'PUT', `/api/acp/providers/huabu/resources/seed-${i}`, CANARY.huabu, {
      schemaVersion: 1,
      name: `s${i}`,
      description: 'd',
      instructions: 'i',
    });
    t.equal(res.status, 201);
  }
  const parent = await tempDataDir();
  const env = { DATA_DIR: dataDir, ARR_BACKUP_TRACE: '1' };

  // A complete backup first: what "complete" looks like, and how long one takes.
  const started = performance.now();
  const complete = await backup(['--to', path.join(parent, 'complete')], env);
  const took = performance.now() - started;
  t.equal(complete.code, 0, complete.stderr);
  const completeFiles = await filesUnder(path.join(parent, 'complete'));
  t.comment(`a complete backup took ${Math.round(took)} ms (${completeFiles.length} files)`);

  /** The target is absent or complete; a leftover temp directory is refused by a start unless it is complete. */
  const check = async (label: string, target: string) => {
    if (existsSync(target)) {
      t.same(await filesUnder(target), completeFiles, `${label}: the target exists, so it is complete`);
    } else t.pass(`${label}: the target is absent`);
    for (const name of (await readdir(parent)).filter((n) => n.startsWith(`.${path.basename(target)}.partial-`))) {
      const files = await filesUnder(path.join(parent, name));
      if (!files.includes('BACKUP-INCOMPLETE')) t.same(files, completeFiles, `${label}: an unmarked leftover is complete`);
    }
    // The service is unharmed: it answers, and a write goes through at once (nothing left paused).
    const t0 = performance.now();
    const res = await call(server.origin, 'PUT', `/api/acp/providers/huabu/resources/after-${path.basename(target)}`, CANARY.huabu, {
      schemaVersion: 1,
      name: 'a',
      description: 'd',
      instructions: 'i',
    });
    t.equal(res.status, 201, `${label}: the service still writes`);
    t.ok(performance.now() - t0 < 5_000, `${label}: without waiting on a pause`);
  };

  const steps = ['marked', 'paused', 'copied', 'audit copied', 'unmarked', 'renamed'];
  let refusedStart = false;
  for (const step of steps) {
    const target = path.join(parent, `at-${step.replace(' ', '-')}`);
    const out = await backup(['--to', target], env, (line, kill) => {
      if (line === `backup step ${step}`) kill();
    });
    // After the rename the command may finish before the kill lands.
    t.ok(out.code === 'SIGKILL' || (step === 'renamed' && out.code === 0), `killed at step ${step} (${out.code})`);
    await check(`kill at ${step}`, target);
    const marked = (await readdir(parent)).find((n) => n.startsWith(`.${path.basename(target)}.partial-`));
    if (!refusedStart && marked && existsSync(path.join(parent, marked, 'BACKUP-INCOMPLETE'))) {
      // A start on a half copy is refused with one line.
      const attempt = await startServer(testEnv(path.join(parent, marked)), START_MS).then(
        async (s) => (await s.kill(), 'started'),
        (err: Error) => err.message,
      );
      t.match(attempt, /BACKUP-INCOMPLETE/, 'a start on an unfinished backup is refused, naming the marker');
      refusedStart = true;
    }
  }
  t.ok(refusedStart, 'a start on an unfinished copy was tried');

  for (let i = 0; i < 3; i++) {
    const target = path.join(parent, `spread-${i}`);
    const delay = Math.round((took * (i + 0.5)) / 3);
    await backup(['--to', target], env, undefined, delay);
    await check(`kill after ${delay} ms`, target);
  }

  // A later backup to the same place sweeps the abandoned temp directories and succeeds.
  const retry = path.join(parent, 'at-paused');
  const ok = await backup(['--to', retry], env);
  t.equal(ok.code, 0, ok.stderr);
  t.same(
    (await readdir(parent)).filter((n) => n.startsWith('.at-paused.partial-')),
    [],
    'the abandoned temp directory of that target is gone',
  );

  // The server killed during a backup: the backup fails (or had finished), never half written.
  const target = path.join(parent, 'server-killed');
  const during = backup(['--to', target], env, (line) => {
    if (line === 'backup step paused') void server.kill();
  });
  const out = await during;
  t.not(out.code, 0, 'the backup fails when the service dies while it copies');
  t.match(out.stderr, /backup failed: the service closed the backup connection/);
  t.notOk(existsSync(target), 'and the target is absent');
  t.same(
    (await readdir(parent)).filter((n) => n.startsWith('.server-killed.partial-')),
    [],
    'its temp directory removed',
  );
  server = await startServer(testEnv(dataDir), START_MS);
  t.equal((await call(server.origin, 'GET', '/api/acp/resources', CANARY.owner)).status, 200, 'the service restarts on its DATA_DIR');
  await server.kill();
  await rm(path.join(dataDir, 'agent-team', 'attachments'), { recursive: true });
});
