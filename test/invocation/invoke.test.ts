// Scoped invocation of hosted capabilities, with real HTTP on both sides: the registry listens on a real
// socket and the agent calls it with undici; a real local HTTP server plays the hosted provider (it sees
// the credential header, the input, and the abort). Covers the happy path, the whole refusal matrix in
// the contract's order, bounds, the deadline, quotas, cancellation, audit and metrics.
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CANARY, recordIssuedToken } from '../helpers/build.js';
import { startHostedEndpoint, UPSTREAM_LEAK } from '../helpers/hosted-endpoint.js';
import { capabilitiesFile, HOSTED, SEARCH_KEY, world, type World } from '../helpers/invocation-world.js';
import { auditLines } from '../helpers/audit.js';

t.test('an agent with a canvas token and a grant invokes a hosted capability end to end', async (t) => {
  const w = await world(t);
  const seen = w.endpoint.next();
  const res = await w.invoke('web-search', { input: { query: 'lichen growth rates', maxResults: 3 }, thread: 'thread-1' });
  t.equal(res.status, 200, res.text);
  t.same(res.body, {
    schemaVersion: 1,
    resourceId: 'web-search',
    result: { results: [{ title: 'A result', url: 'https://example.org/' }], echoed: { query: 'lichen growth rates', maxResults: 3 } },
  });
  const got = await seen;
  t.equal(got.headers['x-api-key'], SEARCH_KEY, 'the endpoint sees the credential header from the named variable');
  t.same(JSON.parse(got.body), { query: 'lichen growth rates', maxResults: 3 }, 'the endpoint receives the input, nothing else');
  t.equal(got.headers.authorization, undefined, "the agent's canvas token is not forwarded");
  t.equal(got.headers['x-huabu-resource-grant'], undefined, 'nor its grant');
  t.notOk(res.text.includes(SEARCH_KEY), 'the credential is not in the answer');

  const audit = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
  t.equal(audit.length, 1);
  t.match(audit[0], {
    actor: 'canvas:canvas-1@mac-1',
    id: 'web-search',
    outcome: 'ok',
    details: {
      machine: 'mac-1',
      canvas: 'canvas-1',
      thread: 'thread-1',
      resource: 'web-search',
      inputBytes: Number,
      outputBytes: Number,
      durationMs: Number,
    },
  });
  t.type(audit[0]!.details!.profile, 'string');
  const auditText = await readFile(path.join(w.h.dataDir, 'audit.jsonl'), 'utf8');
  t.notOk(auditText.includes('lichen'), 'the audit never holds the input');
  t.notOk(auditText.includes('A result'), 'nor the output');
  const mints = (await auditLines(w.h)).filter((a) => a.action === 'grant.mint');
  t.equal(mints.length, 4, 'every grant mint is audited');
  t.match(mints[0], {
    actor: 'owner',
    id: 'canvas-1/thread-1',
    outcome: 'minted',
    details: { machine: 'mac-1', thread: 'thread-1', canvas: 'canvas-1' },
  });

  const metrics = await w.h.app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /registry_invocations_duration_seconds_count\{resource="web-search",outcome="ok"\} 1/);
});

t.test('grants: minted for realized threads only, never stored, covering only hosted capabilities', async (t) => {
  const w = await world(t);
  const res = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/grants',
    headers: w.h.owner,
    payload: { canvasId: 'canvas-1', threadId: 'thread-1', ttlSeconds: 600 },
  });
  t.equal(res.statusCode, 201);
  recordIssuedToken(res.json().grant);
  t.match(res.json(), { grant: /^arr_grant_/, expiresAt: '2026-11-30T12:10:00.000Z', policyVersion: /^[0-9a-f]{16}$/ });
  t.same(
    res.json().allowedResourceIds,
    HOSTED.filter((id) => id !== 'hold-search'),
  );
  t.equal(res.headers['cache-control'], 'no-store');
  const byHuabu = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/grants',
    headers: w.h.huabu,
    payload: { canvasId: 'canvas-1', threadId: 'thread-2' },
  });
  t.equal(byHuabu.statusCode, 201, 'the host may mint at spawn or resume');
  recordIssuedToken(byHuabu.json().grant);
  t.same(byHuabu.json().allowedResourceIds, ['web-search']);
  const unlaunched = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/grants',
    headers: w.h.owner,
    payload: { canvasId: 'canvas-1', threadId: 'thread-9' },
  });
  t.equal(unlaunched.statusCode, 404);
  t.equal(unlaunched.json().code, 'workload_not_found');
  const machine = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/grants',
    headers: w.h.bearer(w.tokens.c1m1),
    payload: { canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  t.equal(machine.statusCode, 403, 'a canvas token cannot mint grants');
  const workload = await w.h.app.inject({ method: 'GET', url: '/api/acp/workloads/canvas-1/thread-1', headers: w.h.owner });
  t.notMatch(workload.body, /arr_grant_/, 'the workload record holds no grant');
  t.notOk('HUABU_RESOURCE_GRANT' in workload.json().spec.env, 'nor a grant variable in its env');
  t.same(
    workload.json().spec.mcpServers[0].headers.find((h: { name: string }) => h.name === 'X-Huabu-Resource-Grant'),
    { name: 'X-Huabu-Resource-Grant', value: '$HUABU_RESOURCE_GRANT' },
    'its MCP entry names the grant by its variable, never its value',
  );
  const leaked = await w.h.put('huabu', CANARY.huabu, 'leaky-note', {
    instructions: `Send X-Huabu-Resource-Grant: ${w.grants.t1} with every call.`,
  });
  t.equal(leaked.statusCode, 422, 'a grant pasted into a record is a secret');
  t.equal(leaked.json().code, 'secret_detected');
});

