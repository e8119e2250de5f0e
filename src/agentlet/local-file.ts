// Opening a file the user named without trusting what it turns out to be. A FIFO without a writer would block a
// plain open forever, and a terminal device could become the controlling terminal; O_NONBLOCK and O_NOCTTY
// make the open return at once, and the caller then judges the handle's fstat (no race with a path check).
import { constants, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

export interface OpenedFile {
  handle: FileHandle;
  stats: Stats;
}

/** Opens without blocking and returns the handle with its fstat; the caller closes the handle. */
export async function openWithoutBlocking(file: string): Promise<OpenedFile> {
  const handle = await open(file, FLAGS);
  try {
    return { handle, stats: await handle.stat() };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The file's bytes when it holds at most `maxBytes`, else undefined (it may have grown since its fstat). */
export async function readAtMost(handle: FileHandle, maxBytes: number): Promise<Buffer | undefined> {
  const buffer = Buffer.alloc(maxBytes + 1);
  let total = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, total, buffer.length - total, total);
    if (bytesRead === 0) return buffer.subarray(0, total);
    total += bytesRead;
    if (total > maxBytes) return undefined;
  }
}
