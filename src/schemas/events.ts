// Change events (docs/events.md): one schema for the JSON pages of `GET /api/acp/changes` and the `data:` of the
// Server-Sent Events streams.
import Type, { type Static } from 'typebox';
import { CHANGE_EVENT_TYPES, CURSOR_PATTERN, type ChangeEventType } from '../registry/events.js';
import { RecordDigest } from './resource.js';

export const Cursor = Type.String({
  pattern: CURSOR_PATTERN,
  maxLength: 16,
  description: 'An event cursor as the registry issued it (opaque to clients; compare only for equality).',
});

export const ChangeEventSchema = Type.Object(
  {
    id: Type.String({ description: 'The cursor of this event: resume after it with `Last-Event-ID` or `?since=`.' }),
    type: Type.Unsafe<ChangeEventType>(
      Type.String({ enum: [...CHANGE_EVENT_TYPES], description: 'What happened (also the SSE `event:` field).' }),
    ),
    at: Type.String({ format: 'date-time', description: 'When the change was committed.' }),
    subject: Type.Object(
      {
        kind: Type.Union([
          Type.Literal('resource'),
          Type.Literal('profile'),
          Type.Literal('machine'),
          Type.Literal('workload'),
          Type.Literal('job'),
        ]),
        id: Type.String({
          description:
            "The object's ID; a workload's is `<canvasId>/<threadId>`, a job's its job ID. Read the object itself for its content.",
        }),
        provider: Type.Optional(
          Type.String({ description: 'Resources: the provider that owns the record; jobs: the machine that ran it.' }),
        ),
      },
      { additionalProperties: false },
    ),
    detail: Type.Optional(
      Type.Object(
        {
          resourceId: Type.String({ description: 'The pinned record that moved.' }),
          provider: Type.String({ description: 'Its provider as the write left it (the one withdrawn, for a withdrawal).' }),
          pinned: Type.Optional(RecordDigest),
          current: Type.Optional({ ...RecordDigest, description: "The record's digest now; absent once withdrawn." }),
          more: Type.Optional(
            Type.Integer({
              minimum: 1,
              description: 'A summary: how many more workloads pinning the record drifted in this write, past the per-write bound.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            '`workload.drifted` only (every other event has none): which pin drifted, from what to what. Never a body, never a secret.',
        },
      ),
    ),
  },
  { additionalProperties: false, title: 'ChangeEvent', description: 'A change, named but not shown: never a record body, never a secret.' },
);
export type ChangeEventSchema = Static<typeof ChangeEventSchema>;

export const ChangeList = Type.Object(
  {
    changes: Type.Array(ChangeEventSchema, { description: 'The events after the cursor asked with, oldest first.' }),
    next: Type.String({
      description: 'The cursor to ask with next (`?since=`): the last event of this page, or the one asked with when the page is empty.',
    }),
  },
  { additionalProperties: false, title: 'ChangeList' },
);

export const ChangesQuery = Type.Object(
  {
    since: Type.Optional(Cursor),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Most events in the page (default 100).' })),
  },
  { additionalProperties: false },
);

export const EventsQuery = Type.Object(
  {
    since: Type.Optional({
      ...Cursor,
      description:
        'Resume after this cursor (as `Last-Event-ID`, which wins when both are sent). Without either, the stream starts with the next change.',
    }),
  },
  { additionalProperties: false },
);

export const EventStream = {
  description:
    'A `text/event-stream` (Server-Sent Events): each event has `id:` (its cursor), `event:` (its type) and `data:` (the event as JSON, `ChangeEvent`); a comment line (`:`) every 15 s keeps proxies open. A canvas stream moves its cursor past the events it does not show with the keep-alive (`id:` and the comment, no event).',
  content: { 'text/event-stream': { schema: Type.String({ description: 'Server-Sent Events.' }) } },
};
