import t from 'tap';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runMigrate } from '../src/migrations/migrate-command.js';
import { migrateRegistryDocument, REGISTRY_FILE_STEPS, serializeRegistryDocument } from '../src/migrations/registry-file.js';
import { StoreFileError } from '../src/storage/json-file-store.js';
import { build, tempDataDir } from './helpers/build.js';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'registry');
const fixtureBytes = (name: string) => readFile(path.join(FIXTURES, `${name}.json`));
const fixture = async (name: string) => JSON.parse((await fixtureBytes(name)).toString('utf8')) as Record<string, unknown>;

/** A DATA_DIR whose registry file holds `bytes`. */
async function dataDirWith(bytes: Buffer | string): Promise<{ dataDir: string; file: string }> {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'agent-team', 'registry.json');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, bytes);
  return { dataDir, file };
}

const agentTeamFiles = async (dataDir: string) => (await readdir(path.join(dataDir, 'agent-team'))).sort();

t.test('each step turns its golden fixture into the next one', async (t) => {
  t.same(REGISTRY_FILE_STEPS.map((s) => [s.from, s.to]), [[1, 2], [2, 3], [3, 4]], 'ordered steps v1 → v4');
  for (const step of REGISTRY_FILE_STEPS) {
    t.same(step.up(await fixture(`v${step.from}`)), await fixture(`v${step.to}`), `v${step.from} → v${step.to}`);
  }
});

t.test('every legacy version migrates to the v4 fixture; v4 is already current', async (t) => {
  const v4 = await fixture('v4');
  for (const from of [1, 2, 3]) {
    const result = migrateRegistryDocument(await fixture(`v${from}`));
    t.same(result.doc, v4, `v${from}`);
    t.equal(result.from, from);
    t.equal(result.steps.length, 4 - from, `${4 - from} steps from v${from}`);
    t.same(result.upgradedIds, ['reviewer', 'team-lead'], 'both v1 profiles are reported as upgraded');
  }
  const current = migrateRegistryDocument(v4);
  t.same(current.steps, []);
  t.same(current.doc, v4);
});

t.test('profile v1 → v2 drops the carried resourceIds and keeps everything else, launch and preparation included', async (t) => {
  const [legacy, legacyLead] = ((await fixture('v3')).state as { profiles: Record<string, unknown>[] }).profiles;
  const doc = migrateRegistryDocument(await fixture('v3')).doc as { state: { profiles: Record<string, unknown>[] } };
  const [reviewer, lead] = doc.state.profiles;
  t.same(reviewer, { ...legacy, schemaVersion: 2, resourceIds: [] });
  t.same(lead!.launch, legacyLead!.launch, 'manifest launch (with its unknown member key) is unchanged');
  t.same(lead!.preparation, legacyLead!.preparation, 'preparation is unchanged');

  const v4WithLegacyRecord = { schemaVersion: 4, state: { profiles: [{ ...legacy }] } };
  const late = migrateRegistryDocument(v4WithLegacyRecord);
  t.same(late.upgradedIds, ['reviewer'], 'a v1 record in a v4 file is upgraded too');
});

for (const from of [1, 2, 3]) {
  t.test(`starting on a v${from} file migrates it once, after a byte-exact backup`, async (t) => {
    const original = await fixtureBytes(`v${from}`);
    const { dataDir, file } = await dataDirWith(original);
    const h = await build(t, { dataDir });

    const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
    t.equal(list.statusCode, 200);
    const profiles = list.json().profiles as Record<string, unknown>[];
    t.same(profiles.map((p) => [p.id, p.schemaVersion, p.resourceIds]), [['reviewer', 2, []], ['team-lead', 2, []]]);
    t.same(profiles[1]!.preparation, { steps: [{ run: 'npm ci' }, { run: 'npm test', optional: true }], timeoutSeconds: 600 });

    t.same(JSON.parse(await readFile(file, 'utf8')), await fixture('v4'), 'the file is now the v4 fixture');
    const backup = `${file}.v${from}.bak`;
    t.ok((await readFile(backup)).equals(original), 'the backup holds the original bytes');
    t.equal((await stat(backup)).mode & 0o777, 0o600);
    const migratedBytes = await readFile(file);
    const migratedMtime = (await stat(file)).mtimeMs;
    await h.app.close();

    const again = await build(t, { dataDir });
    t.equal((await again.app.inject({ url: '/api/acp/profiles', headers: again.owner })).json().profiles.length, 2);
    await again.app.close();
    t.same(await agentTeamFiles(dataDir), [`registry.json`, `registry.json.v${from}.bak`], 'no second backup');
    t.ok((await readFile(file)).equals(migratedBytes), 're-running is a no-op: the file is not rewritten');
    t.equal((await stat(file)).mtimeMs, migratedMtime);
  });
}

