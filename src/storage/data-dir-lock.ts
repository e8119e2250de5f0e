// One process owns a DATA_DIR. The lock is a Linux abstract-namespace Unix socket named after the
// directory's real path: binding it is atomic, a second bind fails with EADDRINUSE, and the kernel drops
// it the moment its process dies (SIGKILL included), so a restart after a crash never waits out a stale lock.
import { createHash } from 'node:crypto';
import { realpath } from 'node:fs/promises';
import net from 'node:net';

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

/** The lock's abstract socket name for a directory's real path (what another process connects to). */
export function lockSocketName(realDataDir: string): string {
  return `\0agent-resource-registry:${createHash('sha256').update(realDataDir).digest('hex')}`;
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const real = await realpath(dataDir);
  const name = lockSocketName(real);
  let handler: (socket: net.Socket) => void = (socket) => socket.destroy();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    handler(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new DataDirLockedError(real) : err),
    );
    server.listen(name, () => resolve());
  });
  // The lock must not keep the event loop alive on its own.
  server.unref();
  return {
    serve: (h) => {
      handler = h;
    },
    release: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // close() waits for open connections: end them (a backup client then sees the service go away).
        for (const socket of sockets) socket.destroy();
      }),
  };
}
