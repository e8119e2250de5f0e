// The secret scan takes time linear in its input whatever the text: no input makes it backtrack, and one
// large write never holds the event loop (a quadratic pattern let 100 k characters of "eyJ" stall the
// server for seconds).
import t from 'tap';
import { request } from 'undici';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { build } from '../helpers/build.js';
import { ADVERSARIAL, fill, MIB, ORDINARY, timedScan } from '../helpers/secret-corpus.js';
import { listen, whileHealthProbed } from '../helpers/sockets.js';

const timed = timedScan;

t.test('scanning 1 MiB of adversarial text costs about what 1 MiB of ordinary text does', async (t) => {
  const scanner = new SecretScanner(['arr_owner_configured0credential0value']);
  await scanner.scan([['/warm', 'warm up']]);
  t.same(await scanner.scan([['/sourceContent', ORDINARY]]), [], 'ordinary text passes');
  const ordinary = await timed(scanner, ORDINARY);
  // Generous: 20 times ordinary text measured in the same run (and never under 200 ms, so a fast ordinary
  // scan does not make the bound a micro-timing), at most 30 s. A super-linear pattern is far past it: the
  // backtracking JWT pattern this replaced took 17 s on 100 k characters, minutes on 1 MiB. The bound is
  // relative because the suite runs under coverage, two files at once, where a 0.8 s scan took 3.9 s.
  const bound = Math.min(Math.max(20 * ordinary, 200), 30_000);
  t.comment(`ordinary 1 MiB: ${ordinary.toFixed(0)} ms; bound ${bound.toFixed(0)} ms`);
  for (const [what, text] of Object.entries(ADVERSARIAL)) {
    // Once, and the best of two more only when that one is over the bound (the machine, not the text).
    let ms = await timed(scanner, text, 1);
    if (ms > bound) ms = await timed(scanner, text);
    t.ok(ms <= bound, `${what}: ${ms.toFixed(0)} ms`);
  }
});

t.test('/healthz stays answered while a large field is scanned', async (t) => {
  const h = await build(t);
  const machine = h.bearer(await h.enroll('agentlet-a'));
  // The first scan loads the rule engines; that one-off cost is not what this measures.
  t.equal(
    (
      await h.app.inject({
        method: 'PUT',
        url: '/api/acp/providers/agentlet-a/resources/small',
        headers: machine,
        payload: { schemaVersion: 2, name: 'Small', sourceContent: 'Small.' },
      })
    ).statusCode,
    201,
  );
  const origin = await listen(h.app);
  const sourceContent = fill('eyJ', 100_000);
  const writes = [
    // A v2 record at the schema's largest sourceContent.
    { method: 'PUT', path: '/api/acp/providers/agentlet-a/resources/big', body: { schemaVersion: 2, name: 'Big', sourceContent } },
    // A candidate far over the schema's bound: reported as too long, scanned no further than the bound.
    {
      method: 'POST',
      path: '/api/acp/resources/validate',
      body: { schemaVersion: 2, id: 'big', name: 'Big', sourceContent: fill('eyJ', MIB - 1000) },
    },
  ] as const;
  for (const write of writes) {
    const {
      result: status,
      worst,
      answers,
    } = await whileHealthProbed(origin, async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const res = await request(`${origin}${write.path}`, {
        method: write.method,
        headers: { ...machine, 'content-type': 'application/json' },
        body: JSON.stringify(write.body),
      });
      await res.body.dump();
      return res.statusCode;
    });
    t.equal(status, write.method === 'PUT' ? 201 : 200, `${write.method} ${write.path}`);
    t.ok(worst < 1000, `${write.path}: the longest wait between /healthz answers was ${worst.toFixed(0)} ms (${answers} answers)`);
  }
});

t.test('scanning a large write counts as expensive work: bounded per credential', async (t) => {
  const h = await build(t);
  const machine = h.bearer(await h.enroll('agentlet-a'));
  const candidate = (size: number) => ({ schemaVersion: 2, id: 'notes', name: 'Notes', sourceContent: fill('Plain notes. ', size) });
  const validate = (size: number) =>
    h.app.inject({ method: 'POST', url: '/api/acp/resources/validate', headers: machine, payload: candidate(size) });
  const put = (i: number, size: number) =>
    h.app.inject({
      method: 'PUT',
      url: `/api/acp/providers/agentlet-a/resources/notes-${i}`,
      headers: machine,
      payload: { schemaVersion: 2, name: `Notes ${i}`, sourceContent: fill('Plain notes. ', size) },
    });
  const large = await Promise.all([
    ...Array.from({ length: 6 }, () => validate(90_000)),
    ...Array.from({ length: 6 }, (_, i) => put(i, 90_000)),
  ]);
  const codes = large.map((r) => r.statusCode);
  t.ok(
    codes.some((c) => c === 429),
    `some large writes refused (${codes.join(' ')})`,
  );
  const refused = large.find((r) => r.statusCode === 429)!;
  t.equal(refused.json().code, 'rate_limited');
  const small = await Promise.all([
    ...Array.from({ length: 6 }, () => validate(1000)),
    ...Array.from({ length: 6 }, (_, i) => put(i, 1000)),
  ]);
  t.same(
    small.map((r) => r.statusCode).filter((c) => c === 429),
    [],
    'small writes are not counted',
  );
});
