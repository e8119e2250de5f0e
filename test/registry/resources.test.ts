import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { JsonFileStore, readStoredResources } from '../../src/storage/json-file-store.js';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import { ResourceRegistry } from '../../src/registry/resource-registry.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { build, tempDataDir } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';

/** The durable bytes of the catalogue: resources.json and its journal. */
const storedBytes = async (dataDir: string) => {
  const file = path.join(dataDir, 'agent-resources', 'resources.json');
  return `${await readFile(file, 'utf8')}\n--journal--\n${await readFile(`${file}.journal`, 'utf8').catch(() => '')}`;
};

t.test('a provider registers, replaces and withdraws its own record', async (t) => {
  const h = await build(t);
  const created = await h.put('huabu', h.huabu.authorization!.slice(7), 'web-search');
  t.equal(created.statusCode, 201);
  t.same(created.json(), {
    schemaVersion: 1,
    id: 'web-search',
    name: 'Name of web-search',
    provider: 'huabu',
    description: 'About web-search.',
    instructions: 'Use web-search via $HUABU_RFS_URL.',
  });
  const replaced = await h.put('huabu', h.huabu.authorization!.slice(7), 'web-search', { name: 'Web search' });
  t.equal(replaced.statusCode, 200);
  t.equal(replaced.json().name, 'Web search');

  const read = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.equal(read.json().name, 'Web search');

  const gone = await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/web-search', headers: h.huabu });
  t.equal(gone.statusCode, 204);
  const missing = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'resource_not_found');

  const onDisk = JSON.parse(await readFile(path.join(h.dataDir, 'agent-resources', 'resources.json'), 'utf8'));
  t.match(onDisk, { schemaVersion: 1, state: { resources: [] } });
  t.same(await readStoredResources(h.dataDir), [], 'the file with its journal replayed holds nothing');
  const audit = await auditLines(h);
  t.same(
    audit.map((a) => [a.actor, a.action, a.id, a.outcome]),
    [
      ['provider:huabu', 'resource.register', 'web-search', 'created'],
      ['provider:huabu', 'resource.register', 'web-search', 'replaced'],
      ['provider:huabu', 'resource.withdraw', 'web-search', 'withdrawn'],
    ],
  );
});

const HUABU_TOKEN = 'arr_huabu_CANARYhuabu0token0value0for0tests00';

