// The PostgreSQL store's change log reader (docs/events.md). The events are written by triggers in the writing
// transactions and numbered at COMMIT in commit order (migration 5). Every replica keeps the newest events
// in memory, refreshed once per notification (its own commits and other replicas' alike), so a thousand
// subscribers cost one query per change, not a thousand; older cursors are read from the table. Events that
// announce no stored change are written here too.
import type pg from 'pg';
import {
  cursorExpired,
  pageAfter,
  parseCursor,
  type ChangeEvent,
  type ChangeFeed,
  type ChangePage,
  type DriftDetail,
  type EventDraft,
  type ReadOptions,
} from '../../registry/events.js';

/** Events kept in memory per replica. */
const TAIL = 4_096;
const DAY_MS = 24 * 60 * 60 * 1000;

interface EventRow {
  seq: string;
  at: string;
  type: string;
  kind: string;
  object_id: string;
  provider: string | null;
  detail: DriftDetail | null;
}

/** A drift detail in its one key order (jsonb keeps its own). */
const detailOf = ({ resourceId, provider, pinned, current, more }: DriftDetail): DriftDetail => ({
  resourceId,
  provider,
  ...(pinned === undefined ? {} : { pinned }),
  ...(current === undefined ? {} : { current }),
  ...(more === undefined ? {} : { more }),
});

const eventOf = (r: EventRow): ChangeEvent => ({
  id: r.seq,
  type: r.type as ChangeEvent['type'],
  at: r.at,
  subject: { kind: r.kind as ChangeEvent['subject']['kind'], id: r.object_id, ...(r.provider === null ? {} : { provider: r.provider }) },
  ...(r.detail === null ? {} : { detail: detailOf(r.detail) }),
});

const SELECT =
  'SELECT seq::text, at, type, kind, object_id, provider, detail FROM events WHERE events.seq > $1 ORDER BY events.seq LIMIT $2';

export class PgEventFeed implements ChangeFeed {
  /** The newest events seen, ascending; they cover every committed cursor in (`#base`, `#head`]. */
  #tail: ChangeEvent[] = [];
  #base = 0;
  #head = 0;
  #floor = 0;
  #loaded = false;
  #refreshing: Promise<void> | undefined;
  #again = false;
  #listeners = new Set<() => void>();
  #sinceTrim = 0;

  constructor(
    private readonly query: <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<pg.QueryResult<R>>,
    private readonly retention: { retainCount: number; retainDays: number },
    private readonly log: (message: string, err: unknown) => void,
  ) {}

  /** Events of no stored change, in one statement, so one transaction: numbered together at its commit (migration 5). */
  async record(drafts: readonly EventDraft[]): Promise<void> {
    if (drafts.length === 0) return;
    await this.query(
      'SELECT arr_event(d.type, d.kind, d.id, d.provider) FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS d(type, kind, id, provider)',
      [
        drafts.map((d) => d.type),
        drafts.map((d) => d.subject.kind),
        drafts.map((d) => d.subject.id),
        drafts.map((d) => d.subject.provider ?? null),
      ],
    );
  }

  /** Reads the newest cursor and floor (at open). */
  async load(): Promise<void> {
    const { rows } = await this.query<{ head: string | null; floor: string }>(
      'SELECT (SELECT max(seq) FROM events)::text AS head, (SELECT floor FROM events_floor)::text AS floor',
      [],
    );
    this.#floor = Number(rows[0]?.floor ?? 0);
    this.#head = Math.max(this.#floor, Number(rows[0]?.head ?? 0));
    this.#base = this.#head;
    this.#loaded = true;
  }

  /** Something committed (here or on another replica): fetch the new events, then wake the subscribers. */
  refresh(): void {
    if (!this.#loaded) return;
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    this.#refreshing = (async () => {
      let fetched = 0;
      do {
        this.#again = false;
        for (;;) {
          const { rows } = await this.query<EventRow>(SELECT, [this.#head, 1_000]);
          if (rows.length === 0) break;
          const events = rows.map(eventOf);
          this.#tail.push(...events);
          this.#head = Number(events[events.length - 1]!.id);
          fetched += events.length;
          if (this.#tail.length > TAIL) {
            const drop = this.#tail.length - TAIL;
            this.#base = Number(this.#tail[drop - 1]!.id);
            this.#tail = this.#tail.slice(drop);
          }
        }
      } while (this.#again);
      if (fetched > 0) {
        for (const listener of this.#listeners) listener();
        this.#sinceTrim += fetched;
        if (this.#sinceTrim >= Math.max(100, Math.floor(this.retention.retainCount / 10))) await this.#trim();
      }
    })()
      .catch((err: unknown) => this.log('reading the change log failed; the next change retries', err))
      .finally(() => {
        this.#refreshing = undefined;
        if (this.#again) this.refresh();
      });
  }

  /** Retention: drops the events beyond the newest retainCount and older than retainDays, and raises the floor. */
  async #trim(): Promise<void> {
    this.#sinceTrim = 0;
    const oldest = new Date(Date.now() - this.retention.retainDays * DAY_MS).toISOString();
    const { rows } = await this.query<{ floor: string | null }>(
      `WITH gone AS (
         DELETE FROM events WHERE seq IS NOT NULL AND (seq <= (SELECT max(seq) FROM events) - $1 OR at < $2) RETURNING seq
       )
       UPDATE events_floor SET floor = GREATEST(floor, COALESCE((SELECT max(seq) FROM gone), 0)) RETURNING floor::text`,
      [this.retention.retainCount, oldest],
    );
    this.#floor = Number(rows[0]?.floor ?? this.#floor);
  }

  async read(since: string | undefined, limit: number, options: ReadOptions = {}): Promise<ChangePage> {
    if (since !== undefined && options.published) {
      const after = parseCursor(since);
      if (after >= this.#base && after <= this.#head && after >= this.#floor) return pageAfter(this.#tail, after, limit);
    }
    const { rows } = await this.query<{ floor: string; head: string | null }>(
      'SELECT floor::text, (SELECT max(seq) FROM events)::text AS head FROM events_floor',
      [],
    );
    const floor = Number(rows[0]?.floor ?? 0);
    const head = Math.max(floor, Number(rows[0]?.head ?? 0));
    this.#floor = Math.max(this.#floor, floor);
    const after = since === undefined ? floor : parseCursor(since);
    if (after < floor || after > head) throw cursorExpired(since ?? '', floor);
    if (limit === 0) return { events: [], next: String(after) };
    const page = await this.query<EventRow>(SELECT, [after, limit]);
    const events = page.rows.map(eventOf);
    return { events, next: events.length > 0 ? events[events.length - 1]!.id : String(after) };
  }

  head(): string {
    return String(this.#head);
  }

  onPublished(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    while (this.#refreshing) await this.#refreshing;
  }
}
