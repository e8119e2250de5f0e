// Registry file migrations on the shapes upstream's Agent Team store writes (fixtures and their provenance:
// test/fixtures/registry/README.md): every version starts without loss, setup logs land where upstream
// keeps them, a file without its version's real shape refuses to start, and what we write upstream reads.
import t from 'tap';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runMigrate } from '../../src/migrations/migrate-command.js';
import {
  migrateRegistryDocument,
  REGISTRY_FILE_STEPS,
  serializeRegistryDocument,
  upgradeProfiles,
} from '../../src/migrations/registry-file.js';
import { MigrationError } from '../../src/migrations/profile-v1.js';
import { StoreFileError } from '../../src/storage/json-file-store.js';
import { build, tempDataDir } from '../helpers/build.js';
import { parseAsUpstream } from '../helpers/upstream-registry.js';

const FIXTURES = path.join('test', 'fixtures', 'registry');
const fixtureBytes = (name: string) => readFile(path.join(FIXTURES, `${name}.json`));
const fixture = async (name: string) => JSON.parse((await fixtureBytes(name)).toString('utf8')) as Record<string, unknown>;
type Doc = { schemaVersion: number; state: Record<string, unknown> & { profiles?: Record<string, unknown>[] } };

/** A DATA_DIR whose registry file holds `bytes`. */
async function dataDirWith(bytes: Buffer | string): Promise<{ dataDir: string; file: string }> {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'agent-team', 'registry.json');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, bytes);
  return { dataDir, file };
}

const agentTeamFiles = async (dataDir: string) => (await readdir(path.join(dataDir, 'agent-team'))).sort();
const ENTRY = { receivedAt: 101, phase: 'installing_tools', status: 'started', message: 'Installing CLI tools' };
const jsonl = (...entries: object[]) => entries.map((e) => JSON.stringify(e) + '\n').join('');

/** Each upstream version, the v4 file it must become, and the setup-log files it must leave beside it. */
const VERSIONS: { name: string; from: number; expected: string; logs: Record<string, string> }[] = [
  {
    name: 'v1',
    from: 1,
    expected: 'v1.expected',
    logs: {
      'legacy-deployment.setup.jsonl': '',
      'legacy-disabled.setup.jsonl': jsonl(ENTRY, { ...ENTRY, receivedAt: 102, status: 'completed', message: 'CLI tools installed' }),
    },
  },
  { name: 'v1-no-deployments', from: 1, expected: 'v1-no-deployments.expected', logs: {} },
  { name: 'v2', from: 2, expected: 'v4', logs: { 'profile-1.setup.jsonl': jsonl(ENTRY) } },
  { name: 'v3', from: 3, expected: 'v4', logs: {} },
];

t.test('the steps run in order and every upstream version migrates to its golden v4 file; v4 is current', async (t) => {
  t.same(
    REGISTRY_FILE_STEPS.map((s) => [s.from, s.to]),
    [
      [1, 2],
      [2, 3],
      [3, 4],
    ],
    'ordered steps v1 → v4',
  );
  for (const v of VERSIONS) {
    const result = migrateRegistryDocument(await fixture(v.name));
    t.same(result.doc, await fixture(v.expected), `${v.name} → ${v.expected}`);
    t.equal(result.from, v.from);
    t.equal(result.steps.length, 4 - v.from, `${4 - v.from} steps from ${v.name}`);
    t.same(
      [...result.setupLogs.keys()].map((id) => `${id}.setup.jsonl`),
      Object.keys(v.logs),
      `${v.name}: the setup logs that leave the file`,
    );
  }
  t.same(migrateRegistryDocument(await fixture('v3')).upgradedIds, ['profile-1'], 'the Profile v1 record of v3 is reported');
  const current = migrateRegistryDocument(await fixture('v4'));
  t.same(current.steps, []);
  t.same(current.doc, await fixture('v4'));
});

