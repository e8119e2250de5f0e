// `npm run backup` against real processes: the compiled server on a real DATA_DIR, the compiled
// backup command as a child process, real sockets and files. A backup taken while writers register
// resources and launch threads holds every write acknowledged before it began, and a fresh server starts on
// it; credentials.json only with --with-credentials (and then the same tokens work); no token in the output
// or the files; refusals (a non-empty target, DATABASE_URL, a bad argument), --help and an offline backup.
// The kills are in test/backup/kill.test.ts. Needs `npm run build` (as the crash test does).
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CANARY, recordIssuedToken, tempDataDir, testEnv } from '../helpers/build.js';
import { killAllServers, SERVER_ENTRY, startServer } from '../crash/server-process.js';
import { assertParses, BACKUP_ENTRY, backup, call, credentialsOf, filesUnder, generatingEnv, START_MS } from '../helpers/backup.js';

t.setTimeout(290_000);
t.teardown(killAllServers);

t.test('a backup taken while writers register and launch holds every write acknowledged before it began', async (t) => {
  t.ok(existsSync(SERVER_ENTRY) && existsSync(BACKUP_ENTRY), 'built (npm run build)');
  const dataDir = await tempDataDir();
  // Small audit files, so the backup also carries rotated ones.
  const server = await startServer(generatingEnv(dataDir, { AUDIT_MAX_BYTES: '4096', AUDIT_MAX_FILES: '50' }), START_MS);
  const creds = await credentialsOf(dataDir);
  const owner = creds.ownerToken;
  const huabu = creds.huabuProviderToken;
  const enrolled = await call(server.origin, 'POST', '/api/acp/machines', owner, { machineId: 'agentlet-b1' });
  t.equal(enrolled.status, 201);
  recordIssuedToken(String(enrolled.body.token));
  const profile = await call(server.origin, 'POST', '/api/acp/profiles', owner, {
    alias: 'Backup reviewer',
    agentletId: 'agentlet-b1',
    workingDirPath: '/w',
    launch: { kind: 'acp-command', command: 'x' },
    resourceIds: [],
  });
  t.equal(profile.status, 201);

  const acked: { kind: 'resource' | 'launch'; id: string; at: number }[] = [];
  let stop = false;
  const writer = async (kind: 'resource' | 'launch', n: number) => {
    for (let i = 0; !stop; i++) {
      const id = `${kind}-${n}-${i}`;
      const res =
        kind === 'resource'
          ? await call(server.origin, 'PUT', `/api/acp/providers/huabu/resources/${id}`, huabu, {
              schemaVersion: 1,
              name: id,
              description: 'd',
              instructions: 'i',
            })
          : await call(server.origin, 'POST', '/api/acp/launch', owner, {
              profileId: profile.body.id,
              canvasId: `canvas-${n}`,
              threadId: id,
            });
      if (res.status !== 201) throw new Error(`${kind} ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      acked.push({ kind, id, at: performance.now() });
    }
  };
  const writers = [writer('resource', 1), writer('resource', 2), writer('launch', 1), writer('launch', 2)];
  await sleep(1_500);
  const began = performance.now();
  const target = path.join(await tempDataDir(), 'backup');
  const plain = await backup(['--to', target], { DATA_DIR: dataDir });
  const target2 = path.join(await tempDataDir(), 'backup-with-credentials');
  const withCreds = await backup(['--data-dir', dataDir, '--to', target2, '--with-credentials'], {});
  await sleep(300);
  stop = true;
  await Promise.all(writers);
  t.equal(plain.code, 0, `backup exits 0 (${plain.stderr})`);
  t.match(plain.stdout, /online: the service paused its writes for \d+ ms; credentials.json left out/);
  t.equal(withCreds.code, 0, withCreds.stderr);
  t.match(withCreds.stdout, /credentials.json included/);
  const before = acked.filter((a) => a.at < began);
  t.ok(
    before.filter((a) => a.kind === 'resource').length > 10 && before.filter((a) => a.kind === 'launch').length > 10,
    `writes acknowledged before the backup (${before.length})`,
  );
  t.ok(acked.length > before.length, 'and writers went on during and after it');

  const files = await filesUnder(target);
  t.notOk(files.includes('credentials.json'), 'no credentials.json without --with-credentials');
  t.notOk(files.includes('signing-keys.json'), 'nor the launch-signing keys');
  const withCredsFiles = await filesUnder(target2);
  t.ok(withCredsFiles.includes('signing-keys.json') && withCredsFiles.includes('credentials.json'), 'both with --with-credentials');
  t.notOk(
    files.some((f) => f.endsWith('.tmp') || f.includes('BACKUP-INCOMPLETE')),
    'no temp file, no marker',
  );
  t.ok(
    files.some((f) => /^audit\.\d+\.jsonl$/.test(f)),
    `rotated audit files are carried (${files.filter((f) => f.startsWith('audit')).join(', ')})`,
  );
  await assertParses(t, target);
  const leftovers = (await readdir(path.dirname(target))).filter((n) => n.includes('.partial-'));
  t.same(leftovers, [], 'no temp directory left beside the target');

  // No token anywhere in what the backup wrote or printed (credentials.json aside, when asked for).
  const tokens = [owner, huabu, creds.canvasTokenSecret, String(enrolled.body.token), CANARY.owner];
  for (const [name, text] of [
    ['output', plain.stdout + plain.stderr + withCreds.stdout + withCreds.stderr],
    ...(await Promise.all(files.map(async (f) => [f, await readFile(path.join(target, f), 'latin1')] as const))),
    ...(await Promise.all(
      (await filesUnder(target2))
        .filter((f) => f !== 'credentials.json')
        .map(async (f) => [f, await readFile(path.join(target2, f), 'latin1')] as const),
    )),
  ] as const) {
    t.notOk(
      tokens.some((tok) => text.includes(tok) || text.includes(tok.slice(10, 22))),
      `no token in ${name}`,
    );
  }
  await server.kill();

  // A fresh server on the backup (the same credentials from the environment): every acknowledged write is there.
  const restored = await startServer(
    generatingEnv(target, { OWNER_TOKEN: owner, HUABU_PROVIDER_TOKEN: huabu, CANVAS_TOKEN_SECRET: creds.canvasTokenSecret }),
    START_MS,
  );
  const list = await call(restored.origin, 'GET', '/api/acp/resources', owner);
  const ids = new Set((list.body.resources as { id: string }[]).map((r) => r.id));
  const missing = before.filter((a) => a.kind === 'resource' && !ids.has(a.id));
  t.same(missing, [], 'every resource acknowledged before the backup is in it');
  let missingLaunches = 0;
  for (const a of before.filter((x) => x.kind === 'launch')) {
    const canvas = `canvas-${a.id.split('-')[1]}`;
    if ((await call(restored.origin, 'GET', `/api/acp/workloads/${canvas}/${a.id}`, owner)).status !== 200) missingLaunches++;
  }
  t.equal(missingLaunches, 0, 'every launch acknowledged before the backup is in it');
  const machines = await call(restored.origin, 'GET', '/api/acp/machines', owner);
  t.match(JSON.stringify(machines.body), /agentlet-b1/, 'the enrollment is in it');
  await restored.kill();

  // With --with-credentials: a start without any credential in the environment uses the copied file, and the same tokens work.
  const again = await startServer(generatingEnv(target2), START_MS);
  t.equal((await call(again.origin, 'GET', '/api/acp/resources', owner)).status, 200, 'the owner token works on the copy');
  t.equal(
    (
      await call(again.origin, 'PUT', '/api/acp/providers/huabu/resources/after-restore', huabu, {
        schemaVersion: 1,
        name: 'a',
        description: 'd',
        instructions: 'i',
      })
    ).status,
    201,
    "and Huabu's",
  );
  await again.kill();
  await refusalsAndOffline(t, dataDir);
});

/** Refusals (a non-empty target, DATABASE_URL, a bad argument), --help, and an offline backup of a stopped DATA_DIR. */
async function refusalsAndOffline(t: Test, dataDir: string): Promise<void> {
  const parent = await tempDataDir();
  const full = path.join(parent, 'full');
  await mkdir(full);
  await writeFile(path.join(full, 'keep.txt'), 'mine');
  const refused = await backup(['--to', full], { DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /is not empty/);
  t.same(await readdir(full), ['keep.txt'], 'the non-empty target is untouched');

  const pg = await backup(['--to', path.join(parent, 'pg')], { DATA_DIR: dataDir, DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db' });
  t.equal(pg.code, 2);
  t.match(pg.stderr, /pg_dump/);
  t.equal(pg.stderr.trim().split('\n').length, 1, 'one line');
  t.notOk(pg.stderr.includes('u:p@'), 'the database URL (its password) is not echoed');

  const bad = await backup(['--too', 'x'], { DATA_DIR: dataDir });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /unknown argument --too\nusage: npm run backup/);
  const help = await backup(['--help'], {});
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: npm run backup -- --to DIR/);

  // No service on the DATA_DIR: an offline copy (under the lock), into an existing empty directory.
  const empty = path.join(parent, 'empty');
  await mkdir(empty);
  const offline = await backup(['--to', empty], { DATA_DIR: dataDir });
  t.equal(offline.code, 0, offline.stderr);
  t.match(offline.stdout, /offline: no service was running on it/);
  t.ok((await filesUnder(empty)).includes(path.join('agent-resources', 'resources.json')));
  const restored = await startServer(testEnv(empty), START_MS);
  t.equal((await call(restored.origin, 'GET', '/api/acp/resources', CANARY.owner)).status, 200, 'a start accepts it');
  await restored.kill();
}
