// An append-only JSON-lines file (the audit log). Concurrent appends are batched into one write + fdatasync.
// A crash mid-append can leave a torn last line (no final newline): at open it is ended with a newline, so
// it stays as it was, on a line of its own, and every later line parses.
//
// Rotation by size (optional): before a batch that would take the active file past `maxBytes`, the rotated
// files shift up (`audit.1.jsonl` → `audit.2.jsonl` ..., the ones beyond `maxFiles` deleted) and the active
// file becomes `audit.1.jsonl`; a new active file is created and the directory fsync'ed before the batch is
// written. Files only ever move by rename, oldest first, so a crash at any step loses and duplicates no
// entry: a higher number is always older, whatever gaps a crash left (`rotatedFiles` reads them in order).
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { FILE_MODE, fsyncDirectory } from './durable-file.js';

export interface RotationOptions {
  /** Rotate before the active file would pass this many bytes; 0 turns rotation off. */
  maxBytes: number;
  /** Rotated files kept (`<name>.1<ext>` newest ... `<name>.<maxFiles><ext>` oldest); older ones are deleted. */
  maxFiles: number;
  /** The two calls a rotation moves files with (node:fs/promises' by default); a test fails one to crash there. */
  moves?: Pick<typeof fsp, 'rename' | 'unlink'>;
}

/** `audit.jsonl` → `audit.3.jsonl`. */
export function rotatedPath(file: string, n: number): string {
  const ext = path.extname(file);
  return `${file.slice(0, file.length - ext.length)}.${n}${ext}`;
}

/**
 * The rotated files beside `file` that exist, oldest first (highest number first), with their numbers.
 * Gaps (a crash in the middle of a rotation) are skipped.
 */
