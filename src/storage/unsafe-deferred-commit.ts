// TEST ONLY. A deliberately unsafe file-system seam for the crash test's negative check
// (test/crash/crash.test.ts): the step that commits a durable write (the rename of a whole-file write, the
// append of a journal line, to a journal or to the replacement a compaction swaps in) is answered at once
// and performed `delayMs` later, so callers are acknowledged before their write is committed and a kill
// loses them.
// Enabled only by ARR_UNSAFE_ACK_BEFORE_WRITE_MS together with ARR_ALLOW_UNSAFE_TEST_MODES=1 (src/config.ts).
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeFileSystem, type FileSystemSeam } from './durable-file.js';

export function deferredCommitFileSystem(delayMs: number, onError: (err: unknown) => void): FileSystemSeam {
  // Renames stay in order: each waits for the one before it and for its own due time.
  let chain = Promise.resolve();
  const later = (due: number, work: () => Promise<unknown>) => {
    chain = chain.then(async () => {
      await sleep(Math.max(0, due - Date.now()));
      await work().catch(onError);
    });
  };
  return {
    ...nodeFileSystem,
    async open(file, flags, mode) {
      const handle = await nodeFileSystem.open(file, flags, mode);
      // `x.journal`, and the temp file `x.journal.<pid>-<hex>.tmp` that replaces it after a compaction.
      if (path.basename(file).includes('.journal')) {
        const write = handle.write.bind(handle) as (data: Uint8Array | string) => Promise<unknown>;
        (handle as { write: unknown }).write = (data: Uint8Array | string) => {
          later(Date.now() + delayMs, () => write(data));
          return Promise.resolve({ bytesWritten: typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength, buffer: data });
        };
        handle.datasync = () => Promise.resolve();
      }
      return handle;
    },
    rename(from, to) {
      const due = Date.now() + delayMs;
      chain = chain.then(async () => {
        await sleep(Math.max(0, due - Date.now()));
        await nodeFileSystem.rename(from, to).catch(onError);
      });
      return Promise.resolve();
    },
  };
}
