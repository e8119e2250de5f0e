// Grants and hosted invocation hold against misuse: a grant or canvas token re-spelled (lenient base64url)
// must not pass nor get a fresh quota, a grant's in-flight calls are bounded across its
// capabilities, a grant dies with its canvas's revocation cut-off and needs the thread header, hosted IDs
// belong to the host, an answer carrying the capability's own credential never reaches the agent, and a
// failed answer is audited as failed. Real sockets on both sides (test/helpers/invocation-world.ts).
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { GrantQuotas } from '../../src/invocation/quotas.js';
import { SEARCH_KEY, world } from '../helpers/invocation-world.js';
import { auditLines } from '../helpers/audit.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * 40 other spellings of `token`'s signature that a lenient base64url decoder reads as the same bytes: the
 * last character's two unused bits, padding, the standard alphabet, a stray character.
 */
function respellings(token: string, prefix: string): string[] {
  const [payload, signature] = token.slice(prefix.length).split('.') as [string, string];
  const spellings = new Set<string>();
  const last = ALPHABET.indexOf(signature.at(-1)!);
  for (let k = 0; k < 4; k++) spellings.add(signature.slice(0, -1) + ALPHABET[(last & ~3) | k]);
  spellings.add(`${signature}=`);
  spellings.add(`${signature}==`);
  spellings.add(signature.replaceAll('-', '+').replaceAll('_', '/'));
  for (let i = 1; spellings.size < 41; i++) spellings.add(`${signature.slice(0, i)}!${signature.slice(i)}`);
  spellings.delete(signature);
  return [...spellings].slice(0, 40).map((s) => `${prefix}${payload}.${s}`);
}

t.test('a re-spelled grant is refused: 40 spellings of one grant get no call and no quota of their own', async (t) => {
  const w = await world(t);
  const spellings = respellings(w.grants.t1, 'arr_grant_');
  t.equal(spellings.length, 40);
  const outcomes: string[] = [];
  for (const grant of spellings) {
    const res = await w.invoke('limited-search', { grant, thread: 'thread-1' });
    outcomes.push(`${res.status} ${res.body?.code} ${res.body?.details?.reason}`);
  }
  t.same(
    outcomes.filter((o) => o !== '403 forbidden grant_invalid'),
    [],
    `every other spelling is 403 forbidden, reason grant_invalid (got ${outcomes.filter((o) => o.startsWith('200')).length} × 200 against a limit of 2)`,
  );
  t.equal(w.endpoint.received.length, 0, 'none reached the endpoint');
  // The grant as minted keeps its whole quota.
  t.equal((await w.invoke('limited-search')).status, 200);
  t.equal((await w.invoke('limited-search')).status, 200);
  t.equal((await w.invoke('limited-search')).status, 429);
});

t.test('a re-spelled canvas token is refused', async (t) => {
  const w = await world(t);
  const read = (token: string) => w.h.app.inject({ method: 'GET', url: '/api/rfs/canvas-1/resources', headers: w.h.bearer(token) });
  t.equal((await read(w.tokens.c1m1)).statusCode, 200, 'the token as minted');
  const statuses = [];
  for (const token of respellings(w.tokens.c1m1, 'arr_canvas_')) statuses.push((await read(token)).statusCode);
  // Refused as an unknown token (401), or once refusals from this address pile up, rate limited before
  // authentication (429): never admitted.
  t.same(
    statuses.filter((s) => s !== 401 && s !== 429),
    [],
    `every other spelling is refused (got ${statuses.filter((s) => s === 200).length} × 200)`,
  );
});