t.test("the refusal matrix answers upstream's codes with our reason, in order", async (t) => {
  const w = await world(t);
  const code = async (p: ReturnType<World['invoke']>) => {
    const r = await p;
    return [r.status, r.body?.code, r.body?.details?.reason].filter((v) => v !== undefined).join(' ');
  };
  t.equal(await code(w.invoke('web-search', { token: null })), '401 unauthorized', 'no canvas token');
  t.equal(await code(w.invoke('web-search', { token: null, grant: null })), '401 unauthorized', 'neither');
  t.equal(await code(w.invoke('web-search', { grant: null })), '403 forbidden grant_invalid', 'no grant');
  t.equal(await code(w.invoke('web-search', { grant: 'arr_grant_bm9wZQ.c2ln' })), '403 forbidden grant_invalid', 'a forged grant');
  t.equal(await code(w.invoke('web-search', { grant: w.tokens.c1m1 })), '403 forbidden grant_invalid', 'a canvas token is no grant');
  t.equal(await code(w.invoke('web-search', { token: w.tokens.c2m1 })), '403 forbidden scope_mismatch', "another canvas's token");
  t.equal(await code(w.invoke('web-search', { grant: w.grants.t3 })), '403 forbidden scope_mismatch', "another canvas's grant");
  t.equal(
    await code(w.invoke('web-search', { grant: w.grants.t2 })),
    '403 forbidden scope_mismatch',
    "another thread's grant (on another machine)",
  );
  t.equal(
    await code(w.invoke('web-search', { grant: w.grants.t4, thread: 'thread-1' })),
    '403 forbidden thread_mismatch',
    "another thread's grant (same machine, thread named)",
  );
  t.equal(await code(w.invoke('web-search', { grant: w.grants.t4, thread: 'thread-4' })), '200', 'its own thread');
  t.equal(await code(w.invoke('hold-search')), '403 forbidden resource_not_granted', 'a hosted capability the thread does not have');
  t.equal(await code(w.invoke('local-git')), '403 forbidden resource_not_granted', 'not a hosted capability at all');
  t.equal(await code(w.invoke('ghost-search')), '403 forbidden resource_not_granted', 'hosted, but never in any effective set');
  // Granted, then its record withdrawn: not hosted any more.
  const withdrawn = await w.h.app.inject({
    method: 'DELETE',
    url: '/api/acp/providers/huabu/resources/withdrawn-search',
    headers: w.h.huabu,
  });
  t.equal(withdrawn.statusCode, 204);
  t.equal(await code(w.invoke('withdrawn-search')), '404 resource_not_found not_hosted', 'a capability whose record is absent');
  const snapshot = await w.h.app.inject({ method: 'GET', url: '/api/acp/capabilities', headers: w.h.owner });
  const diags = (snapshot.json().diagnostics as { code: string; components: string[] }[]).filter(
    (d) => d.code === 'unresolved_hosted_capability',
  );
  t.same(
    diags.map((d) => d.components),
    [['resource:ghost-search'], ['resource:withdrawn-search']],
    'the projection names hosted capabilities without a record',
  );
  // Input and sizes, after every grant check.
  t.equal(await code(w.invoke('web-search', { input: { query: '' } })), '400 invalid_input validation_failed', 'input against the schema');
  t.equal(
    await code(w.invoke('web-search', { input: { query: 'x', extra: 1 } })),
    '400 invalid_input validation_failed',
    'no extra input fields',
  );
  t.equal(
    await code(w.invoke('web-search', { body: { schemaVersion: 2, input: { query: 'x' } } })),
    '400 unsupported_version validation_failed',
    'the envelope version',
  );
  t.equal(
    await code(w.invoke('web-search', { body: { schemaVersion: 1 } })),
    '400 invalid_input validation_failed',
    'the envelope needs input',
  );
  t.equal(
    await code(w.invoke('web-search', { input: { query: 'q'.repeat(300) } })),
    '400 invalid_input payload_too_large',
    'input over maxInputBytes',
  );
  t.equal(
    await code(w.invoke('web-search', { input: { query: 'q'.repeat(50_000) } })),
    '400 invalid_input payload_too_large',
    'body over every bound',
  );
  t.equal(
    await code(w.invoke('web-search', { grant: null, input: { query: 'q'.repeat(50_000) } })),
    '403 forbidden grant_invalid',
    'the grant is checked before the body',
  );
  // The endpoint never saw a refused call.
  t.equal(w.endpoint.received.length, 1, 'only the one allowed call reached the endpoint');
  const audit = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
  t.equal(audit.length, 19, 'every invocation with an accepted canvas token, refused ones included, is audited once');
  t.same([...new Set(audit.map((a) => a.outcome))].sort(), [
    'forbidden',
    'invalid_input',
    'ok',
    'resource_not_found',
    'unsupported_version',
  ]);
  t.same(
    [...new Set(audit.map((a) => a.details?.reason).filter((r) => r !== undefined))].sort(),
    ['grant_invalid', 'not_hosted', 'payload_too_large', 'resource_not_granted', 'scope_mismatch', 'thread_mismatch', 'validation_failed'],
    'each audit line names the reason the agent was given',
  );
  // The two without a canvas token are anonymous refusals: the first written at once, the second counted
  // into the address's summary (test/audit/refusal-summaries.test.ts).
  const anonymous = (await auditLines(w.h)).filter((a) => a.actor === 'anonymous');
  t.equal(anonymous.length, 1, 'one line for the two while the window is open');
  t.match(anonymous, [
    { action: 'POST /api/rfs/:canvasId/resources/:id/invoke', outcome: 'unauthorized', details: { client: '127.0.0.1' } },
  ]);
  const metrics = await w.h.app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /registry_invocations_duration_seconds_count\{resource="web-search",outcome="forbidden"\} 8/);
  t.match(metrics.body, /registry_invocations_duration_seconds_count\{resource="__not_hosted__",outcome="forbidden"\} 1/);
});

