// One process owns a DATA_DIR, and only the service's user can reach it. The lock is a Unix socket,
// DATA_DIR/.control/service.sock, in a directory of mode 0700 owned by this user: binding it is atomic (a
// second bind fails with EADDRINUSE), a live holder answers a connection and a dead one's file refuses it, so a
// restart after a crash (SIGKILL included) removes the stale file at once instead of waiting out a timeout. The
// same socket is the backup channel (src/storage/backup-control.ts): reaching it is the proof of being the
// service's user, so nothing secret ever crosses it.
//
// Both ends name the socket through an open descriptor of the checked directory (/proc/self/fd/N/service.sock):
// what was checked is what is connected to, even if the directory is swapped meanwhile, and the name stays
// far below sun_path's 108 bytes however long DATA_DIR's path is (a longer path would be silently cut).
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open, stat, unlink, type FileHandle } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataDirError } from './store-file-error.js';

/** The directory in DATA_DIR that holds the lock's socket (left out of backups). */
export const CONTROL_DIR = '.control';
const SOCKET_NAME = 'service.sock';
/** Rounds of "bound by someone else, but stale" before giving up (each waits a little for the other remover). */
const STALE_ROUNDS = 200;

export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string) {
    super(`DATA_DIR ${dataDir} is already in use by another agent-resource-registry process; stop it first.`);
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  /**
   * Who answers a connection to the lock's socket (the store's backup control, src/storage/backup-control.ts).
   * Until set, a connection is closed at once.
   */
  serve(handler: (socket: net.Socket) => void): void;
  release(): Promise<void>;
}

const modeOf = (mode: number) => (mode & 0o777).toString(8);

/** DATA_DIR must not be writable by group or others: they could replace any file in it, .control included. */
async function assertNotWritableByOthers(dataDir: string): Promise<void> {
  const info = await stat(dataDir);
  if ((info.mode & 0o022) !== 0)
    throw new DataDirError(dataDir, `is writable by group or others (mode ${modeOf(info.mode)}); run chmod 700 on it`);
}

/**
 * Opens DATA_DIR/.control (created 0700 when `create`) and checks it is a real directory of this user that
 * nobody else may enter; undefined when it does not exist and `create` is false.
 */
async function openControlDir(dataDir: string, create: boolean): Promise<FileHandle | undefined> {
  const dir = path.join(dataDir, CONTROL_DIR);
  if (create)
    await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  let handle: FileHandle;
  try {
    handle = await open(dir, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !create) return undefined;
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new DataDirError(
        dataDir,
        `${CONTROL_DIR} is not private to this user (not a directory); remove it while no service runs on this DATA_DIR`,
      );
    throw err;
  }
  const info = await handle.stat();
  const uid = process.geteuid?.();
  if ((uid !== undefined && info.uid !== uid) || (info.mode & 0o077) !== 0) {
    await handle.close();
    throw new DataDirError(
      dataDir,
      `${CONTROL_DIR} is not private to this user (owner uid ${info.uid}, mode ${modeOf(info.mode)}); remove it while no service runs on this DATA_DIR`,
    );
  }
  return handle;
}

const socketVia = (dir: FileHandle) => `/proc/self/fd/${dir.fd}/${SOCKET_NAME}`;

/** Listens on `name`; the error (EADDRINUSE: someone holds it) instead of throwing. */
function listen(server: net.Server, name: string): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const onError = (err: NodeJS.ErrnoException) => resolve(err);
    server.once('error', onError);
    server.listen(name, () => {
      server.off('error', onError);
      resolve(undefined);
    });
  });
}

/** Whether a live process listens on the socket file `name` (a dead one's file refuses the connection). */
function answers(name: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(name);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? resolve(false) : reject(err),
    );
  });
}

/**
 * Removes the socket file a dead holder left, unless someone else is doing it. Two processes removing "the
 * stale file" each could remove the other's fresh one and both hold the lock, so the removal is done under a
 * mutex that dies with its process: an abstract socket named after that very file (its device, inode and
 * change time, which only this user can read in the 0700 directory; a name nobody else can foresee), bound
 * for the few milliseconds the removal takes. The file is checked again under it.
 */
async function removeStale(name: string, seen: { dev: bigint; ino: bigint; ctimeNs: bigint }): Promise<void> {
  const id = createHash('sha256').update(`${seen.dev}:${seen.ino}:${seen.ctimeNs}`).digest('hex');
  const mutex = net.createServer();
  if ((await listen(mutex, `\0agent-resource-registry-stale:${id}`)) !== undefined) {
    await sleep(10);
    return;
  }
  try {
    const now = await lstat(name, { bigint: true }).catch(() => undefined);
    if (now && now.dev === seen.dev && now.ino === seen.ino && now.ctimeNs === seen.ctimeNs && !(await answers(name))) await unlink(name);
  } finally {
    await new Promise<void>((resolve) => mutex.close(() => resolve()));
  }
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await assertNotWritableByOthers(dataDir);
  const dir = (await openControlDir(dataDir, true))!;
  const name = socketVia(dir);
  let handler: (socket: net.Socket) => void = (socket) => socket.destroy();
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  try {
    for (let round = 0; server === undefined; round++) {
      const candidate = net.createServer((socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        handler(socket);
      });
      const err = await listen(candidate, name);
      if (err === undefined) {
        server = candidate;
        break;
      }
      if (err.code !== 'EADDRINUSE') throw err;
      if (round >= STALE_ROUNDS) throw new DataDirLockedError(dataDir);
      const seen = await lstat(name, { bigint: true }).catch(() => undefined);
      if (seen === undefined) continue;
      if (await answers(name)) throw new DataDirLockedError(dataDir);
      await removeStale(name, seen);
    }
  } catch (err) {
    await dir.close();
    throw err;
  }
  // The lock must not keep the event loop alive on its own.
  server.unref();
  const held = server;
  return {
    serve: (h) => {
      handler = h;
    },
    release: async () => {
      await new Promise<void>((resolve) => {
        // Closing removes the socket file (through the directory's descriptor, still open).
        held.close(() => resolve());
        // close() waits for open connections: end them (a backup client then sees the service go away).
        for (const socket of sockets) socket.destroy();
      });
      await dir.close();
    },
  };
}

/**
 * Connects to the process holding DATA_DIR's lock: a socket, or undefined when none holds it. Refuses (one
 * line, DataDirError) a .control that is not this user's own: whoever made it could be listening there.
 */
export async function connectToHolder(dataDir: string): Promise<net.Socket | undefined> {
  const dir = await openControlDir(dataDir, false);
  if (dir === undefined) return undefined;
  try {
    return await new Promise<net.Socket | undefined>((resolve, reject) => {
      const socket = net.connect(socketVia(dir));
      socket.once('connect', () => resolve(socket));
      socket.once('error', (err: NodeJS.ErrnoException) =>
        err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? resolve(undefined) : reject(err),
      );
    });
  } finally {
    await dir.close();
  }
}
