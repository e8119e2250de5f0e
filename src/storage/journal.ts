// An append-only journal of committed changes beside a versioned file: one JSON line per group-commit
// batch, appended and fdatasync'ed before the batch is acknowledged, replayed over the versioned file at
// start and compacted into it (the versioned file then holds everything and the journal is emptied). A
// crash can leave only the last line torn (no final newline): replay ignores that one line, and nothing
// else; any other malformed line stops the start.
import { readFile } from 'node:fs/promises';
import type * as fsp from 'node:fs/promises';
import path from 'node:path';
import { FILE_MODE, fsyncDirectory, nodeFileSystem, type FileSystemSeam } from './durable-file.js';

export const JOURNAL_SUFFIX = '.journal';

export function journalPathFor(file: string): string {
  return `${file}${JOURNAL_SUFFIX}`;
}

export class JournalCorruptError extends Error {
  constructor(readonly file: string, reason: string) {
    super(`${path.basename(file)} ${reason}`);
    this.name = 'JournalCorruptError';
  }
}

export interface JournalContent {
  /** The `changes` of every complete line, oldest first. */
  batches: unknown[][];
  /** True when the last line was cut short by a crash (and ignored). */
  tornTail: boolean;
  bytes: number;
}

/** Reads a journal; an absent one is empty. Throws JournalCorruptError on anything but a torn last line. */
export async function readJournal(file: string): Promise<JournalContent> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { batches: [], tornTail: false, bytes: 0 };
    throw err;
  }
  const lines = text.split('\n');
  // Everything after the last newline was never acknowledged (the newline ends every durable append).
  const tail = lines.pop()!;
  const batches = lines.map((line, i) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new JournalCorruptError(file, `line ${i + 1} does not parse as JSON (only a torn last line is tolerated)`);
    }
    const changes = (parsed as { changes?: unknown } | null)?.changes;
    if (!Array.isArray(changes)) throw new JournalCorruptError(file, `line ${i + 1} has no changes array`);
    return changes;
  });
  return { batches, tornTail: tail.length > 0, bytes: Buffer.byteLength(text) };
}

export function journalLine(changes: readonly unknown[]): string {
  return JSON.stringify({ changes }) + '\n';
}

/** The append side of a journal. Not safe for concurrent appends: its DurableDocument serializes them. */
export class Journal {
  #handle: fsp.FileHandle | undefined;
  /** Bytes of complete, durable lines. */
  #size = 0;
  /** A failed append may have left part of a line behind: cut it off before the next append. */
  #dirty = false;

  private constructor(readonly file: string, private readonly fs: FileSystemSeam) {}

  /** Opens (creating) the journal, which must be empty: replay and compact it first. */
  static async open(file: string, fs: FileSystemSeam = nodeFileSystem): Promise<Journal> {
    const journal = new Journal(file, fs);
    const handle = await fs.open(file, 'a', FILE_MODE);
    journal.#handle = handle;
    try {
      await handle.truncate(0);
      await handle.sync();
      await fsyncDirectory(path.dirname(file), fs);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return journal;
  }

  /** Bytes in the journal (what a compaction would fold into the versioned file). */
  get size(): number {
    return this.#size;
  }

  /** Appends one line and makes it durable; on failure the journal is as before the call. */
  async append(line: string): Promise<void> {
    const handle = this.#open();
    if (this.#dirty) {
      await handle.truncate(this.#size);
      await handle.sync();
      this.#dirty = false;
    }
    const bytes = Buffer.from(line);
    try {
      await handle.write(bytes);
      await handle.datasync();
    } catch (err) {
      // Cut off whatever part of the line reached the file; if even that fails, do it before the next append.
      this.#dirty = true;
      await handle.truncate(this.#size).then(() => (this.#dirty = false), () => undefined);
      throw err;
    }
    this.#size += bytes.length;
  }

  /** Empties the journal durably (after its content went into the versioned file). */
  async reset(): Promise<void> {
    const handle = this.#open();
    await handle.truncate(0);
    await handle.sync();
    this.#size = 0;
    this.#dirty = false;
  }

  async close(): Promise<void> {
    await this.#handle?.close();
    this.#handle = undefined;
  }

  #open(): fsp.FileHandle {
    if (!this.#handle) throw new Error(`${this.file} is closed`);
    return this.#handle;
  }
}
