// Launch: overrides, required defaults, placement, first realization pinned durably, repeats and conflicts.
import t from 'tap';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build, CANARY, tempDataDir, type TestApp } from '../helpers/build.js';
import { readJournal } from '../../src/storage/journal.js';

const REQUIRED = ['huabu-access', 'local-resource-management'];

async function world(t: Parameters<typeof build>[0], dataDir?: string) {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' }, ...(dataDir ? { dataDir } : {}) });
  const macA = await h.enroll('mac-a');
  const macB = await h.enroll('mac-b');
  for (const id of ['web-search', 'image-gen']) await h.put('huabu', CANARY.huabu, id);
  await h.put('mac-a', macA, 'local-git');
  await h.put('mac-b', macB, 'b-only');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Reviewer',
      agentletId: 'mac-a',
      workingDirPath: '/home/me/site',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search', 'local-git'],
    },
  });
  return { h, macA, macB, profileId: profile.json().id as string };
}

/** No canvas file, and nothing in the workloads journal. */
async function noWorkloadWritten(h: TestApp): Promise<boolean> {
  const dir = path.join(h.dataDir, 'workloads');
  const names = await readdir(dir);
  return names.every((n) => n === 'workloads.journal') && (await readJournal(path.join(dir, 'workloads.journal'))).bytes === 0;
}

const launch = (h: TestApp, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/api/acp/launch', headers: h.owner, payload });

t.test("a launch names the canvas's MCP endpoint and carries an ACP-ready mcpServers entry, with variable references only", async (t) => {
  const { h, profileId } = await world(t);
  const res = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' });
  t.equal(res.statusCode, 201);
  const w = res.json();
  t.equal(w.spec.env.HUABU_MCP_URL, 'http://registry.test/api/rfs/canvas-1/mcp', 'beside HUABU_RFS_URL');
  t.same(w.spec.mcpServers, [
    {
      type: 'http',
      name: 'huabu-registry',
      url: 'http://registry.test/api/rfs/canvas-1/mcp',
      headers: [
        { name: 'Authorization', value: 'Bearer $AGENTLET_TOKEN' },
        { name: 'X-Huabu-Resource-Grant', value: '$HUABU_RESOURCE_GRANT' },
        { name: 'X-Huabu-Thread-Id', value: '$HUABU_THREAD_ID' },
      ],
    },
  ]);
  t.notMatch(JSON.stringify(w), /arr_(canvas|machine|owner|huabu|grant)_/, 'never a token or grant');
  const read = await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner });
  t.same(read.json(), w, 'stored as answered');
});

t.test('the first launch realizes the thread with required defaults first, then the selection', async (t) => {
  const { h, profileId } = await world(t);
  const res = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' });
  t.equal(res.statusCode, 201);
  const w = res.json();
  t.same(w.spec.resourceIds, [...REQUIRED, 'web-search', 'local-git']);
  t.match(w, {
    driverSchemaVersion: 1,
    canvasId: 'canvas-1',
    threadId: 'thread-1',
    spec: {
      binding: { profileId, alias: 'Reviewer' },
      agentletId: 'mac-a',
      cwd: '/home/me/site',
      resourceScope: { canvasId: 'canvas-1', threadId: 'thread-1' },
      env: { HUABU_RFS_URL: 'http://registry.test/api/rfs/canvas-1', HUABU_THREAD_ID: 'thread-1' },
    },
  });
  const boot = w.spec.initialPreamble[0] as string;
  for (const id of w.spec.resourceIds) t.match(boot, `- ${id}`, `the bootstrap names ${id}`);
  t.match(boot, '$HUABU_RFS_URL/resources');
  t.match(boot, '$HUABU_MCP_URL', 'and the MCP endpoint, by its variable');
  t.match(boot, 'Authorization: Bearer $AGENTLET_TOKEN');
  t.notMatch(boot, 'http://', 'no concrete URL');
  t.notMatch(JSON.stringify(w), /arr_(canvas|machine|owner|huabu)_/, 'no token anywhere in the record');
  t.equal(w.spec.initialPreamble.length, 1);

  // Durable before the 201: in the shared workloads journal (the canvas file is brought up to date by compaction).
  t.same((await readJournal(path.join(h.dataDir, 'workloads', 'workloads.journal'))).batches, [[w]], 'durable before the 201');
  const read = await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner });
  t.same(read.json(), w);
  const list = await h.app.inject({ url: '/api/acp/workloads?canvasId=canvas-1', headers: h.owner });
  t.same(list.json(), { workloads: [w] });
  t.equal((await h.app.inject({ url: '/api/acp/workloads/canvas-1/nope', headers: h.owner })).json().code, 'workload_not_found');
  await h.app.close();
  const onDisk = JSON.parse(await readFile(path.join(h.dataDir, 'workloads', 'canvas-1.json'), 'utf8'));
  t.same(onDisk, { schemaVersion: 1, state: { workloads: [w] } }, 'compacted into the canvas file at close');
});

