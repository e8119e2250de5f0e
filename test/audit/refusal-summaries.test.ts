// Anonymous refusals and the audit log: a burst of bad-token writes is summarized per client address (one
// line at the first refusal, one summary with the count when the window ends), so it cannot rotate earlier
// entries away; repeated authentication failures from one address are refused 429 before authentication;
// an /invoke refusal is one line; every string an audit entry carries is cut and stripped of control
// characters; no token reaches an audit line or the log.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { AnonymousRefusals, OTHER_CLIENTS, SUMMARY_ACTION } from '../../src/audit/anonymous-refusals.js';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import type { AuditEntry } from '../../src/registry/store.js';
import { logFilesOldestFirst } from '../../src/storage/append-log.js';
import { build, type TestApp } from '../helpers/build.js';

type Line = { at: string; actor: string; action: string; id: string; outcome: string; details?: Record<string, unknown> };

/** Every audit line, rotated files first (oldest first). */
async function allLines(h: TestApp): Promise<Line[]> {
  const out: Line[] = [];
  for (const file of await logFilesOldestFirst(path.join(h.dataDir, 'audit.jsonl'))) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const l of text.split('\n').filter(Boolean)) out.push(JSON.parse(l) as Line);
  }
  return out;
}

const BAD_TOKEN = 'arr_machine_' + 'Q'.repeat(43);
const CONTROL = /\p{Cc}/u; // C0, DEL and C1

async function burst(h: TestApp, count: number, remoteAddress: string, url: string, parallel = 10): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += parallel) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(parallel, count - i) }, () =>
        h.app.inject({
          method: 'PUT',
          url,
          remoteAddress,
          headers: h.bearer(BAD_TOKEN),
          payload: { schemaVersion: 1, name: 'n', description: 'd', instructions: 'i' },
        }),
      ),
    );
    statuses.push(...batch.map((r) => r.statusCode));
    // As over a network: the audit appends of one batch are written before the next batch arrives.
    await new Promise((r) => setTimeout(r, 10));
  }
  return statuses;
}

t.test('a burst of anonymous writes is summarized per address and does not rotate an earlier entry away', async (t) => {
  // A small log (4 KiB, one rotated file): before, 1,500 refusals (one line each) pushed out the enrollment.
  // The per-address limit is off here, so the summary alone must bound the lines.
  const h = await build(t, { env: { AUDIT_MAX_BYTES: '4096', AUDIT_MAX_FILES: '1', AUTH_FAILURES_PER_MINUTE: '0' } });
  await h.enroll('mac-a');
  const addresses = ['203.0.113.7', '203.0.113.8', '2001:db8::1'];
  for (const address of addresses) {
    const statuses = await burst(h, 500, address, '/api/acp/providers/mac-a/resources/tool-x');
    t.ok(
      statuses.every((s) => s === 401),
      `${address}: 500 × 401`,
    );
  }
  await h.app.close();
  const lines = await allLines(h);
  t.ok(
    lines.some((l) => l.action === 'machine.enroll' && l.id === 'mac-a' && l.outcome === 'enrolled'),
    'the enrollment is still in the log',
  );
  const anonymous = lines.filter((l) => l.actor === 'anonymous');
  t.ok(anonymous.length <= 2 * addresses.length, `at most two lines per address (${anonymous.length} for 1,500 refusals)`);
  for (const [address, client] of addresses.map((a) => [a, a.includes(':') ? '2001:db8::/64' : a])) {
    const mine = anonymous.filter((l) => l.details?.client === client);
    t.equal(mine[0]?.outcome, 'unauthorized', `${address}: the first refusal is written at once`);
    t.match(mine[0], { action: 'PUT /api/acp/providers/:provider/resources/:id', id: '-' });
    const summary = mine.find((l) => l.action === 'anonymous.refusals');
    t.match(summary?.details, { client, unauthorized: 499 }, `${address}: the other 499 are counted in one summary`);
  }
  const text = lines.map((l) => JSON.stringify(l)).join('\n');
  t.notOk(text.includes(BAD_TOKEN.slice(0, 20)), 'the presented token is in no audit line');
  t.notOk((await readFile(h.logFile, 'utf8')).includes(BAD_TOKEN.slice(0, 20)), 'nor in the log');
});

