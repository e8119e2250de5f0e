// The server side of an online backup (`npm run backup`, src/storage/backup.ts): a client connects to the
// DATA_DIR lock's socket and asks the store to pause its writes while it copies the files.
//
// Protocol, one JSON object per line:
//   client → {"op": "pause"}
//   server → {"paused": true, "maxPauseMs": N}   every write under way has finished; none starts
//   client → {"op": "resume"}                     (after copying)
//   server → {"resumed": true, "pausedMs": N}     writes go on; the copy is a consistent snapshot
// No challenge and no secret: the socket lies in DATA_DIR/.control (mode 0700, src/storage/data-dir-lock.ts),
// so a process that reaches it is the service's user (or root), who may read DATA_DIR anyway. Anything else, a
// pause longer than maxPauseMs, or the connection closing, ends the pause at once (the server answers
// {"error": "..."} when it still can): a client that is killed, hangs or goes away never leaves the service
// paused. Nothing but these messages crosses the socket: the client reads the data files itself.
import type net from 'node:net';

/** Longest pause a backup client may hold: past it the service resumes and the client's backup fails. */
export const MAX_BACKUP_PAUSE_MS = 60_000;
/** Time a client has to ask for the pause once connected. */
const REQUEST_TIMEOUT_MS = 10_000;

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
  return () =>
    new Promise((resolve) => {
      waiters.push(resolve);
      deliver();
    });
}

export function send(socket: net.Socket, message: Record<string, unknown>): void {
  if (!socket.destroyed) socket.write(JSON.stringify(message) + '\n');
}

/** Answers backup clients on the lock's socket for the store; one backup at a time. */
export function backupControl(store: Pausable, events: BackupControlEvents = {}): (socket: net.Socket) => void {
  let busy = false;
  return (socket) => {
    const next = messageReader(socket);
    const timer = setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS);
    void next()
      .then(async (ask) => {
        clearTimeout(timer);
        // A connection that asks nothing (the lock's liveness probe) never holds the one-backup slot.
        if (ask === undefined) return;
        if (ask.op !== 'pause') {
          send(socket, { error: 'expected {"op":"pause"}' });
          return;
        }
        if (busy) {
          send(socket, { error: 'another backup of this DATA_DIR is in progress; try again when it has finished' });
          return;
        }
        busy = true;
        try {
          await serveOne(store, events, socket, next);
        } finally {
          busy = false;
        }
      })
      .finally(() => socket.end(() => socket.destroy()));
  };
}

async function serveOne(
  store: Pausable,
  events: BackupControlEvents,
  socket: net.Socket,
  next: () => Promise<Record<string, unknown> | undefined>,
): Promise<void> {
  const maxPauseMs = events.maxPauseMs ?? MAX_BACKUP_PAUSE_MS;
  let resume: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
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
  }
}
