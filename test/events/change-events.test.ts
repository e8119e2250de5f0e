// Change events (docs/events.md) against the JSON store, over real sockets: the SSE stream and the JSON pages,
// order and exactly-once across a burst of concurrent writes, resuming after a restart, the retention's 410,
// what a canvas may see, a subscriber that never reads, and no secret in any event.
import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { CANARY } from '../helpers/build.js';
import { buildListening, SseClient, type Received } from '../helpers/sse.js';
import { EVENTS_FILE } from '../../src/storage/json-file-store.js';
import { until } from '../helpers/wait.js';

const changes = async (app: FastifyInstance, query = '') => {
  const res = await app.inject({ url: `/api/acp/changes${query}`, headers: { authorization: `Bearer ${CANARY.owner}` } });
  return res;
};

/** Every event of the log, page by page. */
async function allChanges(app: FastifyInstance, since?: string): Promise<Received['data'][]> {
  const out: Received['data'][] = [];
  let cursor = since;
  for (;;) {
    const res = await changes(app, `?limit=1000${cursor === undefined ? '' : `&since=${cursor}`}`);
    if (res.statusCode !== 200) throw new Error(`changes: ${res.statusCode} ${res.body}`);
    const page = res.json<{ changes: Received['data'][]; next: string }>();
    out.push(...page.changes);
    if (page.changes.length === 0) return out;
    cursor = page.next;
  }
}

t.test('a burst of concurrent writes: each change has exactly one event, in commit order, on the stream and in the pages', async (t) => {
  const { h, origin } = await buildListening(t);
  const sub = await SseClient.open(origin, '/api/acp/events', h.owner);
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);

  const ids = Array.from({ length: 40 }, (_, i) => `burst-${i}`);
  const first = await Promise.all(ids.map((id) => h.put('huabu', CANARY.huabu, id)));
  t.same(
    first.map((r) => r.statusCode),
    ids.map(() => 201),
    'every registration was acknowledged',
  );
  // Half are replaced (a new name), the other half sent again unchanged (no event), all at once.
  const second = await Promise.all(ids.map((id, i) => h.put('huabu', CANARY.huabu, id, i % 2 === 0 ? { name: `Renamed ${id}` } : {})));
  t.ok(
    second.every((r) => r.statusCode === 200),
    'every second registration was answered',
  );
  const expected = ids.length + ids.length / 2;
  await sub.waitFor(() => sub.events.length >= expected);

  const seq = sub.events.map((e) => Number(e.id));
  t.same(
    seq,
    [...seq].sort((a, b) => a - b),
    'cursors increase along the stream',
  );
  t.equal(new Set(seq).size, seq.length, 'no event twice');
  for (const id of ids) {
    const mine = sub.events.filter((e) => e.data.subject.id === id).map((e) => e.event);
    t.same(
      mine,
      ids.indexOf(id) % 2 === 0 ? ['resource.created', 'resource.replaced'] : ['resource.created'],
      `${id}: one event per change, created before replaced`,
    );
  }
  const e = sub.events[0]!;
  t.same(Object.keys(e.data).sort(), ['at', 'id', 'subject', 'type'], 'an event names the change, no record body');
  t.same(e.data.subject, { kind: 'resource', id: e.data.subject.id, provider: 'huabu' });
  t.equal(e.event, e.data.type, 'the SSE event: field is the type');

  const pages = await allChanges(h.app);
  t.same(
    pages.map((c) => c.id),
    sub.events.map((c) => c.id),
    'the pages hold the same events in the same order',
  );
  await new Promise((r) => setTimeout(r, 300));
  t.equal(sub.events.length, expected, 'nothing more arrived');
});

