// Change events on PostgreSQL across replicas: two apps on one database, each on a real socket. A burst of
// writes through A reaches a subscriber of B, every event once and in commit order, the same events A's
// pages answer; a subscriber of B resumes by Last-Event-ID with what was written through A meanwhile.
import t from 'tap';
import { CANARY } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { buildListening, SseClient } from '../helpers/sse.js';

const base = postgresOrSkip(t);
if (base) {
  const url = await freshDatabase(t, base);
  const env = { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' };

  t.test('an event written through replica A reaches a subscriber on replica B, in commit order, once', async (t) => {
    const a = await buildListening(t, { env });
    const b = await buildListening(t, { env });
    const sub = await SseClient.open(b.origin, '/api/acp/events', b.h.owner);
    t.teardown(() => sub.close());
    t.equal(sub.status, 200);
    const ids = Array.from({ length: 30 }, (_, i) => `pg-burst-${i}`);
    const answers = await Promise.all([
      ...ids.map((id) => a.h.put('huabu', CANARY.huabu, id)),
      ...ids.slice(0, 10).map((id) => b.h.put('huabu', CANARY.huabu, `${id}-via-b`)),
    ]);
    t.ok(
      answers.every((r) => r.statusCode === 201),
      'every write acknowledged',
    );
    await sub.waitFor(() => sub.events.length >= 40);
    const seq = sub.events.map((e) => Number(e.id));
    t.same(
      seq,
      [...new Set(seq)].sort((x, y) => x - y),
      'increasing, none twice',
    );
    t.same(
      sub.events.map((e) => e.data.subject.id).sort(),
      [...ids, ...ids.slice(0, 10).map((id) => `${id}-via-b`)].sort(),
      'every change once, from both replicas',
    );
    const page = (
      await a.h.app.inject({ url: `/api/acp/changes?since=${Number(sub.events[0]!.id) - 1}&limit=1000`, headers: a.h.owner })
    ).json<{ changes: { id: string }[] }>();
    t.same(
      page.changes.map((c) => c.id),
      sub.events.map((e) => e.id),
      "A's pages hold the same events in the same order",
    );

    sub.close();
    const last = sub.events.at(-1)!.id;
    t.equal((await a.h.put('huabu', CANARY.huabu, 'pg-after')).statusCode, 201);
    const resumed = await SseClient.open(b.origin, '/api/acp/events', { ...b.h.owner, 'last-event-id': last });
    t.teardown(() => resumed.close());
    await resumed.waitFor(() => resumed.events.length >= 1);
    t.same(
      resumed.events.map((e) => e.data.subject.id),
      ['pg-after'],
      'B resumes with what A wrote meanwhile',
    );
    t.equal(
      (await a.h.app.inject({ url: '/api/acp/changes?since=999999999', headers: a.h.owner })).statusCode,
      410,
      'a cursor never issued',
    );
  });
}
