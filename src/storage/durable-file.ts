// Durable whole-file replacement: write a temp file beside the target, fsync it, rename it over the target,
// fsync the directory. Only after the last step has the caller's write happened; before it the target
// still holds the old bytes. The file-system calls go through a seam so tests can inject faults.
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import path from 'node:path';

/** The few file-system calls durable writes make; tests substitute failing ones. */
export interface FileSystemSeam {
  open(file: string, flags: string, mode?: number): Promise<fsp.FileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(file: string): Promise<void>;
}

export const nodeFileSystem: FileSystemSeam = {
  open: (file, flags, mode) => fsp.open(file, flags, mode),
  rename: (from, to) => fsp.rename(from, to),
  unlink: (file) => fsp.unlink(file),
};

export const TEMP_SUFFIX = '.tmp';
export const FILE_MODE = 0o600;

/** Temp files carry the target's name, so a sweep at start finds every leftover. */
export function tempPathFor(target: string): string {
  return `${target}.${process.pid}-${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`;
}

export async function fsyncDirectory(dir: string, fs: FileSystemSeam = nodeFileSystem): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `target` with `bytes` durably, and returns how many bytes it wrote. `bytes` may come in pieces
 * (text): each is written before the next is asked for, so a large file is never one string or buffer, and
 * the event loop turns between pieces. On any failure the temp file is removed (best effort) and the error
 * is rethrown: the target then still holds its previous content.
 */
export async function writeFileDurably(
  target: string,
  bytes: string | Uint8Array | Iterable<string>,
  fs: FileSystemSeam = nodeFileSystem,
  /**
   * `false`: the caller fsyncs the directory itself once after several writes into it (a compaction), and
   * counts none of them as durable before that.
   */
  syncDirectory = true,
): Promise<number> {
  const temp = tempPathFor(target);
  let renamed = false;
  let written = 0;
  try {
    const handle = await fs.open(temp, 'wx', FILE_MODE);
    try {
      if (typeof bytes === 'string' || bytes instanceof Uint8Array) {
        await handle.writeFile(bytes);
        written = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength;
      } else {
        for (const piece of bytes) {
          const chunk = Buffer.from(piece);
          // A FileHandle's write may write less than asked: write the rest.
          for (let at = 0; at < chunk.length;) at += (await handle.write(chunk, at, chunk.length - at)).bytesWritten;
          written += chunk.length;
        }
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, target);
    renamed = true;
    if (syncDirectory) await fsyncDirectory(path.dirname(target), fs);
  } catch (err) {
    if (!renamed) await fs.unlink(temp).catch(() => undefined);
    throw err;
  }
  return written;
}

/** Removes temp files left by a process that died mid-write. Returns the names removed. */
export async function sweepTempFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const swept = names.filter((n) => n.endsWith(TEMP_SUFFIX));
  for (const name of swept) await fsp.unlink(path.join(dir, name));
  return swept;
}