t.test('v1 deployments become manifest-backed profiles as upstream migrateDeployment makes them', async (t) => {
  const doc = migrateRegistryDocument(await fixture('v1')).doc as Doc;
  const [ready, disabled] = doc.state.profiles!;
  t.same(
    ready,
    {
      schemaVersion: 2,
      id: 'legacy-deployment',
      alias: 'Reviewer',
      agentletId: 'machine-a',
      workingDirPath: '/teams/reviewer/workspaces/copilot',
      resourceIds: [],
      launch: { kind: 'agent-team-manifest', manifestPath: '/teams/reviewer/agentlet.yaml', harness: 'copilot' },
      preparation: { status: 'ready', completedAt: 100 },
    },
    'machine → agentletId, setup → preparation; revision, enabled and the deployment schemaVersion are dropped',
  );
  t.same(disabled!.preparation, { status: 'not_prepared' }, 'a disabled deployment is not prepared');
  t.notOk('deployments' in doc.state, 'no deployments key remains');
  t.same(doc.state.configs, []);
});

t.test('every setup status of a v1 deployment becomes the preparation upstream parsePreparation makes of it', (t) => {
  const deployment = (id: string, setup: Record<string, unknown>) => ({
    id,
    alias: id,
    machine: 'machine-a',
    manifestPath: '/m.yaml',
    harness: 'h',
    workingDirPath: '/w',
    setup,
  });
  const doc = migrateRegistryDocument({
    schemaVersion: 1,
    state: {
      roots: [],
      members: [],
      deployments: [
        deployment('not-prepared', { status: 'not_prepared', extra: 1 }),
        deployment('setting-up', { status: 'setting_up', operationId: 'op-7', startedAt: 70, extra: 1 }),
        deployment('ready', { status: 'ready', completedAt: 80, operationId: 'dropped' }),
        deployment('failed', { status: 'error', failedAt: 90, error: { code: 'boom', message: 'It failed' } }),
      ],
    },
  }).doc as Doc;
  t.strictSame(
    doc.state.profiles!.map((p) => [p.id, p.preparation]),
    [
      ['not-prepared', { status: 'not_prepared' }],
      ['setting-up', { status: 'setting_up', operationId: 'op-7', startedAt: 70 }],
      ['ready', { status: 'ready', completedAt: 80 }],
      ['failed', { status: 'error', failedAt: 90, error: { code: 'boom', message: 'It failed' } }],
    ],
    'each status kept, with only its own fields',
  );
  t.throws(() => upgradeProfiles({ p: {} }), new MigrationError('`state.profiles` is not a list'), 'a profile list keyed by ID is refused');
  t.end();
});

t.test(
  'a v4 file written before roots, members and configs were kept gets them as empty lists on its next write, one line feed at the end',
  async (t) => {
    const v4 = (await fixture('v4')) as Doc;
    const command = v4.state.profiles![1]!;
    const { dataDir, file } = await dataDirWith(JSON.stringify({ schemaVersion: 4, state: { profiles: [command] } }));
    const h = await build(t, { dataDir });
    const renamed = await h.app.inject({
      method: 'PATCH',
      url: `/api/acp/profiles/${String(command.id)}`,
      headers: h.owner,
      payload: { alias: 'Critic' },
    });
    t.equal(renamed.statusCode, 200);
    await h.app.close();
    const bytes = await readFile(file, 'utf8');
    const onDisk = JSON.parse(bytes) as Doc;
    // The record had no revision (it read as 1); the change stores its next one.
    t.strictSame(onDisk, {
      schemaVersion: 4,
      state: { roots: [], members: [], profiles: [{ ...command, alias: 'Critic', revision: 2 }], configs: [] },
    });
    t.equal(bytes, JSON.stringify(onDisk, null, 2) + '\n', 'two-space JSON ending in one line feed, as upstream writes it');
    t.same(
      parseAsUpstream(onDisk).profiles.map((p) => p.alias),
      ['Critic'],
      'upstream reads it',
    );
  },
);