t.test('every privileged change has its event type', async (t) => {
  const { h, origin } = await buildListening(t);
  const sub = await SseClient.open(origin, '/api/acp/events', h.owner);
  t.teardown(() => sub.close());
  const m1 = await h.enroll('mac-a');
  const step = async (label: string, res: Promise<{ statusCode: number; body: string }>, status: number) => {
    const r = await res;
    t.equal(r.statusCode, status, `${label}: ${r.body.slice(0, 200)}`);
  };
  await step('rotate', h.app.inject({ method: 'POST', url: '/api/acp/machines/mac-a/rotate', headers: h.owner }), 200);
  await step('put', h.put('huabu', CANARY.huabu, 'ev-one'), 201);
  await step(
    'customize',
    h.app.inject({ method: 'PATCH', url: '/api/acp/resources/ev-one', headers: h.owner, payload: { userContent: 'Mine.' } }),
    200,
  );
  await step('withdraw', h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/ev-one', headers: h.huabu }), 204);
  const created = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'claude-code-acp' } },
  });
  t.equal(created.statusCode, 201, 'profile create');
  const rev = created.json().id as string;
  await step(
    'profile update',
    h.app.inject({ method: 'PATCH', url: `/api/acp/profiles/${rev}`, headers: h.owner, payload: { alias: 'Reviewer two' } }),
    200,
  );
  await step(
    'profile unchanged',
    h.app.inject({ method: 'PATCH', url: `/api/acp/profiles/${rev}`, headers: h.owner, payload: { alias: 'Reviewer two' } }),
    200,
  );
  await step('profile delete', h.app.inject({ method: 'DELETE', url: `/api/acp/profiles/${rev}`, headers: h.owner }), 204);
  await step('revoke', h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: h.owner }), 204);
  await step('refused', h.put('huabu', m1, 'ev-two'), 401);
  const types = [
    'machine.enrolled',
    'machine.rotated',
    'resource.created',
    'resource.customized',
    'resource.withdrawn',
    'profile.created',
    'profile.updated',
    'profile.deleted',
    'machine.revoked',
  ];
  await sub.waitFor(() => sub.events.length >= types.length);
  t.same(
    sub.events.map((e) => e.event),
    types,
    'one event per change, none for an unchanged answer or a refusal',
  );
  t.same(sub.events.find((e) => e.event === 'profile.created')?.data.subject, { kind: 'profile', id: rev });
  t.same(sub.events.find((e) => e.event === 'machine.rotated')?.data.subject, { kind: 'machine', id: 'mac-a' });
});

t.test('a subscriber resumes by Last-Event-ID and ?since= after a restart', async (t) => {
  const first = await buildListening(t);
  for (const id of ['r-1', 'r-2', 'r-3']) t.equal((await first.h.put('huabu', CANARY.huabu, id)).statusCode, 201);
  const seen = await allChanges(first.h.app);
  t.equal(seen.length, 3);
  const cursor = seen[1]!.id;
  await first.h.app.close();

  const second = await buildListening(t, { dataDir: first.h.dataDir });
  for (const id of ['r-4', 'r-5']) t.equal((await second.h.put('huabu', CANARY.huabu, id)).statusCode, 201);
  const after = await allChanges(second.h.app, cursor);
  t.same(
    after.map((c) => c.subject.id),
    ['r-3', 'r-4', 'r-5'],
    '?since= answers what came after the cursor, across the restart',
  );
  t.ok(Number(after[1]!.id) > Number(seen[2]!.id), 'cursors keep increasing after the restart');

  const resumed = await SseClient.open(second.origin, '/api/acp/events', { ...second.h.owner, 'last-event-id': cursor });
  t.teardown(() => resumed.close());
  await resumed.waitFor(() => resumed.events.length >= 3);
  t.same(
    resumed.events.map((e) => e.data.subject.id),
    ['r-3', 'r-4', 'r-5'],
    'Last-Event-ID resumes the stream',
  );
  const bySince = await SseClient.open(second.origin, `/api/acp/events?since=${after[1]!.id}`, second.h.owner);
  t.teardown(() => bySince.close());
  await bySince.waitFor(() => bySince.events.length >= 1);
  t.same(
    bySince.events.map((e) => e.data.subject.id),
    ['r-5'],
    '?since= resumes the stream',
  );
  t.equal((await second.h.put('huabu', CANARY.huabu, 'r-6')).statusCode, 201);
  await resumed.waitFor(() => resumed.events.length >= 4);
  t.equal(resumed.events[3]!.data.subject.id, 'r-6', 'and it goes on live');
  const live = await SseClient.open(second.origin, '/api/acp/events', second.h.owner);
  t.teardown(() => live.close());
  t.equal((await second.h.put('huabu', CANARY.huabu, 'r-7')).statusCode, 201);
  await live.waitFor(() => live.events.length >= 1);
  t.same(
    live.events.map((e) => e.data.subject.id),
    ['r-7'],
    'without a cursor the stream starts with the next change',
  );
});

