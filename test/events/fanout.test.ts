// The event stream's cost per subscriber, over a real socket: the events of a busy stretch share socket
// writes (at most one per COALESCE_MS), and still arrive complete, in order, once each.
import t from 'tap';
import http from 'node:http';
import { CANARY } from '../helpers/build.js';
import { buildListening } from '../helpers/sse.js';
import { COALESCE_MS } from '../../src/routes/events.js';
import { until } from '../helpers/wait.js';

t.test('a burst of changes reaches a subscriber complete and in order, in at most one socket write per coalescing interval', async (t) => {
  const { h, origin } = await buildListening(t);
  const chunks: string[] = [];
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${origin}/api/acp/events`, { headers: h.owner }, resolve);
    req.on('error', reject);
    t.teardown(() => req.destroy());
  });
  t.equal(res.statusCode, 200);
  res.setEncoding('utf8');
  const ids = () =>
    chunks
      .join('')
      .match(/^data: .*$/gm)
      ?.map((l) => (JSON.parse(l.slice(6)) as { subject: { id: string } }).subject.id) ?? [];
  // The stream's opening lines come first, on their own.
  await new Promise((r) => res.once('data', (c: string) => r(chunks.push(c))));
  res.on('data', (c: string) => chunks.push(c));
  const opening = chunks.length;

  const names = Array.from({ length: 30 }, (_, i) => `fan-${String(i).padStart(2, '0')}`);
  const started = performance.now();
  for (const id of names) t.equal((await h.put('huabu', CANARY.huabu, id)).statusCode, 201, `${id} registered`);
  await until('every event', () => ids().length >= names.length);
  const elapsed = performance.now() - started;

  t.same(ids(), names, 'every change once, in commit order');
  const writes = chunks.length - opening;
  // One write at the first change, then at most one per interval (a chunk may hold two writes, never less than one).
  const most = Math.ceil(elapsed / COALESCE_MS) + 1;
  t.ok(writes <= most, `${names.length} events in ${writes} reads over ${elapsed.toFixed(0)} ms (at most ${most})`);
});
