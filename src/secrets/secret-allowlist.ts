// The owner's secret allowlist: the one way a false finding of the secret scan gets through. An entry names
// exactly one finding's fingerprint (rule + SHA-256 of the matched text), optionally only in one field or
// file and only on one route. It lives in one JSON file (SECRET_ALLOWLIST_FILE, by default
// DATA_DIR/secret-allowlist.json): the operator may write it, the owner edits it through
// `/api/acp/secret-allowlist` (every change audited), and every scan reads it when a field holds a finding,
// so a change made by another process sharing the file counts from its next scan. Framework-free.
import { readFileSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import type { AuditTrail } from '../audit/audit-trail.js';
import { type Clock, systemClock } from '../clock.js';
import { AppError } from '../errors.js';
import {
  SecretAllowlistFile,
  type SecretAllowlistEntry,
  type SecretAllowlistEntryBody,
  type SecretAllowlistQuery,
} from '../schemas/secret-allowlist.js';
import { writeFileDurably } from '../storage/durable-file.js';

const checkFile = Compile(SecretAllowlistFile);

export class SecretAllowlistFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretAllowlistFileError';
  }
}

/** The entries of a file's text; a bad file is named by its first problem, never by quoting its content. */
export function parseSecretAllowlist(text: string, file: string): SecretAllowlistEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SecretAllowlistFileError(`SECRET_ALLOWLIST_FILE ${file} is not valid JSON (a JSON array of entries is expected).`);
  }
  if (!checkFile.Check(value)) {
    const first = [...checkFile.Errors(value)][0];
    throw new SecretAllowlistFileError(
      `SECRET_ALLOWLIST_FILE ${file}: ${first?.instancePath || '/'} ${first?.message ?? 'is not a list of entries'} (each entry is {fingerprint, file?, route?, reason}).`,
    );
  }
  return value;
}

/** The file's entries at start: none when it does not exist; a file that cannot be read or parsed stops the start. */
export function readSecretAllowlistSync(file: string): SecretAllowlistEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    // Not there (ENOTDIR: a folder on its path is a file, which the DATA_DIR check reports).
    if (['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return [];
    throw new SecretAllowlistFileError(`SECRET_ALLOWLIST_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
  return parseSecretAllowlist(text, file);
}

const sameScope = (e: SecretAllowlistEntry, q: SecretAllowlistQuery) =>
  e.fingerprint === q.fingerprint && e.file === q.file && e.route === q.route;

export interface SecretAllowlistDeps {
  audit: AuditTrail;
  /** Scans the owner's `reason` and `file` (422 `secret_detected`): they are stored and listed. */
  assertClean: (fields: [string, string][]) => Promise<void>;
  /** A file that turned unreadable or invalid while running: reported, and no entry applies until it is fixed. */
  onError: (err: unknown) => void;
  clock?: Clock;
}

export const ALLOWLIST_ACTIONS = { add: 'secret-allowlist.add', remove: 'secret-allowlist.remove' } as const;

export class SecretAllowlist {
  #entries: SecretAllowlistEntry[];
  /** What the file looked like when `#entries` were read (`size:mtime:inode`); undefined: it did not exist. */
  #seen: string | undefined;
  /** Changes are made one at a time (read, change, write). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    initial: readonly SecretAllowlistEntry[],
    private readonly deps: SecretAllowlistDeps,
  ) {
    this.#entries = [...initial];
  }

  /** The entries now: re-read when the file changed since the last read (fails closed: none on a bad file). */
  async entries(): Promise<readonly SecretAllowlistEntry[]> {
    const st = await stat(this.file).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    const seen = st ? `${st.size}:${st.mtimeMs}:${st.ino}` : undefined;
    if (seen === this.#seen && this.#seen !== undefined) return this.#entries;
    if (!st) {
      this.#entries = [];
      this.#seen = undefined;
      return this.#entries;
    }
    try {
      this.#entries = parseSecretAllowlist(await readFile(this.file, 'utf8'), this.file);
    } catch (err) {
      this.deps.onError(err);
      this.#entries = [];
    }
    this.#seen = seen;
    return this.#entries;
  }

  /** Adds an entry (201), or answers the one already there with the same fingerprint, file and route (its reason kept). */
  add(body: SecretAllowlistEntryBody, actor: string): Promise<{ entry: SecretAllowlistEntry; created: boolean }> {
    return this.#change<{ entry: SecretAllowlistEntry; created: boolean }>(actor, ALLOWLIST_ACTIONS.add, body, async (entries) => {
      await this.deps.assertClean([
        ['/reason', body.reason],
        ...(body.file === undefined ? [] : [['/file', body.file] as [string, string]]),
      ]);
      const held = entries.find((e) => sameScope(e, body));
      if (held) return { entries, result: { entry: held, created: false } };
      const entry: SecretAllowlistEntry = { ...body, addedAt: (this.deps.clock ?? systemClock).now().toISOString() };
      return { entries: [...entries, entry], result: { entry, created: true } };
    });
  }

  /** Removes the entry with exactly this fingerprint, file and route: 404 `allowlist_entry_not_found` when there is none. */
  remove(query: SecretAllowlistQuery, actor: string): Promise<void> {
    return this.#change(actor, ALLOWLIST_ACTIONS.remove, query, (entries) => {
      const kept = entries.filter((e) => !sameScope(e, query));
      if (kept.length === entries.length) {
        throw new AppError(
          'allowlist_entry_not_found',
          `No allowlist entry for ${query.fingerprint}${query.file === undefined ? '' : ` in ${query.file}`}${query.route === undefined ? '' : ` on ${query.route}`}; GET lists them.`,
          { fingerprint: query.fingerprint },
        );
      }
      return Promise.resolve({ entries: kept, result: undefined });
    });
  }

  #change<T>(
    actor: string,
    action: string,
    scope: SecretAllowlistQuery,
    change: (entries: readonly SecretAllowlistEntry[]) => Promise<{ entries: readonly SecretAllowlistEntry[]; result: T }>,
  ): Promise<T> {
    const run = this.#queue.then(async () => {
      try {
        const before = await this.entries();
        const { entries, result } = await change(before);
        if (entries !== before) {
          await mkdir(path.dirname(this.file), { recursive: true });
          await writeFileDurably(this.file, `${JSON.stringify(entries, null, 2)}\n`);
          this.#seen = undefined; // read again on the next scan
        }
        const created = entries !== before;
        await this.deps.audit.record([
          {
            actor,
            action,
            id: scope.fingerprint,
            outcome: action === ALLOWLIST_ACTIONS.add ? (created ? 'added' : 'unchanged') : 'removed',
            details: {
              ...(scope.file === undefined ? {} : { file: scope.file }),
              ...(scope.route === undefined ? {} : { route: scope.route as string }),
            },
          },
        ]);
        return result;
      } catch (err) {
        return this.deps.audit.failure(actor, action, scope.fingerprint, err);
      }
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }
}