export async function rotatedFiles(file: string): Promise<{ n: number; file: string }[]> {
  const ext = path.extname(file);
  const stem = path.basename(file, ext);
  const pattern = new RegExp(`^${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.([1-9][0-9]{0,5})${ext.replace('.', '\\.')}$`);
  let names: string[];
  try {
    names = await fsp.readdir(path.dirname(file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .flatMap((name) => {
      const match = pattern.exec(name);
      return match ? [{ n: Number(match[1]), file: path.join(path.dirname(file), name) }] : [];
    })
    .sort((a, b) => b.n - a.n);
}

/** Every file of the log, oldest first: the rotated ones, then the active one (present or not). */
export async function logFilesOldestFirst(file: string): Promise<string[]> {
  return [...(await rotatedFiles(file)).map((r) => r.file), file];
}

interface PendingAppend {
  lines: string;
  /** Resolved once written and fdatasync'ed; absent for a carried append (see `appendCarried`). */
  done?: { resolve: () => void; reject: (err: unknown) => void };
}

export class AppendLog {
  #handle: fsp.FileHandle | undefined;
  #pending: PendingAppend[] = [];
  /** Carried lines whose write failed: written first in the next batch, so the log keeps their order. */
  #retry = '';
  /** Whether carried lines were written to the active file since its last fdatasync. */
  #unsynced = false;
  #flushing = false;
  /** Bytes in the active file. */
  #size = 0;
  #pauses = 0;
  #flushed: Promise<void> = Promise.resolve();

  private constructor(
    readonly file: string,
    private readonly rotation: RotationOptions,
    private readonly wrap: (handle: fsp.FileHandle) => fsp.FileHandle,
  ) {}

  /** `wrap` sees each handle of the active file as it is opened (a test counts its flushes or fails a write). */
  static async open(
    file: string,
    rotation: RotationOptions = { maxBytes: 0, maxFiles: 0 },
    wrap: (handle: fsp.FileHandle) => fsp.FileHandle = (handle) => handle,
  ): Promise<AppendLog> {
    const log = new AppendLog(file, rotation, wrap);
    const handle = wrap(await fsp.open(file, 'a+', FILE_MODE));
    try {
      let { size } = await handle.stat();
      if (size > 0) {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) {
          await handle.write('\n');
          await handle.datasync();
          size++;
        }
      }
      log.#size = size;
    } catch (err) {
      await handle.close();
      throw err;
    }
    log.#handle = handle;
    return log;
  }

  append(records: readonly unknown[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.#appendDurably(asLines(records));
  }

  #appendDurably(lines: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ lines, done: { resolve, reject } });
      if (!this.#flushing) this.#flushed = this.#flush();
    });
  }

  /**
   * Appends entries already made durable elsewhere (a journal line that carries them): written in order
   * with every other append, without an fdatasync of their own and without an answer. `sync` makes them
   * durable; until then a crash may lose them (only ever the newest: a later fdatasync of this file
   * covers every earlier write), and `recoverCarried` at the next start appends what was lost. A write
   * that fails is tried again before the next batch.
   */
  appendCarried(records: readonly unknown[]): void {
    if (records.length === 0) return;
    this.#pending.push({ lines: asLines(records) });
    if (!this.#flushing) this.#flushed = this.#flush();
  }

  /** Makes every append made so far durable (carried ones included); rejects when it cannot. */
  sync(): Promise<void> {
    return this.#appendDurably('');
  }

  /**
   * At start, with the entries a journal still carries (oldest first): appends, durably, those the log
   * lacks. Carried entries reach the log in their order and a crash loses only the newest, so the ones
   * missing are those after the last one found; the log is read backwards (the active file, then the
   * rotated ones, newest first) until one is found.
   */
  async recoverCarried(records: readonly unknown[]): Promise<number> {
    if (records.length === 0) return 0;
    const index = new Map(records.map((r, i) => [JSON.stringify(r), i]));
    let found = -1;
    for (const file of (await logFilesOldestFirst(this.file)).reverse()) {
      found = await lastLineIn(file, index);
      if (found >= 0) break;
    }
    const missing = records.slice(found + 1);
    if (missing.length > 0) await this.#appendDurably(asLines(missing));
    return missing.length;
  }

  /** Stops writes and rotations (an online backup) once the running one is done; appends queue meanwhile. */
  async pause(): Promise<void> {
    this.#pauses++;
    await this.#flushed;
  }

  resume(): void {
    if (this.#pauses === 0) return;
    this.#pauses--;
    if (this.#pauses === 0 && this.#pending.length > 0 && !this.#flushing) this.#flushed = this.#flush();
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0 && this.#pauses === 0) {
        const batch = this.#pending;
        this.#pending = [];
        const retried = this.#retry;
        this.#retry = '';
        // A batch of carried appends only is written without an fdatasync.
        const durable = batch.some((p) => p.done);
        try {
          const bytes = Buffer.from(retried + batch.map((p) => p.lines).join(''));
          const { maxBytes } = this.rotation;
          if (maxBytes > 0 && this.#size > 0 && this.#size + bytes.length > maxBytes) await this.#rotate();
          const handle = this.#handle;
          if (!handle) throw new Error(`${this.file} is closed`);
          if (bytes.length > 0) await handle.write(bytes);
          this.#size += bytes.length;
          if (durable && (bytes.length > 0 || this.#unsynced)) await handle.datasync();
          this.#unsynced = durable ? false : this.#unsynced || bytes.length > 0;
          for (const p of batch) p.done?.resolve();
        } catch (err) {
          // The carried lines are kept for the next batch (a partial write of them may stay: a duplicate
          // entry is possible after a failing disk, a lost one is not).
          this.#retry = retried + batch.flatMap((p) => (p.done ? [] : [p.lines])).join('');
          for (const p of batch) p.done?.reject(err);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  /**
   * Shifts the rotated files up (oldest first, deleting those beyond maxFiles), renames the active file to
   * number 1, opens a new active file and fsyncs the directory. Every entry stays in exactly one file at
   * every step. On failure the active file is reopened as it is, so appends go on (unrotated).
   */
  async #rotate(): Promise<void> {
    const dir = path.dirname(this.file);
    const keep = Math.max(1, this.rotation.maxFiles);
    const { rename, unlink } = this.rotation.moves ?? fsp;
    // Carried lines not yet durable go with the file they were written to: no later file may hold newer ones first.
    if (this.#unsynced) await this.#handle?.datasync();
    this.#unsynced = false;
    await this.#handle?.close();
    this.#handle = undefined;
    try {
      for (const { n, file } of await rotatedFiles(this.file)) {
        if (n >= keep) await unlink(file);
        else await rename(file, rotatedPath(this.file, n + 1));
      }
      await rename(this.file, rotatedPath(this.file, 1));
    } finally {
      // The active file: a new one after the renames, or the old one (still there) if a step failed.
      this.#handle = this.wrap(await fsp.open(this.file, 'a+', FILE_MODE));
      this.#size = (await this.#handle.stat()).size;
      await this.#handle.sync();
      await fsyncDirectory(dir);
    }
  }

  async close(): Promise<void> {
    this.#pauses = 0;
    if ((this.#unsynced || this.#retry) && this.#handle) await this.sync().catch(() => undefined);
    if (this.#pending.length > 0 && !this.#flushing) this.#flushed = this.#flush();
    while (this.#flushing || this.#pending.length > 0) await new Promise((r) => setImmediate(r));
    await this.#handle?.close();
    this.#handle = undefined;
  }
}

/** Records as the log's lines, each ending with a newline. */
const asLines = (records: readonly unknown[]) => records.map((r) => JSON.stringify(r) + '\n').join('');

/** The highest index (in `index`) of a line of `file`, read from its end; -1 when none is there. */
async function lastLineIn(file: string, index: ReadonlyMap<string, number>): Promise<number> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return -1;
    throw err;
  }
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let position = (await handle.stat()).size;
    // Bytes after the last newline found so far (the start of a line that began in an earlier chunk).
    let rest = Buffer.alloc(0);
    while (position > 0) {
      const length = Math.min(chunk.length, position);
      position -= length;
      await handle.read(chunk, 0, length, position);
      const text = Buffer.concat([chunk.subarray(0, length), rest]);
      let end = text.length;
      while (end > 0) {
        const nl = text.lastIndexOf(0x0a, end - 1);
        if (nl < 0) break;
        const i = index.get(text.toString('utf8', nl + 1, end));
        if (i !== undefined) return i;
        end = nl;
      }
      rest = Buffer.from(text.subarray(0, end));
    }
    const i = index.get(rest.toString('utf8'));
    return i ?? -1;
  } finally {
    await handle.close();
  }
}