t.test('a v4 file is loaded as it is: no backup, no rewrite', async (t) => {
  const original = await fixtureBytes('v4');
  const { dataDir, file } = await dataDirWith(original);
  const h = await build(t, { dataDir });
  t.equal((await h.app.inject({ url: '/api/acp/profiles', headers: h.owner })).json().profiles.length, 2);
  await h.app.close();
  t.same(await agentTeamFiles(dataDir), ['registry.json']);
  t.ok((await readFile(file)).equals(original));
});

t.test('manifest-backed profiles are read-only here and carried unchanged through writes', async (t) => {
  const v4 = await fixture('v4');
  const state = v4.state as { profiles: Record<string, unknown>[] };
  // A stored manifest-backed record may carry resourceIds; it is shown with none in this phase.
  state.profiles[1] = { ...state.profiles[1], resourceIds: ['web-search'] };
  const { dataDir, file } = await dataDirWith(serializeRegistryDocument(v4));
  const h = await build(t, { dataDir });

  const lead = await h.app.inject({ url: '/api/acp/profiles/team-lead', headers: h.owner });
  t.same(lead.json().resourceIds, []);
  t.same(lead.json().launch, { kind: 'agent-team-manifest', manifestPath: '/home/me/team/agent-team.yaml', harness: 'claude-code', member: 'lead' });
  const patch = await h.app.inject({ method: 'PATCH', url: '/api/acp/profiles/team-lead', headers: h.owner, payload: { alias: 'Boss' } });
  t.equal(patch.statusCode, 409);
  t.equal(patch.json().code, 'invalid_profile_kind');
  const del = await h.app.inject({ method: 'DELETE', url: '/api/acp/profiles/team-lead', headers: h.owner });
  t.equal(del.statusCode, 409);
  t.equal(del.json().code, 'invalid_profile_kind');

  // Any write rewrites the file: every other profile and state key must survive it exactly.
  const renamed = await h.app.inject({ method: 'PATCH', url: '/api/acp/profiles/reviewer', headers: h.owner, payload: { alias: 'Critic' } });
  t.equal(renamed.statusCode, 200);
  const onDisk = JSON.parse(await readFile(file, 'utf8'));
  state.profiles[0] = { ...state.profiles[0], alias: 'Critic' };
  t.same(onDisk, v4, 'roots, members, configs, unknown keys and the manifest-backed record are unchanged');
});

const refusals: [string, string | Buffer, RegExp][] = [
  ['a future file version', JSON.stringify({ schemaVersion: 5, state: { profiles: [] } }), /schemaVersion 5, newer than/],
  ['an unknown file version', JSON.stringify({ schemaVersion: 0, profiles: [] }), /unknown schemaVersion 0/],
  ['no file version', JSON.stringify({ state: { profiles: [] } }), /no integer schemaVersion/],
  ['an unparsable file', '{"schemaVersion": 3, "state": {', /does not parse as JSON/],
];
for (const version of [1, 3]) {
  const list: unknown[] = [];
  const legacy = { schemaVersion: version, ...(version === 1 ? { profiles: list } : { state: { profiles: list } }) };
  list.push({ schemaVersion: 3, id: 'from-the-future', alias: 'X', agentletId: 'mac-a', workingDirPath: '/x', resourceIds: [], launch: { kind: 'acp-command', command: 'x' } });
  refusals.push([`an unknown profile schemaVersion in a v${version} file`, JSON.stringify(legacy), /from-the-future\) has unknown profile schemaVersion 3/]);
}
refusals.push([
  'a legacy profile that is not valid once upgraded',
  JSON.stringify({ schemaVersion: 3, state: { profiles: [{ id: 'no-alias', agentletId: 'mac-a', workingDirPath: '/x', launch: { kind: 'acp-command', command: 'x' } }] } }),
  /no-alias\) is not a valid AgentProfile v2/,
]);

