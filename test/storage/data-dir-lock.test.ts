// The DATA_DIR lock (src/storage/data-dir-lock.ts) on real sockets and files: its socket lives in a 0700
// directory of this user, a file left by a killed holder is removed and of processes racing for it exactly
// one wins, a DATA_DIR path far past sun_path's 108 bytes works, and a .control that is a symlink or open to
// others is refused.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { CONTROL_DIR, DataDirLockedError, connectToHolder, lockDataDir } from '../../src/storage/data-dir-lock.js';
import { DataDirError } from '../../src/storage/store-file-error.js';
import { tempDataDir } from '../helpers/build.js';

const socketFile = (dataDir: string) => path.join(dataDir, CONTROL_DIR, 'service.sock');

/** A holder killed with SIGKILL: its socket file stays behind, refusing connections. */
async function leaveStaleSocket(dataDir: string): Promise<void> {
  const script = `require('node:net').createServer().listen(process.argv[1], () => process.stdout.write('up\\n'));`;
  const child = spawn(process.execPath, ['-e', script, socketFile(dataDir)], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
}

t.test('the socket is in a 0700 directory of this user; a holder answers, and its release removes the file', async (t) => {
  const dataDir = await tempDataDir();
  t.equal(await connectToHolder(dataDir), undefined, 'nobody holds a fresh DATA_DIR');
  const lock = await lockDataDir(dataDir);
  const dir = await stat(path.join(dataDir, CONTROL_DIR));
  t.equal(dir.mode & 0o777, 0o700);
  t.equal(dir.uid, process.geteuid!());
  t.ok((await stat(socketFile(dataDir))).isSocket());
  const socket = await connectToHolder(dataDir);
  t.ok(socket, 'connectToHolder reaches the holder');
  socket?.destroy();
  t.type(await lockDataDir(dataDir).catch((e: unknown) => e), DataDirLockedError);
  await lock.release();
  t.notOk(existsSync(socketFile(dataDir)), 'released: the socket file is gone');
  t.equal(await connectToHolder(dataDir), undefined);
});

t.test('a socket file left by a killed holder is removed; of eight racing for the lock exactly one wins', async (t) => {
  const dataDir = await tempDataDir();
  await (await lockDataDir(dataDir)).release();
  await leaveStaleSocket(dataDir);
  t.ok((await stat(socketFile(dataDir))).isSocket(), 'a stale socket file is there');
  t.equal(await connectToHolder(dataDir), undefined, 'it counts as no holder');
  const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => lockDataDir(dataDir)));
  const won = outcomes.filter((o) => o.status === 'fulfilled');
  t.equal(won.length, 1, 'exactly one holds the lock');
  for (const o of outcomes) if (o.status === 'rejected') t.type(o.reason, DataDirLockedError);
  const socket = await connectToHolder(dataDir);
  t.ok(socket, 'and it answers');
  socket?.destroy();
  await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof lockDataDir>>>).value.release();
});

t.test('a DATA_DIR path far past sun_path (108 bytes) takes the lock and is reached', async (t) => {
  const dataDir = path.join(await tempDataDir(), 'x'.repeat(200), 'y'.repeat(200));
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock = await lockDataDir(dataDir);
  t.ok((await stat(socketFile(dataDir))).isSocket(), 'the socket is inside DATA_DIR, not at a cut path');
  const socket = await connectToHolder(dataDir);
  t.ok(socket);
  socket?.destroy();
  t.type(await lockDataDir(dataDir).catch((e: unknown) => e), DataDirLockedError);
  await lock.release();
});

t.test('a .control that is a symlink, or that others may enter, is refused by both ends', async (t) => {
  const dataDir = await tempDataDir();
  const elsewhere = await tempDataDir();
  await symlink(elsewhere, path.join(dataDir, CONTROL_DIR));
  for (const attempt of [() => lockDataDir(dataDir), () => connectToHolder(dataDir)]) {
    const err = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.type(err, DataDirError);
    t.match((err as Error).message, /\.control is not private to this user \(not a directory\)/);
  }
  const open = await tempDataDir();
  await mkdir(path.join(open, CONTROL_DIR), { mode: 0o700 });
  await chmod(path.join(open, CONTROL_DIR), 0o755);
  for (const attempt of [() => lockDataDir(open), () => connectToHolder(open)]) {
    t.match(
      await attempt().then(
        () => 'taken',
        (e: Error) => e.message,
      ),
      /\.control is not private to this user \(owner uid \d+, mode 755\)/,
    );
  }
});
