// Large publishes (a machine's whole set) are read and handled one at a time, in the order they came, over
// real sockets: the others wait with their bodies unread, a small publish or a read never waits, a caller
// that cannot get its turn is told 503 `overloaded` with Retry-After and nothing of it is written, and a
// turn comes back when its holder is answered or goes away.
import http from 'node:http';
import t, { type Test } from 'tap';
import { build, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

/** A body of at least this many bytes is large in these tests. */
const LARGE = 4000;

interface Sent {
  /** The answer, once it came: status, Retry-After and body. */
  answered: Promise<{ status: number; retryAfter?: string; body: string; at: number }>;
  /** Sends the rest of the body. */
  finish(): void;
  /** Drops the connection. */
  drop(): void;
}

/** A reconcile of `count` records whose body is sent in two halves: the second when `finish` is called. */
function reconcile(origin: string, machine: string, token: string, count: number, hold: boolean): Sent {
  const resources = Array.from({ length: count }, (_, i) => ({
    schemaVersion: 1,
    id: `${machine}-r${i}`,
    name: `Record ${i} of ${machine}`,
    description: `A record of ${machine} kept to check the order of publishes.`,
    instructions: `Use record ${i}.`,
  }));
  const body = Buffer.from(JSON.stringify({ resources }));
  const req = http.request(`${origin}/api/acp/providers/${machine}/resources`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
  });
  const answered = new Promise<{ status: number; retryAfter?: string; body: string; at: number }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          ...(res.headers['retry-after'] ? { retryAfter: String(res.headers['retry-after']) } : {}),
          body: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
        }),
      );
    });
    req.on('error', reject);
  });
  answered.catch(() => undefined);
  const half = hold ? Math.floor(body.length / 2) : body.length;
  req.write(body.subarray(0, half));
  if (!hold) req.end();
  return {
    answered,
    finish: () => req.end(body.subarray(half)),
    drop: () => req.destroy(),
  };
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function world(t: Test, options: { queue?: number; waitMs?: number } = {}) {
  const h: TestApp = await build(t, { largeBodies: { bytes: LARGE, queue: options.queue ?? 8, waitMs: options.waitMs ?? 10_000 } });
  const origin = await listen(h.app);
  const tokens: Record<string, string> = {};
  for (const m of ['mac-a', 'mac-b', 'mac-c', 'mac-d']) tokens[m] = await h.enroll(m);
  const ids = async (machine: string) => {
    const res = await h.app.inject({ method: 'GET', url: `/api/acp/providers/${machine}/resources`, headers: h.bearer(tokens[machine]!) });
    return res.json<{ resources: { id: string }[] }>().resources.map((r) => r.id);
  };
  return { h, origin, tokens, ids };
}

t.test('large publishes are handled one at a time in the order they came; small ones and reads do not wait', async (t) => {
  const { h, origin, tokens, ids } = await world(t);
  const a = reconcile(origin, 'mac-a', tokens['mac-a']!, 40, true);
  await settle(100);
  const b = reconcile(origin, 'mac-b', tokens['mac-b']!, 40, false);
  await settle(100);
  const c = reconcile(origin, 'mac-c', tokens['mac-c']!, 40, false);
  await settle(100);
  // A small publish and an owner's read are answered while the large ones wait.
  const small = await reconcile(origin, 'mac-d', tokens['mac-d']!, 2, false).answered;
  t.equal(small.status, 200, 'a small publish is answered at once');
  const read = await h.app.inject({ method: 'GET', url: '/api/acp/resources', headers: h.owner });
  t.equal(read.statusCode, 200, 'a read is answered at once');
  t.same(await ids('mac-b'), [], 'the waiting publish has changed nothing yet (its body is not even read)');
  const pending = await Promise.race([b.answered.then(() => 'answered'), settle(300).then(() => 'waiting')]);
  t.equal(pending, 'waiting', 'the second large publish waits while the first one is being received');
  a.finish();
  const [ra, rb, rc] = await Promise.all([a.answered, b.answered, c.answered]);
  t.same([ra.status, rb.status, rc.status], [200, 200, 200], 'each is answered in turn');
  t.ok(ra.at < rb.at && rb.at < rc.at, 'in the order they came');
  t.equal((await ids('mac-c')).length, 40, 'and each set is stored whole');
});