for (const [what, bytes, reason] of refusals) {
  t.test(`${what} stops the start and is left byte-identical`, async (t) => {
    const { dataDir, file } = await dataDirWith(bytes);
    const before = await readFile(file);
    const err = await build(t, { dataDir }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof StoreFileError, 'StoreFileError');
    t.match((err as Error).message, file, 'the error names the file');
    t.match((err as Error).message, reason);
    t.ok((await readFile(file)).equals(before), 'byte-identical');
    t.same(await agentTeamFiles(dataDir), ['registry.json'], 'no backup, no temp file');

    const lines: string[] = [];
    t.equal(await runMigrate(['--data-dir', dataDir], () => undefined, (l) => lines.push(l)), 1, 'the migrate command refuses too');
    t.match(lines.join('\n'), reason);
    t.ok((await readFile(file)).equals(before));
  });
}

t.test('the migrate command reports, dry-runs, migrates once, and respects the DATA_DIR lock', async (t) => {
  const original = await fixtureBytes('v2');
  const { dataDir, file } = await dataDirWith(original);
  const run = async (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runMigrate(args, (l) => out.push(l), (l) => err.push(l));
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  const dry = await run('--data-dir', dataDir, '--dry-run');
  t.equal(dry.code, 0);
  t.match(dry.out, 'registry file v2 → v4 (dry run: nothing written)');
  t.match(dry.out, 'v2 → v3');
  t.match(dry.out, 'v3 → v4');
  t.match(dry.out, 'profiles v1 → v2 (resourceIds reset to []): reviewer, team-lead');
  t.match(dry.out, `would back up the original bytes to ${file}.v2.bak`);
  t.ok((await readFile(file)).equals(original), 'a dry run writes nothing');
  t.same(await agentTeamFiles(dataDir), ['registry.json']);

  const h = await build(t, { dataDir: await tempDataDir() });
  const locked = await run('--data-dir', h.dataDir);
  t.equal(locked.code, 1, 'refuses while a service owns the DATA_DIR');
  t.match(locked.err, 'already in use');

  const real = await run(`--data-dir=${dataDir}`);
  t.equal(real.code, 0);
  t.match(real.out, `backed up the original bytes to ${file}.v2.bak`);
  t.same(JSON.parse(await readFile(file, 'utf8')), await fixture('v4'));
  t.ok((await readFile(`${file}.v2.bak`)).equals(original));

  const rerun = await run('--data-dir', dataDir);
  t.match(rerun.out, 'nothing to do');
  t.same(await agentTeamFiles(dataDir), ['registry.json', 'registry.json.v2.bak']);

  t.equal((await run()).code, 2, '--data-dir is required');
  t.equal((await run('--data-dir', dataDir, '--force')).code, 2, 'unknown arguments are refused');
});

t.test('an existing backup with other bytes is never overwritten', async (t) => {
  const original = await fixtureBytes('v3');
  const { dataDir, file } = await dataDirWith(original);
  await writeFile(`${file}.v3.bak`, 'an older original');
  const h = await build(t, { dataDir });
  await h.app.close();
  t.equal(await readFile(`${file}.v3.bak`, 'utf8'), 'an older original');
  t.ok((await readFile(`${file}.v3.1.bak`)).equals(original));
});

t.test('the migrate command removes temp files an interrupted run left (a dry run leaves them)', async (t) => {
  const original = await fixtureBytes('v1');
  const { dataDir, file } = await dataDirWith(original);
  const leftovers = [`${file}.v1.bak.4242-0a0b0c0d0e0f.tmp`, `${file}.4242-0f0e0d0c0b0a.tmp`];
  for (const temp of leftovers) await writeFile(temp, 'half of a write');
  const out: string[] = [];
  t.equal(await runMigrate(['--data-dir', dataDir, '--dry-run'], (l) => out.push(l), () => undefined), 0);
  t.same(await agentTeamFiles(dataDir), ['registry.json', ...leftovers.map((f) => path.basename(f))].sort(), 'a dry run removes nothing');
  t.equal(await runMigrate(['--data-dir', dataDir], (l) => out.push(l), () => undefined), 0);
  t.match(out.join('\n'), 'removed 2 temp file(s) left by an interrupted write');
  t.same(await agentTeamFiles(dataDir), ['registry.json', 'registry.json.v1.bak']);
  t.same(JSON.parse(await readFile(file, 'utf8')), await fixture('v4'));
});