t.test('bad input is rejected with a stable code and nothing is stored', async (t) => {
  const h = await build(t);
  const url = '/api/acp/providers/huabu/resources/web-search';
  const base = { schemaVersion: 1, name: 'Web search', description: 'Search the web.', instructions: 'Ask $HUABU_RFS_URL.' };
  const cases: [string, unknown, number, string][] = [
    ['unknown property', { ...base, kind: 'tool' }, 400, 'validation_failed'],
    ['missing field', { schemaVersion: 1, name: 'x', description: 'y' }, 400, 'validation_failed'],
    ['wrong schemaVersion', { ...base, schemaVersion: 2 }, 400, 'validation_failed'],
    ['name too long', { ...base, name: 'n'.repeat(129) }, 400, 'validation_failed'],
    ['description too long', { ...base, description: 'd'.repeat(513) }, 400, 'validation_failed'],
    ['instructions too long', { ...base, instructions: 'i'.repeat(4001) }, 400, 'validation_failed'],
    ['control character', { ...base, name: 'Web\u0007search' }, 400, 'validation_failed'],
    ['carriage return', { ...base, description: 'a\rb' }, 400, 'validation_failed'],
    ['blank name', { ...base, name: '   ' }, 400, 'validation_failed'],
    ['id mismatch', { ...base, id: 'other-id' }, 400, 'validation_failed'],
    ['provider mismatch', { ...base, provider: 'agentlet-a' }, 400, 'validation_failed'],
    ['GitHub token', { ...base, instructions: `Use token ghp_${'a1B2'.repeat(9)} to call it.` }, 422, 'secret_detected'],
    ['own token format', { ...base, description: `see ${HUABU_TOKEN}` }, 422, 'secret_detected'],
    [
      'JWT',
      { ...base, instructions: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' },
      422,
      'secret_detected',
    ],
    ['connection string', { ...base, instructions: 'Connect to postgres://app:s3cretpw@db.internal:5432/main' }, 422, 'secret_detected'],
  ];
  for (const [name, payload, status, code] of cases) {
    const res = await h.app.inject({ method: 'PUT', url, headers: h.huabu, payload: payload as object });
    t.equal(res.statusCode, status, name);
    t.equal(res.json().code, code, name);
    if (code === 'secret_detected') {
      t.match(res.json().details.findings[0], { field: String, rule: String }, `${name}: names field and rule`);
      t.notMatch(res.body, /ghp_|eyJhbG|s3cretpw|CANARY/, `${name}: never echoes the value`);
    }
  }
  const bad = await h.app.inject({ method: 'PUT', url: '/api/acp/providers/huabu/resources/Not_Kebab', headers: h.huabu, payload: base });
  t.equal(bad.statusCode, 400, 'invalid ID in the path');
  const malformed = await h.app.inject({
    method: 'PUT',
    url,
    headers: { ...h.huabu, 'content-type': 'application/json' },
    payload: '{"schemaVersion": 1,',
  });
  t.equal(malformed.statusCode, 400);
  t.equal(malformed.json().code, 'validation_failed');
  const huge = await h.app.inject({
    method: 'PUT',
    url,
    headers: { ...h.huabu, 'content-type': 'application/json' },
    payload: JSON.stringify({ ...base, instructions: 'x'.repeat(2 * 1024 * 1024) }),
  });
  t.equal(huge.statusCode, 413);
  t.equal(huge.json().code, 'payload_too_large');

  const list = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.same(list.json().resources, [], 'nothing was stored');
});

t.test("another provider's ID is a conflict and the held record stays byte-for-byte", async (t) => {
  const h = await build(t);
  const machine = await h.enroll('agentlet-a');
  await h.put('huabu', HUABU_TOKEN, 'web-search');
  const before = await storedBytes(h.dataDir);

  const put = await h.put('agentlet-a', machine, 'web-search', { name: 'Hijacked' });
  t.equal(put.statusCode, 409);
  t.equal(put.json().code, 'resource_conflict');
  t.same(put.json().details, { ids: ['web-search'], conflicts: [{ id: 'web-search', provider: 'huabu' }] });
  const del = await h.app.inject({
    method: 'DELETE',
    url: '/api/acp/providers/agentlet-a/resources/web-search',
    headers: h.bearer(machine),
  });
  t.equal(del.statusCode, 409);
  t.same(await storedBytes(h.dataDir), before, 'file unchanged');
  const read = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.equal(read.json().provider, 'huabu');
  t.equal(read.json().name, 'Name of web-search');
  const missing = await h.app.inject({
    method: 'DELETE',
    url: '/api/acp/providers/agentlet-a/resources/nothing-here',
    headers: h.bearer(machine),
  });
  t.equal(missing.statusCode, 404);
});

t.test('50 concurrent conflicting registrations of one ID leave exactly one owner', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  const b = await h.enroll('agentlet-b');
  const attempts = Array.from({ length: 50 }, (_, i) =>
    i % 2 === 0 ? h.put('agentlet-a', a, 'shared-tool', { name: `A ${i}` }) : h.put('agentlet-b', b, 'shared-tool', { name: `B ${i}` }),
  );
  const results = await Promise.all(attempts);
  const owner = (await h.app.inject({ url: '/api/acp/resources/shared-tool', headers: h.owner })).json().provider as string;
  const winners = results.filter((r) => r.statusCode < 300);
  t.ok(winners.length >= 1);
  t.ok(
    winners.every((r) => r.json().provider === owner),
    'every acknowledged write belongs to the single owner',
  );
  const losers = results.filter((r) => r.statusCode === 409);
  t.equal(winners.length + losers.length, 50, 'every other attempt is a conflict');
  t.ok(losers.every((r) => r.json().details.conflicts[0].provider === owner));
  t.equal(results.filter((r) => r.statusCode === 201).length, 1, 'created exactly once');
});

