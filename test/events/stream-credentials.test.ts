// A stream holds its credential to the same rules as every request, for as long as it is open: a canvas's
// event stream closes within a second once its canvas token is revoked, once it expires, and once its
// machine is revoked, and a new enrollment of that machine ID never revives it; the events of the new
// enrollment never reach it. A machine's channel closes when its machine is revoked.
import t from 'tap';
import { CANARY } from '../helpers/build.js';
import { buildListening, SseClient } from '../helpers/sse.js';

/** Within a second, as the contract says; measured from the moment the change was answered. */
const WITHIN_MS = 1000;

async function closesWithin(sub: SseClient, since: number): Promise<number> {
  await sub.waitFor(() => sub.closed, 5_000).catch(() => undefined);
  return sub.closed ? performance.now() - since : Infinity;
}

t.test('a canvas stream closes within a second of its canvas tokens being revoked', async (t) => {
  const { h, origin } = await buildListening(t);
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);
  t.equal((await h.put('huabu', CANARY.huabu, 'before')).statusCode, 201);
  await sub.waitFor(() => sub.events.length === 1);
  const revoked = await h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens/revoke',
    headers: h.owner,
    payload: { canvasId: 'canvas-1' },
  });
  t.equal(revoked.statusCode, 200);
  const took = await closesWithin(sub, performance.now());
  t.ok(took < WITHIN_MS, `closed ${Math.round(took)} ms after the revocation`);
  t.equal((await h.put('huabu', CANARY.huabu, 'after')).statusCode, 201);
  await new Promise((r) => setTimeout(r, 200));
  t.same(
    sub.events.map((e) => e.data.subject.id),
    ['before'],
    'nothing after the revocation reached it',
  );
  const again = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => again.close());
  t.equal(again.status, 401, 'and its reconnect is refused');
});

t.test('a canvas stream closes within a second of its token expiring', async (t) => {
  let offsetMs = 0;
  const { h, origin } = await buildListening(t, { now: () => new Date(Date.now() + offsetMs) });
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a', 3600);
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(sub.closed, 'open while the token is valid');
  offsetMs = 3601_000;
  const took = await closesWithin(sub, performance.now());
  t.ok(took < WITHIN_MS, `closed ${Math.round(took)} ms after the token expired`);
});

t.test('a canvas stream closes within a second of its machine being revoked; enrolling the ID again never revives it', async (t) => {
  const { h, origin } = await buildListening(t);
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  t.equal(sub.status, 200);
  // Revoked and enrolled again at once: the stream must not mistake the new enrollment for its own.
  const revoked = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: h.owner });
  t.equal(revoked.statusCode, 204);
  const since = performance.now();
  const fresh = await h.enroll('mac-a');
  t.equal((await h.put('mac-a', fresh, 'of-the-new-enrollment')).statusCode, 201);
  const took = await closesWithin(sub, since);
  t.ok(took < WITHIN_MS, `closed ${Math.round(took)} ms after the revocation`);
  await new Promise((r) => setTimeout(r, 200));
  t.notOk(
    sub.events.some((e) => e.data.subject.id === 'of-the-new-enrollment'),
    "the new enrollment's records never reached it",
  );
  const again = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => again.close());
  t.equal(again.status, 401, 'the old token opens nothing under the new enrollment');
  const newer = await h.canvasToken('canvas-1', 'mac-a');
  const next = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(newer));
  t.teardown(() => next.close());
  t.equal(next.status, 200, 'a token of the new enrollment follows it');
});

t.test("a canvas stream whose machine's token is only rotated stays open (the enrollment holds)", async (t) => {
  const { h, origin } = await buildListening(t);
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const sub = await SseClient.open(origin, '/api/rfs/canvas-1/events', h.bearer(canvas));
  t.teardown(() => sub.close());
  const rotated = await h.app.inject({ method: 'POST', url: '/api/acp/machines/mac-a/rotate', headers: h.owner });
  t.equal(rotated.statusCode, 200);
  await new Promise((r) => setTimeout(r, WITHIN_MS + 200));
  t.notOk(sub.closed, 'still open');
  t.equal((await h.put('huabu', CANARY.huabu, 'after-rotation')).statusCode, 201);
  await sub.waitFor(() => sub.events.length === 1);
  t.equal(sub.events[0]!.data.subject.id, 'after-rotation');
});
