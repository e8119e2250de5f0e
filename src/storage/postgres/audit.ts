// The PostgreSQL store's audit table: entries inserted inside the transaction of the change they record,
// and the retention that keeps the newest AUDIT_MAX_ROWS rows.
import type { AuditEntry } from '../../registry/store.js';
import { escapeControlCharactersDeep } from '../../text/control-characters.js';
import type { PgDatabase, PoolLog, Queryable } from './database.js';

/** Audit rows written between two trims of the table: a tenth of the bound, at most this many. */
const MAX_AUDIT_ROWS_BETWEEN_TRIMS = 1_000;

/**
 * Audit entries in one statement (none: no statement). Every string is escaped of control characters first:
 * text and jsonb hold no NUL, and an entry may carry what a client sent (a path, an ID), so a `%00` must not
 * fail the insert (and with it the change it records); the escape keeps it visible.
 */
export async function insertAudit(client: Queryable, entries: readonly AuditEntry[]): Promise<void> {
  const audit = entries.map((e) => escapeControlCharactersDeep(e) as AuditEntry);
  if (audit.length > 0) {
    await client.query({
      name: 'arr_append_audit',
      text: `INSERT INTO audit_log (at, actor, action, object_id, outcome, details)
       SELECT at, actor, action, object_id, outcome, details::jsonb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS e(at, actor, action, object_id, outcome, details)`,
      values: [
        audit.map((e) => e.at),
        audit.map((e) => e.actor),
        audit.map((e) => e.action),
        audit.map((e) => e.id),
        audit.map((e) => e.outcome),
        audit.map((e) => (e.details === undefined ? null : JSON.stringify(e.details))),
      ],
    });
  }
}

/** Keeps the audit table to its newest `maxRows` rows (0 keeps every row), trimming off the write path. */
export class AuditRetention {
  readonly #trimEvery: number;
  #sinceTrim = 0;
  #trimming: Promise<void> | undefined;
  #trimAgain = false;

  constructor(
    private readonly db: PgDatabase,
    private readonly maxRows: number,
    private readonly log: PoolLog,
  ) {
    this.#trimEvery = Math.max(1, Math.min(MAX_AUDIT_ROWS_BETWEEN_TRIMS, Math.floor(maxRows / 10)));
  }

  /** Counts audit rows written; trims the table once enough were written since the last trim. */
  written(rows: number): void {
    if (this.maxRows === 0 || rows === 0) return;
    this.#sinceTrim += rows;
    if (this.#sinceTrim >= this.#trimEvery) this.trim();
  }

  /**
   * Deletes the audit rows older than the newest maxRows, off the write path (no acknowledgement waits
   * for it). By sequence number: the rows above max(seq) - maxRows are at most maxRows (numbers a
   * rolled-back insert took are gaps), found through the primary key without counting the table. Every
   * replica trims; their deletes overlap harmlessly. A failure is logged, and the next trim catches up.
   */
  trim(): void {
    if (this.maxRows === 0 || this.db.closed) return;
    if (this.#trimming) {
      this.#trimAgain = true;
      return;
    }
    this.#sinceTrim = 0;
    this.#trimming = this.db
      .query('DELETE FROM audit_log WHERE seq <= (SELECT max(seq) FROM audit_log) - $1', [this.maxRows])
      .then(
        () => undefined,
        (err: unknown) => this.log('warn', 'trimming the audit table to AUDIT_MAX_ROWS failed; the next trim catches up', err),
      )
      .finally(() => {
        this.#trimming = undefined;
        if (this.#trimAgain) {
          this.#trimAgain = false;
          this.trim();
        }
      });
  }

  /** Waits for the trim under way; no other starts. */
  async close(): Promise<void> {
    this.#trimAgain = false;
    await this.#trimming;
  }
}
