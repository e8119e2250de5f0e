// A machine reports the receipts it could not publish with its reconcile (`problems`): the owner sees them
// in GET /api/acp/machines for that machine, a change of them is one `machine.problems` event (a report equal
// to the last one writes none), the host may not send them, a secret in them is refused before anything
// changes, and a reconcile without them (any client that predates them) answers exactly as before.
import t from 'tap';
import { build, type TestApp } from '../helpers/build.js';
import { until } from '../helpers/wait.js';

const MACHINE = 'agentlet-p1';
const GITHUB_TOKEN = `ghp_${'A1b2C3d4E5'.repeat(3)}abcdef`;
const entry = (id: string) => ({ schemaVersion: 1, id, name: `Name of ${id}`, description: `About ${id}.`, instructions: `Use ${id}.` });
const missing = {
  receipt: 'receipts/gone-skill.json',
  id: 'gone-skill',
  code: 'entrypoint_missing',
  message: '/entrypoint skills/gone-skill/SKILL.md does not exist',
};

async function reconcile(h: TestApp, token: string, body: Record<string, unknown>, query = '', provider = MACHINE) {
  return h.app.inject({ method: 'PUT', url: `/api/acp/providers/${provider}/resources${query}`, headers: h.bearer(token), payload: body });
}

async function machineOf(h: TestApp) {
  const res = await h.app.inject({ url: '/api/acp/machines', headers: h.owner });
  return (res.json().machines as { machineId: string; problems?: unknown[] }[]).find((m) => m.machineId === MACHINE)!;
}

/** The `machine.problems` events so far, once at least `atLeast` are there (they are written on their own, just after the answer). */
async function problemEvents(h: TestApp, atLeast = 0): Promise<string[]> {
  return until(`${atLeast} machine.problems event(s)`, async () => {
    const res = await h.app.inject({ url: '/api/acp/changes?limit=1000', headers: h.owner });
    const found = (res.json().changes as { type: string; subject: { kind: string; id: string } }[])
      .filter((e) => e.type === 'machine.problems')
      .map((e) => `${e.subject.kind}:${e.subject.id}`);
    return found.length >= atLeast && found;
  });
}

t.test('the problems a machine reports are shown for it, announced once per change, cleared by a report without them', async (t) => {
  const h = await build(t);
  const token = await h.enroll(MACHINE);

  const plain = await reconcile(h, token, { resources: [entry('kept-skill')] });
  t.equal(plain.statusCode, 200, plain.body);
  t.same(Object.keys(plain.json()).sort(), ['created', 'dryRun', 'replaced', 'unchanged', 'withdrawn'], 'the answer is as before');
  t.notOk('problems' in (await machineOf(h)), 'no problems reported: the machine reads as before');
  t.same(await problemEvents(h), [], 'no event for a machine that never reported any');

  const dry = await reconcile(h, token, { resources: [entry('kept-skill')], problems: [missing] }, '?dryRun=true');
  t.equal(dry.statusCode, 200, dry.body);
  t.notOk('problems' in (await machineOf(h)), 'a dry run records nothing');

  const reported = await reconcile(h, token, { resources: [entry('kept-skill')], problems: [missing] });
  t.equal(reported.statusCode, 200, reported.body);
  t.same(Object.keys(reported.json()).sort(), ['created', 'dryRun', 'replaced', 'unchanged', 'withdrawn']);
  t.same((await machineOf(h)).problems, [missing], 'GET /machines shows the problem for that machine');
  t.same(await problemEvents(h, 1), [`machine:${MACHINE}`], 'one event');

  t.equal((await reconcile(h, token, { resources: [entry('kept-skill')], problems: [missing] })).statusCode, 200);
  t.equal((await reconcile(h, token, { resources: [entry('kept-skill')] })).statusCode, 200);
  t.notOk('problems' in (await machineOf(h)), 'a reconcile without problems clears them');
  // Events are in order: two in all means the repeated report wrote none.
  t.same(
    await problemEvents(h, 2),
    [`machine:${MACHINE}`, `machine:${MACHINE}`],
    'the same report again writes no event; clearing writes one',
  );
  t.equal((await reconcile(h, token, { resources: [entry('kept-skill')] })).statusCode, 200);
  // An event would be written just after the answer: give it the time one takes, then count.
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await problemEvents(h)).length, 2, 'nothing reported, nothing to announce');
});

t.test('problems: the host may not send them, a secret in them is refused and nothing changes, bounds are checked', async (t) => {
  const h = await build(t);
  const token = await h.enroll(MACHINE);
  t.equal((await reconcile(h, token, { resources: [entry('kept-skill')] })).statusCode, 200);

  const hostRes = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources',
    headers: h.huabu,
    payload: { resources: [], problems: [missing] },
  });
  t.equal(hostRes.statusCode, 400, hostRes.body);
  t.match(hostRes.json(), { code: 'validation_failed', message: /only a machine/i });

  const leaky = await reconcile(h, token, {
    resources: [],
    problems: [{ ...missing, message: `cannot read the token ${GITHUB_TOKEN}` }],
  });
  t.equal(leaky.statusCode, 422, leaky.body);
  t.equal(leaky.json().code, 'secret_detected');
  t.notOk(leaky.body.includes(GITHUB_TOKEN), 'the secret is not echoed');
  const catalogue = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.same(
    (catalogue.json().resources as { id: string }[]).map((r) => r.id),
    ['kept-skill'],
    'nothing was withdrawn',
  );
  t.notOk('problems' in (await machineOf(h)), 'nothing recorded');

  const tooMany = await reconcile(h, token, { resources: [], problems: Array.from({ length: 65 }, () => missing) });
  t.equal(tooMany.statusCode, 400, 'at most 64 problems');
  const multiLine = await reconcile(h, token, { resources: [], problems: [{ ...missing, message: 'one\ntwo' }] });
  t.equal(multiLine.statusCode, 400, 'a message is one line');
});

t.test('a revoked machine loses its reported problems', async (t) => {
  const h = await build(t);
  const token = await h.enroll(MACHINE);
  t.equal((await reconcile(h, token, { resources: [], problems: [missing] })).statusCode, 200);
  t.same((await machineOf(h)).problems, [missing]);
  t.equal((await h.app.inject({ method: 'DELETE', url: `/api/acp/machines/${MACHINE}`, headers: h.owner })).statusCode, 204);
  t.notOk('problems' in (await machineOf(h)), 'its receipts are no longer its problems to report');
});
