import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';
import { profileBody } from '../helpers/profiles.js';

const HUABU = CANARY.huabu;

async function create(h: TestApp, fields: Record<string, unknown> = {}) {
  return h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody(fields) });
}

/** A catalogue with a host resource, one resource on mac-a and one on mac-b. */
async function catalogue(h: TestApp): Promise<{ macA: string; macB: string }> {
  const macA = await h.enroll('mac-a');
  const macB = await h.enroll('mac-b');
  for (const [provider, token, id] of [
    ['huabu', HUABU, 'web-search'],
    ['mac-a', macA, 'local-git'],
    ['mac-b', macB, 'other-git'],
  ] as const) {
    const res = await h.put(provider, token, id);
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  return { macA, macB };
}

t.test('the owner creates, reads, lists and deletes a profile that selects resources', async (t) => {
  const h = await build(t);
  await catalogue(h);
  const created = await create(h, { resourceIds: ['local-git', 'web-search'], customData: { color: 'teal', pinned: true } });
  t.equal(created.statusCode, 201);
  const profile = created.json();
  t.match(profile.id, /^prf-[a-z2-7]{16}$/, 'the server assigns a readable, URL-safe id');
  t.same(profile, {
    schemaVersion: 2,
    id: profile.id,
    revision: 1,
    alias: 'Reviewer',
    agentletId: 'mac-a',
    workingDirPath: '/home/me/site',
    resourceIds: ['local-git', 'web-search'],
    customData: { color: 'teal', pinned: true },
    launch: { kind: 'acp-command', command: 'claude-code-acp' },
  });
  t.equal(created.headers.location, `/api/acp/profiles/${profile.id}`);
  t.match(created.headers.etag, /^"[A-Za-z0-9_-]+"$/);

  const read = await h.app.inject({ url: `/api/acp/profiles/${profile.id}`, headers: h.owner });
  t.equal(read.statusCode, 200);
  t.same(read.json(), profile);
  t.equal(read.headers.etag, created.headers.etag, 'GET returns the same ETag as the create');

  const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
  t.same(list.json(), { profiles: [profile], selectableProfileIds: [profile.id] });

  const onDisk = JSON.parse(await readFile(path.join(h.dataDir, 'agent-team', 'registry.json'), 'utf8'));
  // With upstream's empty Agent Team state around the profiles, so upstream's store reads the file too.
  t.same(onDisk, { schemaVersion: 4, state: { roots: [], members: [], profiles: [profile], configs: [] } });

  const gone = await h.app.inject({
    method: 'DELETE',
    url: `/api/acp/profiles/${profile.id}`,
    headers: { ...h.owner, 'if-match': read.headers.etag as string },
  });
  t.equal(gone.statusCode, 204);
  const missing = await h.app.inject({ url: `/api/acp/profiles/${profile.id}`, headers: h.owner });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'profile_not_found');
  const again = await h.app.inject({ method: 'DELETE', url: `/api/acp/profiles/${profile.id}`, headers: h.owner });
  t.equal(again.json().code, 'profile_not_found');

  const audit = await auditLines(h);
  t.same(
    audit.filter((a) => a.action.startsWith('profile.')).map((a) => [a.actor, a.action, a.id, a.outcome]),
    [
      ['owner', 'profile.create', profile.id, 'created'],
      ['owner', 'profile.delete', profile.id, 'deleted'],
      ['owner', 'profile.delete', profile.id, 'profile_not_found'],
    ],
  );
});

t.test('only the owner manages profiles', async (t) => {
  const h = await build(t);
  const anonymous = await h.app.inject({ url: '/api/acp/profiles' });
  t.equal(anonymous.statusCode, 401);
  const provider = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.huabu, payload: profileBody() });
  t.equal(provider.statusCode, 403);
  t.equal(provider.json().code, 'forbidden');
});

