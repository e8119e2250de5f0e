// An append-only journal of committed changes beside a versioned file: one JSON line per group-commit
// batch, appended and fdatasync'ed before the batch is acknowledged, replayed over the versioned file at
// start and compacted into it (the versioned file then holds everything and the journal is emptied). A
// crash can leave only the last line torn (no final newline): replay ignores that one line, and nothing
// else; any other malformed line stops the start.
// A compaction may also run beside appends (`markFoldPoint`, `prepareRewrite`, `commitRewrite`): once the
// changes up to the mark are durable elsewhere, the journal is replaced, by one rename, with a file holding
// only the lines appended after the mark; at every moment the journal file holds every line not yet folded.
import { readFile } from 'node:fs/promises';
import type * as fsp from 'node:fs/promises';
import path from 'node:path';
import { FILE_MODE, fsyncDirectory, nodeFileSystem, tempPathFor, type FileSystemSeam } from './durable-file.js';

export const JOURNAL_SUFFIX = '.journal';

export function journalPathFor(file: string): string {
  return `${file}${JOURNAL_SUFFIX}`;
}

export class JournalCorruptError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${path.basename(file)} ${reason}`);
    this.name = 'JournalCorruptError';
  }
}

export interface JournalContent {
  /** The `changes` of every complete line, oldest first. */
  batches: unknown[][];
  /** The audit entries the complete lines carry (`audit`, see `journalLine`), oldest first. */
  audit: unknown[];
  /** True when the last line was cut short by a crash (and ignored). */
  tornTail: boolean;
  bytes: number;
  /** Bytes of the complete lines (without a torn tail). */
  completeBytes: number;
}

/** Reads a journal; an absent one is empty. Throws JournalCorruptError on anything but a torn last line. */
export async function readJournal(file: string): Promise<JournalContent> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { batches: [], audit: [], tornTail: false, bytes: 0, completeBytes: 0 };
    throw err;
  }
  const lines = text.split('\n');
  // Everything after the last newline was never acknowledged (the newline ends every durable append).
  const tail = lines.pop()!;
  const audit: unknown[] = [];
  const batches = lines.map((line, i) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new JournalCorruptError(file, `line ${i + 1} does not parse as JSON (only a torn last line is tolerated)`);
    }
    const changes = (parsed as { changes?: unknown } | null)?.changes;
    if (!Array.isArray(changes)) throw new JournalCorruptError(file, `line ${i + 1} has no changes array`);
    const carried = (parsed as { audit?: unknown }).audit;
    if (carried !== undefined) {
      if (!Array.isArray(carried)) throw new JournalCorruptError(file, `line ${i + 1} has an audit that is not an array`);
      audit.push(...(carried as unknown[]));
    }
    return changes;
  });
  const bytes = Buffer.byteLength(text);
  return { batches, audit, tornTail: tail.length > 0, bytes, completeBytes: bytes - Buffer.byteLength(tail) };
}

/**
 * One journal line: the batch's changes and, when there are any, the audit entries of those changes
 * (`audit`), made durable by the same fdatasync (DurableDocumentOptions.audit).
 */
export function journalLine(changes: readonly unknown[], audit: readonly unknown[] = []): string {
  return [...journalLinePieces(changes, audit)].join('');
}

/**
 * `journalLine`'s text in pieces of about `pieceChars` characters (a change is never cut), so a batch of
 * large records is serialized and written a piece at a time, the event loop turning between pieces.
 */
export function* journalLinePieces(changes: readonly unknown[], audit: readonly unknown[] = [], pieceChars = 1 << 20): Generator<string> {
  let piece = '{"changes":[';
  for (let i = 0; i < changes.length; i++) {
    piece += (i > 0 ? ',' : '') + JSON.stringify(changes[i]);
    if (piece.length >= pieceChars) {
      yield piece;
      piece = '';
    }
  }
  yield `${piece}]${audit.length > 0 ? `,"audit":${JSON.stringify(audit)}` : ''}}\n`;
}

/** A journal's replacement being prepared beside it: the temp file and how many kept lines it holds. */
export interface PreparedRewrite {
  readonly temp: string;
  readonly handle: fsp.FileHandle;
  readonly lines: number;
  readonly bytes: number;
}

/**
 * The append side of a journal. Not safe for concurrent appends: its DurableDocument serializes them, and
 * runs `commitRewrite` (but not `prepareRewrite`) in the same order as appends.
 */
export class Journal {
  #handle: fsp.FileHandle | undefined;
  /** Bytes of complete, durable lines. */
  #size = 0;
  /** A failed append may have left part of a line behind: cut it off before the next append. */
  #dirty = false;
  /** After a fold mark: the lines appended since, which a rewrite keeps. */
  #sinceMark: Buffer[] | undefined;
  /** A rewrite's rename happened but its directory fsync failed: make the name durable before the next append. */
  #directoryUnsynced = false;

  private constructor(
    readonly file: string,
    private readonly fs: FileSystemSeam,
  ) {}

  /**
   * Opens (creating) the journal for appends. It is emptied (replay and compact it first), or, with `keep`,
   * cut to its first `keep` bytes: the complete lines a failed compaction could not fold (a torn tail goes).
   */
  static async open(file: string, fs: FileSystemSeam = nodeFileSystem, keep = 0): Promise<Journal> {
    const journal = new Journal(file, fs);
    const handle = await fs.open(file, 'a', FILE_MODE);
    journal.#handle = handle;
    journal.#size = keep;
    try {
      await handle.truncate(keep);
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
  async append(line: string | Iterable<string>): Promise<void> {
    const handle = this.#open();
    if (this.#directoryUnsynced) {
      await fsyncDirectory(path.dirname(this.file), this.fs);
      this.#directoryUnsynced = false;
    }
    if (this.#dirty) {
      await handle.truncate(this.#size);
      await handle.sync();
      this.#dirty = false;
    }
    const pieces: Buffer[] = [];
    let bytes = 0;
    try {
      // One line, written a piece at a time: until its final newline is durable it is a torn tail, never a line.
      for (const text of typeof line === 'string' ? [line] : line) {
        const piece = Buffer.from(text);
        await handle.write(piece);
        pieces.push(piece);
        bytes += piece.length;
      }
      await handle.datasync();
    } catch (err) {
      // Cut off whatever part of the line reached the file; if even that fails, do it before the next append.
      this.#dirty = true;
      await handle.truncate(this.#size).then(
        () => (this.#dirty = false),
        () => undefined,
      );
      throw err;
    }
    this.#size += bytes;
    // A rewrite counts lines by entries: the line's pieces as one buffer.
    this.#sinceMark?.push(pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, bytes));
  }

  /** Empties the journal durably (after its content went into the versioned file). */
  async reset(): Promise<void> {
    const handle = this.#open();
    await handle.truncate(0);
    await handle.sync();
    this.#size = 0;
    this.#dirty = false;
    this.#sinceMark = undefined;
  }

  /** Starts keeping the lines appended from now on: everything before is about to be folded elsewhere. */
  markFoldPoint(): void {
    this.#sinceMark = [];
  }

  /** The fold did not happen: keep the journal whole. */
  dropFoldPoint(): void {
    this.#sinceMark = undefined;
  }

  /**
   * Writes the lines appended since the mark so far to a temp file beside the journal and fsyncs it. Runs
   * while appends go on; `commitRewrite` (ordered with appends) adds what came meanwhile and swaps it in.
   */
  async prepareRewrite(): Promise<PreparedRewrite> {
    const kept = this.#sinceMark;
    if (!kept) throw new Error(`${this.file}: no fold point`);
    const lines = kept.length;
    const bytes = Buffer.concat(kept.slice(0, lines));
    const temp = tempPathFor(this.file);
    // Appending (O_APPEND): after a failed append is cut off, the next one lands at the end, never past it.
    const handle = await this.fs.open(temp, 'ax', FILE_MODE);
    try {
      if (bytes.length > 0) await handle.write(bytes);
      await handle.sync();
    } catch (err) {
      await this.#discard(temp, handle);
      throw err;
    }
    return { temp, handle, lines, bytes: bytes.length };
  }

  /**
   * Replaces the journal with the prepared file plus the lines appended since it was prepared: everything
   * before the mark must be durable elsewhere by now. Call it where no append runs. On a failure before the
   * rename the journal is as it was (and stays whole); after the rename the new journal is in use.
   */
  async commitRewrite(prepared: PreparedRewrite): Promise<void> {
    const kept = this.#sinceMark;
    let renamed = false;
    try {
      if (!kept || kept.length < prepared.lines) throw new Error(`${this.file}: the fold point changed`);
      const rest = Buffer.concat(kept.slice(prepared.lines));
      if (rest.length > 0) {
        await prepared.handle.write(rest);
        await prepared.handle.datasync();
      }
      await this.fs.rename(prepared.temp, this.file);
      renamed = true;
      const old = this.#handle;
      this.#handle = prepared.handle;
      this.#size = prepared.bytes + rest.length;
      this.#dirty = false;
      this.#sinceMark = undefined;
      // Appends wait for this fsync (now or, if it fails, before the next one): the new name must be durable
      // before a line in the new file is acknowledged.
      this.#directoryUnsynced = true;
      await old?.close().catch(() => undefined);
      await fsyncDirectory(path.dirname(this.file), this.fs);
      this.#directoryUnsynced = false;
    } catch (err) {
      if (!renamed) {
        this.#sinceMark = undefined;
        await this.#discard(prepared.temp, prepared.handle);
      }
      throw err;
    }
  }

  async #discard(temp: string, handle: fsp.FileHandle): Promise<void> {
    await handle.close().catch(() => undefined);
    await this.fs.unlink(temp).catch(() => undefined);
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