for (const v of VERSIONS) {
  t.test(
    `starting on an upstream ${v.name} file keeps the team state key for key, serves every profile, and moves setup logs`,
    async (t) => {
      const original = await fixtureBytes(v.name);
      const input = JSON.parse(original.toString('utf8')) as Doc;
      const expected = (await fixture(v.expected)) as Doc;
      const { dataDir, file } = await dataDirWith(original);
      const h = await build(t, { dataDir });

      const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
      t.equal(list.statusCode, 200);
      // A migrated record carries no revision on disk; it reads as revision 1.
      const shown = expected.state.profiles!.map((p): Record<string, unknown> => ({ ...p, revision: 1 }));
      t.same(
        list.json().profiles,
        shown.sort((a, b) => String(a.id).localeCompare(String(b.id))),
        'every profile, readable through the API, at revision 1',
      );
      for (const p of expected.state.profiles!) {
        const one = await h.app.inject({ url: `/api/acp/profiles/${p.id}`, headers: h.owner });
        t.equal(one.statusCode, 200, `GET /profiles/${p.id}`);
      }

      const onDisk = JSON.parse(await readFile(file, 'utf8')) as Doc;
      t.same(onDisk, expected, 'the file is now the golden v4 file');
      for (const key of ['roots', 'members', 'configs']) {
        if (input.state[key] !== undefined) t.same(onDisk.state[key], input.state[key], `state.${key} kept as it was`);
      }
      const backup = `${file}.v${v.from}.bak`;
      t.ok((await readFile(backup)).equals(original), 'the backup holds the original bytes');
      t.equal((await stat(backup)).mode & 0o777, 0o600);
      for (const [name, content] of Object.entries(v.logs)) {
        t.equal(
          await readFile(path.join(dataDir, 'agent-team', name), 'utf8'),
          content,
          `${name} holds the setup log as upstream writes it`,
        );
      }
      const files = ['registry.json', `registry.json.v${v.from}.bak`, ...Object.keys(v.logs)].sort();
      t.same(await agentTeamFiles(dataDir), files, 'nothing else is added');
      const migratedBytes = await readFile(file);
      await h.app.close();

      const again = await build(t, { dataDir });
      t.equal(
        (await again.app.inject({ url: '/api/acp/profiles', headers: again.owner })).json().profiles.length,
        expected.state.profiles!.length,
      );
      await again.app.close();
      t.same(await agentTeamFiles(dataDir), files, 'no second backup');
      t.ok((await readFile(file)).equals(migratedBytes), 're-running is a no-op: the file is not rewritten');
    },
  );
}

t.test('a v2 setup log longer than upstream keeps is capped to its last 200 entries', async (t) => {
  const v2 = (await fixture('v2')) as Doc;
  const long = Array.from({ length: 250 }, (_, i) => ({ ...ENTRY, receivedAt: 1000 + i }));
  v2.state.profiles![0] = { ...v2.state.profiles![0], setupLog: long };
  const { dataDir } = await dataDirWith(JSON.stringify(v2));
  const h = await build(t, { dataDir });
  await h.app.close();
  const lines = (await readFile(path.join(dataDir, 'agent-team', 'profile-1.setup.jsonl'), 'utf8')).split('\n').filter(Boolean);
  t.equal(lines.length, 200);
  t.equal(JSON.parse(lines[0]!).receivedAt, 1050, 'the oldest 50 are dropped');
  t.equal(JSON.parse(lines[199]!).receivedAt, 1249);
});

t.test('a v4 file is loaded as it is: no backup, no rewrite', async (t) => {
  const original = await fixtureBytes('v4');
  const { dataDir, file } = await dataDirWith(original);
  const h = await build(t, { dataDir });
  t.equal((await h.app.inject({ url: '/api/acp/profiles', headers: h.owner })).json().profiles.length, 2);
  await h.app.close();
  t.same(await agentTeamFiles(dataDir), ['registry.json']);
  t.ok((await readFile(file)).equals(original));
});

t.test('moving back: every v4 file this service writes is one upstream store reads, with the same profiles', async (t) => {
  // The revision is compared apart: a record stored without one is served at revision 1.
  const upstreamView = (p: Record<string, unknown>) => {
    const { preparation: _preparation, revision: _revision, ...rest } = p;
    const { revision: _, ...withPreparation } = p;
    return rest.launch && (rest.launch as { kind: string }).kind === 'agent-team-manifest' ? withPreparation : rest;
  };
  for (const name of ['v1', 'v1-no-deployments', 'v2', 'v3', 'v4', 'fresh']) {
    const { dataDir, file } = name === 'fresh' ? { dataDir: await tempDataDir(), file: '' } : await dataDirWith(await fixtureBytes(name));
    const registryFile = file || path.join(dataDir, 'agent-team', 'registry.json');
    const h = await build(t, { dataDir });
    // A write through the API as the Huabu UI makes it: the file is rewritten by the store.
    const created = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: {
        alias: 'Writer',
        agentletId: 'machine-a',
        workingDirPath: '\\\\server\\share\\docs',
        launch: { kind: 'acp-command', command: 'claude --acp' },
        metadata: { cliId: 'claude' },
        customData: { icon: { shape: 'spark', color: 'blue' } },
      },
    });
    t.equal(created.statusCode, 201, `${name}: create`);
    const served = (await h.app.inject({ url: '/api/acp/profiles', headers: h.owner })).json().profiles as Record<string, unknown>[];
    await h.app.close();
    const upstream = parseAsUpstream(JSON.parse(await readFile(registryFile, 'utf8')));
    t.same(
      [...upstream.profiles].sort((a, b) => String(a.id).localeCompare(String(b.id))).map(upstreamView),
      served.map(upstreamView),
      `${name}: upstream's parser accepts the file and reads the profiles we serve`,
    );
    const stored = new Map(upstream.profiles.map((p) => [String(p.id), (p as { revision?: unknown }).revision ?? 1]));
    t.same(
      new Map(served.map((p) => [String(p.id), p.revision])),
      stored,
      `${name}: the revision served is the stored one, 1 where none is stored`,
    );
    t.equal(served.find((p) => p.alias === 'Writer')?.revision, 1, `${name}: the created profile is stored at revision 1`);
  }
});