t.test('a large publish that cannot get its turn is 503 overloaded with Retry-After, and nothing of it is written', async (t) => {
  const { origin, tokens, ids } = await world(t, { queue: 1, waitMs: 1500 });
  const a = reconcile(origin, 'mac-a', tokens['mac-a']!, 40, true);
  await settle(100);
  const b = reconcile(origin, 'mac-b', tokens['mac-b']!, 40, false);
  await settle(100);
  const c = await reconcile(origin, 'mac-c', tokens['mac-c']!, 40, false).answered;
  t.equal(c.status, 503, 'a third one finds the queue full');
  t.equal(c.retryAfter, '5', 'with Retry-After');
  t.match(JSON.parse(c.body), { code: 'overloaded', details: { reason: 'large_body_queue_full' } });
  const rb = await b.answered;
  t.equal(rb.status, 503, 'the waiting one is refused once it has waited its bound');
  t.match(JSON.parse(rb.body), { code: 'overloaded', details: { reason: 'large_body_wait_too_long' } });
  a.finish();
  t.equal((await a.answered).status, 200, 'the one being handled completes');
  t.same([await ids('mac-b'), await ids('mac-c')], [[], []], 'the refused publishes wrote nothing');
});

t.test('a turn comes back when its holder drops the connection, and a waiting caller that leaves gives up its place', async (t) => {
  const { origin, tokens, ids } = await world(t, { queue: 1 });
  const a = reconcile(origin, 'mac-a', tokens['mac-a']!, 40, true);
  await settle(100);
  const b = reconcile(origin, 'mac-b', tokens['mac-b']!, 40, true);
  await settle(100);
  b.drop();
  await settle(100);
  // The queue holds one: had the caller that left kept its place, this one would be refused.
  const c = reconcile(origin, 'mac-c', tokens['mac-c']!, 40, false);
  await settle(100);
  a.drop();
  const rc = await c.answered;
  t.equal(rc.status, 200, 'the next in line is handled once the holder went away');
  t.equal((await ids('mac-c')).length, 40);
  t.same(await ids('mac-a'), [], 'the dropped publish wrote nothing');
  const d = await reconcile(origin, 'mac-d', tokens['mac-d']!, 40, false).answered;
  t.equal(d.status, 200, 'and the gate is free again');
});

t.test('a large body is read as a small one is: the same records, the same refusals of bad JSON', async (t) => {
  const { h, tokens, ids } = await world(t);
  const resources = Array.from({ length: 40 }, (_, i) => ({
    schemaVersion: 2,
    id: `mac-a-s${i}`,
    name: `Skill ${i}`,
    sourceContent: `---\nname: skill-${i}\ndescription: Déjà vu ✓ ${'ü'.repeat(40)} 漢字\n---\n# Skill ${i}\n${'Use it with care. '.repeat(40).trimEnd()}`,
  }));
  const put = (payload: string) =>
    h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/mac-a/resources',
      headers: { ...h.bearer(tokens['mac-a']!), 'content-type': 'application/json' },
      payload,
    });
  const text = JSON.stringify({ resources });
  t.ok(Buffer.byteLength(text) >= LARGE, 'the body is large');
  const broken = await put(text.slice(0, -1));
  t.equal(broken.statusCode, 400, 'a cut body is refused');
  t.equal(broken.json().code, 'validation_failed');
  const poisoned = await put(text.replace('{"schemaVersion":2', '{"__proto__":{"admin":true},"schemaVersion":2'));
  t.equal(poisoned.statusCode, 400, 'a prototype-poisoning body is refused');
  t.match(poisoned.json().message, /__proto__|prototype/);
  const unknown = await put(text.replace('"schemaVersion":2', '"schemaVersion":2,"colour":"teal"'));
  t.equal(unknown.statusCode, 400, 'a record with a property the schema does not know is refused');
  t.same(await ids('mac-a'), [], 'none of them wrote anything');
  const res = await put(text);
  t.equal(res.statusCode, 200);
  const stored = await h.app.inject({ url: '/api/acp/resources/mac-a-s7?schemaVersion=2', headers: h.owner });
  t.equal(stored.json().sourceContent, resources[7]!.sourceContent, 'multi-byte text arrives as sent');
});
