// Who can reach the store's lock and backup channel (`npm run backup`, src/storage/data-dir-lock.ts), against
// the compiled server and backup command: a process bound to the predictable abstract name the lock once used
// is never told anything (no file, no token) and stops neither a start nor a backup; another local user can
// neither reach the channel nor keep backups refused; a channel directory that is not the service user's own
// is refused by the command and the start; a DATA_DIR others may write is refused. Needs `npm run build`.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { tempDataDir, testEnv } from '../helpers/build.js';
import { killAllServers, startServer } from '../crash/server-process.js';
import { backup, credentialsOf, generatingEnv, START_MS } from '../helpers/backup.js';
import { until } from '../helpers/wait.js';

// Four server starts of up to START_MS each and five backups: on a loaded machine the file takes minutes.
t.setTimeout(600_000);
t.teardown(killAllServers);

/** The name the lock was bound to before it moved into DATA_DIR: anyone can compute it from the path. */
const oldLockName = (realDataDir: string) => `\0agent-resource-registry:${createHash('sha256').update(realDataDir).digest('hex')}`;

/**
 * A listener that answers every connection as the old service did (a challenge naming credentials.json) and
 * keeps what it is sent. close() ends it in order: the connections it accepted are destroyed and waited for,
 * then the listener itself, so nothing of it is left to be torn down while the next subtest runs.
 */
async function fakeService(name: string, challenge: string) {
  const received: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => received.push(chunk.toString('latin1')));
    socket.write(JSON.stringify({ challenge }) + '\n');
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(name, () => resolve()));
  const close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all(
      [...sockets].map((socket) => new Promise<void>((resolve) => (socket.once('close', () => resolve()), socket.destroy()))),
    );
    await closed;
  };
  return { received, close };
}

/** A squatter on an abstract name. */
const squat = fakeService;

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;
// On Node 24 (24.22.3) this file's test process can abort in native code under tap's async hooks
// (`InternalCallbackScope::Close`: `execution_async_id() == 0`); docs/decisions/ci-node-versions.md. Its tests
// run on Node 20, where CI's coverage gate runs too.
const node24 =
  Number(process.versions.node.split('.')[0]) >= 24 ? 'Node 24 can abort this file under tap (decisions/ci-node-versions.md)' : false;

t.test(
  'a squatter on the old abstract lock name gets nothing from a backup and stops neither a start nor a backup',
  { skip: node24 },
  async (t) => {
    // A DATA_DIR whose channel path passes sun_path's 108 bytes: the channel must still work.
    const dataDir = path.join(await tempDataDir(), 'a-data-directory-with-a-long-name-'.padEnd(120, 'x'));
    await mkdir(dataDir, { mode: 0o700 });
    const first = await startServer(generatingEnv(dataDir), START_MS);
    const creds = await credentialsOf(dataDir);
    await first.kill();
    const credentialsBytes = await readFile(path.join(dataDir, 'credentials.json'), 'utf8');

    const squatter = await squat(oldLockName(await realpath(dataDir)), 'credentials.json');
    t.teardown(squatter.close);
    const parent = await tempDataDir();
    const offline = await backup(['--to', path.join(parent, 'offline')], { DATA_DIR: dataDir });
    const sent = squatter.received.join('');
    t.notOk(sent.includes(creds.ownerToken), 'the squatter never receives the owner token');
    t.notOk(
      [creds.huabuProviderToken, creds.canvasTokenSecret].some((v) => sent.includes(v)) ||
        sent.includes(JSON.stringify(credentialsBytes).slice(1, 40)),
      'nor anything else of credentials.json',
    );
    t.equal(sent, '', 'nor anything at all');
    t.equal(offline.code, 0, `the backup is taken without the squatter (${offline.stderr})`);
    t.match(offline.stdout, /offline: no service was running on it/);
    t.notOk(existsSync(path.join(parent, 'offline', '.control')), "the lock's directory is not copied");

    const server = await startServer(generatingEnv(dataDir), START_MS).catch((err: Error) => err);
    t.notOk(
      server instanceof Error,
      `the service starts while the old name is held (${server instanceof Error ? server.message.split('\n')[0] : ''})`,
    );
    if (server instanceof Error) return;
    const online = await backup(['--to', path.join(parent, 'online')], { DATA_DIR: dataDir });
    t.equal(online.code, 0, online.stderr);
    t.match(online.stdout, /online: the service paused its writes for \d+ ms/, 'and a backup reaches the service');
    t.equal(squatter.received.join(''), '', 'the squatter still received nothing');
    await server.kill();
  },
);

