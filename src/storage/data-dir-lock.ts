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
  release(): Promise<void>;
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const real = await realpath(dataDir);
  const name = `\0agent-resource-registry:${createHash('sha256').update(real).digest('hex')}`;
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new DataDirLockedError(real) : err),
    );
    server.listen(name, () => resolve());
  });
  // The lock must not keep the event loop alive on its own.
  server.unref();
  return {
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