t.test('reconcile replaces the whole set atomically; dry-run and conflicts change nothing', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  await h.put('huabu', HUABU_TOKEN, 'web-search');
  for (const id of ['tool-one', 'tool-two', 'tool-three']) await h.put('agentlet-a', a, id);
  const entry = (id: string, name = `Name of ${id}`) => ({
    schemaVersion: 1,
    id,
    name,
    description: `About ${id}.`,
    instructions: `Use ${id} via $HUABU_RFS_URL.`,
  });
  const url = '/api/acp/providers/agentlet-a/resources';
  const desired = { resources: [entry('tool-one'), entry('tool-two', 'Renamed'), entry('tool-four')] };
  const before = await storedBytes(h.dataDir);

  const plan = await h.app.inject({ method: 'PUT', url: `${url}?dryRun=true`, headers: h.bearer(a), payload: desired });
  t.equal(plan.statusCode, 200);
  t.same(plan.json(), { dryRun: true, created: ['tool-four'], replaced: ['tool-two'], withdrawn: ['tool-three'], unchanged: ['tool-one'] });
  t.same(await storedBytes(h.dataDir), before, 'dry-run wrote nothing');

  const conflict = await h.app.inject({
    method: 'PUT',
    url,
    headers: h.bearer(a),
    payload: { resources: [...desired.resources, entry('web-search')] },
  });
  t.equal(conflict.statusCode, 409);
  t.same(conflict.json().details.conflicts, [{ id: 'web-search', provider: 'huabu' }]);
  t.same(await storedBytes(h.dataDir), before, 'a conflict changes nothing');

  const dup = await h.app.inject({
    method: 'PUT',
    url,
    headers: h.bearer(a),
    payload: { resources: [entry('tool-one'), entry('tool-one')] },
  });
  t.equal(dup.statusCode, 400);

  const applied = await h.app.inject({ method: 'PUT', url, headers: h.bearer(a), payload: desired });
  t.same(applied.json(), {
    dryRun: false,
    created: ['tool-four'],
    replaced: ['tool-two'],
    withdrawn: ['tool-three'],
    unchanged: ['tool-one'],
  });
  const mine = await h.app.inject({ url, headers: h.bearer(a) });
  t.same(
    mine.json().resources.map((r: { id: string; name: string }) => [r.id, r.name]),
    [
      ['tool-four', 'Name of tool-four'],
      ['tool-one', 'Name of tool-one'],
      ['tool-two', 'Renamed'],
    ],
  );
  const all = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.same(
    all.json().resources.map((r: { id: string }) => r.id),
    ['tool-four', 'tool-one', 'tool-two', 'web-search'],
    "other providers' records untouched",
  );

  const empty = await h.app.inject({ method: 'PUT', url, headers: h.bearer(a), payload: { resources: [] } });
  t.same(empty.json().withdrawn, ['tool-four', 'tool-one', 'tool-two'], 'an empty set withdraws everything of this provider');
});

t.test('the catalogue: sorted, filtered by provider, ETag changes on write, 304 on match', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  await h.put('huabu', HUABU_TOKEN, 'web-search');
  await h.put('agentlet-a', a, 'a-local-tool');
  const first = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  t.equal(first.statusCode, 200);
  t.match(first.headers['content-type'], /^application\/json/);
  t.same(
    first.json().resources.map((r: { id: string }) => r.id),
    ['a-local-tool', 'web-search'],
  );
  const etag = first.headers.etag as string;
  t.match(etag, /^"[A-Za-z0-9_-]+"$/);

  const same = await h.app.inject({ url: '/api/acp/resources', headers: { ...h.owner, 'if-none-match': etag } });
  t.equal(same.statusCode, 304);
  t.equal(same.body, '');
  const weak = await h.app.inject({ url: '/api/acp/resources', headers: { ...h.owner, 'if-none-match': `"x", W/${etag}` } });
  t.equal(weak.statusCode, 304, 'weak comparison over a list');

  const filtered = await h.app.inject({ url: '/api/acp/resources?provider=agentlet-a', headers: h.owner });
  t.same(
    filtered.json().resources.map((r: { id: string }) => r.id),
    ['a-local-tool'],
  );
  t.not(filtered.headers.etag, etag, 'each view has its own ETag');

  await h.put('huabu', HUABU_TOKEN, 'web-search', { name: 'Changed' });
  const changed = await h.app.inject({ url: '/api/acp/resources', headers: { ...h.owner, 'if-none-match': etag } });
  t.equal(changed.statusCode, 200, 'a write changes the ETag');
  t.not(changed.headers.etag, etag);

  const unchanged = await h.put('huabu', HUABU_TOKEN, 'web-search', { name: 'Changed' });
  t.equal(unchanged.statusCode, 200);
  const still = await h.app.inject({ url: '/api/acp/resources', headers: { ...h.owner, 'if-none-match': changed.headers.etag as string } });
  t.equal(still.statusCode, 304, 'an identical replace keeps the ETag');
});

t.test('the dry-run validator reports every issue without storing anything', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  await h.put('huabu', HUABU_TOKEN, 'web-search');
  const validate = (headers: Record<string, string>, payload: unknown) =>
    h.app.inject({ method: 'POST', url: '/api/acp/resources/validate', headers, payload: payload as object });

  const good = await validate(h.bearer(a), { schemaVersion: 1, id: 'my-tool', name: 'Mine', description: 'd', instructions: 'i' });
  t.same(good.json(), { valid: true, issues: [] });

  const bad = await validate(h.bearer(a), {
    schemaVersion: 1,
    id: 'web-search',
    name: 'x'.repeat(200),
    description: 'd',
    instructions: `token ghp_${'a1B2'.repeat(9)}`,
    extra: true,
  });
  t.equal(bad.statusCode, 200);
  t.equal(bad.json().valid, false);
  const codes = bad
    .json()
    .issues.map((i: { code: string; field: string }) => `${i.code} ${i.field}`)
    .sort();
  t.same(codes, ['resource_conflict /id', 'secret_detected /instructions', 'validation_failed ', 'validation_failed /name']);
  t.notMatch(bad.body, 'ghp_');

  const asOwner = await validate(h.owner, {
    schemaVersion: 1,
    id: 'web-search',
    provider: 'huabu',
    name: 'n',
    description: 'd',
    instructions: 'i',
  });
  t.same(asOwner.json(), { valid: true, issues: [] }, 'huabu may replace its own record');
  t.equal((await h.app.inject({ url: '/api/acp/resources/my-tool', headers: h.owner })).statusCode, 404, 'nothing stored');
});