t.test('placement: a profile selects only known resources of huabu or its own machine', async (t) => {
  const h = await build(t);
  await catalogue(h);

  const unknown = await create(h, { resourceIds: ['web-search', 'no-such-thing', 'nor-this'] });
  t.equal(unknown.statusCode, 422);
  t.equal(unknown.json().code, 'unresolved_resource_ids');
  t.same(unknown.json().details.ids, ['no-such-thing', 'nor-this']);

  const crossMachine = await create(h, { resourceIds: ['web-search', 'other-git'] });
  t.equal(crossMachine.statusCode, 422);
  t.equal(crossMachine.json().code, 'resource_not_eligible');
  t.same(crossMachine.json().details.ids, ['other-git']);

  const huabu = await create(h, { alias: 'host only', resourceIds: ['web-search'] });
  t.equal(huabu.statusCode, 201, 'host resources are eligible on every machine');
  const sameMachine = await create(h, { alias: 'local', resourceIds: ['local-git'] });
  t.equal(sameMachine.statusCode, 201, "the machine's own resources are eligible");
  const onB = await create(h, { alias: 'on b', agentletId: 'mac-b', resourceIds: ['other-git', 'web-search'] });
  t.equal(onB.statusCode, 201);
  t.same(onB.json().resourceIds, ['other-git', 'web-search'], 'order is kept');

  const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
  t.equal(list.json().profiles.length, 3, 'refused creates stored nothing');

  const patchCross = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${huabu.json().id}`,
    headers: h.owner,
    payload: { resourceIds: ['other-git'] },
  });
  t.equal(patchCross.statusCode, 422, 'PATCH is placement-checked too');
  t.equal(patchCross.json().code, 'resource_not_eligible');
  const patchUnknown = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${huabu.json().id}`,
    headers: h.owner,
    payload: { resourceIds: ['gone'] },
  });
  t.equal(patchUnknown.json().code, 'unresolved_resource_ids');
  t.same(patchUnknown.json().details.ids, ['gone']);
});

t.test('resourceIds: at most 64, unique, valid IDs', async (t) => {
  const h = await build(t);
  await catalogue(h);
  const dup = await create(h, { resourceIds: ['web-search', 'web-search'] });
  t.equal(dup.statusCode, 400);
  t.equal(dup.json().code, 'validation_failed');
  const tooMany = await create(h, { resourceIds: Array.from({ length: 65 }, (_, i) => `r-${i}`) });
  t.equal(tooMany.statusCode, 400);
  const invalid = await create(h, { resourceIds: ['Not_An_Id'] });
  t.equal(invalid.statusCode, 400);
});

t.test('PATCH replaces the whole resource list and leaves other fields alone', async (t) => {
  const h = await build(t);
  await catalogue(h);
  const created = (await create(h, { resourceIds: ['web-search', 'local-git'], customData: { a: 1 } })).json();
  const url = `/api/acp/profiles/${created.id}`;

  const replaced = await h.app.inject({ method: 'PATCH', url, headers: h.owner, payload: { resourceIds: ['local-git'] } });
  t.equal(replaced.statusCode, 200);
  t.same(replaced.json(), { ...created, revision: 2, resourceIds: ['local-git'] }, 'the list is replaced, not merged');
  t.not(replaced.headers.etag, undefined);

  const reordered = await h.app.inject({ method: 'PATCH', url, headers: h.owner, payload: { resourceIds: ['web-search', 'local-git'] } });
  t.same(reordered.json().resourceIds, ['web-search', 'local-git']);

  const cleared = await h.app.inject({ method: 'PATCH', url, headers: h.owner, payload: { resourceIds: [] } });
  t.same(cleared.json().resourceIds, [], '[] selects nothing');

  const renamed = await h.app.inject({
    method: 'PATCH',
    url,
    headers: h.owner,
    payload: { alias: 'Writer', workingDirPath: '/srv/work', customData: { b: 'two' } },
  });
  t.same(renamed.json(), {
    ...created,
    revision: 5,
    alias: 'Writer',
    workingDirPath: '/srv/work',
    resourceIds: [],
    customData: { b: 'two' },
  });

  const read = await h.app.inject({ url, headers: h.owner });
  t.same(read.json(), renamed.json());
  t.equal(read.headers.etag, renamed.headers.etag, 'the PATCH response carries the new ETag');

  for (const payload of [
    { agentletId: 'mac-b' },
    { launch: { kind: 'acp-command', command: 'x' } },
    { schemaVersion: 2 },
    { id: 'prf-other' },
  ]) {
    const res = await h.app.inject({ method: 'PATCH', url, headers: h.owner, payload });
    t.equal(res.statusCode, 400, `PATCH of ${Object.keys(payload)[0]} is refused`);
  }
  const missing = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/profiles/prf-nosuchprofile00',
    headers: h.owner,
    payload: { alias: 'x' },
  });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'profile_not_found');
});