t.test('an /invoke refusal is one audit line, with or without a canvas token', async (t) => {
  const h = await build(t, { env: { AUTH_FAILURES_PER_MINUTE: '0' } });
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const before = (await allLines(h)).length;
  const invoke = (headers: Record<string, string>, remoteAddress: string) =>
    h.app.inject({
      method: 'POST',
      url: '/api/rfs/canvas-1/resources/web-search/invoke',
      remoteAddress,
      headers,
      payload: { schemaVersion: 1, input: {} },
    });
  t.equal((await invoke({}, '198.51.100.1')).statusCode, 401, 'no canvas token');
  await new Promise((r) => setTimeout(r, 100));
  t.equal((await allLines(h)).length, before + 1, 'one line for an anonymous /invoke 401');
  t.equal((await invoke(h.bearer(canvas), '198.51.100.2')).statusCode, 403, 'a canvas token without a grant');
  await new Promise((r) => setTimeout(r, 100));
  const after = await allLines(h);
  t.equal(after.length, before + 2, 'one line for a grant refusal');
  t.match(after.at(-1), { action: 'resource.invoke', outcome: 'forbidden', details: { reason: 'grant_invalid' } });
});

t.test('repeated authentication failures from one address are refused before authentication', async (t) => {
  const h = await build(t, { env: { AUTH_FAILURES_PER_MINUTE: '5' } });
  const token = await h.enroll('mac-a');
  const url = '/api/acp/providers/mac-a/resources/tool-x';
  const statuses = await burst(h, 8, '203.0.113.20', url, 1);
  t.same(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
  t.same(statuses.slice(5), [429, 429, 429], 'past the bound: 429');
  const limited = await h.app.inject({ method: 'PUT', url, remoteAddress: '203.0.113.20', headers: h.bearer(BAD_TOKEN), payload: {} });
  t.equal(limited.json().code, 'rate_limited');
  const retry = Number(limited.headers['retry-after']);
  t.ok(retry >= 1 && retry <= 60, `Retry-After within the window (${retry} s)`);
  const owner = await h.app.inject({ method: 'GET', url: '/api/acp/machines', remoteAddress: '203.0.113.20', headers: h.owner });
  t.equal(owner.statusCode, 429, 'the address is refused before its token is looked at');
  t.equal(
    (await h.app.inject({ url: '/healthz', remoteAddress: '203.0.113.20' })).statusCode,
    200,
    'routes without a credential are not limited',
  );
  const other = await h.app.inject({
    method: 'PUT',
    url,
    remoteAddress: '203.0.113.21',
    headers: h.bearer(token),
    payload: { schemaVersion: 1, name: 'Tool', description: 'A tool.', instructions: 'Use it.' },
  });
  t.equal(other.statusCode, 201, 'a valid token from another address is unaffected');
  for (let i = 0; i < 6; i++) {
    const ok = await h.app.inject({ method: 'GET', url: '/api/acp/machines', remoteAddress: '203.0.113.22', headers: h.owner });
    t.equal(ok.statusCode, 200, 'successful requests do not count');
  }
  await h.app.close();
  const summary = (await allLines(h)).find((l) => l.action === 'anonymous.refusals' && l.details?.client === '203.0.113.20');
  t.match(summary?.details, { unauthorized: 4, rate_limited: 4 }, 'the limited requests are counted in the summary');
});

t.test('every string of every audit entry is cut and stripped of control characters', async (t) => {
  const written: AuditEntry[] = [];
  const trail = new AuditTrail({
    appendAudit: (entries) => {
      written.push(...entries);
      return Promise.resolve();
    },
  });
  const dirty = 'a\u0000b\u001b[31mc\r\nd\u0085e\u007f';
  await trail.record([
    { actor: dirty, action: dirty, id: 'x'.repeat(5000), outcome: dirty, details: { field: dirty, list: [dirty, 'ok'], n: 3 } },
  ]);
  const [entry] = written;
  for (const value of [
    entry!.actor,
    entry!.action,
    entry!.outcome,
    entry!.details!.field as string,
    ...(entry!.details!.list as string[]),
  ]) {
    t.notMatch(value, CONTROL, `no control character in ${JSON.stringify(value)}`);
  }
  t.equal(entry!.actor, 'a\ufffdb\ufffd[31mc\ufffd\ufffdd\ufffde\ufffd', 'each control character is replaced, the rest kept');
  t.ok(entry!.id.length <= 512, `cut to 512 (${entry!.id.length})`);
  t.match(entry!.id, /^x+…\[\+\d+\]$/, 'with a marker saying how much was cut');
  t.equal(entry!.details!.n, 3, 'numbers stay');
  const intent = trail.intent(dirty, dirty);
  t.notMatch(intent.actor + intent.action, CONTROL, "a store-written entry's fields too");

  // Through the app: a canvas token holder's raw resource ID reaches the invocation's entry.
  const h = await build(t, { env: { AUTH_FAILURES_PER_MINUTE: '0' } });
  await h.enroll('mac-a');
  const canvas = await h.canvasToken('canvas-1', 'mac-a');
  const raw = 'web%00search%1b%5b2J%0d%0a' + 'y'.repeat(1000);
  const res = await h.app.inject({
    method: 'POST',
    url: `/api/rfs/canvas-1/resources/${raw}/invoke`,
    headers: h.bearer(canvas),
    payload: { schemaVersion: 1, input: {} },
  });
  t.equal(res.statusCode, 403, 'refused for its missing grant');
  await new Promise((r) => setTimeout(r, 100));
  const line = (await allLines(h)).find((l) => l.action === 'resource.invoke');
  t.ok(line, 'the invocation is audited');
  t.notMatch(JSON.stringify(line), /\\u00(0|1)|\\r|\\n/, 'no escaped control character in the stored line');
  t.ok(line!.id.length <= 512 && String(line!.details?.resource).length <= 512, 'the ID is cut');
  t.match(line!.id, /^web\ufffdsearch\ufffd\[2J\ufffd\ufffdy+…\[\+\d+\]$/, 'sanitized, with the cut marked');
});

t.test('a summary is written when its window ends; addresses beyond the bound share one', async (t) => {
  const written: AuditEntry[] = [];
  const trail = new AuditTrail({
    appendAudit: (entries) => {
      written.push(...entries);
      return Promise.resolve();
    },
  });
  const summaries = new AnonymousRefusals(trail, { windowMs: 100, maxClients: 2 });
  t.teardown(() => summaries.close());
  for (const client of ['a', 'a', 'a', 'b', 'c', 'd', 'd'])
    await summaries.note(client, 'PUT /x', client === 'd' ? 'rate_limited' : 'unauthorized');
  t.same(
    written.map((e) => `${e.action} ${e.details?.client}`),
    ['PUT /x a', 'PUT /x b'],
    'the first refusal of each tracked address at once; none for addresses beyond the bound',
  );
  await new Promise((r) => setTimeout(r, 250));
  const summariesWritten = written.filter((e) => e.action === SUMMARY_ACTION);
  t.match(summariesWritten, [
    {
      actor: 'anonymous',
      id: '-',
      outcome: 'summary',
      details: { client: 'a', unauthorized: 2, rate_limited: 0, since: String, until: String },
    },
    { details: { client: OTHER_CLIENTS, unauthorized: 1, rate_limited: 2 } },
  ]);
  t.equal(summariesWritten.length, 2, 'no summary for an address with nothing beyond its first line');
  await summaries.note('a', 'PUT /x', 'unauthorized');
  t.equal(written.at(-1)?.action, 'PUT /x', 'a new window writes the first refusal at once again');
});

t.test('AUTH_FAILURES_PER_MINUTE: default 30, 0 turns the bound off, anything else is refused', async (t) => {
  const base = { DATA_DIR: '/var/lib/registry' };
  t.equal(loadConfig(base).authFailuresPerMinute, 30);
  t.equal(loadConfig({ ...base, AUTH_FAILURES_PER_MINUTE: '0' }).authFailuresPerMinute, 0);
  t.throws(() => loadConfig({ ...base, AUTH_FAILURES_PER_MINUTE: '-1' }), /AUTH_FAILURES_PER_MINUTE/);
  t.throws(() => loadConfig({ ...base, AUTH_FAILURES_PER_MINUTE: 'many' }), ConfigError);

  // Off: refusals go on being 401, however many.
  const h = await build(t, { env: { AUTH_FAILURES_PER_MINUTE: '0' } });
  const statuses = await burst(h, 40, '203.0.113.30', '/api/acp/providers/mac-a/resources/tool-x');
  t.ok(
    statuses.every((s) => s === 401),
    '40 × 401',
  );
});

t.test('on a route two credentials may use, the request that passes the bound is answered 429 by each', async (t) => {
  // POST /canvas-tokens takes the owner's or Huabu's token: a refused request is tried by both strategies,
  // and the second must not turn the first one's 429 back into a 401.
  const h = await build(t, { env: { AUTH_FAILURES_PER_MINUTE: '1' } });
  const send = () =>
    h.app.inject({
      method: 'POST',
      url: '/api/acp/canvas-tokens',
      remoteAddress: '203.0.113.40',
      headers: h.bearer(BAD_TOKEN),
      payload: { canvasId: 'c', agentletId: 'm' },
    });
  const statuses = (await Promise.all([send(), send(), send()])).map((r) => r.statusCode);
  t.ok(statuses.filter((s) => s === 401).length <= 1, `at most one 401 past a bound of 1 (${statuses})`);
  t.ok(statuses.includes(429), 'the others are 429');
  t.equal((await send()).statusCode, 429, 'and so is the next one, before authentication');
});
