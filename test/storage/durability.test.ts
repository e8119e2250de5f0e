// Durability: acknowledged writes survive restarts, bad files stop the start untouched, one process per
// DATA_DIR, faults answer 503 and leave memory equal to disk.
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { FileSystemSeam } from '../../src/storage/durable-file.js';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { JsonFileStore, readStoredResources, StoreFileError } from '../../src/storage/json-file-store.js';
import { DataDirLockedError, lockDataDir } from '../../src/storage/data-dir-lock.js';
import { build, CANARY, canaryLogFile, tempDataDir, testEnv } from '../helpers/build.js';

const resourcesFile = (dir: string) => path.join(dir, 'agent-resources', 'resources.json');

t.test('a restart keeps every acknowledged record', async (t) => {
  const dataDir = await tempDataDir();
  const first = await build({ teardown: () => undefined }, { dataDir });
  const a = await first.enroll('agentlet-a');
  const writes = await Promise.all(Array.from({ length: 40 }, (_, i) => first.put('agentlet-a', a, `tool-${i}`)));
  t.ok(writes.every((w) => w.statusCode === 201));
  await first.app.close();

  const second = await build(t, { dataDir });
  const list = await second.app.inject({ url: '/api/acp/resources', headers: second.owner });
  t.equal(list.json().resources.length, 40);
  t.equal((await second.put('agentlet-a', a, 'tool-0', { name: 'Still mine' })).statusCode, 200, 'the machine token still works');
});

t.test('a second process on the same DATA_DIR refuses to start; a restart after SIGKILL starts at once', async (t) => {
  const h = await build(t);
  await t.rejects(buildApp({ config: loadConfig(testEnv(h.dataDir)), logger: createLogger('silent') }), DataDirLockedError);

  const server = path.resolve('dist/src/server.js');
  const dataDir = await tempDataDir();
  // The JSON store's lock is under test: a DATABASE_URL exported for the PostgreSQL tests must not leak in.
  const { DATABASE_URL: _postgres, ...inherited } = process.env;
  const env = { ...inherited, ...testEnv(dataDir, { PORT: '0' }) };
  const logFile = canaryLogFile();
  const log = await fsp.open(logFile, 'a');
  t.teardown(() => log.close());
  const startServer = () => spawn(process.execPath, [server], { env, stdio: ['ignore', log.fd, log.fd] });
  const owner = startServer();
  t.teardown(() => owner.kill('SIGKILL'));
  // Wait until the first process listens (it takes the lock before), without probing the lock meanwhile: a
  // probe holding it at the moment the server tries would make the server, not the second process, refuse.
  // Up to 60 s: a start-up takes about 2 s of CPU, far longer on a busy CI machine.
  let ownerExit: number | null | undefined;
  owner.on('exit', (code) => (ownerExit = code));
  for (const deadline = Date.now() + 60_000; !/Server listening/.test(await readFile(logFile, 'utf8'));) {
    if (ownerExit !== undefined) throw new Error(`the server exited (${ownerExit}) before listening`);
    if (Date.now() > deadline) throw new Error('the server never took the lock');
    await new Promise((r) => setTimeout(r, 50));
  }
  t.type(await lockDataDir(dataDir).catch((err: unknown) => err), DataDirLockedError, 'the running server holds the lock');
  const second = startServer();
  const code = await new Promise<number | null>((resolve) => second.on('exit', resolve));
  t.equal(code, 1, 'the second process exits with an error');
  t.match(await readFile(logFile, 'utf8'), /already in use by another agent-resource-registry process/);

  owner.kill('SIGKILL');
  await new Promise((resolve) => owner.on('exit', resolve));
  const restarted = await buildApp({ config: loadConfig(testEnv(dataDir)), logger: createLogger('silent') });
  t.ok(restarted, 'the lock died with its process');
  await restarted.close();
});

t.test('a file that does not parse, or has a future or unknown version, stops the start and is left byte-identical', async (t) => {
  const cases: [string, string][] = [
    ['truncated', '{"schemaVersion": 1, "state": {"resources": ['],
    ['future version', JSON.stringify({ schemaVersion: 3, state: { resources: [] } })],
    ['unknown version', JSON.stringify({ schemaVersion: 0, state: { resources: [] } })],
    ['invalid record', JSON.stringify({ schemaVersion: 1, state: { resources: [{ schemaVersion: 1, id: 'Bad Id' }] } })],
    ['not an object', '[]'],
  ];
  for (const [name, content] of cases) {
    const dataDir = await tempDataDir();
    await mkdir(path.dirname(resourcesFile(dataDir)), { recursive: true });
    await writeFile(resourcesFile(dataDir), content);
    const err = await buildApp({
      config: loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'true' })),
      logger: createLogger('silent'),
    }).then(
      (app) => app.close().then(() => undefined),
      (e: unknown) => e,
    );
    t.type(err, StoreFileError, name);
    t.match((err as Error).message, /resources\.json/, `${name}: names the file`);
    t.equal(await readFile(resourcesFile(dataDir), 'utf8'), content, `${name}: file left byte-identical`);
    // The lock was released: a corrected file starts.
    await writeFile(resourcesFile(dataDir), JSON.stringify({ schemaVersion: 1, state: { resources: [] } }));
    const app = await buildApp({ config: loadConfig(testEnv(dataDir)), logger: createLogger('silent') });
    await app.close();
  }
});

