// Moving a thread's pin through the real service (test/pins and test/postgres run them on each store): the
// owner approves the content a machine's skill has now for a thread launched with an earlier one. The move is
// a compare-and-set (`pin_conflict`, `pin_stale`), audited, announced (`workload.repinned`), re-signed, and
// the thread's RFS and MCP reads serve the new pin; a refusal changes nothing; a restart keeps the move.
import type { Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { build, type TestApp } from './build.js';
import { launched as launchedWithPins, putV2 } from './pin-scenarios.js';
import { verifyEnvelope } from '../../src/workloads/attestation.js';
import type { AuditEntry } from '../../src/registry/store.js';
import { until } from './wait.js';

const KEYS = '/.well-known/agent-resource-registry/keys';

/** The store a scenario runs on, and how to read its audit log. */
export interface PinMoveStore {
  env: (t: Test) => Promise<Record<string, string>>;
  audit: (h: TestApp, env: Record<string, string>) => Promise<AuditEntry[]>;
}

interface Workload {
  realizedAt: string;
  spec: { resourcePins: { id: string; digest: string }[] };
  attestation: { payload: string; signatures: { keyid: string; sig: string }[] };
}

/** A thread launched with skill-a's first content (test/helpers/pin-scenarios.ts), then the machine changes skill-a. */
async function launched(t: Test, store: PinMoveStore) {
  const { h, env, m1, c1m1, origin } = await launchedWithPins(t, store.env);
  const workload = (await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner })).json<Workload>();
  const pinned = workload.spec.resourcePins[1]!.digest;
  t.equal((await putV2(h, 'mac-1', m1, 'skill-a', 'Version two: summarize briefly.')).statusCode, 200);
  const current = (await h.app.inject({ url: '/api/acp/resources/skill-a?schemaVersion=2', headers: h.owner })).json<{ digest: string }>()
    .digest;
  t.not(current, pinned, 'the machine changed the skill since the launch');
  return { h, env, m1, workload, pinned, current, c1m1, origin };
}

const move = (h: TestApp, body: Record<string, unknown>, thread = 'thread-1') =>
  h.app.inject({ method: 'POST', url: `/api/acp/workloads/canvas-1/${thread}/pins`, headers: h.owner, payload: body });

/** The pin-move entries of the audit log, once there are `count` of them (a refusal's is appended after its answer). */
const moveEntries = (store: PinMoveStore, h: TestApp, env: Record<string, string>, count: number) =>
  until(`${count} pin-move audit entries`, async () => {
    const entries = (await store.audit(h, env)).filter((e) => e.action === 'workload.repin');
    return entries.length >= count && entries;
  });

const readWorkload = (h: TestApp) => h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner });

const threadRead = (h: TestApp, token: string) =>
  h.app.inject({
    url: '/api/rfs/canvas-1/resources/skill-a?schemaVersion=2',
    headers: { ...h.bearer(token), 'x-huabu-thread-id': 'thread-1' },
  });