t.test('an override replaces the selection; [] gives only the defaults; defaults survive and dedupe', async (t) => {
  const { h, profileId } = await world(t);
  const cases: [string, string[], string[]][] = [
    ['override', ['image-gen'], [...REQUIRED, 'image-gen']],
    ['empty', [], REQUIRED],
    [
      'dedupe-and-order',
      ['web-search', 'local-resource-management', 'local-git', 'huabu-access'],
      [...REQUIRED, 'web-search', 'local-git'],
    ],
  ];
  for (const [threadId, resourceIds, effective] of cases) {
    const res = await launch(h, { profileId, canvasId: 'canvas-1', threadId, resourceIds });
    t.equal(res.statusCode, 201, threadId);
    t.same(res.json().spec.resourceIds, effective, threadId);
  }
  const withText = await launch(h, {
    profileId,
    canvasId: 'canvas-1',
    threadId: 'extra',
    workingDirPath: '/srv/work/x',
    additionalInitialPreamble: 'Focus on tests.',
  });
  t.same(withText.json().spec.initialPreamble[1], 'Focus on tests.');
  t.equal(withText.json().spec.cwd, '/srv/work/x');
});

t.test('unknown, cross-machine and unregistered required IDs fail with nothing written', async (t) => {
  const { h, profileId } = await world(t);
  const unknown = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 't1', resourceIds: ['web-search', 'no-such-thing'] });
  t.equal(unknown.statusCode, 422);
  t.equal(unknown.json().code, 'unresolved_resource_ids');
  t.same(unknown.json().details.ids, ['no-such-thing']);
  const cross = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 't1', resourceIds: ['b-only'] });
  t.equal(cross.statusCode, 422);
  t.equal(cross.json().code, 'resource_not_eligible');
  t.same(cross.json().details.ids, ['b-only']);
  const secret = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 't1', additionalInitialPreamble: `token ${CANARY.owner}` });
  t.equal(secret.json().code, 'secret_detected');
  t.notMatch(secret.body, CANARY.owner);
  t.same(await noWorkloadWritten(h), true, 'no workload was written');

  await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/local-resource-management', headers: h.huabu });
  const missingDefault = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 't1', resourceIds: [] });
  t.equal(missingDefault.statusCode, 422, 'a required default that is not registered fails the launch');
  t.same(missingDefault.json().details.ids, ['local-resource-management']);
  const missingProfile = await launch(h, { profileId: 'prf-nope', canvasId: 'canvas-1', threadId: 't1' });
  t.equal(missingProfile.json().code, 'profile_not_found');
});

t.test('a repeat asking for nothing different returns the stored record; anything different is 409', async (t) => {
  const { h, profileId } = await world(t);
  const first = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1', resourceIds: ['web-search'] });
  t.equal(first.statusCode, 201);
  for (const repeat of [
    { profileId, canvasId: 'canvas-1', threadId: 'thread-1', resourceIds: ['web-search'] },
    { profileId, canvasId: 'canvas-1', threadId: 'thread-1' },
    { profileId, canvasId: 'canvas-1', threadId: 'thread-1', workingDirPath: '/home/me/site', resourceIds: ['huabu-access', 'web-search'] },
  ]) {
    const res = await launch(h, repeat);
    t.equal(res.statusCode, 200);
    t.same(res.json(), first.json());
  }
  const other = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Other', agentletId: 'mac-a', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'agent' } },
  });
  for (const [what, change] of [
    ['profileId', { profileId: other.json().id }],
    ['workingDirPath', { workingDirPath: '/elsewhere' }],
    ['resourceIds', { resourceIds: ['image-gen'] }],
  ] as const) {
    const res = await launch(h, { ...{ profileId, canvasId: 'canvas-1', threadId: 'thread-1' }, ...change });
    t.equal(res.statusCode, 409, what);
    t.equal(res.json().code, 'workload_already_realized');
    t.match(res.json().details, { differs: [what], profileId, workingDirPath: '/home/me/site', resourceIds: [...REQUIRED, 'web-search'] });
  }
});