t.test('If-Match: two PATCHes with the same ETag, exactly one wins', async (t) => {
  const h = await build(t);
  const created = await create(h);
  const url = `/api/acp/profiles/${created.json().id}`;
  const etag = created.headers.etag as string;

  const [a, b] = await Promise.all([
    h.app.inject({ method: 'PATCH', url, headers: { ...h.owner, 'if-match': etag }, payload: { alias: 'From A' } }),
    h.app.inject({ method: 'PATCH', url, headers: { ...h.owner, 'if-match': etag }, payload: { alias: 'From B' } }),
  ]);
  t.same([a.statusCode, b.statusCode].sort(), [200, 412]);
  const winner = a.statusCode === 200 ? a : b;
  const loser = a.statusCode === 200 ? b : a;
  t.equal(loser.json().code, 'precondition_failed');
  const read = await h.app.inject({ url, headers: h.owner });
  t.equal(read.json().alias, winner.json().alias, "the loser's change was not applied");

  const stale = await h.app.inject({ method: 'DELETE', url, headers: { ...h.owner, 'if-match': etag } });
  t.equal(stale.statusCode, 412, 'DELETE honours If-Match too');
  t.equal((await h.app.inject({ url, headers: h.owner })).statusCode, 200, 'and the profile is still there');

  const fresh = await h.app.inject({
    method: 'PATCH',
    url,
    headers: { ...h.owner, 'if-match': read.headers.etag as string },
    payload: { alias: 'C' },
  });
  t.equal(fresh.statusCode, 200);
  const any = await h.app.inject({ method: 'PATCH', url, headers: { ...h.owner, 'if-match': '*' }, payload: { alias: 'D' } });
  t.equal(any.statusCode, 200, '`*` matches any existing profile');
  const weak = await h.app.inject({
    method: 'PATCH',
    url,
    headers: { ...h.owner, 'if-match': `W/${any.headers.etag}` },
    payload: { alias: 'E' },
  });
  t.equal(weak.statusCode, 412, 'weak ETags never match (strong comparison)');
  const unconditional = await h.app.inject({ method: 'PATCH', url, headers: h.owner, payload: { alias: 'F' } });
  t.equal(unconditional.statusCode, 200, 'without If-Match the change is unconditional');
});

t.test('aliases are unique ignoring case', async (t) => {
  const h = await build(t);
  const first = await create(h, { alias: 'Reviewer' });
  t.equal(first.statusCode, 201);
  const clash = await create(h, { alias: 'rEVIEWER', agentletId: 'mac-b' });
  t.equal(clash.statusCode, 409);
  t.equal(clash.json().code, 'alias_conflict');
  t.equal(clash.json().details.id, first.json().id);

  const other = (await create(h, { alias: 'Writer' })).json();
  const patchClash = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${other.id}`,
    headers: h.owner,
    payload: { alias: 'REVIEWER' },
  });
  t.equal(patchClash.statusCode, 409);
  t.equal(patchClash.json().code, 'alias_conflict');
  const ownCase = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${first.json().id}`,
    headers: h.owner,
    payload: { alias: 'REVIEWER' },
  });
  t.equal(ownCase.statusCode, 200, 'a profile may change the case of its own alias');

  // 255 is upstream's bound (docs/profiles-and-launching.md; it was 64).
  for (const alias of ['', ' ', 'tab\there', 'x'.repeat(256)]) {
    t.equal((await create(h, { alias })).statusCode, 400, `alias ${JSON.stringify(alias)} is refused`);
  }
});

t.test('field rules: workingDirPath, customData, schemaVersion, launch kind', async (t) => {
  const h = await build(t);
  for (const workingDirPath of ['relative/dir', '/with\u0000nul', `/${'a'.repeat(4096)}`]) {
    const res = await create(h, { workingDirPath });
    t.equal(res.statusCode, 400, `workingDirPath ${JSON.stringify(workingDirPath.slice(0, 20))} is refused`);
  }
  t.equal((await create(h, { alias: 'win', workingDirPath: 'C:\\Users\\me\\site' })).statusCode, 201, 'a Windows drive path is absolute');

  const big = await create(h, { customData: { blob: 'x'.repeat(16 * 1024) } });
  t.equal(big.statusCode, 400);
  t.equal(big.json().details.field, '/customData');
  t.equal((await create(h, { customData: [1, 2] })).statusCode, 400, 'customData must be an object');

  const versioned = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { ...profileBody(), schemaVersion: 2 },
  });
  t.equal(versioned.statusCode, 400);
  t.equal(versioned.json().code, 'validation_failed');
  const withId = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { ...profileBody(), id: 'prf-mine' },
  });
  t.equal(withId.statusCode, 400);

  const manifest = await create(h, {
    alias: 'team',
    launch: { kind: 'agent-team-manifest', manifestPath: '/teams/a.yaml', harness: 'claude' },
  });
  t.equal(manifest.statusCode, 409);
  t.equal(manifest.json().code, 'invalid_profile_kind');
});