t.test(
  "a grant's calls in flight are bounded across its capabilities (default 4): 429 quota_exceeded (in_flight) with Retry-After",
  async (t) => {
    const w = await world(t);
    // thread-4's grant covers hold-search (1 in flight per grant) and hold2-search (4 in flight per grant).
    const pending = [];
    for (const id of ['hold-search', 'hold2-search', 'hold2-search', 'hold2-search']) {
      const seen = w.endpoint.next();
      pending.push(w.invoke(id, { grant: w.grants.t4 }));
      await seen;
    }
    const reached = w.endpoint.next().then(() => 'reached the endpoint');
    const fifth = await Promise.race([w.invoke('hold2-search', { grant: w.grants.t4 }), reached]);
    t.not(fifth, 'reached the endpoint', 'a fifth call of one grant is refused before the endpoint');
    if (typeof fifth !== 'string') {
      t.equal(
        `${fifth.status} ${fifth.body.code} ${fifth.body.details.reason} ${fifth.body.details.cause}`,
        '429 quota_exceeded rate_limited in_flight',
      );
      t.equal(fifth.headers['retry-after'], '1');
    }
    t.equal((await w.invoke('web-search', { grant: w.grants.t1 })).status, 200, "another grant's calls are not counted");
    w.endpoint.releaseAll();
    t.same(
      (await Promise.all(pending)).map((r) => r.status),
      [200, 200, 200, 200],
    );
    const again = w.invoke('hold2-search', { grant: w.grants.t4 });
    await w.endpoint.next();
    w.endpoint.releaseAll();
    t.equal((await again).status, 200, 'the slots are released');
  },
);

t.test("a grant dies with its canvas's token revocation", async (t) => {
  const w = await world(t);
  t.equal((await w.invoke('web-search')).status, 200);
  const revoke = await w.h.app.inject({
    method: 'POST',
    url: '/api/acp/canvas-tokens/revoke',
    headers: w.h.owner,
    payload: { canvasId: 'canvas-1' },
  });
  t.equal(revoke.statusCode, 200);
  w.clock.ms += 1000;
  const token = await w.h.canvasToken('canvas-1', 'mac-1');
  const old = await w.invoke('web-search', { token });
  t.equal(
    `${old.status} ${old.body?.code} ${old.body?.details?.reason} ${old.body?.details?.cause}`,
    '403 forbidden grant_invalid canvas_revoked',
    'a grant minted before the cut-off is refused, even with a fresh canvas token',
  );
  const fresh = await w.mint('canvas-1', 'thread-1');
  t.equal((await w.invoke('web-search', { token, grant: fresh })).status, 200, 'a grant minted after the cut-off works');
  t.equal(
    (await w.invoke('web-search', { token: w.tokens.c2m1, grant: w.grants.t3, canvas: 'canvas-2' })).status,
    200,
    "another canvas's grants live on",
  );
});

t.test('a thread-bound grant needs X-Huabu-Thread-Id: missing is 403 forbidden (reason thread_required)', async (t) => {
  const w = await world(t);
  const missing = await w.invoke('web-search', { thread: null });
  t.equal(`${missing.status} ${missing.body?.code} ${missing.body?.details?.reason}`, '403 forbidden thread_required');
  const other = await w.invoke('web-search', { grant: w.grants.t4, thread: 'thread-1' });
  t.equal(`${other.status} ${other.body?.code} ${other.body?.details?.reason}`, '403 forbidden thread_mismatch');
  t.equal((await w.invoke('web-search', { thread: 'thread-1' })).status, 200);
  t.equal(w.endpoint.received.length, 1, 'only the call naming its thread reached the endpoint');
  const outcomes = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke').map((a) => a.outcome);
  t.same(outcomes, ['forbidden', 'forbidden', 'ok']);
});

