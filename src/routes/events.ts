// Change events over HTTP (docs/events.md): the owner's Server-Sent Events stream and JSON pages, and a canvas's
// stream of the resource events it may see. A stream pulls from the store's change log with its own cursor,
// so a writer only ever wakes it. A stream writes a page of events and, once its socket holds more than
// MAX_UNSENT_BYTES its client has not taken, waits for the socket to drain before reading more; a client that
// takes nothing for STALL_MS is closed (it resumes with `Last-Event-ID`). So a subscriber costs at most
// that bound and one page, and never slows a writer or another subscriber. The work is per socket write, not
// per event: a stream writes at most once per COALESCE_MS (a quiet stream's first event goes out at once, the
// events of a busy stretch share writes), each event's SSE text is built once for every stream, and a stream
// catching up on a backlog yields to the event loop between pages.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { protect, requireUrlCanvas } from '../http/auth.js';
import { answer, errors } from '../http/openapi.js';
import { CHANGE_EVENT, AT } from './examples.js';
import { CHANGE_EVENT_TYPES, parseCursor, visibleToMachine, type ChangeEvent, type ChangeFeed } from '../registry/events.js';
import { CanvasId } from '../schemas/common.js';
import { ChangeList, ChangesQuery, EventsQuery, EventStream } from '../schemas/events.js';
import { feedReader } from './feed-reader.js';

/** Every event type, grouped by subject: `resource.created|replaced|…`, `profile.…`. */
const EVENT_TYPES_TEXT = [...new Set(CHANGE_EVENT_TYPES.map((type) => type.split('.')[0]!))]
  .map(
    (kind) =>
      `\`${kind}.${CHANGE_EVENT_TYPES.filter((type) => type.startsWith(`${kind}.`))
        .map((type) => type.slice(kind.length + 1))
        .join('|')}\``,
  )
  .join(', ');

/** A subscriber whose socket holds more than this many unsent bytes has fallen behind and is closed. */
export const MAX_UNSENT_BYTES = 256 * 1024;
/** How long a stream waits for a full socket to drain before closing it. */
export const STALL_MS = 10_000;
/** A comment line this often keeps proxies from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000;
/** A stream writes at most once this often: events published meanwhile share one write. */
export const COALESCE_MS = 50;

export interface EventRouteOptions {
  events: ChangeFeed;
  /** Tests shorten the heartbeat and the bound. */
  heartbeatMs?: number;
  maxUnsentBytes?: number;
  stallMs?: number;
  coalesceMs?: number;
}

const LAST_EVENT_ID = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ maxLength: 64, description: 'The cursor to resume after (the SSE reconnect header); wins over `?since=`.' }),
  ),
});

/** Streams open on this app, ended when it closes (an SSE response never ends on its own). */
function openStreams(app: FastifyInstance): Set<() => void> {
  const streams = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const end of streams) end();
    done();
  });
  return streams;
}

/** Each event's SSE text, built once for all the streams that send it (the log's event objects are shared). */
const sseText = new WeakMap<ChangeEvent, string>();

/** The SSE text of one event. The JSON has no newline, so it is one `data:` line. */
function sse(e: ChangeEvent): string {
  let text = sseText.get(e);
  if (text === undefined) {
    text = `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ id: e.id, type: e.type, at: e.at, subject: e.subject, ...(e.detail ? { detail: e.detail } : {}) })}\n\n`;
    sseText.set(e, text);
  }
  return text;
}

/**
 * Answers with a Server-Sent Events stream of `feed` after `since` (validated first, so a bad or expired
 * cursor is an ordinary error answer), showing the events `show` accepts.
 */
async function stream(
  request: FastifyRequest,
  reply: FastifyReply,
  feed: ChangeFeed,
  since: string | undefined,
  show: (e: ChangeEvent) => boolean,
  streams: Set<() => void>,
  options: Required<Omit<EventRouteOptions, 'events'>>,
): Promise<void> {
  const start = since ?? feed.head();
  parseCursor(start);
  await feed.read(start, 0); // 410 cursor_expired before the stream starts
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  // The retry hint, and a first line so clients and proxies see the stream open.
  raw.write('retry: 2000\n: events\n\n');
  /** The cursor the client holds: the last `id:` it was sent. */
  let sentCursor = start;
  // The credential is held to the same rules for as long as the stream is open: it closes once it stops holding.
  const unwatch = request.server.watchCredential(request, (why) => {
    request.log.info({ why }, 'event stream closed: its credential no longer holds');
    end();
  });
  let ended = false;
  /** When this stream last wrote events, and the pending wake-up that waits for COALESCE_MS to pass. */
  let wroteAt = -Infinity;
  let wakeTimer: NodeJS.Timeout | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    unwatch();
    unsubscribe();
    clearInterval(heartbeat);
    clearTimeout(wakeTimer);
    streams.delete(end);
    raw.end();
  };
  /** Closed at once: its socket holds too much; the client reconnects with its Last-Event-ID. */
  const cutOff = () => {
    end();
    raw.destroy();
  };
  /** Whether the socket drained within the stall time (false: the client stopped reading, or left). */
  const drained = () =>
    new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        raw.off('drain', onDrain);
        raw.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), options.stallMs);
      raw.on('drain', onDrain);
      raw.on('close', onClose);
    });
  const reader = feedReader(
    feed,
    start,
    () => ended,
    async (events) => {
      // Only what it may see; what it may not moves its client's cursor with the heartbeat (below).
      const shown = events.filter(show);
      if (shown.length > 0) {
        raw.write(shown.map(sse).join(''));
        sentCursor = shown[shown.length - 1]!.id;
        wroteAt = performance.now();
        if (raw.writableLength > options.maxUnsentBytes && !(await drained())) {
          cutOff();
          return false;
        }
      }
      return true;
    },
    (err) => {
      // Behind the retention (it fell that far behind) or the log is unreadable: the client reconnects and is told.
      request.log.warn({ err }, 'event stream ended');
      cutOff();
    },
  );
  const pump = reader.read;
  /** Woken by a publish: pumps now, or once COALESCE_MS have passed since the last write. */
  const wake = () => {
    if (wakeTimer !== undefined || ended) return;
    const wait = wroteAt + options.coalesceMs - performance.now();
    if (wait <= 0) return void pump();
    wakeTimer = setTimeout(() => {
      wakeTimer = undefined;
      void pump();
    }, wait);
  };
  const unsubscribe = feed.onPublished(wake);
  const heartbeat = setInterval(() => {
    // A stream waiting for its socket to drain has bytes in flight already.
    if (raw.writableLength !== 0) return;
    // Past events it does not show, a filtered stream's client gets the cursor here, with the keep-alive (an
    // `id:` alone dispatches nothing): it resumes from there, and learns when the changes it may not see
    // happened only to the heartbeat (docs/decisions/canvas-stream-cursor.md).
    if (sentCursor !== reader.cursor) {
      sentCursor = reader.cursor;
      raw.write(`id: ${reader.cursor}\n: keep-alive\n\n`);
    } else raw.write(': keep-alive\n\n');
  }, options.heartbeatMs);
  heartbeat.unref();
  streams.add(end);
  raw.once('close', end);
  void pump();
}