t.test('a cursor older than the retention (or newer than the log) is 410 cursor_expired', async (t) => {
  const { h, origin } = await buildListening(t, { env: { EVENTS_RETAIN_COUNT: '5' } });
  for (let i = 0; i < 9; i++) t.equal((await h.put('huabu', CANARY.huabu, `k-${i}`)).statusCode, 201);
  const kept = await allChanges(h.app);
  t.same(
    kept.map((c) => c.subject.id),
    ['k-4', 'k-5', 'k-6', 'k-7', 'k-8'],
    'the newest EVENTS_RETAIN_COUNT events are kept',
  );
  const gone = await changes(h.app, '?since=1');
  t.equal(gone.statusCode, 410);
  t.equal(gone.json().code, 'cursor_expired');
  const edge = await changes(h.app, `?since=${Number(kept[0]!.id) - 1}`);
  t.equal(edge.statusCode, 200, 'the cursor just before the oldest kept event still works');
  t.equal(edge.json().changes.length, 5);
  t.equal((await changes(h.app, '?since=999999')).statusCode, 410, 'a cursor this log never issued');
  t.equal((await changes(h.app, '?since=abc')).statusCode, 400, 'not a cursor');
  const stream = await new Promise<{ status: number; body: string }>((resolve) => {
    http.get(`${origin}/api/acp/events`, { headers: { ...h.owner, 'last-event-id': '1' } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
  });
  t.equal(stream.status, 410, 'the stream refuses it before it starts');
  t.equal(JSON.parse(stream.body).code, 'cursor_expired');
  await h.app.close();
  const again = await buildListening(t, { dataDir: h.dataDir, env: { EVENTS_RETAIN_COUNT: '5' } });
  t.equal((await changes(again.h.app, '?since=1')).statusCode, 410, 'and after a restart');
  t.same(
    (await allChanges(again.h.app)).map((c) => c.id),
    kept.map((c) => c.id),
    'the kept events survive the restart',
  );
});

t.test("a canvas sees only the resource events of the host and its token's machine", async (t) => {
  const { h, origin } = await buildListening(t, { events: { heartbeatMs: 100 } });
  const a = await h.enroll('mac-a');
  const b = await h.enroll('mac-b');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);
  const other = await new Promise<number>((resolve) =>
    http.get(`${origin}/api/rfs/canvas-2/events`, { headers: h.bearer(canvas) }, (res) => resolve(res.statusCode ?? 0)),
  );
  t.equal(other, 403, "another canvas's stream is refused");
  const owner = await new Promise<number>((resolve) =>
    http.get(`${origin}/api/rfs/canvas-1/events`, { headers: h.owner }, (res) => resolve(res.statusCode ?? 0)),
  );
  t.equal(owner, 403, 'the stream needs a canvas token');
  t.equal((await h.put('mac-b', b, 'of-b')).statusCode, 201);
  t.equal((await h.put('huabu', CANARY.huabu, 'of-host')).statusCode, 201);
  t.equal((await h.put('mac-b', b, 'of-b-2')).statusCode, 201);
  t.equal((await h.put('mac-a', a, 'of-a')).statusCode, 201);
  t.equal((await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-b', headers: h.owner })).statusCode, 204);
  await sub.waitFor(() => sub.events.length >= 2);
  await new Promise((r) => setTimeout(r, 300));
  t.same(
    sub.events.map((e) => e.data.subject.id),
    ['of-host', 'of-a'],
    "another machine's records and machine events stay invisible",
  );
  const all = await allChanges(h.app);
  await sub.waitFor(() => sub.lastEventId === all[all.length - 1]!.id, 5_000);
  t.equal(sub.lastEventId, all[all.length - 1]!.id, "the canvas's cursor moves past what it does not see (with the heartbeat)");
});

t.test('a canvas stream does not tell when each change it may not see happened: its cursor catches up with the heartbeat', async (t) => {
  const HEARTBEAT_MS = 3_000;
  const { h, origin } = await buildListening(t, { events: { heartbeatMs: HEARTBEAT_MS } });
  await h.enroll('mac-a');
  const b = await h.enroll('mac-b');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  const opened = performance.now();
  for (const id of ['hidden-1', 'hidden-2', 'hidden-3']) t.equal((await h.put('mac-b', b, id)).statusCode, 201);
  await new Promise((r) => setTimeout(r, 300));
  t.ok(performance.now() - opened < HEARTBEAT_MS, 'still before the first heartbeat');
  t.equal(sub.lastEventId, undefined, "nothing was sent for another machine's changes");
  const all = await allChanges(h.app);
  const head = all[all.length - 1]!.id;
  await sub.waitFor(() => sub.lastEventId === head, HEARTBEAT_MS * 3);
  t.equal(sub.lastEventId, head, 'the heartbeat moves its cursor past them');
  t.equal(sub.events.length, 0, 'and shows none of them');

  // Resuming from that cursor: only what follows, and what it may see.
  sub.close();
  t.equal((await h.put('huabu', CANARY.huabu, 'visible')).statusCode, 201);
  const again = await SseClient.open(origin, '/api/rfs/canvas-1/events', { ...h.bearer(canvas), 'last-event-id': head });
  t.teardown(() => again.close());
  await again.waitFor(() => again.events.length >= 1);
  t.same(
    again.events.map((e) => e.data.subject.id),
    ['visible'],
    'a reconnect by cursor resumes right after it',
  );
});

t.test('a subscriber that never reads is cut off; writes go on at full speed and others keep receiving', async (t) => {
  // Retention far above what the writes below can reach: the reading subscriber never falls behind it. The
  // host writes far past its events per minute here, on purpose (test/events/connection-bounds.test.ts).
  const { h, origin } = await buildListening(t, {
    events: { maxUnsentBytes: 64 * 1024, stallMs: 1_000 },
    env: { EVENTS_RETAIN_COUNT: '1000000', EVENTS_PER_MACHINE_PER_MINUTE: '0' },
  });
  const { port } = new URL(origin);
  // A raw client that sends its request and never reads a byte; the server's side of its socket shows the cut-off.
  const accepted = new Promise<net.Socket>((resolve) => h.app.server.once('connection', resolve));
  const stalled = net.connect(Number(port), '127.0.0.1');
  await new Promise((r) => stalled.once('connect', r));
  let cutOff = false;
  (await accepted).once('close', () => (cutOff = true));
  stalled.pause();
  stalled.write(`GET /api/acp/events?since=0 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${CANARY.owner}\r\n\r\n`);
  let stalledEnded = false;
  let stalledBytes = '';
  stalled.on('close', () => (stalledEnded = true));
  stalled.on('error', () => undefined);
  const reader = await SseClient.open(origin, '/api/acp/events?since=0', h.owner);
  t.teardown(() => {
    reader.close();
    stalled.destroy();
  });
  // Whole-set reconciles of 1,000 records with long IDs, alternating between two sets (1,000 withdrawn and
  // 1,000 created each time after the first), until the server cuts the stalled stream off: the stall time
  // after the kernel's buffers and the server's bound filled, which on a fast machine can be after the
  // 16th round (resuming the client before then would let it drain and read everything).
  const long = (set: string, i: number) => `${set}-${String(i).padStart(4, '0')}-${'x'.repeat(115)}`;
  const records = (set: string) =>
    Array.from({ length: 1_000 }, (_, i) => ({ schemaVersion: 1, id: long(set, i), name: 'N', description: 'D.', instructions: 'I.' }));
  const started = performance.now();
  let writes = 0;
  let rounds = 0;
  // At least 16 rounds (several MiB), then on until the cut-off; 300 rounds are ~150 MiB of events.
  for (; rounds < 300 && (rounds < 16 || !cutOff); rounds++) {
    const res = await h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources',
      headers: h.huabu,
      payload: { resources: records(rounds % 2 === 0 ? 'a' : 'b') },
    });
    if (res.statusCode !== 200) t.equal(res.statusCode, 200, `reconcile ${rounds} was acknowledged`);
    const body = res.json<{ created: string[]; withdrawn: string[] }>();
    writes += body.created.length + body.withdrawn.length;
  }
  const ms = performance.now() - started;
  t.comment(`${rounds} reconciles (${writes} changes) in ${ms.toFixed(0)} ms with a stalled subscriber`);
  t.ok(cutOff, 'the server cut the stalled subscriber off while the writes went on');
  await reader.waitFor(() => reader.events.length >= writes, 120_000);
  t.equal(reader.events.length, writes, 'the reading subscriber received every event');
  // Now it reads what reached its socket: the stream had been closed after part of it.
  stalled.setEncoding('utf8');
  stalled.on('data', (chunk: string) => (stalledBytes += chunk));
  stalled.resume();
  await until('the stalled stream to end', () => stalledEnded);
  t.ok(stalledEnded, 'the stalled subscriber saw its stream end');
  const got = stalledBytes.match(/^id: [0-9]+\nevent:/gm)?.length ?? 0;
  t.ok(got > 0 && got < writes, `it had received part of the stream (${got} of ${writes} events) and resumes by its last cursor`);
});

t.test('closing the service ends the open streams', async (t) => {
  const { h, origin } = await buildListening(t);
  const sub = await SseClient.open(origin, '/api/acp/events', h.owner);
  t.teardown(() => sub.close());
  const started = Date.now();
  await h.app.close();
  t.ok(Date.now() - started < 5_000, 'the close did not wait for the subscriber');
  await sub.waitFor(() => sub.closed, 5_000);
  t.ok(sub.closed, 'the subscriber saw its stream end (it reconnects by cursor)');
});

t.test('a quiet stream sends a comment line at the heartbeat interval', async (t) => {
  const { h, origin } = await buildListening(t, { events: { heartbeatMs: 100 } });
  const sub = await SseClient.open(origin, '/api/acp/events', h.owner);
  t.teardown(() => sub.close());
  const first = sub.comments;
  await sub.waitFor(() => sub.comments >= first + 3, 5_000);
  t.ok(sub.comments >= first + 3, 'comments keep a quiet stream open');
  t.equal(sub.events.length, 0, 'and dispatch no event');
});

t.test('no token in any event, on the stream or in the log file', async (t) => {
  const { h, origin } = await buildListening(t);
  const sub = await SseClient.open(origin, '/api/acp/events', h.owner);
  t.teardown(() => sub.close());
  const m = await h.enroll('mac-s');
  const rotated = (await h.app.inject({ method: 'POST', url: '/api/acp/machines/mac-s/rotate', headers: h.owner })).json().token as string;
  const canvas = await h.canvasToken('canvas-s', 'mac-s');
  t.equal((await h.put('mac-s', rotated, 'secretless')).statusCode, 201);
  await sub.waitFor(() => sub.events.length >= 3);
  const file = await readFile(path.join(h.dataDir, EVENTS_FILE), 'utf8');
  const texts = [JSON.stringify(sub.events), JSON.stringify(await allChanges(h.app)), file];
  for (const secret of [m, rotated, canvas, CANARY.owner, CANARY.huabu, CANARY.secret]) {
    t.notOk(
      texts.some((text) => text.includes(secret)),
      'no token, key or signing secret',
    );
  }
  t.notOk(file.includes('Use secretless via'), 'no record body in the log');
});