t.test('hosted capability IDs belong to the host: a machine cannot take one first', async (t) => {
  const w = await world(t);
  // ghost-search is hosted by the capabilities file, and nobody has registered its record yet.
  const put = await w.h.put('mac-1', w.machines.m1, 'ghost-search');
  t.equal(put.statusCode, 403, 'a single PUT is refused');
  t.equal(put.json().code, 'forbidden');
  t.same(put.json().details, { ids: ['ghost-search'] });
  const reconcile = await w.h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-1/resources',
    headers: w.h.bearer(w.machines.m1),
    payload: { resources: [{ schemaVersion: 1, id: 'ghost-search', name: 'Ghost', description: 'A ghost.', instructions: 'Use it.' }] },
  });
  t.equal(reconcile.statusCode, 403, 'a reconcile is refused');
  t.same(reconcile.json().details, { ids: ['ghost-search'] });
  const held = await w.h.app.inject({ method: 'GET', url: '/api/acp/resources/ghost-search', headers: w.h.owner });
  t.equal(held.statusCode, 404, 'nothing was stored');
  const host = await w.h.put('huabu', w.h.huabu.authorization!.slice('Bearer '.length), 'ghost-search');
  t.equal(host.statusCode, 201, 'the host registers it');
});

t.test("an answer carrying the capability's own credential is 502 provider_failure, and the credential goes nowhere", async (t) => {
  const w = await world(t);
  for (const id of ['echo-search', 'echo64-search']) {
    const res = await w.invoke(id);
    t.equal(
      `${res.status} ${res.body?.code} ${res.body?.details?.reason} ${res.body?.details?.cause}`,
      '502 provider_failure invocation_failed credential_echoed',
      id,
    );
    t.notOk(res.text.includes(SEARCH_KEY), `${id}: not in the answer`);
    t.notOk(res.text.includes(Buffer.from(SEARCH_KEY).toString('base64').slice(8, 40)), `${id}: nor in base64`);
  }
  const outcomes = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke').map((a) => a.outcome);
  t.same(outcomes, ['provider_failure', 'provider_failure'], 'audited as failed');
  const audit = await readFile(`${w.h.dataDir}/audit.jsonl`, 'utf8');
  t.notOk(audit.includes(SEARCH_KEY), 'not in the audit');
  const log = await readFile(w.h.logFile, 'utf8');
  t.notOk(log.includes(SEARCH_KEY), 'not in the log');
  t.match(log, /"reason":"credential_echoed"/, 'the host log says why');
  t.equal((await w.invoke('web-search')).status, 200, 'an answer without it passes');
});

t.test('a failed answer is audited as failed: the outcome is what the agent got', async (t) => {
  const w = await world(t);
  const res = await w.invoke('deep-search');
  const outcomes = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke').map((a) => a.outcome);
  t.same(outcomes, [res.status === 200 ? 'ok' : res.body?.code], `the audit says what the agent got (${res.status} ${res.body?.code})`);
  t.equal(
    `${res.status} ${res.body?.code} ${res.body?.details?.reason} ${res.body?.details?.cause}`,
    '502 provider_failure invocation_failed output_too_deep',
  );
});

t.test('GrantQuotas: in flight per (grant, capability) and per grant, released once; idle keys dropped', (t) => {
  let now = 0;
  const quotas = new GrantQuotas(() => now);
  const limits = { concurrency: 2, perMinute: 100, inFlightPerGrant: 3 };
  const a1 = quotas.acquire('g', 'a', limits);
  const a2 = quotas.acquire('g', 'a', limits);
  t.match(quotas.acquire('g', 'a', limits), { ok: false, reason: 'concurrency' }, "the capability's bound first");
  const b1 = quotas.acquire('g', 'b', limits);
  t.match(quotas.acquire('g', 'b', limits), { ok: false, reason: 'in_flight', retryAfterSeconds: 1 }, "then the grant's");
  t.match(quotas.acquire('other', 'b', limits), { ok: true }, 'another grant is not counted');
  if (!a1.ok || !a2.ok || !b1.ok) throw new Error('acquired');
  a1.release();
  a1.release();
  t.match(quotas.acquire('g', 'b', limits), { ok: true }, 'one release frees one slot, however often it is called');
  t.match(quotas.acquire('g', 'c', limits), { ok: false, reason: 'in_flight' });
  now += 61_000;
  t.equal(quotas.size, 3, 'keys with calls in flight stay');
  t.end();
});
