// The profile calls of upstream's registry line, as the Huabu UI makes them and reads their answers:
// `revision` and `expectedRevision` (409 `profile_conflict`), the `acp-harness` launch kind, the list's
// `agentlet`, create without `agentletId`, and HUABU_COMPAT's create and delete answers.
//
// Shapes from microsoft/Huabu:
// - apps/server/src/modules/agent/acp/profiles.route.ts @0502e35ef944142ccb5ae0a0a7c79f5f28f2308e
//   (PATCH `expectedRevision`, 409 `profile_conflict`; create 200 with the profile; delete 200 `{deleted: true}`;
//   the list's `agentlet`; create and patch of `acp-harness` profiles)
// - external/agenetes/packages/protocol/src/harness.ts @713ac9af8388722187ff4a375f13ef529d182cee
//   (`{kind: 'acp-harness', harnessId: /^[a-z0-9][a-z0-9-]{0,63}$/, options?: {autoApprove?: boolean}}`, strict)
// - external/agenetes/packages/protocol/src/agentlet-status.ts @0a318194c735bc45bdd353773a60f78214b488ed
//   (`online`, `lastError`: what the UI's AgentletHealthBanner reads)
// - packages/shared/src/types/api/agent-profile.ts @3e0505b816429b843155160a861d2f7255d83278 (the create body
//   without `agentletId`, `metadata: {cliId}`, `customData.icon`)
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../src/errors.js';
import { ProfileRegistry } from '../../src/profiles/profile-registry.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { build, CANARY, tempDataDir, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';
import { uiProfileBody } from '../helpers/profiles.js';

/** A harness profile as upstream's create route stores one. */
const uiHarness = (fields: Record<string, unknown> = {}) =>
  uiProfileBody({
    alias: 'Claude',
    launch: { kind: 'acp-harness', harnessId: 'claude-code', options: { autoApprove: true } },
    metadata: { cliId: 'claude-code' },
    ...fields,
  });

const post = (h: TestApp, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload });
const get = (h: TestApp, id: string) => h.app.inject({ url: `/api/acp/profiles/${id}`, headers: h.owner });
const patch = (h: TestApp, id: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'PATCH', url: `/api/acp/profiles/${id}`, headers: { ...h.owner, ...headers }, payload });
const list = (h: TestApp) => h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
const registryFile = (h: TestApp) => path.join(h.dataDir, 'agent-team', 'registry.json');