t.test('an expired grant is 403 forbidden, reason grant_expired', async (t) => {
  const w = await world(t);
  const short = await w.mint('canvas-1', 'thread-1', 60);
  t.equal((await w.invoke('web-search', { grant: short })).status, 200);
  w.clock.ms += 61_000;
  const res = await w.invoke('web-search', { grant: short });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'forbidden');
  t.equal(res.body.details.reason, 'grant_expired');
  t.equal(res.headers['www-authenticate'], undefined, 'a refused grant is no authentication challenge');
});

t.test('revoking the machine kills its grants, and a re-enrollment does not revive them', async (t) => {
  const w = await world(t);
  t.equal((await w.invoke('web-search')).status, 200);
  const revoke = await w.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-1', headers: w.h.owner });
  t.equal(revoke.statusCode, 204);
  t.equal((await w.invoke('web-search')).status, 401, 'the canvas token and the grant are dead');
  w.clock.ms += 1000;
  await w.h.enroll('mac-1');
  const token = await w.h.canvasToken('canvas-1', 'mac-1');
  const res = await w.invoke('web-search', { token });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'forbidden', 'a grant of the old enrollment stays dead');
  t.same(res.body.details, { reason: 'grant_invalid', cause: 'machine_revoked' });
  const fresh = await w.mint('canvas-1', 'thread-1');
  t.equal((await w.invoke('web-search', { token, grant: fresh })).status, 200, 'a grant minted under the new enrollment works');
});

