// The JSON store's change log, `events.jsonl` in DATA_DIR (docs/events.md). The documents of the JSON store are
// separate files, so an event cannot share their bytes; it shares their commit instead, in two phases:
//
// 1. Before a batch's durable write, its events (with their cursors) are appended to the log and fdatasync'ed
//    as one line, together with a check per object: a digest of the record as the batch leaves it (`null`:
//    absent). The batches of every document are group-committed here, one write + fdatasync for all.
// 2. The document's own durable write follows. Its outcome is appended as a marker (`ok` / `undo`), without
//    an fsync of its own: the next line's fdatasync, or the check at start, settles it.
//
// At start, a batch with no marker (a crash between the two writes, or before the marker reached the disk)
// is decided by its checks: committed when every object it names is stored as the batch left it, dropped
// otherwise. So every durable change has its event, and no event survives for a change that was not
// durable. A document writes its batches one after the other, so at most its last batch can be undecided.
// (A batch that leaves every object as it found it, e.g. a record created and withdrawn in one group
// commit, counts as committed either way; the state is the same.)
//
// Events are published (to `read` and to listeners) only once their batch is committed, in cursor order:
// a later batch of another document waits for an earlier one to settle. Retention keeps the newest
// `retainCount` events and none older than `retainDays`; the file is rewritten with only those (and the
// batches still undecided) once it holds twice as many lines, and at every start.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type * as fsp from 'node:fs/promises';
import path from 'node:path';
import {
  cursorExpired,
  pageAfter,
  parseCursor,
  type ChangeEvent,
  type ChangeFeed,
  type ChangePage,
  type ChangeSubject,
  type EventDraft,
} from '../registry/events.js';
import { FILE_MODE, fsyncDirectory, nodeFileSystem, tempPathFor, type FileSystemSeam } from './durable-file.js';
import { StoreFileError } from './store-file-error.js';

export const EVENTS_FILE = 'events.jsonl';

/**
 * An event draft with the digest of its object as the change leaves it (`null`: absent). Without a check
 * (a workload's drift, written with the change of the record that moved) the event stands or falls with
 * the other events of its batch.
 */
export interface CheckedDraft extends EventDraft {
  check?: string | null;
}

/** A batch's events, prepared durably before the document's write; settled after it. */
export interface EventTicket {
  readonly first: number;
}

/** What a DurableDocument is handed to write its batches' events with. */
export interface EventSink {
  /** Appends the batch's events durably (phase 1); rejects when they could not be written. */
  prepare(drafts: readonly CheckedDraft[]): Promise<EventTicket>;
  /** The document's write succeeded (`true`) or failed: publish or drop the batch. */
  settle(ticket: EventTicket, committed: boolean): void;
}

export interface RetentionOptions {
  retainCount: number;
  retainDays: number;
}

/** The checks of frozen records: a frozen record cannot change, so its check is computed once. */
const checks = new WeakMap<object, string>();