t.test('revision: 1 at create, +1 per change that changes something, the same after a restart', async (t) => {
  const first = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const created = await post(first, uiProfileBody());
  t.equal(created.statusCode, 201, created.body);
  const { id } = created.json();
  t.equal(created.json().revision, 1);

  const renamed = await patch(first, id, { alias: 'Copilot CLI', expectedRevision: 1 });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.equal(renamed.json().revision, 2);
  const same = await patch(first, id, { alias: 'Copilot CLI', expectedRevision: 2 });
  t.equal(same.json().revision, 2, 'a change that changes nothing keeps the revision');
  t.equal(same.headers.etag, renamed.headers.etag, 'and the ETag');
  const moved = await patch(first, id, { workingDirPath: '/srv/site' });
  t.equal(moved.json().revision, 3, 'a change without expectedRevision counts too');
  const listed = (await list(first)).json().profiles[0];
  t.equal(listed.revision, 3, 'the list shows it');
  const onDisk = JSON.parse(await readFile(registryFile(first), 'utf8'));
  t.equal(onDisk.state.profiles[0].revision, 3, 'stored in the registry file');
  await first.app.close();

  const again = await build(t, { dataDir: first.dataDir, env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const read = await get(again, id);
  t.equal(read.json().revision, 3, 'read back after a restart');
  t.equal(read.headers.etag, moved.headers.etag, 'with the same ETag');
  t.equal((await patch(again, id, { alias: 'Copilot 4', expectedRevision: 3 })).json().revision, 4, 'and counted on from there');
});

t.test(
  'a stale expectedRevision is 409 profile_conflict and writes nothing; If-Match and expectedRevision refuse the same changes',
  async (t) => {
    const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
    const created = (await post(h, uiProfileBody())).json();
    const etag1 = (await get(h, created.id)).headers.etag as string;
    // Someone else changes the profile meanwhile.
    const other = await patch(h, created.id, { alias: 'Changed elsewhere', expectedRevision: 1 });
    t.equal(other.json().revision, 2);
    const before = await readFile(registryFile(h));

    const stale = await patch(h, created.id, {
      alias: 'My edit',
      customData: { icon: { shape: 'spark', color: 'red' } },
      expectedRevision: 1,
    });
    t.equal(stale.statusCode, 409);
    t.same(stale.json(), {
      statusCode: 409,
      code: 'profile_conflict',
      error: 'Conflict',
      message: `Profile ${created.id} is at revision 2, not 1: it changed meanwhile. Read it again and reapply your change.`,
      details: { id: created.id, revision: 2, expectedRevision: 1 },
    });
    t.ok((await readFile(registryFile(h))).equals(before), 'the registry file is byte-identical');
    const read = (await get(h, created.id)).json();
    t.equal(read.alias, 'Changed elsewhere');
    t.equal(read.revision, 2);

    // The ETag read at revision 1 is just as stale: both say the same thing changed meanwhile.
    const staleEtag = await patch(h, created.id, { alias: 'My edit' }, { 'if-match': etag1 });
    t.equal(staleEtag.statusCode, 412, 'If-Match keeps answering 412');
    t.equal(staleEtag.json().code, 'precondition_failed');
    const etag2 = (await get(h, created.id)).headers.etag as string;
    const both = await patch(h, created.id, { alias: 'My edit', expectedRevision: 2 }, { 'if-match': etag2 });
    t.equal(both.statusCode, 200, 'current ETag and current revision: the change goes through');
    t.equal(both.json().revision, 3);

    t.equal((await patch(h, created.id, { expectedRevision: -1 })).statusCode, 400, 'a negative revision is not a revision');
    t.equal((await patch(h, created.id, { expectedRevision: '3' })).statusCode, 400, 'a string is not a revision');
    t.equal((await patch(h, created.id, { revision: 3 })).statusCode, 400, 'revision itself is not writable');
  },
);

t.test('a profile stored without a revision reads as revision 1 and its first change stores 2', async (t) => {
  const first = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const { id } = (await post(first, uiProfileBody())).json();
  await first.app.close();
  // As an older version of this service (or upstream's store) wrote it: no revision.
  const doc = JSON.parse(await readFile(registryFile(first), 'utf8'));
  delete doc.state.profiles[0].revision;
  const { writeFile } = await import('node:fs/promises');
  await writeFile(registryFile(first), JSON.stringify(doc, null, 2) + '\n');

  const h = await build(t, { dataDir: first.dataDir, env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  t.equal((await get(h, id)).json().revision, 1);
  t.equal((await list(h)).json().profiles[0].revision, 1);
  t.equal(
    (await patch(h, id, { alias: 'Old one', expectedRevision: 0 })).statusCode,
    409,
    "upstream's reading of a missing revision (0) is stale here",
  );
  const changed = await patch(h, id, { alias: 'Old one', expectedRevision: 1 });
  t.equal(changed.json().revision, 2);
  t.equal(JSON.parse(await readFile(registryFile(h), 'utf8')).state.profiles[0].revision, 2);
});

t.test('acp-harness: created, read, listed, changed and launched like acp-command; the workload names the harness', async (t) => {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true', DEFAULT_AGENTLET_ID: 'mac-a' } });
  await h.enroll('mac-a');
  await h.put('huabu', CANARY.huabu, 'web-search');
  const created = await post(h, uiHarness({ resourceIds: ['web-search'] }));
  t.equal(created.statusCode, 201, created.body);
  const profile = created.json();
  t.same(profile, {
    schemaVersion: 2,
    id: profile.id,
    revision: 1,
    alias: 'Claude',
    agentletId: 'mac-a',
    workingDirPath: '/home/me/site',
    resourceIds: ['web-search'],
    customData: { icon: { shape: 'diamond', color: 'green' } },
    metadata: { cliId: 'claude-code' },
    launch: { kind: 'acp-harness', harnessId: 'claude-code', options: { autoApprove: true } },
  });
  t.same((await get(h, profile.id)).json(), profile);
  const listed = (await list(h)).json();
  t.same(listed.profiles, [profile]);
  t.same(listed.selectableProfileIds, [profile.id], 'a harness profile can start a new agent');

  const changed = await patch(h, profile.id, { alias: 'Claude Code', expectedRevision: 1 });
  t.equal(changed.statusCode, 200, changed.body);
  t.same(changed.json().launch, profile.launch, 'the launch stays');
  t.equal(
    (await patch(h, profile.id, { launch: { kind: 'acp-harness', harnessId: 'gemini' } })).statusCode,
    400,
    'the launch is not changed by PATCH',
  );

  const launched = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId: profile.id, canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  t.equal(launched.statusCode, 201, launched.body);
  t.match(launched.json().spec, {
    binding: { profileId: profile.id, alias: 'Claude Code' },
    agentletId: 'mac-a',
    cwd: '/home/me/site',
    resourceIds: ['huabu-access', 'local-resource-management', 'web-search'],
    launch: { kind: 'acp-harness', harnessId: 'claude-code', options: { autoApprove: true } },
  });
  const repeated = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId: profile.id, canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  t.equal(repeated.statusCode, 200);
  t.same(repeated.json(), launched.json(), 'the pinned record, harness included');

  const command = (await post(h, uiProfileBody())).json();
  const plain = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId: command.id, canvasId: 'canvas-1', threadId: 'thread-2' },
  });
  t.equal(plain.statusCode, 201, plain.body);
  t.notOk('launch' in plain.json().spec, "a command profile's workload is as it always was");

  const deleted = await h.app.inject({ method: 'DELETE', url: `/api/acp/profiles/${profile.id}`, headers: h.owner });
  t.equal(deleted.statusCode, 204, 'a harness profile is deleted like a command profile');
});

t.test("acp-harness: upstream's bounds for harnessId and options", async (t) => {
  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const bad: [string, unknown][] = [
    ['uppercase', { kind: 'acp-harness', harnessId: 'Claude' }],
    ['leading dash', { kind: 'acp-harness', harnessId: '-claude' }],
    ['underscore', { kind: 'acp-harness', harnessId: 'claude_code' }],
    ['65 characters', { kind: 'acp-harness', harnessId: 'a'.repeat(65) }],
    ['empty', { kind: 'acp-harness', harnessId: '' }],
    ['an unknown option', { kind: 'acp-harness', harnessId: 'claude', options: { argv: ['--yolo'] } }],
    ['a non-boolean option', { kind: 'acp-harness', harnessId: 'claude', options: { autoApprove: 'yes' } }],
    ['a command beside it', { kind: 'acp-harness', harnessId: 'claude', command: 'claude --acp' }],
  ];
  for (const [name, launch] of bad) {
    const res = await post(h, uiProfileBody({ alias: `Bad ${name}`, launch }));
    t.equal(res.statusCode, 400, `${name} is refused`);
  }
  const longest = await post(h, uiProfileBody({ alias: 'Longest', launch: { kind: 'acp-harness', harnessId: 'a'.repeat(64) } }));
  t.equal(longest.statusCode, 201, '64 characters are allowed');
  t.same(longest.json().launch, { kind: 'acp-harness', harnessId: 'a'.repeat(64) }, 'no options: none stored');
  t.same(
    JSON.parse(await readFile(registryFile(h), 'utf8')).state.profiles.map((p: { alias: string }) => p.alias),
    ['Longest'],
    'nothing refused was stored',
  );
});

t.test('the harness ID is scanned for secrets like every field: 422 naming /launch/harnessId, nothing stored', async (t) => {
  // A configured credential value that fits the harness ID's bounds (lowercase, digits and dashes).
  const known = 'harness-credential-0123456789';
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  const profiles = new ProfileRegistry(store, new SecretScanner([known]), undefined, { defaultAgentletId: 'mac-a' });
  const refused = await profiles
    .create(uiHarness({ launch: { kind: 'acp-harness', harnessId: known } }) as never, 'owner')
    .catch((err: unknown) => err);
  t.ok(refused instanceof AppError);
  t.equal((refused as AppError).code, 'secret_detected');
  t.match((refused as AppError).details?.findings, [{ field: '/launch/harnessId', rule: 'configured-credential', line: 1 }]);
  t.equal(((refused as AppError).details?.findings as unknown[]).length, 1);
  t.notMatch(
    JSON.stringify({ message: (refused as AppError).message, details: (refused as AppError).details }),
    known,
    'the value is not echoed',
  );
  t.same(await store.listProfiles(), [], 'nothing stored');
  t.equal((await profiles.create(uiHarness() as never, 'owner')).profile.revision, 1, 'a clean harness ID is stored');
});

// An enrolled machine without its channel is `disconnected` and offline (it was `enrolled`, `online: true`
// before the machine channel existed); test/machines/channel.test.ts covers `connected`.
const offline = (id: string) => ({
  id,
  status: 'disconnected',
  online: false,
  lastError: `Machine ${id} is enrolled but not connected: run \`agentlet-resources serve\` on it.`,
});

t.test("the list's agentlet: the default machine and what the registry knows of it", async (t) => {
  const none = await build(t);
  t.notOk('agentlet' in (await list(none)).json(), 'no default machine, none enrolled: absent');
  await none.enroll('only-one');
  t.same((await list(none)).json().agentlet, offline('only-one'), 'the one enrolled machine');
  await none.enroll('second');
  t.notOk('agentlet' in (await list(none)).json(), 'two enrolled and no DEFAULT_AGENTLET_ID: none is the default');

  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'host-mac' } });
  t.same((await list(h)).json().agentlet, {
    id: 'host-mac',
    status: 'unknown',
    online: false,
    lastError: 'Machine host-mac is not enrolled in this registry.',
  });
  await h.enroll('other-mac');
  t.equal((await list(h)).json().agentlet.id, 'host-mac', 'DEFAULT_AGENTLET_ID wins over the one enrolled machine');
  await h.enroll('host-mac');
  t.same((await list(h)).json().agentlet, offline('host-mac'));
  const revoked = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/host-mac', headers: h.owner });
  t.equal(revoked.statusCode, 204);
  t.same((await list(h)).json().agentlet, {
    id: 'host-mac',
    status: 'revoked',
    online: false,
    lastError: 'The enrollment of machine host-mac was revoked; enroll it again to use it.',
  });
});