t.test('20 concurrent first launches of one thread produce exactly one record', async (t) => {
  const { h, profileId } = await world(t);
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      launch(h, { profileId, canvasId: 'canvas-1', threadId: 'race', resourceIds: i % 2 ? ['web-search'] : ['image-gen'] }),
    ),
  );
  const created = results.filter((r) => r.statusCode === 201);
  t.equal(created.length, 1, 'one winner');
  const winner = created[0]!.json();
  for (const r of results) {
    if (r.statusCode === 200) t.same(r.json(), winner, 'a loser asking for the same gets the stored record');
    else if (r.statusCode === 409)
      t.same(r.json().details.resourceIds, winner.spec.resourceIds, 'a loser asking for another list gets 409');
    else t.equal(r.statusCode, 201);
  }
  t.equal(
    (await readJournal(path.join(h.dataDir, 'workloads', 'workloads.journal'))).batches.flat().length,
    1,
    'one record in the journal',
  );
  await h.app.close();
  const file = JSON.parse(await readFile(path.join(h.dataDir, 'workloads', 'canvas-1.json'), 'utf8'));
  t.equal(file.state.workloads.length, 1, 'one record in the canvas file after close');
});

t.test('workloads survive a restart; a withdrawal never rewrites them but later launches fail explicitly', async (t) => {
  const dataDir = await tempDataDir();
  const first = await world({ teardown: () => undefined }, dataDir);
  const realized = (await launch(first.h, { profileId: first.profileId, canvasId: 'canvas-1', threadId: 'thread-1' })).json();
  await first.h.app.close();

  const h = await build(t, { dataDir, env: { SEED_HUABU_RESOURCES: 'true' } });
  t.same((await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner })).json(), realized, 'survives a restart');
  const machines = await h.app.inject({ url: '/api/acp/machines', headers: h.owner });
  t.equal(machines.json().machines.length, 2);
  const before = await readFile(path.join(dataDir, 'workloads', 'canvas-1.json'));
  const withdraw = await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/web-search', headers: h.huabu });
  t.equal(withdraw.statusCode, 204);
  t.same(await readFile(path.join(dataDir, 'workloads', 'canvas-1.json')), before, 'the stored workload is untouched');
  t.same(
    (await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner })).json().spec.resourceIds,
    realized.spec.resourceIds,
  );
  const again = await launch(h, { profileId: first.profileId, canvasId: 'canvas-1', threadId: 'thread-2' });
  t.equal(again.statusCode, 422, 'a new launch selecting the withdrawn ID fails explicitly');
  t.same(again.json().details.ids, ['web-search']);
  t.equal(
    (await launch(h, { profileId: first.profileId, canvasId: 'canvas-1', threadId: 'thread-1' })).statusCode,
    200,
    'the realized thread still repeats',
  );
});

t.test('a legacy workload without resourceIds reads as [] and stays driver schema 1; manifest profiles do not launch', async (t) => {
  const dataDir = await tempDataDir();
  await mkdir(path.join(dataDir, 'workloads'), { recursive: true });
  await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
  await copyFile('test/fixtures/workloads/legacy-canvas.json', path.join(dataDir, 'workloads', 'legacy-canvas.json'));
  await copyFile('test/fixtures/registry/v4.json', path.join(dataDir, 'agent-team', 'registry.json'));
  const h = await build(t, { dataDir, env: { SEED_HUABU_RESOURCES: 'true' } });
  const legacy = await h.app.inject({ url: '/api/acp/workloads/legacy-canvas/thread-old', headers: h.owner });
  t.equal(legacy.statusCode, 200);
  t.same(legacy.json().spec.resourceIds, []);
  t.equal(legacy.json().driverSchemaVersion, 1);
  t.equal(
    await readFile(path.join(dataDir, 'workloads', 'legacy-canvas.json'), 'utf8'),
    await readFile('test/fixtures/workloads/legacy-canvas.json', 'utf8'),
    'reading never rewrites the file',
  );
  const manifest = await launch(h, { profileId: 'profile-1', canvasId: 'c', threadId: 't' }); // the fixture's manifest-backed profile
  t.equal(manifest.statusCode, 409);
  t.equal(manifest.json().code, 'invalid_profile_kind');
  // The refusal says which profile and why, and names its kind for a client to act on.
  t.equal(manifest.json().message, 'Profile profile-1 is backed by an Agent Team manifest and cannot be launched here.');
  t.same(manifest.json().details, { profileId: 'profile-1', kind: 'agent-team-manifest' });
});

