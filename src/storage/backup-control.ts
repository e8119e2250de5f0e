// The server side of an online backup (`npm run backup`, src/storage/backup.ts): a client connects to the
// DATA_DIR lock's abstract socket and asks the store to pause its writes while it copies the files.
//
// Protocol, one JSON object per line:
//   server → {"challenge": "<file name in DATA_DIR>"}   a fresh file (mode 0600) holding a random nonce
//   client → {"op": "pause", "nonce": "<its content>"}   proves it may read DATA_DIR (any local user can
//                                                       reach an abstract socket; only the owner of the
//                                                       data can read the file)
//   server → {"paused": true, "maxPauseMs": N}           every write under way has finished; none starts
//   client → {"op": "resume"}                            (after copying)
//   server → {"resumed": true, "pausedMs": N}            writes go on; the copy is a consistent snapshot
// Anything else, a pause longer than maxPauseMs, or the connection closing, ends the pause at once (the
// server answers {"error": "..."} when it still can): a client that is killed, hangs or goes away never
// leaves the service paused. Nothing but the nonce, the file name and these acknowledgements crosses the
// socket: the client reads the data files itself.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, unlink, writeFile } from 'node:fs/promises';
import type net from 'node:net';
import path from 'node:path';
import { FILE_MODE, TEMP_SUFFIX } from './durable-file.js';

/** Longest pause a backup client may hold: past it the service resumes and the client's backup fails. */
export const MAX_BACKUP_PAUSE_MS = 60_000;
/** Time a client has to answer the challenge. */
const CHALLENGE_TIMEOUT_MS = 10_000;

export interface Pausable {
  /** Resolves once no write is under way and none will start until the returned function is called. */
  pauseWrites(): Promise<() => void>;
}

export interface BackupControlEvents {
  /** Longest pause (default MAX_BACKUP_PAUSE_MS); tests shorten it. */
  maxPauseMs?: number;
  /** A client held the writes paused for `pausedMs` (ok: it resumed them itself, in time). */
  onBackup?: (info: { pausedMs: number; ok: boolean; reason?: string }) => void;
}

/** Reads newline-delimited JSON messages from a socket, one at a time. */
export function messageReader(socket: net.Socket): () => Promise<Record<string, unknown> | undefined> {
  let buffered = '';
  const messages: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown> | undefined) => void)[] = [];
  let ended = false;
  const deliver = () => {
    while (waiters.length > 0 && (messages.length > 0 || ended)) waiters.shift()!(messages.shift());
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    if (buffered.length > 64 * 1024) {
      socket.destroy();
      return;
    }
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = {};
      }
      messages.push(parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {});
    }
    deliver();
  });
  socket.on('close', () => {
    ended = true;
    deliver();
  });
  socket.on('error', () => undefined);
  return () => new Promise((resolve) => {
    waiters.push(resolve);
    deliver();
  });
}

export function send(socket: net.Socket, message: Record<string, unknown>): void {
  if (!socket.destroyed) socket.write(JSON.stringify(message) + '\n');
}

/** Answers backup clients on the lock's socket for the store in `dataDir`; one backup at a time. */
export function backupControl(dataDir: string, store: Pausable, events: BackupControlEvents = {}): (socket: net.Socket) => void {
  let busy = false;
  return (socket) => {
    if (busy) {
      send(socket, { error: 'another backup of this DATA_DIR is in progress; try again when it has finished' });
      socket.end();
      return;
    }
    busy = true;
    void serveOne(dataDir, store, events, socket).finally(() => {
      busy = false;
      socket.destroy();
    });
  };
}

async function serveOne(dataDir: string, store: Pausable, events: BackupControlEvents, socket: net.Socket): Promise<void> {
  const maxPauseMs = events.maxPauseMs ?? MAX_BACKUP_PAUSE_MS;
  const next = messageReader(socket);
  const nonce = randomBytes(32).toString('hex');
  // A temp-file name: a crash before it is removed leaves it to the next start's sweep, and backups skip it.
  const challenge = `backup-challenge.${process.pid}-${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`;
  const challengeFile = path.join(dataDir, challenge);
  let resume: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await writeFile(challengeFile, nonce, { mode: FILE_MODE, flag: 'wx' });
    send(socket, { challenge });
    timer = setTimeout(() => socket.destroy(), CHALLENGE_TIMEOUT_MS);
    const ask = await next();
    clearTimeout(timer);
    const written = await readFile(challengeFile, 'utf8').catch(() => '');
    await unlink(challengeFile).catch(() => undefined);
    const given = Buffer.from(typeof ask?.nonce === 'string' ? ask.nonce : '');
    if (ask?.op !== 'pause' || given.length !== written.length || written.length === 0 || !timingSafeEqual(given, Buffer.from(written))) {
      send(socket, { error: 'the challenge was not answered: only a process that can read DATA_DIR may pause the service' });
      return;
    }
    resume = await store.pauseWrites();
    const pausedAt = performance.now();
    send(socket, { paused: true, maxPauseMs });
    const outcome = await Promise.race([
      next().then((m) => (m?.op === 'resume' ? 'resume' : m === undefined ? 'the backup client went away' : 'unexpected message')),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve(`the pause passed ${maxPauseMs} ms`), maxPauseMs);
      }),
    ]);
    clearTimeout(timer);
    resume();
    resume = undefined;
    const pausedMs = Math.round(performance.now() - pausedAt);
    if (outcome === 'resume') {
      send(socket, { resumed: true, pausedMs });
      events.onBackup?.({ pausedMs, ok: true });
    } else {
      send(socket, { error: `writes resumed: ${outcome}; this backup is not consistent, take a new one` });
      events.onBackup?.({ pausedMs, ok: false, reason: outcome });
    }
  } finally {
    clearTimeout(timer);
    resume?.();
    await unlink(challengeFile).catch(() => undefined);
  }
}