t.test('create without agentletId: DEFAULT_AGENTLET_ID, else the one enrolled machine, else 400 naming DEFAULT_AGENTLET_ID', async (t) => {
  const h = await build(t);
  const nothing = await post(h, uiProfileBody());
  t.equal(nothing.statusCode, 400);
  t.equal(nothing.json().code, 'validation_failed');
  t.match(nothing.json().message, 'DEFAULT_AGENTLET_ID');
  t.same(nothing.json().details, { field: '/agentletId' });

  await h.enroll('laptop');
  const one = await post(h, uiProfileBody());
  t.equal(one.statusCode, 201, one.body);
  t.equal(one.json().agentletId, 'laptop', 'the only enrolled machine');

  await h.enroll('desktop');
  const two = await post(h, uiProfileBody({ alias: 'Second' }));
  t.equal(two.statusCode, 400, 'two machines: the service does not guess');
  t.match(two.json().message, 'DEFAULT_AGENTLET_ID');
  t.equal(
    (await post(h, uiProfileBody({ alias: 'Second', agentletId: 'desktop' }))).json().agentletId,
    'desktop',
    'a given agentletId still wins',
  );

  const revoke = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/desktop', headers: h.owner });
  t.equal(revoke.statusCode, 204);
  t.equal((await post(h, uiProfileBody({ alias: 'Third' }))).json().agentletId, 'laptop', 'a revoked machine does not count');
});

