// `npm run backup -- --to DIR`: a consistent copy of a JSON DATA_DIR, taken while the service runs on it
// (or not). With a service running, the copy is taken through the DATA_DIR lock's socket, which only the
// service's user can reach (src/storage/data-dir-lock.ts, src/storage/backup-control.ts): the service pauses its
// writes, the files are copied, it resumes. Nothing secret is sent to it, and nothing it names is read. Every
// file then holds the state of one instant, every write acknowledged before the backup began included, as
// a crash at that instant would leave it but without a torn write. Without a service, this command takes the
// lock itself (no service can start meanwhile) and copies.
//
// The copy is written into a temp directory beside the target, marked incomplete (a start refuses a
// DATA_DIR holding INCOMPLETE_BACKUP_MARKER), fsync'ed file by file, unmarked and renamed to the target at
// the very end: a kill at any moment leaves the target absent (or the empty directory it was), never a half
// backup. The audit files are append-only (rotation only renames them), so they are opened and measured
// during the pause and copied up to that length after it, which keeps the pause short.
// credentials.json and signing-keys.json are left out unless asked for; temp files (`*.tmp`) and the lock's directory are never copied.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import type net from 'node:net';
import path from 'node:path';
import { parseCommandArgs } from '../command-args.js';
import { messageReader, send } from './backup-control.js';
import { CONTROL_DIR, DataDirLockedError, connectToHolder, lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { FILE_MODE, TEMP_SUFFIX, fsyncDirectory } from './durable-file.js';
import { AUDIT_FILE, INCOMPLETE_BACKUP_MARKER } from './json-file-store.js';
import { CREDENTIALS_FILE } from '../credentials/credentials-file.js';
import { SIGNING_KEYS_FILE } from '../credentials/signing-keys.js';

export const BACKUP_USAGE = 'usage: npm run backup -- --to DIR [--data-dir DIR] [--with-credentials]';

export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

export interface BackupOptions {
  dataDir: string;
  to: string;
  withCredentials: boolean;
  /** Test seam: called at each named step (the kill test waits on them). */
  onStep?: (step: string) => void | Promise<void>;
}

export interface BackupReport {
  to: string;
  /** `online` when a running service paused its writes for the copy; `offline` when none ran. */
  mode: 'online' | 'offline';
  files: number;
  bytes: number;
  /** How long the service's writes were paused (online only). */
  pausedMs?: number;
  credentials: 'included' | 'left out' | 'none in DATA_DIR';
}

export function parseBackupArgs(argv: readonly string[], env: Record<string, string | undefined>): BackupOptions | { error: string } {
  const parsed = parseCommandArgs(argv, {
    to: { type: 'string' },
    'data-dir': { type: 'string' },
    'with-credentials': { type: 'boolean' },
  });
  if ('error' in parsed) return parsed;
  const { to, 'data-dir': dataDir = env.DATA_DIR || './data' } = parsed.values;
  if (!to) return { error: '--to DIR is required' };
  if (!dataDir) return { error: '--data-dir needs a directory' };
  return { dataDir: path.resolve(dataDir), to: path.resolve(to), withCredentials: parsed.values['with-credentials'] === true };
}

const isAuditFile = (rel: string) => rel === AUDIT_FILE || /^audit\.[1-9][0-9]{0,5}\.jsonl$/.test(rel);

interface Copied {
  files: number;
  bytes: number;
  credentials: BackupReport['credentials'];
  /** Audit files opened during the pause, copied after it up to `size`. */
  deferred: { handle: fsp.FileHandle; size: number; target: string }[];
}

/** Copies one file's first `size` bytes (all when undefined) into `target` (mode 0600) and fsyncs it. */
async function copyFileDurably(source: fsp.FileHandle, target: string, size?: number): Promise<number> {
  const out = await fsp.open(target, 'wx', FILE_MODE);
  let copied = 0;
  try {
    const buffer = Buffer.alloc(1024 * 1024);
    for (;;) {
      const want = size === undefined ? buffer.length : Math.min(buffer.length, size - copied);
      if (want <= 0) break;
      const { bytesRead } = await source.read(buffer, 0, want, copied);
      if (bytesRead === 0) break;
      await out.write(buffer.subarray(0, bytesRead));
      copied += bytesRead;
    }
    await out.sync();
  } finally {
    await out.close();
  }
  return copied;
}

/** The copy taken while no write happens: every file but the audit files, which are only opened and measured. */
async function copyTree(dataDir: string, temp: string, withCredentials: boolean): Promise<Copied> {
  const copied: Copied = { files: 0, bytes: 0, credentials: 'none in DATA_DIR', deferred: [] };
  const walk = async (rel: string): Promise<void> => {
    const entries = await fsp.readdir(path.join(dataDir, rel), { withFileTypes: true });
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const relPath = path.join(rel, entry.name);
      const source = path.join(dataDir, relPath);
      const target = path.join(temp, relPath);
      if (entry.isDirectory()) {
        // The lock's directory (its socket) holds no data.
        if (relPath === CONTROL_DIR) continue;
        await fsp.mkdir(target, { mode: 0o700 });
        await walk(relPath);
        await fsyncDirectory(target);
        continue;
      }
      // Sockets, symlinks and the like are not data this service writes.
      if (!entry.isFile() || entry.name.endsWith(TEMP_SUFFIX) || entry.name === INCOMPLETE_BACKUP_MARKER) continue;
      // The launch-signing keys are credentials too: they travel together.
      if (relPath === CREDENTIALS_FILE || relPath === SIGNING_KEYS_FILE) {
        copied.credentials = withCredentials ? 'included' : 'left out';
        if (!withCredentials) continue;
      }
      let handle: fsp.FileHandle;
      try {
        handle = await fsp.open(source, fsConstants.O_RDONLY);
      } catch (err) {
        // Gone since the listing (only possible offline, if someone removes files by hand): nothing to copy.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      if (isAuditFile(relPath)) {
        copied.deferred.push({ handle, size: (await handle.stat()).size, target });
        continue;
      }
      try {
        copied.bytes += await copyFileDurably(handle, target);
        copied.files++;
      } finally {
        await handle.close();
      }
    }
  };
  await walk('');
  return copied;
}