t.test('the endpoint: deadline 504 timeout, failure 502 provider_failure without upstream body or headers, output bound', async (t) => {
  const w = await world(t);
  const seen = w.endpoint.next();
  const started = performance.now();
  const slow = await w.invoke('slow-search');
  t.equal(slow.status, 504);
  t.equal(slow.body.code, 'timeout');
  t.equal(slow.body.details.reason, 'invocation_timeout');
  t.ok(performance.now() - started < 3000, 'answered at the deadline, not later');
  t.equal(await (await seen).aborted, true, 'the endpoint saw the request aborted at the deadline');

  const failing = await w.invoke('failing-search');
  t.equal(failing.status, 502);
  t.equal(failing.body.code, 'provider_failure');
  t.notOk(failing.text.includes(UPSTREAM_LEAK), 'no upstream body');
  t.equal(failing.headers['x-upstream-leak'], undefined, 'no upstream header');
  t.same(failing.body.details, { reason: 'invocation_failed', cause: 'status' });

  const text = await w.invoke('text-search');
  t.equal(`${text.status} ${text.body.code} ${text.body.details.cause}`, '502 provider_failure not_json');
  t.notOk(text.text.includes(UPSTREAM_LEAK));
  const big = await w.invoke('big-search');
  t.equal(`${big.status} ${big.body.code} ${big.body.details.cause}`, '502 provider_failure output_too_large');
  const down = await w.invoke('down-search');
  t.equal(`${down.status} ${down.body.code} ${down.body.details.cause}`, '502 provider_failure unreachable');
  const lines = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
  t.same(
    lines.map((a) => a.outcome),
    ['timeout', 'provider_failure', 'provider_failure', 'provider_failure', 'provider_failure'],
  );
  t.same(
    lines.map((a) => a.details?.reason),
    ['invocation_timeout', 'invocation_failed', 'invocation_failed', 'invocation_failed', 'invocation_failed'],
  );
});

t.test('quotas: per-grant concurrency and per-minute rate answer 429 quota_exceeded with Retry-After', async (t) => {
  const w = await world(t);
  // Rate: 2 a minute for limited-search, per grant.
  t.equal((await w.invoke('limited-search')).status, 200);
  w.clock.ms += 10_000;
  t.equal((await w.invoke('limited-search')).status, 200);
  const third = await w.invoke('limited-search');
  t.equal(third.status, 429);
  t.equal(third.body.code, 'quota_exceeded');
  t.same(third.body.details, { reason: 'rate_limited', cause: 'rate', retryAfterSeconds: 50 });
  t.equal(third.headers['retry-after'], '50', 'retry when the oldest call leaves the window');
  const other = await w.mint('canvas-1', 'thread-1');
  t.equal((await w.invoke('limited-search', { grant: other })).status, 200, 'another grant has its own quota');
  w.clock.ms += 50_000;
  t.equal((await w.invoke('limited-search')).status, 200, 'the window slides');

  // Concurrency: 1 in flight for hold-search (thread-4's profile has it).
  const seen = w.endpoint.next();
  const first = w.invoke('hold-search', { grant: w.grants.t4 });
  await seen;
  const second = await w.invoke('hold-search', { grant: w.grants.t4 });
  t.equal(second.status, 429);
  t.equal(second.body.code, 'quota_exceeded');
  t.equal(second.body.details.cause, 'concurrency');
  t.equal(second.headers['retry-after'], '1');
  w.endpoint.releaseAll();
  t.equal((await first).status, 200);
});

t.test('cancellation: when the agent hangs up, the outbound request is aborted and the invocation audited', async (t) => {
  const w = await world(t);
  const seen = w.endpoint.next();
  const controller = new AbortController();
  const pending = w.invoke('hold-search', { grant: w.grants.t4, signal: controller.signal }).catch((err: Error) => err);
  const got = await seen;
  controller.abort();
  t.type(await pending, Error, 'the agent gave up');
  t.equal(await got.aborted, true, 'the endpoint saw the abort');
  // The slot is free again, and the audit says what happened.
  let lines: Awaited<ReturnType<typeof auditLines>> = [];
  for (let i = 0; i < 50 && !lines.some((a) => a.outcome === 'cancelled'); i++) {
    await new Promise((r) => setTimeout(r, 20));
    lines = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
  }
  t.same(
    lines.map((a) => `${a.outcome} ${a.details?.reason}`),
    ['cancelled client_disconnected'],
  );
  const next = w.endpoint.next();
  const again = w.invoke('hold-search', { grant: w.grants.t4 });
  await next;
  w.endpoint.releaseAll();
  t.equal((await again).status, 200, 'the concurrency slot was released');
});

t.test('a grant from before a policy change is refused', async (t) => {
  const endpoint = await startHostedEndpoint();
  t.teardown(() => endpoint.close());
  const first = await world(t, { endpoint });
  const grant = first.grants.t1;
  const token = first.tokens.c1m1;
  t.equal((await first.invoke('web-search')).status, 200);
  await first.h.app.close();
  const changed = capabilitiesFile(endpoint.origin);
  changed.capabilities['web-search'].timeoutMs = 4000;
  await writeFile(first.capsFile, JSON.stringify(changed));
  const second = await world(t, { endpoint, dataDir: first.h.dataDir, capsFile: first.capsFile });
  const res = await second.invoke('web-search', { token, grant });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'forbidden');
  t.same(res.body.details, { reason: 'grant_invalid', cause: 'policy_changed' });
  const fresh = await second.mint('canvas-1', 'thread-1');
  t.equal((await second.invoke('web-search', { token, grant: fresh })).status, 200);
});