t.test(
  'another local user can neither reach the backup channel nor keep every backup refused',
  { skip: node24 || (asRoot ? false : 'needs root to run a process as another user') },
  async (t) => {
    // Even with DATA_DIR open for others to traverse, the channel stays the service user's.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'arr-channel-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    await chmod(dataDir, 0o755);
    const server = await startServer(testEnv(dataDir), START_MS);

    // As `nobody`: connect again and again to the old abstract name and to every socket it can find in DATA_DIR,
    // holding each connection open, and say what answered.
    const script = `
    const net = require('node:net'), fs = require('node:fs'), path = require('node:path');
    const [dataDir, abstractHex] = process.argv.slice(1);
    const abstractName = '\\0agent-resource-registry:' + abstractHex;
    const said = new Set();
    const say = (line) => { if (!said.has(line)) { said.add(line); process.stdout.write(line + '\\n'); } };
    const sockets = (dir) => {
      let out = [];
      let entries = [];
      try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch (e) { say('cannot list ' + path.relative(dataDir, dir) + ' ' + e.code); }
      for (const e of entries) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) out = out.concat(sockets(p));
        else if (e.isSocket()) out.push(p);
      }
      return out;
    };
    const tryOne = (target, label) => {
      const s = net.connect(target);
      s.on('connect', () => say('connected ' + label));
      s.on('data', (d) => say('answered ' + label + ' ' + String(d).trim()));
      s.on('error', (e) => say('refused ' + label + ' ' + e.code));
      s.on('close', () => setTimeout(() => tryOne(target, label), 5));
    };
    say('environment ' + Object.keys(process.env).sort().join(' '));
    tryOne(abstractName, 'old-abstract-name');
    tryOne(path.join(dataDir, '.control', 'service.sock'), '.control/service.sock');
    for (const p of sockets(dataDir)) tryOne(p, path.relative(dataDir, p));
    setTimeout(() => say('ready'), 300);
  `;
    // Through `env -i`: tap puts its loader (NODE_OPTIONS, from this repository's node_modules) into every child
    // it sees spawned, whatever env is passed, and a Node process of another user must not load it: where
    // that user cannot read the checkout, Node exits before the script runs, and the wait below never ends.
    const other = spawn(
      '/usr/bin/env',
      [
        '-i',
        `PATH=${process.env.PATH ?? ''}`,
        process.execPath,
        '-e',
        script,
        dataDir,
        oldLockName(await realpath(dataDir)).slice('\0agent-resource-registry:'.length),
      ],
      { uid: NOBODY, gid: NOBODY, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let exitedWith: string | undefined;
    const exited = new Promise((resolve) => other.once('exit', (code, signal) => resolve((exitedWith = `${signal ?? code}`))));
    t.teardown(() => void other.kill('SIGKILL'));
    let report = '';
    other.stdout.on('data', (c: Buffer) => (report += c.toString()));
    other.stderr.on('data', (c: Buffer) => (report += c.toString()));
    await until('the other user to be at it', () => /^ready$/m.test(report) || exitedWith !== undefined, { within: 60_000 });
    t.match(report, /^ready$/m, `the other user is at it (exit: ${exitedWith ?? 'running'}; ${report.trim()})`);
    t.match(report, /^environment PATH$/m, "the other user's process has nothing of the test runner");

    const parent = await tempDataDir();
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await backup(['--to', path.join(parent, `b${i}`)], { DATA_DIR: dataDir }));
    other.kill('SIGKILL');
    await exited;
    t.comment(report.trim());
    for (const [i, out] of outcomes.entries()) {
      t.equal(out.code, 0, `backup ${i} is taken while the other user tries (${out.stderr.trim()})`);
      t.match(out.stdout, /online: the service paused its writes/);
    }
    t.notMatch(report, /^answered /m, 'nothing answered the other user');
    t.match(report, /refused \.control\/service\.sock EACCES/, 'the channel is there, and closed to the other user');
    await server.kill();
  },
);

t.test(
  "a channel directory that is not the service user's own: the backup refuses in one line and sends nothing, the start refuses",
  { skip: node24 || (asRoot ? false : 'needs root to give a directory to another user') },
  async (t) => {
    const dataDir = await tempDataDir();
    const first = await startServer(testEnv(dataDir), START_MS);
    await first.kill();
    // Planted by another user (possible where DATA_DIR was once open to others): its socket, its directory.
    const control = path.join(dataDir, '.control');
    await rm(control, { recursive: true, force: true });
    await mkdir(control, { mode: 0o755 });
    const planted = await fakeService(path.join(control, 'service.sock'), 'credentials.json');
    const received = planted.received;
    t.teardown(planted.close);
    await chown(control, NOBODY, NOBODY);

    const out = await backup(['--to', path.join(await tempDataDir(), 'b')], { DATA_DIR: dataDir });
    t.equal(out.code, 1, 'the backup fails');
    t.match(out.stderr, /^backup failed: .*\.control is not private to this user/m);
    t.equal(out.stderr.trim().split('\n').length, 1, 'in one line');
    t.equal(received.join(''), '', 'and sent nothing to the planted socket');

    const start = await startServer(testEnv(dataDir), START_MS).then(
      async (s) => (await s.kill(), 'started'),
      (err: Error) => err.message,
    );
    t.match(start, /\.control is not private to this user/, 'a start refuses it too, naming it');
  },
);

t.test(
  'a DATA_DIR that group or others may write is refused at start; one only they may read or traverse is not',
  { skip: node24 },
  async (t) => {
    const dataDir = await tempDataDir();
    await chmod(dataDir, 0o777);
    const start = await startServer(testEnv(dataDir), START_MS).then(
      async (s) => (await s.kill(), 'started'),
      (err: Error) => err.message,
    );
    t.match(start, /DATA_DIR .* is writable by group or others \(mode 777\); run chmod 700 on it/);
    await chmod(dataDir, 0o755);
    const ok = await startServer(testEnv(dataDir), START_MS);
    t.pass('mode 755 starts');
    await ok.kill();
  },
);
