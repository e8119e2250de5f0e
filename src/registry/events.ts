// Change events (docs/events.md): every privileged change a store commits appends exactly one event to a durable,
// ordered log, in the same durable write as the change. An event names what changed (its type, its time,
// the object's kind, ID and provider), never the record's body and never a secret. The log's cursor is an
// opaque, increasing decimal sequence that survives a restart; events older than the retention are dropped
// and a cursor that points before them is refused (410 `cursor_expired`).
import { AppError } from '../errors.js';
import { visibleOnMachine } from './visibility.js';

/** The event types this registry emits, by the kind of object they are about (docs/events.md's list). */
export const CHANGE_EVENT_TYPES = [
  'resource.created',
  'resource.replaced',
  'resource.withdrawn',
  'resource.customized',
  'profile.created',
  'profile.updated',
  'profile.deleted',
  'machine.enrolled',
  'machine.rotated',
  'machine.revoked',
  'machine.connected',
  'machine.disconnected',
  'machine.problems',
  'workload.launched',
  'workload.drifted',
  'workload.repinned',
  'job.succeeded',
  'job.failed',
] as const;
export type ChangeEventType = (typeof CHANGE_EVENT_TYPES)[number];

export type SubjectKind = 'resource' | 'profile' | 'machine' | 'workload' | 'job';

export interface ChangeSubject {
  kind: SubjectKind;
  /** The object's ID; a workload's is `<canvasId>/<threadId>`, a job's is its job ID. */
  id: string;
  /** Resources: the provider that owns the record (`huabu` or a machine ID); jobs: the machine that ran it. */
  provider?: string;
}

/**
 * What a `workload.drifted` event adds (the only events with a detail): the pinned record that moved, its
 * provider, the workload's pin and the record's digest now (absent once withdrawn). A summary of the
 * workloads past the per-write bound names no pin and says how many `more` there were.
 */
export interface DriftDetail {
  resourceId: string;
  provider: string;
  pinned?: string;
  current?: string;
  more?: number;
}

export interface ChangeEvent {
  /** The cursor: a decimal sequence number, increasing in commit order. */
  id: string;
  type: ChangeEventType;
  /** When the change was committed (ISO time). */
  at: string;
  subject: ChangeSubject;
  detail?: DriftDetail;
}

/** An event about to be written by a store, before it has its cursor and time. */
export interface EventDraft {
  type: ChangeEventType;
  subject: ChangeSubject;
  detail?: DriftDetail;
}

export interface ReadOptions {
  /**
   * A subscriber woken by `onPublished` reads what this process has published (a replica's copy of the
   * newest events) instead of asking the database; without it a read sees every committed event.
   */
  published?: boolean;
}

/** A page of the log: the events after a cursor, and the cursor to ask with next. */
export interface ChangePage {
  events: readonly ChangeEvent[];
  /** The cursor after the last event of the page (the one asked with when the page is empty). */
  next: string;
}

/**
 * The read side of a store's change log. Only events whose change is durable are ever returned or
 * published, in commit order.
 */
export interface ChangeFeed {
  /**
   * Events after `since` (exclusive; absent: from the oldest retained), oldest first, at most `limit`.
   * 410 `cursor_expired` when `since` is older than the retention or newer than anything this log wrote.
   */
  read(since: string | undefined, limit: number, options?: ReadOptions): Promise<ChangePage>;
  /** The cursor of the newest published event (`0` when none yet). */
  head(): string;
  /** Called after new events were published (pull them with `read`); returns the unsubscribe function. */
  onPublished(listener: () => void): () => void;
}

/** A cursor: `0` or a decimal sequence number (≤ 2^53). */
export const CURSOR_PATTERN = '^(0|[1-9][0-9]{0,15})$';
const CURSOR = new RegExp(CURSOR_PATTERN);

/** The sequence number of a cursor; 400 `validation_failed` for anything that is not one. */
export function parseCursor(cursor: string): number {
  const n = CURSOR.test(cursor) ? Number(cursor) : NaN;
  if (!Number.isSafeInteger(n))
    throw new AppError('validation_failed', 'The cursor is not one this registry issued.', { cursor: cursor.slice(0, 32) });
  return n;
}

export function cursorExpired(cursor: string, oldest: number): AppError {
  return new AppError(
    'cursor_expired',
    'The cursor is older than the events this registry keeps (or newer than any it wrote); read the current state again and follow the events from the cursor of `GET /api/acp/changes`.',
    { cursor, oldestCursor: String(oldest) },
  );
}

/** The page of `events` (ascending by sequence) after `since`, as every feed answers it. */
export function pageAfter(events: readonly ChangeEvent[], since: number, limit: number): ChangePage {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (Number(events[mid]!.id) <= since) lo = mid + 1;
    else hi = mid;
  }
  const page = events.slice(lo, lo + limit);
  return { events: page, next: page.length > 0 ? page[page.length - 1]!.id : String(since) };
}

/** What a canvas on `machineId` may see: the `resource.*` events of resources the host or that machine provides. */
export function visibleToMachine(event: ChangeEvent, machineId: string): boolean {
  return (
    event.type.startsWith('resource.') &&
    event.subject.kind === 'resource' &&
    event.subject.provider !== undefined &&
    visibleOnMachine(event.subject.provider, machineId)
  );
}