t.test('manifest-backed profiles are read-only here and carried unchanged through writes', async (t) => {
  const v4 = (await fixture('v4')) as Doc;
  // A stored manifest-backed record may carry resourceIds; it is shown with none in this phase.
  v4.state.profiles![0] = { ...v4.state.profiles![0], resourceIds: ['web-search'] };
  const { dataDir, file } = await dataDirWith(serializeRegistryDocument(v4));
  const h = await build(t, { dataDir });

  const lead = await h.app.inject({ url: '/api/acp/profiles/profile-1', headers: h.owner });
  t.same(lead.json().resourceIds, []);
  t.same(lead.json().launch, { kind: 'agent-team-manifest', manifestPath: '/teams/reviewer/agentlet.yaml', harness: 'copilot' });
  const patch = await h.app.inject({ method: 'PATCH', url: '/api/acp/profiles/profile-1', headers: h.owner, payload: { alias: 'Boss' } });
  t.equal(patch.statusCode, 409);
  t.equal(patch.json().code, 'invalid_profile_kind');
  const del = await h.app.inject({ method: 'DELETE', url: '/api/acp/profiles/profile-1', headers: h.owner });
  t.equal(del.statusCode, 409);

  // Any write rewrites the file: every other profile and state key must survive it exactly.
  const renamed = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/profiles/profile-2',
    headers: h.owner,
    payload: { alias: 'Critic' },
  });
  t.equal(renamed.statusCode, 200);
  const onDisk = JSON.parse(await readFile(file, 'utf8'));
  v4.state.profiles![1] = { ...v4.state.profiles![1], alias: 'Critic', revision: 2 };
  t.same(onDisk, v4, 'roots, members, configs and the manifest-backed record are unchanged');
});

t.test('a stored record upstream accepts never stops the start', async (t) => {
  const v4 = (await fixture('v4')) as Doc;
  const command = v4.state.profiles![1]!;
  v4.state.profiles = [
    { ...command, id: 'long-alias', alias: 'A'.repeat(255) + ' and more'.repeat(10) },
    { ...command, id: 'relative', alias: 'Relative', workingDirPath: 'projects/site' },
    { ...command, id: 'unc', alias: 'UNC', workingDirPath: '\\\\server\\share' },
    { ...command, id: 'multi-line', alias: 'Multi', launch: { kind: 'acp-command', command: 'run\n--acp\t' + 'x'.repeat(5000) } },
    { ...command, id: 'meta', alias: 'Meta', metadata: { cliId: ' spaced ' } },
  ];
  const { dataDir } = await dataDirWith(JSON.stringify(v4));
  const h = await build(t, { dataDir });
  const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
  t.equal(list.statusCode, 200);
  t.same(
    (list.json().profiles as { id: string }[]).map((p) => p.id),
    ['long-alias', 'meta', 'multi-line', 'relative', 'unc'],
  );
});

