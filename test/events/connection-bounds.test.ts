// A machine's channel connections are bounded in the change log: a machine that opens and drops its channel
// in a loop writes at most one machine.connected/disconnected event per window (the latest state always
// follows), so no credential can flush the retention with them and every mirror's cursor stays valid.
import t from 'tap';
import { request } from 'undici';
import { EventStreamParser } from '../../src/agentlet/channel-client.js';
import { build, recordIssuedToken } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

const WINDOW_MS = 1_000;

interface Change {
  id: string;
  type: string;
  subject: { kind: string; id: string };
}

t.test('a channel opened and dropped in a loop writes a bounded number of events; the latest state is right', async (t) => {
  const h = await build(t, { env: { EVENTS_RETAIN_COUNT: '50' }, statusEventWindowMs: WINDOW_MS });
  const url = await listen(h.app);
  const token = await h.enroll('mac-loop');
  const changes = async (since?: string) => {
    const res = await h.app.inject({ url: `/api/acp/changes?limit=1000${since ? `&since=${since}` : ''}`, headers: h.owner });
    if (res.statusCode !== 200) throw new Error(`changes: ${res.statusCode} ${res.json<{ code: string }>().code}`);
    return res.json<{ changes: Change[]; next: string }>();
  };
  const mirror = (await changes()).next;
  const status = async () =>
    ((await h.app.inject({ url: '/api/acp/machines', headers: h.owner })).json().machines as { machineId: string; status: string }[]).find(
      (m) => m.machineId === 'mac-loop',
    )?.status;

  const cycle = async () => {
    const abort = new AbortController();
    const res = await request(`${url}/api/acp/providers/mac-loop/channel`, {
      headers: { authorization: `Bearer ${token}` },
      signal: abort.signal,
    });
    if (res.statusCode !== 200) throw new Error(`channel: ${res.statusCode}`);
    res.body.setEncoding('utf8');
    // Connected once the first bytes arrive; then dropped.
    for await (const _ of res.body as AsyncIterable<string>) break;
    abort.abort();
    await res.body.dump().catch(() => undefined);
  };
  const started = performance.now();
  let cycles = 0;
  while (performance.now() - started < 2.5 * WINDOW_MS) {
    await cycle();
    cycles++;
  }
  const during = (
    await changes(mirror).catch((err: Error) => {
      t.fail(`the mirror's cursor survives: ${err.message}`);
      return { changes: [] as Change[] };
    })
  ).changes.filter((c) => c.subject.kind === 'machine' && c.type !== 'machine.enrolled');
  t.ok(cycles >= 20, `${cycles} connections opened and dropped`);
  // The first connection at once, then at most one per window while the loop runs.
  t.ok(during.length <= 2 + Math.ceil((performance.now() - started) / WINDOW_MS), `${during.length} status events written`);

  // Once the loop stops the latest state follows within a window.
  for (let i = 0; i < 40 && (await status()) !== 'disconnected'; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(await status(), 'disconnected', 'the machine list says disconnected at once');
  await new Promise((r) => setTimeout(r, WINDOW_MS + 300));
  const after = (await changes(mirror)).changes.filter((c) => c.subject.kind === 'machine' && c.type !== 'machine.enrolled');
  t.equal(after[after.length - 1]?.type, 'machine.disconnected', 'the last status event is the latest state');
  t.ok(after.length <= during.length + 1, 'one more event at most: the final state');

  // A machine quiet for a window: its next connection is announced at once.
  await new Promise((r) => setTimeout(r, WINDOW_MS + 100));
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await request(`${url}/api/acp/providers/mac-loop/channel`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  t.equal(res.statusCode, 200);
  res.body.setEncoding('utf8');
  for await (const _ of res.body as AsyncIterable<string>) break;
  let last: Change | undefined;
  for (let i = 0; i < 40; i++) {
    const seen = (await changes(mirror)).changes;
    last = seen[seen.length - 1];
    if (last?.type === 'machine.connected') break;
    await new Promise((r) => setTimeout(r, 25));
  }
  t.equal(last?.type, 'machine.connected', 'announced without waiting for a window');
});

t.test(
  "one machine's writes cannot flush the retention: past its events per minute they are 429; other machines and the owner write on",
  async (t) => {
    const h = await build(t, { env: { EVENTS_RETAIN_COUNT: '300', EVENTS_PER_MACHINE_PER_MINUTE: '40' } });
    const a = await h.enroll('mac-a');
    const b = await h.enroll('mac-b');
    const mirror = (await h.app.inject({ url: '/api/acp/changes?limit=1000', headers: h.owner })).json<{ next: string }>().next;
    const set = (prefix: string) =>
      Array.from({ length: 30 }, (_, i) => ({
        schemaVersion: 1,
        id: `${prefix}-${i}`,
        name: `Tool ${prefix} ${i}`,
        description: 'A tool.',
        instructions: 'Use it.',
      }));
    // Each reconcile swaps the whole set: 30 withdrawn, 30 created.
    const statuses: number[] = [];
    let refused: { json(): { code: string; details?: { reason?: string } }; headers: Record<string, unknown> } | undefined;
    for (let i = 0; i < 10; i++) {
      const res = await h.app.inject({
        method: 'PUT',
        url: '/api/acp/providers/mac-a/resources',
        headers: h.bearer(a),
        payload: { resources: set(`round-${i}`) },
      });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) {
        refused = res;
        break;
      }
    }
    t.ok(refused, `mac-a is refused once over its share (${statuses.join(' ')})`);
    t.match(refused?.json(), { code: 'rate_limited', details: { reason: 'events_per_minute' } });
    t.ok(Number(refused?.headers['retry-after']) >= 1, 'with Retry-After');
    t.equal((await h.put('mac-b', b, 'of-b')).statusCode, 201, 'another machine writes on');
    const enrolled = await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: 'mac-c' } });
    t.equal(enrolled.statusCode, 201, 'the owner writes on');
    recordIssuedToken(enrolled.json().token as string);
    const read = await h.app.inject({ url: `/api/acp/changes?since=${mirror}&limit=1000`, headers: h.owner });
    t.equal(read.statusCode, 200, "a mirror's cursor from before is still kept");

    // Its answers to the owner's jobs add no event of its own: still accepted.
    const url = await listen(h.app);
    const abort = new AbortController();
    t.teardown(() => abort.abort());
    const channel = await request(`${url}/api/acp/providers/mac-a/channel`, {
      headers: { authorization: `Bearer ${a}` },
      signal: abort.signal,
    });
    t.equal(channel.statusCode, 200, 'the channel opens (a read)');
    channel.body.setEncoding('utf8');
    const parser = new EventStreamParser();
    const run = request(`${url}/api/acp/machines/mac-a/jobs`, {
      method: 'POST',
      headers: { ...h.owner, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'ping' }),
    });
    // Read without ending the body: the channel stays open for the answer.
    const chunks = (channel.body as AsyncIterable<string>)[Symbol.asyncIterator]();
    let job: { jobId: string } | undefined;
    while (!job) {
      const next = await chunks.next();
      if (next.done) break;
      const found = parser.feed(next.value).find((e) => e.event === 'job');
      if (found) job = JSON.parse(found.data) as { jobId: string };
    }
    const answered = await request(`${url}/api/acp/providers/mac-a/jobs/${job!.jobId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ok: true, result: { pong: true } }),
    });
    t.equal(answered.statusCode, 204, "the machine's answer is taken");
    const ran = await run;
    t.equal(ran.statusCode, 200, `and the owner gets it (${await ran.body.text()})`);
  },
);