t.test('leftover temp files are swept at start', async (t) => {
  const dataDir = await tempDataDir();
  await mkdir(path.dirname(resourcesFile(dataDir)), { recursive: true });
  const leftover = `${resourcesFile(dataDir)}.123-abc.tmp`;
  await writeFile(leftover, '{"half": ');
  await writeFile(path.join(dataDir, 'machines.json.9-x.tmp'), '');
  const h = await build(t, { dataDir });
  t.ok(h);
  t.same(
    (await readdir(path.dirname(resourcesFile(dataDir)))).filter((n) => n.endsWith('.tmp')),
    [],
  );
  t.same(
    (await readdir(dataDir)).filter((n) => n.endsWith('.tmp')),
    [],
  );
});

t.test('generated credentials: file mode 0600, values never logged, reused on restart', async (t) => {
  const dataDir = await tempDataDir();
  const logFile = canaryLogFile();
  const config = loadConfig({ DATA_DIR: dataDir, SEED_HUABU_RESOURCES: 'false' });
  const app = await buildApp({
    config,
    logger: createLogger('info', (await import('pino')).default.destination({ dest: logFile, sync: true })),
  });
  await app.close();
  const file = path.join(dataDir, 'credentials.json');
  t.equal((await stat(file)).mode & 0o777, 0o600);
  const creds = JSON.parse(await readFile(file, 'utf8'));
  t.match(creds, { ownerToken: /^arr_owner_/, huabuProviderToken: /^arr_huabu_/, canvasTokenSecret: /^arr_secret_/ });
  const log = await readFile(logFile, 'utf8');
  t.match(log, file, 'the log names the file');
  for (const value of Object.values<string>(creds)) t.notMatch(log, value.slice(0, 16), 'the log never holds a value');

  const again = await buildApp({ config, logger: createLogger('silent') });
  const res = await again.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${creds.ownerToken}` } });
  t.equal(res.statusCode, 200, 'the stored owner token works after a restart');
  await again.close();
  t.same(JSON.parse(await readFile(file, 'utf8')), creds, 'not regenerated');

  await chmod(file, 0o644);
  await t.rejects(buildApp({ config, logger: createLogger('silent') }), /chmod 600/, 'a credentials file readable by others is refused');
});

t.test('environment credentials win and are never written to disk', async (t) => {
  const h = await build(t);
  await t.rejects(stat(path.join(h.dataDir, 'credentials.json')), { code: 'ENOENT' });
  t.equal((await h.app.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${CANARY.owner}` } })).statusCode, 200);
});

t.test('a failed durable write answers 503, acknowledges nothing, leaves memory equal to disk, and recovers', async (t) => {
  // Resource writes append to resources.json.journal: fail its write half-way (ENOSPC) or its fdatasync (EIO).
  let fault: string | undefined;
  const faulty: FileSystemSeam = {
    ...nodeFileSystem,
    async open(file, flags, mode) {
      const handle = await nodeFileSystem.open(file, flags, mode);
      if (file.endsWith('.journal')) {
        const write = handle.write.bind(handle) as (data: Buffer) => Promise<unknown>;
        const datasync = handle.datasync.bind(handle);
        handle.write = (async (data: Buffer) => {
          if (fault !== 'ENOSPC') return write(data);
          await write(data.subarray(0, 10));
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        }) as typeof handle.write;
        handle.datasync = async () => {
          if (fault === 'EIO') throw Object.assign(new Error('i/o error'), { code: 'EIO' });
          return datasync();
        };
      }
      return handle;
    },
  };
  const h = await build(t, { fs: faulty });
  await h.put('huabu', CANARY.huabu, 'web-search');
  const stored = async () => [
    await readFile(resourcesFile(h.dataDir), 'utf8'),
    await readFile(`${resourcesFile(h.dataDir)}.journal`, 'utf8'),
  ];
  const before = await stored();
  const committed = await readStoredResources(h.dataDir);
  for (const code of ['ENOSPC', 'EIO']) {
    fault = code;
    const res = await h.put('huabu', CANARY.huabu, 'web-search', { name: `during ${code}` });
    t.equal(res.statusCode, 503, code);
    t.equal(res.json().code, 'storage_unavailable');
    t.notMatch(res.body, /ENOSPC|EIO|\.tmp|\.journal|\//, 'no internals in the message');
    const created = await h.put('huabu', CANARY.huabu, 'new-one');
    t.equal(created.statusCode, 503);
    t.same(await stored(), before, 'disk unchanged (a partly written line was cut off)');
    const mem = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
    t.same(mem.json(), { resources: committed }, 'memory equals disk');
    t.same(
      (await readdir(path.dirname(resourcesFile(h.dataDir)))).filter((n) => n.endsWith('.tmp')),
      [],
      'no temp file left',
    );
  }
  fault = undefined;
  const ok = await h.put('huabu', CANARY.huabu, 'web-search', { name: 'after the fault' });
  t.equal(ok.statusCode, 200, 'the next write succeeds once the fault clears');
  t.equal((await readStoredResources(h.dataDir))[0]!.name, 'after the fault');
});

t.test('a store that fails to open closes every file handle it opened', async (t) => {
  const dir = await tempDataDir();
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'machines.json'), '{"schemaVersion": 1, "state": {"machines": [{"bad": true}]}}');
  const open = new Set<fsp.FileHandle>();
  const fs = {
    ...nodeFileSystem,
    open: async (file: string, flags: string, mode?: number) => {
      const handle = await nodeFileSystem.open(file, flags, mode);
      open.add(handle);
      const close = handle.close.bind(handle);
      handle.close = async () => {
        open.delete(handle);
        return close();
      };
      return handle;
    },
  };
  await t.rejects(JsonFileStore.open({ dataDir: dir, fs }));
  t.equal(open.size, 0, 'no handle left open');
});