t.test('a secret in customData is refused naming the field, never echoing the value', async (t) => {
  const h = await build(t);
  const secret = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  const res = await create(h, { customData: { notes: { deploy: `use ${secret}` } } });
  t.equal(res.statusCode, 422);
  t.equal(res.json().code, 'secret_detected');
  t.equal(res.json().details.findings[0].field, '/customData/notes/deploy');
  t.notMatch(res.body, secret);

  const inKey = await create(h, { customData: { [CANARY.owner]: 1 } });
  t.equal(inKey.statusCode, 422, 'keys are scanned too');
  t.notMatch(inKey.body, CANARY.owner);
  const nested = await create(h, { customData: { [CANARY.owner]: { inner: `also ${secret}` } } });
  const inKeyFindings = nested.json().details.findings as { field: string; rule: string; line: number }[];
  t.same(inKeyFindings[0] && [inKeyFindings[0].field, inKeyFindings[0].rule, inKeyFindings[0].line], [
    '/customData#key',
    'registry-token',
    1,
  ]);
  t.same(new Set(inKeyFindings.map((f) => f.field)), new Set(['/customData#key']), 'no pointer names a secret key');

  const inPath = await create(h, { workingDirPath: `/home/${secret}` });
  t.equal(inPath.json().code, 'secret_detected');
  t.equal(inPath.json().details.findings[0].field, '/workingDirPath');

  const ok = (await create(h)).json();
  const patch = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${ok.id}`,
    headers: h.owner,
    payload: { customData: { k: secret } },
  });
  t.equal(patch.statusCode, 422);
  t.equal(patch.json().details.findings[0].field, '/customData/k');
  t.notMatch(await readFile(path.join(h.dataDir, 'agent-team', 'registry.json'), 'utf8'), secret, 'nothing of it was stored');
});

t.test('withdrawing a selected resource does not touch the profile', async (t) => {
  const h = await build(t);
  const { macA } = await catalogue(h);
  const created = (await create(h, { resourceIds: ['local-git', 'web-search'] })).json();
  const before = await h.app.inject({ url: `/api/acp/profiles/${created.id}`, headers: h.owner });

  const withdrawn = await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/mac-a/resources/local-git', headers: h.bearer(macA) });
  t.equal(withdrawn.statusCode, 204);
  const after = await h.app.inject({ url: `/api/acp/profiles/${created.id}`, headers: h.owner });
  t.same(after.json().resourceIds, ['local-git', 'web-search'], 'the profile still lists the withdrawn ID');
  t.equal(after.headers.etag, before.headers.etag, 'the profile did not change at all');

  const keep = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${created.id}`,
    headers: h.owner,
    payload: { alias: 'Renamed' },
  });
  t.equal(keep.statusCode, 200, 'a PATCH that leaves resourceIds alone is not refused for the stale ID');
  const reselect = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${created.id}`,
    headers: h.owner,
    payload: { resourceIds: ['local-git'] },
  });
  t.equal(reselect.json().code, 'unresolved_resource_ids', 'selecting it again is refused');
});

t.test('profiles survive a restart on the same DATA_DIR', async (t) => {
  const first = await build(t);
  await catalogue(first);
  const created = await create(first, { resourceIds: ['web-search'], customData: { x: [1, { y: 'z' }] } });
  await first.app.close();

  const second = await build(t, { dataDir: first.dataDir });
  const read = await second.app.inject({ url: `/api/acp/profiles/${created.json().id}`, headers: second.owner });
  t.equal(read.statusCode, 200);
  t.same(read.json(), created.json());
  t.equal(read.headers.etag, created.headers.etag, 'the ETag is stable across restarts');
  const clash = await create(second, { alias: 'REVIEWER' });
  t.equal(clash.json().code, 'alias_conflict', 'uniqueness holds against reloaded profiles');
});

t.test('an empty If-Match is 400, not "no condition"', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const created = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/home/me', launch: { kind: 'acp-command', command: 'agent' } },
  });
  const url = `/api/acp/profiles/${created.json().id}`;
  for (const value of ['', ' ', ',']) {
    const patch = await h.app.inject({ method: 'PATCH', url, headers: { ...h.owner, 'if-match': value }, payload: { alias: 'Changed' } });
    t.equal(patch.statusCode, 400, `PATCH with If-Match "${value}"`);
    t.equal(patch.json().code, 'validation_failed');
    const del = await h.app.inject({ method: 'DELETE', url, headers: { ...h.owner, 'if-match': value } });
    t.equal(del.statusCode, 400, `DELETE with If-Match "${value}"`);
  }
  const read = await h.app.inject({ url, headers: h.owner });
  t.equal(read.json().alias, 'Reviewer', 'unchanged');
});
