// The Huabu UI's own profile calls, as it sends them (microsoft/Huabu shared `agent-profile.ts` and the
// `/api/acp/profiles` routes): create without agentletId when the service knows the host's machine,
// `metadata: {cliId}`, PATCH `null` to clear `customData`/`metadata`, `selectableProfileIds` on the list,
// and upstream's wider bounds (255-character aliases, UNC working directories).
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config.js';
import { build, tempDataDir, testEnv, type TestApp } from '../helpers/build.js';
import { uiProfileBody } from '../helpers/profiles.js';

const post = (h: TestApp, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload });
const patch = (h: TestApp, id: string, payload: Record<string, unknown>) =>
  h.app.inject({ method: 'PATCH', url: `/api/acp/profiles/${id}`, headers: h.owner, payload });

t.test('create without agentletId lands on DEFAULT_AGENTLET_ID; without one it is still 400', async (t) => {
  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'huabu-host-machine' } });
  const created = await post(h, uiProfileBody());
  t.equal(created.statusCode, 201, created.body);
  t.equal(created.json().agentletId, 'huabu-host-machine');
  const explicit = await post(h, uiProfileBody({ alias: 'Elsewhere', agentletId: 'mac-b' }));
  t.equal(explicit.json().agentletId, 'mac-b', 'a given agentletId wins');

  const plain = await build(t);
  const refused = await post(plain, uiProfileBody());
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().code, 'validation_failed');
  t.equal(refused.json().details.field, '/agentletId');
});

t.test('DEFAULT_AGENTLET_ID is checked once at start', (t) => {
  for (const bad of ['huabu', 'has space', '-leading']) {
    t.throws(() => loadConfig(testEnv('/var/lib/registry', { DEFAULT_AGENTLET_ID: bad })), ConfigError, `${bad} is refused`);
  }
  t.equal(loadConfig(testEnv('/var/lib/registry', { DEFAULT_AGENTLET_ID: 'agentlet-7f3a' })).defaultAgentletId, 'agentlet-7f3a');
  t.equal(loadConfig(testEnv('/var/lib/registry')).defaultAgentletId, undefined);
  t.end();
});

t.test('metadata {cliId} is stored, returned, patchable, and null clears it; customData null clears it', async (t) => {
  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const created = await post(h, uiProfileBody());
  t.equal(created.statusCode, 201, created.body);
  const { id } = created.json();
  t.same(created.json().metadata, { cliId: 'copilot' });
  t.same((await h.app.inject({ url: `/api/acp/profiles/${id}`, headers: h.owner })).json().metadata, { cliId: 'copilot' });
  t.same((await h.app.inject({ url: '/api/acp/profiles', headers: h.owner })).json().profiles[0].metadata, { cliId: 'copilot' });

  const changed = await patch(h, id, { metadata: { cliId: 'claude' } });
  t.equal(changed.statusCode, 200);
  t.same(changed.json().metadata, { cliId: 'claude' });

  const cleared = await patch(h, id, { metadata: null, customData: null });
  t.equal(cleared.statusCode, 200, cleared.body);
  t.notOk('metadata' in cleared.json(), 'metadata removed');
  t.notOk('customData' in cleared.json(), 'customData removed');
  const onDisk = JSON.parse(await readFile(path.join(h.dataDir, 'agent-team', 'registry.json'), 'utf8'));
  t.notOk('metadata' in onDisk.state.profiles[0] || 'customData' in onDisk.state.profiles[0], 'removed on disk too');

  t.equal((await patch(h, id, { metadata: { cliId: 'x', other: 1 } })).statusCode, 400, 'metadata holds cliId only');
  t.equal((await patch(h, id, { metadata: { cliId: ' padded' } })).statusCode, 400, 'cliId without surrounding whitespace');
  t.equal((await post(h, uiProfileBody({ alias: 'Long cli', metadata: { cliId: 'c'.repeat(256) } }))).statusCode, 400, 'cliId at most 255');
});