async function expect(
  next: () => Promise<Record<string, unknown> | undefined>,
  key: string,
  what: string,
): Promise<Record<string, unknown>> {
  const message = await next();
  if (message === undefined)
    throw new BackupError(
      `the service closed the backup connection ${what} (it stopped, or it is a release without online backups); nothing was written to the target`,
    );
  if (typeof message.error === 'string') throw new BackupError(`the service refused: ${message.error}`);
  if (message[key] === undefined) throw new BackupError(`unexpected answer from the service ${what}`);
  return message;
}

/** Removes temp directories of earlier backups to the same target whose process is gone. */
async function sweepAbandoned(parent: string, prefix: string): Promise<void> {
  for (const name of await fsp.readdir(parent).catch(() => [] as string[])) {
    const match = name.startsWith(prefix) ? /^(\d+)-[0-9a-f]+$/.exec(name.slice(prefix.length)) : null;
    if (!match) continue;
    let alive = true;
    try {
      process.kill(Number(match[1]), 0);
    } catch (err) {
      alive = (err as NodeJS.ErrnoException).code === 'EPERM';
    }
    if (!alive) await fsp.rm(path.join(parent, name), { recursive: true, force: true });
  }
}

export async function runBackup(options: BackupOptions): Promise<BackupReport> {
  const step = async (name: string) => options.onStep?.(name);
  const { dataDir, to } = options;
  if (
    !(await fsp.stat(dataDir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    throw new BackupError(`DATA_DIR ${dataDir} is not a directory`);
  const realDataDir = await fsp.realpath(dataDir);
  const existing = await fsp.readdir(to).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    if (err.code === 'ENOTDIR') throw new BackupError(`${to} is a file; the target must be a new or empty directory`);
    throw err;
  });
  if (existing && existing.length > 0)
    throw new BackupError(`${to} is not empty; the target must be a new or empty directory (a backup never overwrites)`);
  const parent = path.dirname(to);
  const realParent = await fsp.realpath(parent).catch(() => {
    throw new BackupError(`${parent} does not exist; create it first`);
  });
  const realTarget = path.join(realParent, path.basename(to));
  if (realTarget === realDataDir || realTarget.startsWith(realDataDir + path.sep))
    throw new BackupError(`${to} is inside DATA_DIR; put the backup elsewhere`);
  const prefix = `.${path.basename(to)}.partial-`;
  await sweepAbandoned(parent, prefix);
  const temp = path.join(parent, `${prefix}${process.pid}-${randomBytes(4).toString('hex')}`);

  await fsp.mkdir(temp, { mode: 0o700 });
  let socket: net.Socket | undefined;
  let lock: DataDirLock | undefined;
  let copied: Copied | undefined;
  try {
    // Marked before anything else is written: until it is removed, no start accepts this directory.
    await fsp.writeFile(path.join(temp, INCOMPLETE_BACKUP_MARKER), 'an interrupted backup: not a usable DATA_DIR\n', { mode: FILE_MODE });
    await fsyncDirectory(temp);
    await fsyncDirectory(parent);
    await step('marked');

    let pausedMs: number | undefined;
    for (let attempt = 0; socket === undefined && lock === undefined; attempt++) {
      socket = await connectToHolder(realDataDir);
      if (socket) break;
      try {
        lock = await lockDataDir(realDataDir);
      } catch (err) {
        // A service started between the two steps: ask it.
        if (!(err instanceof DataDirLockedError) || attempt >= 3) throw err;
      }
    }
    if (socket) {
      const next = messageReader(socket);
      send(socket, { op: 'pause' });
      await expect(next, 'paused', 'before pausing its writes');
      await step('paused');
      copied = await copyTree(realDataDir, temp, options.withCredentials);
      await step('copied');
      send(socket, { op: 'resume' });
      const resumed = await expect(next, 'resumed', 'while the files were copied; the copy may not be consistent');
      pausedMs = Number(resumed.pausedMs);
      socket.end();
    } else {
      await step('locked');
      copied = await copyTree(realDataDir, temp, options.withCredentials);
      await step('copied');
    }
    for (const { handle, size, target } of copied.deferred) {
      copied.bytes += await copyFileDurably(handle, target, size);
      copied.files++;
    }
    await step('audit copied');
    await fsyncDirectory(temp);
    // Complete: unmark, then put it in place.
    await fsp.unlink(path.join(temp, INCOMPLETE_BACKUP_MARKER));
    await fsyncDirectory(temp);
    await step('unmarked');
    try {
      await fsp.rename(temp, to);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST')
        throw new BackupError(`${to} was filled by someone else meanwhile; nothing was written to it`);
      throw err;
    }
    await fsyncDirectory(parent);
    await step('renamed');
    return {
      to,
      mode: pausedMs === undefined ? 'offline' : 'online',
      files: copied.files,
      bytes: copied.bytes,
      ...(pausedMs === undefined ? {} : { pausedMs }),
      credentials: copied.credentials,
    };
  } catch (err) {
    await fsp.rm(temp, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  } finally {
    for (const { handle } of copied?.deferred ?? []) await handle.close().catch(() => undefined);
    socket?.destroy();
    await lock?.release();
  }
}