export function runPinMoveScenarios(t: Test, name: string, store: PinMoveStore): void {
  t.test(`${name}: the owner moves a pin to the record's content now; the thread reads it over RFS and MCP`, async (t) => {
    const s = await launched(t, store);
    const before = await threadRead(s.h, s.c1m1);
    t.equal(before.json().sourceContent, 'Version one: summarize politely.', 'before the move: the launch’s content');
    // An MCP session opened before the move reads the new pin after it (nothing cached across the move).
    const { origin } = s;
    const client = new Client({ name: 'pinned-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${origin}/api/rfs/canvas-1/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${s.c1m1}`, 'x-huabu-thread-id': 'thread-1' } },
      }),
    );
    t.teardown(() => client.close());
    const mcpBefore = await client.readResource({ uri: 'registry://resources/skill-a' });
    t.equal((mcpBefore.contents[0] as { text: string }).text, 'Version one: summarize politely.');
    const listedBefore = (await client.listResources()).resources.find((r) => r.name === 'skill-a');
    t.match(listedBefore?.description, /^Version one: summarize politely/, 'its MCP list describes the launch’s content');

    const res = await move(s.h, { id: 'skill-a', from: s.pinned, to: s.current });
    t.equal(res.statusCode, 200, res.body);
    const moved = res.json<Workload>();
    t.same(
      moved.spec.resourcePins,
      [s.workload.spec.resourcePins[0], { id: 'skill-a', digest: s.current }],
      'the answer is the workload with the pin moved, the others as they were',
    );
    t.same((await readWorkload(s.h)).json(), moved, 'the stored workload is the answer');

    const after = await threadRead(s.h, s.c1m1);
    t.equal(after.json().sourceContent, 'Version two: summarize briefly.', 'the thread reads the approved content');
    t.equal(after.headers['x-resource-digest'], s.current);
    const mcpAfter = await client.readResource({ uri: 'registry://resources/skill-a' });
    t.equal((mcpAfter.contents[0] as { text: string }).text, 'Version two: summarize briefly.', 'so does its MCP read');
    const listed = (await client.listResources()).resources.find((r) => r.name === 'skill-a');
    t.match(listed?.description, /^Version two: summarize briefly/, "and its MCP list describes the moved pin's content");
  });

  t.test(`${name}: a moved workload's attestation is signed again over its new pins, at the move`, async (t) => {
    const s = await launched(t, store);
    const res = await move(s.h, { id: 'skill-a', from: s.pinned, to: s.current });
    t.equal(res.statusCode, 200, res.body);
    const moved = res.json<Workload>();
    const keys = (await s.h.app.inject({ url: KEYS })).json<{ keys: unknown[] }>().keys;
    const statement = verifyEnvelope(moved.attestation, keys);
    t.same(
      statement.subject,
      moved.spec.resourcePins.map((p) => ({ name: p.id, digest: { sha256: p.digest.slice('sha256:'.length) } })),
      'the subjects are the new pins',
    );
    t.equal(statement.predicate.realizedAt, s.workload.realizedAt, 'the realization time stays');
    t.match(statement.predicate.repinnedAt, /^\d{4}-\d\d-\d\dT/, 'the move’s time is signed beside it');
    t.match(statement.predicate.resources[1], { id: 'skill-a', digest: s.current, provider: 'mac-1' });
    t.not(moved.attestation.signatures[0]!.sig, s.workload.attestation.signatures[0]!.sig);
    const payload = Buffer.from(moved.attestation.payload, 'base64');
    payload[12] = payload[12]! ^ 1;
    t.throws(
      () => verifyEnvelope({ ...moved.attestation, payload: payload.toString('base64') }, keys),
      /does not verify/,
      'a one-byte tamper is refused',
    );
  });

  t.test(`${name}: the move is audited and announced as workload.repinned; no token in either`, async (t) => {
    const s = await launched(t, store);
    const changes = await s.h.app.inject({ url: '/api/acp/changes?limit=500', headers: s.h.owner });
    const cursor = changes.json<{ next: string }>().next;
    t.equal((await move(s.h, { id: 'skill-a', from: s.pinned, to: s.current })).statusCode, 200);
    const events = await s.h.app.inject({ url: `/api/acp/changes?since=${cursor}`, headers: s.h.owner });
    const repinned = events.json<{ changes: { type: string; subject: unknown }[] }>().changes.filter((e) => e.type === 'workload.repinned');
    t.same(
      repinned.map((e) => e.subject),
      [{ kind: 'workload', id: 'canvas-1/thread-1' }],
      'one event, about the workload',
    );
    const entries = await moveEntries(store, s.h, s.env, 1);
    t.match(entries, [
      { actor: 'owner', id: 'canvas-1/thread-1', outcome: 'repinned', details: { resourceId: 'skill-a', from: s.pinned, to: s.current } },
    ]);
    const text = JSON.stringify([events.json(), entries]);
    for (const secret of [s.m1, s.c1m1, s.h.owner.authorization!.slice(7)])
      t.notOk(text.includes(secret), 'no token in the event or audit');
  });

  t.test(`${name}: a stale or forged move changes nothing (pin_conflict, pin_stale, invalid_input, workload_not_found)`, async (t) => {
    const s = await launched(t, store);
    const stored = (await readWorkload(s.h)).body;
    const zero = `sha256:${'0'.repeat(64)}`;
    const cases: [Record<string, unknown>, number, string, string?][] = [
      [{ id: 'skill-a', from: zero, to: s.current }, 409, 'pin_conflict'],
      [{ id: 'not-pinned', from: s.pinned, to: s.current }, 409, 'pin_conflict'],
      [{ id: 'skill-a', from: s.pinned, to: zero }, 409, 'pin_stale'],
      [{ id: 'skill-a', from: s.pinned, to: s.pinned }, 409, 'pin_stale'],
      [{ id: 'skill-a', from: 'sha256:abc', to: s.current }, 400, 'invalid_input'],
      [{ id: 'skill-a', from: s.pinned, to: s.current.toUpperCase() }, 400, 'invalid_input'],
      [{ id: 'skill-a', from: s.pinned, to: s.current }, 404, 'workload_not_found', 'no-such-thread'],
    ];
    for (const [body, status, code, thread] of cases) {
      const res = await move(s.h, body, thread);
      t.equal(res.statusCode, status, `${JSON.stringify(body)} → ${status}`);
      t.equal(res.json().code, code);
    }
    t.match((await move(s.h, { id: 'skill-a', from: zero, to: s.current })).json().details, { id: 'skill-a', pinned: s.pinned });
    t.equal((await readWorkload(s.h)).body, stored, 'the workload is as it was, byte for byte');
    const thread = await threadRead(s.h, s.c1m1);
    t.equal(thread.json().sourceContent, 'Version one: summarize politely.', 'and the thread reads its launch’s content');
    const refused = (await moveEntries(store, s.h, s.env, cases.length + 1)).map((e) => e.outcome);
    t.same(
      refused.sort(),
      [
        'invalid_input',
        'invalid_input',
        'pin_conflict',
        'pin_conflict',
        'pin_conflict',
        'pin_stale',
        'pin_stale',
        'workload_not_found',
      ].sort(),
      'each refusal is audited',
    );

    const m1 = s.m1;
    t.equal(
      (await s.h.app.inject({ method: 'DELETE', url: '/api/acp/providers/mac-1/resources/skill-a', headers: s.h.bearer(m1) })).statusCode,
      204,
    );
    const withdrawn = await move(s.h, { id: 'skill-a', from: s.pinned, to: s.current });
    t.equal(withdrawn.statusCode, 409);
    t.match(withdrawn.json(), { code: 'pin_stale', details: { id: 'skill-a', current: null } }, 'a withdrawn record cannot be approved');
  });

  t.test(`${name}: two moves from the same pin at once: exactly one wins, the other is pin_conflict`, async (t) => {
    const s = await launched(t, store);
    const answers = await Promise.all(Array.from({ length: 4 }, () => move(s.h, { id: 'skill-a', from: s.pinned, to: s.current })));
    t.same(answers.map((a) => a.statusCode).sort(), [200, 409, 409, 409], 'one move wins');
    for (const a of answers.filter((a) => a.statusCode === 409))
      t.match(a.json(), { code: 'pin_conflict', details: { pinned: s.current } });
    const entries = await moveEntries(store, s.h, s.env, 4);
    t.same(
      entries.map((e) => e.outcome).sort(),
      ['pin_conflict', 'pin_conflict', 'pin_conflict', 'repinned'],
      'one move audited as made, the others as refused',
    );
  });

  t.test(`${name}: a restart keeps the move, and the new pin's revision outlives later changes`, async (t) => {
    const s = await launched(t, store);
    t.equal((await move(s.h, { id: 'skill-a', from: s.pinned, to: s.current })).statusCode, 200);
    const moved = (await readWorkload(s.h)).body;
    await s.h.app.close();
    const h = await build(t, { env: s.env, dataDir: s.h.dataDir });
    t.equal((await readWorkload(h)).body, moved, 'the stored workload after the restart is the moved one');
    for (let i = 3; i <= 25; i++) t.equal((await putV2(h, 'mac-1', s.m1, 'skill-a', `Version ${i}.`)).statusCode, 200);
    const thread = await threadRead(h, await h.canvasToken('canvas-1', 'mac-1'));
    t.equal(thread.statusCode, 200, 'the moved pin is held: retention keeps it past 20 newer revisions');
    t.equal(thread.json().sourceContent, 'Version two: summarize briefly.');
  });
}