t.test('a workload file that does not parse fails only its canvas (503, logged), is left as it is, and works once fixed', async (t) => {
  // Canvas files are read on first access, so a bad one does not stop the start.
  const dataDir = await tempDataDir();
  await mkdir(path.join(dataDir, 'workloads'), { recursive: true });
  const file = path.join(dataDir, 'workloads', 'canvas-1.json');
  await writeFile(file, '{"schemaVersion": 1, "state": {');
  const { h, profileId } = await world(t, dataDir);
  for (const [what, res] of [
    ['list', await h.app.inject({ url: '/api/acp/workloads?canvasId=canvas-1', headers: h.owner })],
    ['get', await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner })],
    ['launch', await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' })],
  ] as const) {
    t.equal(res.statusCode, 503, what);
    t.equal(res.json().code, 'storage_unavailable');
    t.notMatch(res.body, /canvas-1\.json|does not parse|\/tmp|workloads\//, 'the answer names no file');
  }
  t.equal((await launch(h, { profileId, canvasId: 'canvas-2', threadId: 'thread-1' })).statusCode, 201, 'other canvases launch');
  t.equal(await readFile(file, 'utf8'), '{"schemaVersion": 1, "state": {', 'the file is left as it is');
  t.equal(
    (await readJournal(path.join(dataDir, 'workloads', 'workloads.journal'))).batches.flat().length,
    1,
    'only the other canvas was written',
  );
  const log = await readFile(h.logFile, 'utf8');
  t.match(
    log,
    /canvas-1\.json: does not parse as JSON.*requests for this canvas answer 503|requests for this canvas answer 503.*canvas-1\.json: does not parse as JSON/,
    'one log line names the file and what it means',
  );
  t.equal(log.split('\n').filter((l) => l.includes('a workload file does not load')).length, 1, 'reported once, not once per request');

  // Fixed by the operator: the next request reads it again, no restart needed.
  await writeFile(file, JSON.stringify({ schemaVersion: 1, state: { workloads: [] } }));
  t.equal((await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' })).statusCode, 201);
  t.equal((await h.app.inject({ url: '/api/acp/workloads?canvasId=canvas-1', headers: h.owner })).json().workloads.length, 1);
});

t.test('launch fails closed on capability diagnostics, with nothing written, and passes once fixed', async (t) => {
  const { h, macA, profileId } = await world(t);
  // mac-a publishes a record its agents would see next to huabu's web-search under the same name.
  t.equal((await h.put('mac-a', macA, 'my-search', { name: '  NAME OF WEB-SEARCH ' })).statusCode, 201);
  const refused = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' });
  t.equal(refused.statusCode, 422);
  t.equal(refused.json().code, 'capability_diagnostics_failed');
  t.match(refused.json().details.diagnostics, [{ severity: 'error', code: 'duplicate_resource_name' }]);
  t.same(await noWorkloadWritten(h), true, 'nothing was written');
  t.equal((await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner })).statusCode, 404);

  const unrelated = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-2', resourceIds: ['image-gen'] });
  t.equal(unrelated.statusCode, 201, 'a selection without the clash launches');

  await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/mac-a/resources/my-search', headers: h.bearer(macA) });
  const allowed = await launch(h, { profileId, canvasId: 'canvas-1', threadId: 'thread-1' });
  t.equal(allowed.statusCode, 201, 'allowed once the duplicate is withdrawn');
  const metrics = (await h.app.inject({ url: '/metrics' })).body;
  t.match(metrics, /registry_launch_outcomes_total\{outcome="capability_diagnostics_failed"\} 1/);
  t.match(metrics, /registry_launch_outcomes_total\{outcome="realized"\} 2/);
});