t.test('HUABU_COMPAT=1: create answers 200 and delete 200 {deleted: true}; off: 201 and 204 with no body', async (t) => {
  for (const compat of [false, true]) {
    const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a', ...(compat ? { HUABU_COMPAT: '1' } : {}) } });
    const base = await listen(h.app);
    const headers = { ...h.owner, 'content-type': 'application/json' };
    const created = await fetch(`${base}/api/acp/profiles`, { method: 'POST', headers, body: JSON.stringify(uiProfileBody()) });
    t.equal(created.status, compat ? 200 : 201, `compat ${compat}: create status`);
    const profile = (await created.json()) as { id: string; revision: number };
    t.equal(profile.revision, 1, `compat ${compat}: the same profile either way`);
    t.match(created.headers.get('etag'), /^"[A-Za-z0-9_-]+"$/);
    t.equal(created.headers.get('location'), `/api/acp/profiles/${profile.id}`);

    const deleted = await fetch(`${base}/api/acp/profiles/${profile.id}`, { method: 'DELETE', headers: h.owner });
    t.equal(deleted.status, compat ? 200 : 204, `compat ${compat}: delete status`);
    const body = await deleted.text();
    if (compat) {
      t.equal(body, '{"deleted":true}', "upstream's answer, byte for byte");
      t.match(deleted.headers.get('content-type'), /^application\/json/);
    } else {
      t.equal(body, '', 'no body');
    }
    const gone = await fetch(`${base}/api/acp/profiles/${profile.id}`, { method: 'DELETE', headers: h.owner });
    t.equal(gone.status, 404, `compat ${compat}: a second delete is 404 either way`);
  }
});

t.test('the OpenAPI document describes both answers of create and delete, and profile_conflict on PATCH', async (t) => {
  const h = await build(t);
  const doc = (await h.app.inject({ url: '/openapi.json' })).json();
  const create = doc.paths['/api/acp/profiles'].post.responses;
  t.ok(create['201'] && create['200'], 'create: 201, and 200 with HUABU_COMPAT');
  const remove = doc.paths['/api/acp/profiles/{id}'].delete.responses;
  t.ok(remove['204'] && remove['200'], 'delete: 204, and 200 with HUABU_COMPAT');
  t.match(JSON.stringify(remove['200']), 'deleted');
  t.match(JSON.stringify(doc.paths['/api/acp/profiles/{id}'].patch.responses['409']), 'profile_conflict');
  t.match(JSON.stringify(doc.paths['/api/acp/profiles'].get.responses['200']), 'agentlet');
});