/** A digest of a record as stored, independent of key order. */
export function recordCheck(record: unknown): string | null {
  if (record === undefined || record === null) return null;
  const known = typeof record === 'object' ? checks.get(record) : undefined;
  if (known !== undefined) return known;
  const check = createHash('sha256').update(canonical(record)).digest('hex').slice(0, 32);
  if (typeof record === 'object' && Object.isFrozen(record)) checks.set(record, check);
  return check;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonical(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export const subjectKey = (s: ChangeSubject) => `${s.kind}\u0000${s.id}`;

interface Batch {
  first: number;
  events: ChangeEvent[];
  checks?: Record<string, string | null>;
  subjects?: Record<string, ChangeSubject>;
  /** undefined while undecided. */
  committed?: boolean;
}

type Line =
  { floor: number; last: number } | { batch: ChangeEvent[]; checks?: Record<string, string | null> } | { ok: number } | { undo: number };

interface Write {
  bytes: Buffer;
  sync: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MIN_REWRITE_LINES = 1_000;

export class JsonEventLog implements ChangeFeed, EventSink {
  /** Published events, ascending. */
  #events: ChangeEvent[] = [];
  /** Batches prepared and not yet published or dropped, ascending by first cursor. */
  #pending: Batch[] = [];
  /** The highest cursor dropped by retention (0: none): cursors below it are expired. */
  #floor = 0;
  /** The highest cursor ever assigned. */
  #last = 0;
  #handle: fsp.FileHandle | undefined;
  #size = 0;
  #dirty = false;
  #lines = 0;
  #writes: Write[] = [];
  #writing = false;
  #written: Promise<void> = Promise.resolve();
  #pauses = 0;
  #rewriteDue = false;
  #listeners = new Set<() => void>();

  private constructor(
    readonly file: string,
    private readonly retention: RetentionOptions,
    private readonly now: () => Date,
    private readonly fs: FileSystemSeam,
    /** Undecided batches found in the file, decided by `recover`. */
    private undecided: Batch[],
  ) {}

  /** Reads the log (a torn last line is ignored). Appends start only after `recover`. */
  static async read(
    file: string,
    retention: RetentionOptions,
    now: () => Date = () => new Date(),
    fs: FileSystemSeam = nodeFileSystem,
  ): Promise<JsonEventLog> {
    let text = '';
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const lines = text.split('\n');
    lines.pop(); // a torn tail (or the empty string after the last newline): never acknowledged
    const batches = new Map<number, Batch>();
    let floor = 0;
    let last = 0;
    lines.forEach((text, i) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        throw new StoreFileError(file, `line ${i + 1} does not parse as JSON (only a torn last line is tolerated)`);
      }
      if (line === null || typeof line !== 'object') {
        throw new StoreFileError(file, `line ${i + 1} is not an event log line`);
      } else if ('floor' in line) {
        floor = Math.max(floor, line.floor);
        last = Math.max(last, line.last);
      } else if ('batch' in line && Array.isArray(line.batch) && line.batch.length > 0) {
        const first = Number(line.batch[0]!.id);
        batches.set(first, { first, events: line.batch, ...(line.checks ? { checks: line.checks } : { committed: true }) });
        last = Math.max(last, Number(line.batch[line.batch.length - 1]!.id));
      } else if ('ok' in line || 'undo' in line) {
        const first = 'ok' in line ? line.ok : line.undo;
        const batch = batches.get(first);
        if (batch) batch.committed = 'ok' in line;
      } else {
        throw new StoreFileError(file, `line ${i + 1} is not an event log line`);
      }
    });
    const log = new JsonEventLog(file, retention, now, fs, []);
    log.#floor = floor;
    log.#last = last;
    for (const batch of [...batches.values()].sort((a, b) => a.first - b.first)) {
      if (batch.committed === true) log.#events.push(...batch.events);
      else if (batch.committed === undefined) log.undecided.push(batch);
    }
    return log;
  }

  /**
   * Decides the batches the file left undecided by their checks (`current`: the digest of an object as
   * stored now), prunes by retention, rewrites the file with what is kept, and opens it for appends.
   */
  async recover(current: (subject: ChangeSubject) => Promise<string | null>): Promise<void> {
    const committed: ChangeEvent[] = [];
    for (const batch of this.undecided) {
      let ok = true;
      for (const [key, check] of Object.entries(batch.checks ?? {})) {
        const subject = batch.events.find((e) => subjectKey(e.subject) === key)?.subject;
        if (!subject || (await current(subject)) !== check) ok = false;
      }
      if (ok) committed.push(...batch.events);
    }
    this.undecided = [];
    this.#events = [...this.#events, ...committed].sort((a, b) => Number(a.id) - Number(b.id));
    this.#prune();
    await this.#rewrite();
  }

  // ---- ChangeFeed

  read(since: string | undefined, limit: number): Promise<ChangePage> {
    // A cursor refused here is a rejection, as on the PostgreSQL store: the executor turns the throw into one.
    return new Promise((resolve) => {
      const after = since === undefined ? this.#floor : parseCursor(since);
      if (after < this.#floor || after > this.#last) throw cursorExpired(since ?? '', this.#floor);
      resolve(pageAfter(this.#events, after, limit));
    });
  }

  head(): string {
    return this.#events.length > 0 ? this.#events[this.#events.length - 1]!.id : String(this.#floor);
  }

  onPublished(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // ---- EventSink

  prepare(drafts: readonly CheckedDraft[]): Promise<EventTicket> {
    const checks: Record<string, string | null> = {};
    for (const d of drafts) if (d.check !== undefined) checks[subjectKey(d.subject)] = d.check; // the last draft of an object wins
    return this.#prepare(drafts, checks);
  }

  /**
   * Events of no stored document (a machine's channel, a job's outcome): written and fdatasync'ed as one
   * batch with no checks, so a crash before its marker still counts it committed at start; then published
   * in cursor order like any batch.
   */
  async append(drafts: readonly EventDraft[]): Promise<void> {
    if (drafts.length === 0) return;
    this.settle(await this.#prepare(drafts, {}), true);
  }

  #prepare(drafts: readonly EventDraft[], checks: Record<string, string | null>): Promise<EventTicket> {
    const at = this.now().toISOString();
    const first = this.#last + 1;
    const events: ChangeEvent[] = drafts.map((d, i) => ({
      id: String(first + i),
      type: d.type,
      at,
      subject:
        d.subject.provider === undefined
          ? { kind: d.subject.kind, id: d.subject.id }
          : { kind: d.subject.kind, id: d.subject.id, provider: d.subject.provider },
      ...(d.detail ? { detail: { ...d.detail } } : {}),
    }));
    this.#last += drafts.length;
    const batch: Batch = { first, events, checks };
    this.#pending.push(batch);
    return this.#append({ batch: events, checks }, true).then(
      () => batch,
      (err) => {
        this.#pending.splice(this.#pending.indexOf(batch), 1);
        throw err;
      },
    );
  }

  settle(ticket: EventTicket, committed: boolean): void {
    const batch = this.#pending.find((b) => b.first === ticket.first);
    if (!batch) return;
    batch.committed = committed;
    // The marker needs no fsync of its own (see the top of this file); a failure to write it is settled at start.
    this.#append(committed ? { ok: batch.first } : { undo: batch.first }, false).catch(() => undefined);
    let published = false;
    while (this.#pending.length > 0 && this.#pending[0]!.committed !== undefined) {
      const next = this.#pending.shift()!;
      if (next.committed) {
        this.#events.push(...next.events);
        published = true;
      }
    }
    if (!published) return;
    this.#prune();
    if (this.#lines >= Math.max(MIN_REWRITE_LINES, 2 * (this.#events.length + this.#pending.length))) this.#scheduleRewrite();
    for (const listener of this.#listeners) listener();
  }

  // ---- retention and the file

  #prune(): void {
    const oldest = this.now().getTime() - this.retention.retainDays * DAY_MS;
    let drop = Math.max(0, this.#events.length - this.retention.retainCount);
    while (drop < this.#events.length && Date.parse(this.#events[drop]!.at) < oldest) drop++;
    if (drop === 0) return;
    this.#floor = Number(this.#events[drop - 1]!.id);
    this.#events = this.#events.slice(drop);
  }

  #append(line: Line, sync: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#writes.push({ bytes: Buffer.from(JSON.stringify(line) + '\n'), sync, resolve, reject });
      if (!this.#writing) this.#written = this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#pauses === 0 && (this.#writes.length > 0 || this.#rewriteDue)) {
        if (this.#rewriteDue) {
          this.#rewriteDue = false;
          await this.#rewrite().catch(() => undefined);
          continue;
        }
        const batch = this.#writes;
        this.#writes = [];
        try {
          const handle = this.#handle;
          if (!handle) throw new Error(`${this.file} is closed`);
          if (this.#dirty) {
            await handle.truncate(this.#size);
            this.#dirty = false;
          }
          const bytes = Buffer.concat(batch.map((w) => w.bytes));
          try {
            await handle.write(bytes);
            if (batch.some((w) => w.sync)) await handle.datasync();
          } catch (err) {
            // Cut off whatever part reached the file, so later lines never follow a torn one.
            this.#dirty = true;
            await handle.truncate(this.#size).then(
              () => (this.#dirty = false),
              () => undefined,
            );
            throw err;
          }
          this.#size += bytes.length;
          this.#lines += batch.length;
          for (const w of batch) w.resolve();
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#writing = false;
    }
  }

  #scheduleRewrite(): void {
    this.#rewriteDue = true;
    if (!this.#writing) this.#written = this.#flush();
  }

  /** Replaces the file (temp + rename) with the retained events and the batches not yet decided. */
  async #rewrite(): Promise<void> {
    const lines: Line[] = [{ floor: this.#floor, last: this.#last }];
    for (const e of this.#events) lines.push({ batch: [e] });
    for (const b of this.#pending) {
      if (b.committed === undefined) lines.push({ batch: b.events, ...(b.checks ? { checks: b.checks } : {}) });
      else if (b.committed) lines.push({ batch: b.events });
    }
    const bytes = Buffer.from(lines.map((l) => JSON.stringify(l) + '\n').join(''));
    const temp = tempPathFor(this.file);
    // Appending (O_APPEND): after a failed append is cut off, the next one lands at the end, never past it.
    const handle = await this.fs.open(temp, 'ax', FILE_MODE);
    try {
      await handle.write(bytes);
      await handle.sync();
      await this.fs.rename(temp, this.file);
    } catch (err) {
      await handle.close().catch(() => undefined);
      await this.fs.unlink(temp).catch(() => undefined);
      throw err;
    }
    await this.#handle?.close().catch(() => undefined);
    this.#handle = handle;
    this.#size = bytes.length;
    this.#lines = lines.length;
    this.#dirty = false;
    await fsyncDirectory(path.dirname(this.file), this.fs);
  }

  /** Holds appends (an online backup) once the running one is done. */
  async pause(): Promise<void> {
    this.#pauses++;
    await this.#written;
  }

  resume(): void {
    if (this.#pauses === 0) return;
    this.#pauses--;
    if (this.#pauses === 0 && (this.#writes.length > 0 || this.#rewriteDue) && !this.#writing) this.#written = this.#flush();
  }

  async close(): Promise<void> {
    this.#pauses = 0;
    if ((this.#writes.length > 0 || this.#rewriteDue) && !this.#writing) this.#written = this.#flush();
    while (this.#writing || this.#writes.length > 0) await new Promise((r) => setImmediate(r));
    this.#listeners.clear();
    await this.#handle?.close();
    this.#handle = undefined;
  }
}