t.test('RFS shows huabu records and the token machine records only', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  const b = await h.enroll('agentlet-b');
  await h.put('huabu', HUABU_TOKEN, 'web-search');
  await h.put('agentlet-a', a, 'tool-a');
  await h.put('agentlet-b', b, 'tool-b');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const list = await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: h.bearer(token) });
  t.same(
    list.json().resources.map((r: { id: string }) => r.id),
    ['tool-a', 'web-search'],
  );
  const etag = list.headers.etag as string;
  t.equal(
    (await h.app.inject({ url: '/api/rfs/canvas-x/resources', headers: { ...h.bearer(token), 'if-none-match': etag } })).statusCode,
    304,
  );
  const own = await h.app.inject({ url: '/api/rfs/canvas-x/resources/tool-a', headers: h.bearer(token) });
  t.equal(own.json().provider, 'agentlet-a');
  const other = await h.app.inject({ url: '/api/rfs/canvas-x/resources/tool-b', headers: h.bearer(token) });
  t.equal(other.statusCode, 404, "another machine's record is not visible");
  t.notMatch(other.body, 'agentlet-b');
  const absent = await h.app.inject({ url: '/api/rfs/canvas-x/resources/nothing', headers: h.bearer(token) });
  t.equal(absent.statusCode, 404);
  t.equal(other.json().message.replace('tool-b', 'X'), absent.json().message.replace('nothing', 'X'), 'absent and invisible look alike');
});

t.test('unknown routes answer 404 not_found in the error shape', async (t) => {
  const h = await build(t);
  const res = await h.app.inject({ url: '/api/acp/nope' });
  t.equal(res.statusCode, 404);
  t.same(Object.keys(res.json()).sort(), ['code', 'error', 'message', 'statusCode']);
  t.equal(res.json().code, 'not_found');
});

t.test('JSON store: a registration stands when its audit line cannot be appended after it; the failure is reported', async (t) => {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  // The audit log failing (a full disk, say) after the resources document is durable.
  const log = Reflect.get(store, 'audit') as { append(entries: unknown[]): Promise<void> };
  log.append = () => Promise.reject(new Error('ENOSPC: no space left on device'));
  const reported: unknown[] = [];
  const audit = new AuditTrail(store, { now: () => new Date('2026-01-01T00:00:00.000Z') }, (err) => reported.push(err));
  const registry = new ResourceRegistry(store, new SecretScanner(), audit);
  const body = { schemaVersion: 1 as const, name: 'Web', description: 'Search.', instructions: 'Use it.' };
  const { outcome, record } = await registry.register('huabu', 'web-search', body, 'provider:huabu');
  t.equal(outcome, 'created', 'the request succeeds: the registration is durable');
  t.same(record, { schemaVersion: 1, id: 'web-search', name: 'Web', provider: 'huabu', description: 'Search.', instructions: 'Use it.' });
  t.same(await store.getResource('web-search'), record);
  t.match(reported, [/ENOSPC/], 'the lost audit line is reported once');
});

t.test('holdsUnchanged: true only when the provider already holds the ID exactly as the body would register it', async (t) => {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  const registry = new ResourceRegistry(store, new SecretScanner());
  const body = { schemaVersion: 1 as const, name: 'Web', description: 'Search.', instructions: 'Use it.' };
  t.equal(await registry.holdsUnchanged('huabu', 'web-search', body), false, 'not held at all');
  await registry.register('huabu', 'web-search', body, 'provider:huabu');
  t.equal(await registry.holdsUnchanged('huabu', 'web-search', body), true, 'held as it is');
  t.equal(await registry.holdsUnchanged('huabu', 'web-search', { ...body, instructions: 'Use it twice.' }), false, 'one field differs');
  t.equal(await registry.holdsUnchanged('mac-a', 'web-search', body), false, "another provider's ID: false, not a conflict");
  await registry.customize('web-search', { displayName: 'Search the web' }, 'owner');
  t.equal(await registry.holdsUnchanged('huabu', 'web-search', body), true, "the owner's customization is not a difference");
});

t.test('the reconcile schema states that IDs must be unique', async (t) => {
  const h = await build(t);
  const doc = (await h.app.inject({ url: '/openapi.json' })).json();
  const body = doc.paths['/api/acp/providers/{provider}/resources'].put.requestBody.content['application/json'].schema;
  t.match(body.properties.resources.description, /only once|unique/i);
});