const tuningOf = (options: EventRouteOptions): Required<Omit<EventRouteOptions, 'events'>> => ({
  heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
  maxUnsentBytes: options.maxUnsentBytes ?? MAX_UNSENT_BYTES,
  stallMs: options.stallMs ?? STALL_MS,
  coalesceMs: options.coalesceMs ?? COALESCE_MS,
});

/** Owner: `GET /events` (SSE) and `GET /changes` (JSON pages), under /api/acp. */
export const eventRoutes: FastifyPluginCallbackTypebox<EventRouteOptions> = (app, options, done) => {
  const { events } = options;
  const tuning = tuningOf(options);
  const streams = openStreams(app);
  protect(app, [app.requireOwner], ['ownerToken']);

  app.get(
    '/events',
    {
      schema: {
        tags: ['events'],
        operationId: 'streamEvents',
        summary: 'Follow the changes (Server-Sent Events)',
        description:
          'Every change the registry announces, once it is durable, in commit order: ' +
          EVENT_TYPES_TEXT +
          '. Resume after a disconnect or a restart with `Last-Event-ID` (or `?since=`); a cursor older than the retention is 410 `cursor_expired`. A subscriber that falls behind by more than its buffer is closed and resumes by cursor.',
        querystring: EventsQuery,
        headers: LAST_EVENT_ID,
        response: { 200: EventStream, ...errors('validation_failed', 'cursor_expired') },
      },
    },
    async (request, reply) => {
      await stream(request, reply, events, request.headers['last-event-id'] ?? request.query.since, () => true, streams, tuning);
    },
  );

  app.get(
    '/changes',
    {
      schema: {
        tags: ['events'],
        operationId: 'listChanges',
        summary: 'Read the changes as pages (mirrors)',
        description:
          'The events after `since` (without it: from the oldest kept), oldest first, at most `limit`; ask again with `next`. A cursor older than the retention is 410 `cursor_expired`: read the current state again, then follow from `next` of a page read before.',
        querystring: ChangesQuery,
        response: {
          200: answer(ChangeList, 'A page of events.', {
            changes: [
              CHANGE_EVENT,
              { id: '43', type: 'workload.launched', at: AT, subject: { kind: 'workload', id: 'canvas-42/thread-1' } },
            ],
            next: '43',
          }),
          ...errors('validation_failed', 'cursor_expired'),
        },
      },
    },
    async (request) => {
      const page = await events.read(request.query.since, request.query.limit ?? 100);
      return { changes: [...page.events], next: page.next };
    },
  );
  done();
};

/** Canvas token: `GET /events` under /api/rfs/:canvasId, the resource events of the host and the token's machine. */
export const rfsEventRoutes: FastifyPluginCallbackTypebox<EventRouteOptions> = (app, options, done) => {
  const { events } = options;
  const tuning = tuningOf(options);
  const streams = openStreams(app);
  protect(app, [app.requireCanvas], ['canvasToken']);
  requireUrlCanvas(app);

  app.get(
    '/events',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'streamRfsEvents',
        summary: "Follow the agent's catalogue (Server-Sent Events)",
        description:
          "The `resource.*` events of the records this canvas may read (the host's and those of the token's machine), as `GET /api/acp/events` sends them; other changes move the cursor without being shown.",
        params: Type.Object({ canvasId: CanvasId }),
        querystring: EventsQuery,
        headers: LAST_EVENT_ID,
        response: { 200: EventStream, ...errors('validation_failed', 'cursor_expired') },
      },
    },
    async (request, reply) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      await stream(
        request,
        reply,
        events,
        request.headers['last-event-id'] ?? request.query.since,
        (e) => visibleToMachine(e, machineId),
        streams,
        tuning,
      );
    },
  );
  done();
};