const FLAT_V1 = { schemaVersion: 1, profiles: [], roots: [], members: [] };
const refusals: [string, string | Buffer, RegExp][] = [
  ['a future file version', JSON.stringify({ schemaVersion: 5, state: { profiles: [] } }), /schemaVersion 5, newer than/],
  ['an unknown file version', JSON.stringify({ schemaVersion: 0, state: {} }), /unknown schemaVersion 0/],
  ['no file version', JSON.stringify({ state: { profiles: [] } }), /no integer schemaVersion/],
  ['an unparsable file', '{"schemaVersion": 3, "state": {', /does not parse as JSON/],
  [
    "a flat v1 file without `state` (not upstream's shape)",
    JSON.stringify(FLAT_V1),
    /is not a registry file v1: expected \{schemaVersion: 1, state: \{roots: \[\.\.\.\], members: \[\.\.\.\], deployments\?.*but it has no `state` object/,
  ],
  [
    'a v1 file without members',
    JSON.stringify({ schemaVersion: 1, state: { roots: [], deployments: [] } }),
    /not a registry file v1: expected .*but state\.members is missing/,
  ],
  [
    "a v2 file keyed by id (not upstream's shape)",
    JSON.stringify({ schemaVersion: 2, state: { roots: [], members: [], profiles: { a: {} } } }),
    /not a registry file v2: expected \{schemaVersion: 2, state: \{roots: .*but state\.profiles is not a list/,
  ],
  [
    'a v3 file holding deployments',
    JSON.stringify({ schemaVersion: 3, state: { roots: [], members: [], deployments: [] } }),
    /not a registry file v3: .*v1 key/,
  ],
  [
    'a v4 file with members that are not a list',
    JSON.stringify({ schemaVersion: 4, state: { roots: [], members: {}, profiles: [] } }),
    /not a registry file v4: .*state\.members is not a list/,
  ],
  [
    'a deployment without its machine',
    JSON.stringify({
      schemaVersion: 1,
      state: {
        roots: [],
        members: [],
        deployments: [
          { id: 'd', alias: 'D', manifestPath: '/m', harness: 'h', workingDirPath: '/w', setup: { status: 'ready', completedAt: 1 } },
        ],
      },
    }),
    /state\.deployments\[0\]\.machine must be a non-empty string/,
  ],
  [
    'a deployment with an unknown setup status',
    JSON.stringify({
      schemaVersion: 1,
      state: {
        roots: [],
        members: [],
        deployments: [
          { id: 'd', alias: 'D', machine: 'm', manifestPath: '/m', harness: 'h', workingDirPath: '/w', setup: { status: 'paused' } },
        ],
      },
    }),
    /setup\.status must be/,
  ],
  [
    'an embedded setup log with an unknown phase',
    JSON.stringify({
      schemaVersion: 2,
      state: { roots: [], members: [], profiles: [{ id: 'p', setupLog: [{ ...ENTRY, phase: 'dancing' }] }] },
    }),
    /state\.profiles\[0\]\.setupLog\[0\]\.phase must be one of/,
  ],
];
for (const version of [3, 4]) {
  const list = [
    {
      schemaVersion: 3,
      id: 'from-the-future',
      alias: 'X',
      agentletId: 'mac-a',
      workingDirPath: '/x',
      resourceIds: [],
      launch: { kind: 'acp-command', command: 'x' },
    },
  ];
  refusals.push([
    `an unknown profile schemaVersion in a v${version} file`,
    JSON.stringify({ schemaVersion: version, state: { roots: [], members: [], profiles: list } }),
    /from-the-future\) has unknown profile schemaVersion 3/,
  ]);
}
refusals.push([
  'a stored profile whose launch lacks its command',
  JSON.stringify({
    schemaVersion: 4,
    state: {
      roots: [],
      members: [],
      profiles: [
        {
          schemaVersion: 2,
          id: 'no-command',
          alias: 'X',
          agentletId: 'mac-a',
          workingDirPath: '/x',
          resourceIds: [],
          launch: { kind: 'acp-command' },
        },
      ],
      configs: [],
    },
  }),
  // The first thing wrong inside the launch, not the union's own "must match a schema in anyOf".
  /profiles\[0\] \(no-command\) is not a valid AgentProfile v2: \/launch must have required properties command/,
]);
refusals.push([
  'a legacy profile that is not valid once upgraded',
  JSON.stringify({
    schemaVersion: 3,
    state: {
      roots: [],
      members: [],
      profiles: [{ id: 'no-alias', agentletId: 'mac-a', workingDirPath: '/x', launch: { kind: 'acp-command', command: 'x' } }],
    },
  }),
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
    t.same(await agentTeamFiles(dataDir), ['registry.json'], 'no backup, no setup log, no temp file');

    const lines: string[] = [];
    t.equal(
      await runMigrate(
        ['--data-dir', dataDir],
        () => undefined,
        (l) => lines.push(l),
      ),
      1,
      'the migrate command refuses too',
    );
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
    const code = await runMigrate(
      args,
      (l) => out.push(l),
      (l) => err.push(l),
    );
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const logFile = path.join(dataDir, 'agent-team', 'profile-1.setup.jsonl');

  const dry = await run('--data-dir', dataDir, '--dry-run');
  t.equal(dry.code, 0);
  t.match(dry.out, 'registry file v2 → v4 (dry run: nothing written)');
  t.match(dry.out, 'v2 → v3');
  t.match(dry.out, 'v3 → v4');
  t.match(dry.out, `would back up the original bytes to ${file}.v2.bak`);
  t.match(dry.out, `would move 1 embedded setup log(s) to: ${logFile}`);
  t.ok((await readFile(file)).equals(original), 'a dry run writes nothing');
  t.same(await agentTeamFiles(dataDir), ['registry.json']);

  const h = await build(t, { dataDir: await tempDataDir() });
  const locked = await run('--data-dir', h.dataDir);
  t.equal(locked.code, 1, 'refuses while a service owns the DATA_DIR');
  t.match(locked.err, 'already in use');

  const real = await run(`--data-dir=${dataDir}`);
  t.equal(real.code, 0);
  t.match(real.out, `backed up the original bytes to ${file}.v2.bak`);
  t.match(real.out, `moved 1 embedded setup log(s) to: ${logFile}`);
  t.same(JSON.parse(await readFile(file, 'utf8')), await fixture('v4'));
  t.ok((await readFile(`${file}.v2.bak`)).equals(original));
  t.equal(await readFile(logFile, 'utf8'), jsonl(ENTRY));

  const rerun = await run('--data-dir', dataDir);
  t.match(rerun.out, 'nothing to do');
  t.same(await agentTeamFiles(dataDir), ['profile-1.setup.jsonl', 'registry.json', 'registry.json.v2.bak']);

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
  const original = await fixtureBytes('v1-no-deployments');
  const { dataDir, file } = await dataDirWith(original);
  const leftovers = [`${file}.v1.bak.4242-0a0b0c0d0e0f.tmp`, `${file}.4242-0f0e0d0c0b0a.tmp`];
  for (const temp of leftovers) await writeFile(temp, 'half of a write');
  const out: string[] = [];
  t.equal(
    await runMigrate(
      ['--data-dir', dataDir, '--dry-run'],
      (l) => out.push(l),
      () => undefined,
    ),
    0,
  );
  t.same(await agentTeamFiles(dataDir), ['registry.json', ...leftovers.map((f) => path.basename(f))].sort(), 'a dry run removes nothing');
  t.equal(
    await runMigrate(
      ['--data-dir', dataDir],
      (l) => out.push(l),
      () => undefined,
    ),
    0,
  );
  t.match(out.join('\n'), 'removed 2 temp file(s) left by an interrupted write');
  t.same(await agentTeamFiles(dataDir), ['registry.json', 'registry.json.v1.bak']);
  t.same(JSON.parse(await readFile(file, 'utf8')), await fixture('v1-no-deployments.expected'));
});

t.test('the migrate command refuses a DATA_DIR that is an interrupted backup, as the start does, and changes nothing', async (t) => {
  const original = await fixtureBytes('v2');
  const { dataDir, file } = await dataDirWith(original);
  await writeFile(path.join(dataDir, 'BACKUP-INCOMPLETE'), 'an interrupted backup: not a usable DATA_DIR\n');
  for (const args of [
    ['--data-dir', dataDir],
    ['--data-dir', dataDir, '--dry-run'],
  ]) {
    const out: string[] = [];
    const err: string[] = [];
    t.equal(
      await runMigrate(
        args,
        (l) => out.push(l),
        (l) => err.push(l),
      ),
      1,
      args.join(' '),
    );
    t.match(err.join('\n'), /BACKUP-INCOMPLETE: it is a backup that was interrupted before it was complete; take the backup again/);
    t.same(out, [], 'nothing reported as done');
  }
  t.ok((await readFile(file)).equals(original), 'registry.json untouched');
  t.same(await agentTeamFiles(dataDir), ['registry.json'], 'no backup, no setup log');
});