t.test('metadata is scanned for secrets like every other field', async (t) => {
  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const secret = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
  const res = await post(h, uiProfileBody({ metadata: { cliId: secret } }));
  t.equal(res.statusCode, 422);
  t.equal(res.json().code, 'secret_detected');
  t.notMatch(res.body, secret);
});

t.test('aliases up to 255 characters on create and PATCH; UNC working directories', async (t) => {
  const h = await build(t, { env: { DEFAULT_AGENTLET_ID: 'mac-a' } });
  const long = 'R'.repeat(255);
  const created = await post(h, uiProfileBody({ alias: long, workingDirPath: '\\\\fileserver\\share\\site' }));
  t.equal(created.statusCode, 201, created.body);
  t.equal(created.json().alias, long);
  t.equal(created.json().workingDirPath, '\\\\fileserver\\share\\site');
  t.equal((await post(h, uiProfileBody({ alias: 'S'.repeat(256) }))).statusCode, 400, '256 is too long');
  for (const alias of [' Padded', 'Padded '])
    t.equal((await post(h, uiProfileBody({ alias }))).statusCode, 400, `${JSON.stringify(alias)}: surrounding whitespace is refused`);
  const renamed = await patch(h, created.json().id, { alias: 'Q'.repeat(255), workingDirPath: '\\\\other\\share' });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.equal(renamed.json().alias.length, 255);
  t.equal((await patch(h, created.json().id, { alias: 'Q'.repeat(256) })).statusCode, 400);
});

/** A DATA_DIR holding upstream's registry state (v4 fixture) with the member and profile-1 adjusted. */
async function teamDataDir(
  adjust: (state: { members: Record<string, unknown>[]; profiles: Record<string, unknown>[]; configs: Record<string, unknown>[] }) => void,
) {
  const doc = JSON.parse(await readFile(path.join('test', 'fixtures', 'registry', 'v4.json'), 'utf8'));
  adjust(doc.state);
  const dataDir = await tempDataDir();
  await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
  await writeFile(path.join(dataDir, 'agent-team', 'registry.json'), JSON.stringify(doc));
  return dataDir;
}

t.test(
  "selectableProfileIds has upstream's meaning: command profiles, and manifest profiles ready on an active, configured member",
  async (t) => {
    const cases: [string, Parameters<typeof teamDataDir>[0], string[]][] = [
      ['not prepared', () => undefined, ['profile-2']],
      ['ready', (s) => (s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 }), ['profile-1', 'profile-2']],
      [
        'ready, member missing',
        (s) => {
          s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 };
          s.members[0] = { ...s.members[0], status: 'member_missing', discoveredBy: [] };
        },
        ['profile-2'],
      ],
      [
        'ready, a required field without value',
        (s) => {
          s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 };
          s.members[0]!.env = [{ name: 'MODEL', description: 'Model', required: true, secret: false }];
        },
        ['profile-2'],
      ],
      [
        'ready, the required field configured',
        (s) => {
          s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 };
          s.members[0]!.env = [{ name: 'MODEL', description: 'Model', required: true, secret: false }];
          s.configs[0]!.values = { MODEL: 'gpt' };
        },
        ['profile-1', 'profile-2'],
      ],
      [
        'ready, the required field has a default',
        (s) => {
          s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 };
          s.members[0]!.env = [{ name: 'MODEL', description: 'Model', required: true, secret: false, default: 'gpt' }];
        },
        ['profile-1', 'profile-2'],
      ],
      [
        'ready, a required secret (kept in Huabu, unseen here)',
        (s) => {
          s.profiles[0]!.preparation = { status: 'ready', completedAt: 100 };
          s.members[0]!.env = [{ name: 'API_KEY', description: 'Key', required: true, secret: true }];
        },
        ['profile-2'],
      ],
    ];
    for (const [what, adjust, selectable] of cases) {
      const h = await build(t, { dataDir: await teamDataDir(adjust) });
      const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
      t.equal(list.statusCode, 200);
      t.same(list.json().selectableProfileIds, selectable, what);
      t.equal(list.json().profiles.length, 2, `${what}: every profile is still listed`);
      await h.app.close();
    }
  },
);
