// Following the change log from a cursor, for a stream that a publish only wakes: one read at a time, page by
// page until the log has nothing newer; a wake during a read asks for one more pass, so no publish is missed
// and none starts a second reader. A stream catching up on a backlog yields to the event loop between full pages.
import type { ChangeEvent, ChangeFeed } from '../registry/events.js';

/** Events read from the log per step of a stream. */
export const PAGE = 256;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface FeedReader {
  /** Reads what the log holds past the cursor; called again while reading, it reads once more after. */
  read(): Promise<void>;
  /** Past the last page read: where the next read starts. */
  readonly cursor: string;
}

/**
 * A reader of `feed` from `start`, until `ended()`: `take` is handed each page's events (and answers false to
 * stop this read), `failed` the error that ends the reading (a cursor behind the retention, an unreadable log).
 */
export function feedReader(
  feed: ChangeFeed,
  start: string,
  ended: () => boolean,
  take: (events: readonly ChangeEvent[]) => Promise<boolean> | boolean,
  failed: (err: unknown) => void,
): FeedReader {
  let cursor = start;
  let running = false;
  let again = false;
  const read = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        for (;;) {
          if (ended()) return;
          const page = await feed.read(cursor, PAGE, { published: true });
          if (page.events.length === 0) break;
          cursor = page.next;
          if (!(await take(page.events))) return;
          if (page.events.length === PAGE) await nextTurn();
        }
      } while (again);
    } catch (err) {
      failed(err);
    } finally {
      running = false;
    }
  };
  return {
    read,
    get cursor() {
      return cursor;
    },
  };
}
