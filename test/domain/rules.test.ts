// The domain core's rules as pure functions, each pinned by what a user would see break (the
// mutants that survived the whole suite and the focused runs). No app, no I/O: `npm run mutate` runs this
// file first, so most mutants die here in a second or two. The same rules over HTTP: test/domain/rules-over-http.test.ts.
// See docs/TESTING.md.
import t from 'tap';
import { createHmac } from 'node:crypto';
import {
  decodeBase64url,
  mintCanvasToken,
  verifyCanvasToken,
  matchDigest,
  tokenDigest,
  generateToken,
  TOKEN_PREFIX,
} from '../../src/credentials/tokens.js';
import { grantKey, mintGrant, verifyGrant } from '../../src/invocation/grants.js';
import {
  fileVersion,
  migrateRegistryDocument,
  REGISTRY_FILE_STEPS,
  upgradeProfiles,
  validateRegistryDocument,
} from '../../src/migrations/registry-file.js';
import { MigrationError, upgradeProfile } from '../../src/migrations/profile-v1.js';
import { carryOwnerFields, planPut, planReconcile, planWithdraw, sameRecord } from '../../src/registry/ownership.js';
import { assertPlacement } from '../../src/profiles/placement.js';
import {
  aliasKey,
  assertAliasFree,
  assertRevision,
  canonicalJson,
  newProfileId,
  planCreate,
  planDelete,
  planUpdate,
  profileRevision,
  profileView,
} from '../../src/profiles/profile-rules.js';
import { effectiveResourceIds } from '../../src/workloads/workload-service.js';
import type { AgentResource } from '../../src/schemas/resource.js';
import type { AgentProfile } from '../../src/schemas/profile.js';

const SECRET = 'arr_secret_core0rules0test0secret000000000000';

// --- Ownership rules -------------------------------------------------------------------------------------------

const resource = (id: string, provider = 'huabu', over: Partial<AgentResource> = {}): AgentResource => ({
  schemaVersion: 1,
  id,
  provider,
  name: `Name ${id}`,
  description: `About ${id}.`,
  instructions: `Use ${id}.`,
  ...over,
});

t.test('a record differing in any one field is a replacement; only an identical one is unchanged', (t) => {
  const base = resource('a');
  t.equal(planPut(undefined, base), 'created');
  t.equal(planPut(base, { ...base }), 'unchanged');
  t.ok(sameRecord(base, { ...base }));
  for (const field of ['id', 'name', 'description', 'instructions'] as const) {
    const changed = { ...base, [field]: base[field] + ' (changed)' };
    t.notOk(sameRecord(base, changed), `${field} differs`);
    t.equal(planPut(base, { ...changed, id: base.id }), field === 'id' ? 'unchanged' : 'replaced', field);
  }
  t.notOk(sameRecord(base, { ...base, provider: 'mac-a' }), 'provider differs');
  t.notOk(sameRecord(base, { ...base, schemaVersion: 2 as 1 }), 'schemaVersion differs');
  t.throws(() => planPut(base, { ...base, provider: 'mac-a' }), {
    code: 'resource_conflict',
    details: { ids: ['a'], conflicts: [{ id: 'a', provider: 'huabu' }] },
  });
  t.end();
});

t.test("a provider's write keeps the owner's customization of its own record, never of another provider's", (t) => {
  const customized = { ...resource('r', 'huabu'), displayName: 'Owner name', userContent: 'Owner notes.' };
  const incoming = resource('r', 'huabu', { instructions: 'Use r, newly.' });
  t.same(
    carryOwnerFields(customized, incoming),
    { ...incoming, displayName: 'Owner name', userContent: 'Owner notes.' },
    "the same provider's replacement carries them",
  );
  t.same(carryOwnerFields(undefined, incoming), incoming, 'a new record has none');
  // A record answered after a write (resource-registry's PUT reads the ID back) may by then be another
  // provider's: its owner's fields must not be lent to this provider's record.
  const foreign = { ...resource('r', 'agentlet-7f3a'), displayName: 'Not yours', userContent: 'Not yours either.' };
  t.same(carryOwnerFields(foreign, incoming), incoming, "another provider's record lends nothing");
  t.end();
});

t.test('withdraw: only the holder may; an unknown ID is not found', (t) => {
  t.doesNotThrow(() => planWithdraw(resource('a'), 'huabu', 'a'));
  t.throws(() => planWithdraw(undefined, 'huabu', 'a'), {
    code: 'resource_not_found',
    message: 'No resource with ID a.',
    details: { id: 'a' },
  });
  t.throws(() => planWithdraw(resource('a'), 'mac-a', 'a'), {
    code: 'resource_conflict',
    message: 'Resource ID a is held by another provider; nothing was changed.',
    details: { ids: ['a'], conflicts: [{ id: 'a', provider: 'huabu' }] },
  });
  t.end();
});

t.test('reconcile: created, replaced, unchanged and withdrawn, each sorted; any conflict rejects all', (t) => {
  const held = new Map([
    ['b', resource('b', 'mac-a')],
    ['d', resource('d', 'mac-a')],
    ['c', resource('c', 'mac-a')],
    ['z', resource('z', 'mac-a')],
    ['y', resource('y', 'mac-a')],
    ['x', resource('x', 'huabu')],
  ]);
  const plan = planReconcile((id) => held.get(id), ['b', 'd', 'c', 'z', 'y'], 'mac-a', [
    resource('e', 'mac-a'),
    resource('a', 'mac-a'),
    resource('d', 'mac-a', { instructions: 'new' }),
    resource('b', 'mac-a', { instructions: 'new' }),
    resource('c', 'mac-a'),
  ]);
  t.same(plan, { created: ['a', 'e'], replaced: ['b', 'd'], withdrawn: ['y', 'z'], unchanged: ['c'] });
  t.throws(
    () => planReconcile((id) => held.get(id), [], 'mac-a', [resource('x', 'mac-a'), resource('new', 'mac-a'), resource('w', 'mac-a')]),
    {
      code: 'resource_conflict',
      message: 'Resource ID x is held by another provider; nothing was changed.',
    },
  );
  held.set('w', resource('w', 'other'));
  t.throws(() => planReconcile((id) => held.get(id), [], 'mac-a', [resource('x', 'mac-a'), resource('w', 'mac-a')]), {
    message: 'Resource IDs x, w are held by another provider; nothing was changed.',
    details: {
      ids: ['x', 'w'],
      conflicts: [
        { id: 'x', provider: 'huabu' },
        { id: 'w', provider: 'other' },
      ],
    },
  });
  t.end();
});

// --- Placement and the effective set ----------------------------------------------------------------------------

t.test('placement: every ID must resolve, and be the host’s or the profile machine’s own', (t) => {
  const records: Record<string, { provider: string }> = {
    h: { provider: 'huabu' },
    a: { provider: 'mac-a' },
    b: { provider: 'mac-b' },
    b2: { provider: 'mac-b' },
  };
  const lookup = (id: string) => records[id];
  t.doesNotThrow(() => assertPlacement(['h', 'a'], 'mac-a', lookup));
  t.doesNotThrow(() => assertPlacement([], 'mac-a', lookup));
  t.throws(() => assertPlacement(['x', 'h', 'y', 'b'], 'mac-a', lookup), {
    code: 'unresolved_resource_ids',
    message: 'No resource with ID x, y; a profile can select only registered resources.',
    details: { field: '/resourceIds', ids: ['x', 'y'] },
  });
  t.throws(() => assertPlacement(['b', 'h', 'b2'], 'mac-a', lookup), {
    code: 'resource_not_eligible',
    message: 'Resource b, b2 belongs to another machine; a profile on mac-a can select only resources of huabu or of mac-a.',
    details: {
      field: '/resourceIds',
      ids: ['b', 'b2'],
      providers: [
        { id: 'b', provider: 'mac-b' },
        { id: 'b2', provider: 'mac-b' },
      ],
    },
  });
  t.same(effectiveResourceIds(['r1', 'r2'], ['s', 'r2', 's', 'r1', 't']), ['r1', 'r2', 's', 't']);
  t.end();
});

// --- Profile rules --------------------------------------------------------------------------------------------

const profile = (id: string, over: Partial<AgentProfile> = {}): AgentProfile => ({
  schemaVersion: 2,
  id,
  alias: `Alias ${id}`,
  agentletId: 'mac-a',
  workingDirPath: '/w',
  launch: { kind: 'acp-command', command: 'agent' },
  resourceIds: [],
  ...over,
});
const manifest = (id: string) =>
  profile(id, {
    launch: { kind: 'agent-team-manifest', manifestPath: '/m.yaml', harness: 'h', member: 'm' } as AgentProfile['launch'],
    resourceIds: ['r'],
  });

t.test('aliases are unique ignoring case; a profile may keep its own', (t) => {
  const all = [profile('p1', { alias: 'Reviewer' }), profile('p2', { alias: 'Writer' })];
  t.equal(aliasKey('ReViEwEr'), aliasKey('reviewer'));
  t.throws(() => assertAliasFree(all, 'REVIEWER'), {
    code: 'alias_conflict',
    message: 'Alias "REVIEWER" is already used by profile p1 (aliases ignore case).',
    details: { field: '/alias', id: 'p1' },
  });
  t.doesNotThrow(() => assertAliasFree(all, 'reviewer', 'p1'), 'its own alias');
  t.throws(() => assertAliasFree(all, 'writer', 'p1'), { code: 'alias_conflict', details: { id: 'p2' } });
  t.doesNotThrow(() => assertAliasFree(all, 'Editor'));
  t.throws(() => planCreate(all, profile('p3', { alias: 'writer' }), () => false), { code: 'alias_conflict' });
  t.throws(() => planCreate(all, profile('p1', { alias: 'New' }), (id) => id === 'p1'), {
    code: 'internal_error',
    message: 'Profile ID p1 was assigned twice.',
  });
  t.doesNotThrow(() => planCreate(all, profile('p3', { alias: 'New' }), () => false));
  t.end();
});

t.test('revisions: stable over key order, changed by any change, checked only when If-Match is sent', (t) => {
  const p = profile('p1');
  const rev = profileRevision(p);
  t.match(rev, /^[A-Za-z0-9_-]{27}$/);
  const reordered = Object.fromEntries(Object.entries(p).reverse()) as AgentProfile;
  t.equal(profileRevision(reordered), rev, 'key order does not matter');
  t.not(profileRevision({ ...p, alias: 'Other' }), rev);
  t.not(profileRevision({ ...p, customData: { a: 1 } }), rev);
  t.equal(canonicalJson({ b: [1, { d: null, c: 'x' }], a: undefined, e: true }), '{"b":[1,{"c":"x","d":null}],"e":true}');
  t.equal(canonicalJson('s'), '"s"');
  t.equal(canonicalJson(null), 'null');
  t.doesNotThrow(() => assertRevision(p, undefined));
  t.doesNotThrow(() => assertRevision(p, ['x', rev]));
  t.throws(() => assertRevision(p, []), { code: 'precondition_failed', details: { id: 'p1' } });
  t.throws(() => assertRevision(p, ['x']), {
    message: 'Profile p1 changed since the ETag you sent was issued; read it again and reapply your change.',
  });
  t.end();
});

t.test('update: not found, stale, manifest-backed and alias conflicts are refused in that order; no-op is unchanged', (t) => {
  const p1 = profile('p1', { alias: 'Reviewer' });
  const all = [p1, profile('p2', { alias: 'Writer' }), manifest('m1')];
  t.throws(() => planUpdate(all, undefined, 'nope', { alias: 'Writer' }, ['x']), {
    code: 'profile_not_found',
    message: 'No profile with ID nope.',
    details: { id: 'nope' },
  });
  t.throws(() => planUpdate(all, p1, 'p1', { alias: 'Writer' }, ['stale']), { code: 'precondition_failed' });
  t.throws(() => planUpdate(all, manifest('m1'), 'm1', { alias: 'Writer' }, undefined), {
    code: 'invalid_profile_kind',
    message: 'Profile m1 is manifest-backed (agent-team-manifest); it is managed by its Agent Team manifest and cannot be changed here.',
    details: { id: 'm1', kind: 'agent-team-manifest' },
  });
  t.throws(() => planUpdate(all, p1, 'p1', { alias: 'writer' }, undefined), { code: 'alias_conflict' });
  const same = planUpdate(all, p1, 'p1', { alias: 'Reviewer', workingDirPath: '/w', resourceIds: [] }, [profileRevision(p1)]);
  t.equal(same.changed, false);
  t.equal(same.next, p1, 'the current record itself');
  const recase = planUpdate(all, p1, 'p1', { alias: 'REVIEWER' }, undefined);
  t.same([recase.changed, recase.next.alias], [true, 'REVIEWER'], 'its own alias in another case');
  const ids = ['a'];
  const changed = planUpdate(all, p1, 'p1', { workingDirPath: '/x', resourceIds: ids, customData: { k: 1 } }, undefined);
  t.equal(changed.changed, true);
  t.same(changed.next, { ...p1, revision: 2, workingDirPath: '/x', resourceIds: ['a'], customData: { k: 1 } });
  t.not(changed.next.resourceIds, ids, 'a copy of the list');
  t.same(p1, profile('p1', { alias: 'Reviewer' }), 'the current record is not modified');
  t.same(planUpdate(all, p1, 'p1', {}, undefined), { next: p1, changed: false });
  t.end();
});

t.test('update: metadata and customData are kept unless the change names them; an unchanged alias is never re-checked', (t) => {
  const p1 = profile('p1', { alias: 'Reviewer', metadata: { cliId: 'claude' }, customData: { k: 1 } });
  const all = [p1, profile('p2', { alias: 'Writer' })];
  const renamed = planUpdate(all, p1, 'p1', { alias: 'Auditor' }, undefined);
  t.strictSame(renamed.next, { ...p1, alias: 'Auditor', revision: 2 }, 'a change of alias keeps metadata and customData');
  t.ok('metadata' in renamed.next && 'customData' in renamed.next, 'both still present');
  const meta = planUpdate(all, p1, 'p1', { metadata: { cliId: 'codex' } }, undefined);
  t.strictSame([meta.changed, meta.next.metadata], [true, { cliId: 'codex' }], 'metadata replaced when given');
  const cleared = planUpdate(all, p1, 'p1', { metadata: null }, undefined);
  t.notOk('metadata' in cleared.next, 'null clears it');
  // Data written before aliases ignored case (or migrated) may hold two profiles whose aliases differ only
  // in case: resending one's own alias unchanged must not be refused for the other's.
  const legacy = [p1, profile('p3', { alias: 'REVIEWER' })];
  t.doesNotThrow(
    () => planUpdate(legacy, p1, 'p1', { alias: 'Reviewer', workingDirPath: '/elsewhere' }, undefined),
    'its unchanged alias passes',
  );
  t.throws(() => planUpdate(legacy, p1, 'p1', { alias: 'reviewer' }, undefined), { code: 'alias_conflict' }, 'a changed one is checked');
  t.end();
});

t.test('delete: not found, stale and manifest-backed are refused', (t) => {
  t.throws(() => planDelete(undefined, 'nope', undefined), { code: 'profile_not_found' });
  t.throws(() => planDelete(profile('p1'), 'p1', ['stale']), { code: 'precondition_failed' });
  t.throws(() => planDelete(manifest('m1'), 'm1', undefined), { message: /cannot be deleted here\.$/ });
  t.doesNotThrow(() => planDelete(profile('p1'), 'p1', [profileRevision(profile('p1'))]));
  t.end();
});

t.test('profile IDs and views', (t) => {
  const ids = new Set(Array.from({ length: 50 }, () => newProfileId()));
  t.equal(ids.size, 50);
  for (const id of ids) t.match(id, /^prf-[a-z2-7]{16}$/);
  t.same(profileView(manifest('m1')).resourceIds, [], 'a manifest-backed profile shows no selection');
  const own = profile('p1', { resourceIds: ['a'], revision: 4 });
  t.equal(profileView(own), own, 'a record with its revision is shown as it is');
  const emptyManifest = { ...manifest('m2'), resourceIds: [], revision: 1 };
  t.equal(profileView(emptyManifest), emptyManifest);
  const older = profile('p2');
  t.same(profileView(older), { ...older, revision: 1 }, 'a record stored without a revision is shown at revision 1');
  t.notOk('revision' in older, 'the stored record is not modified');
  t.end();
});

t.test('revisions: +1 per change that changes something; a stale expectedRevision is 409 before anything else but If-Match', (t) => {
  const p1 = profile('p1', { alias: 'Reviewer', revision: 7 });
  const all = [p1, profile('p2', { alias: 'Writer' })];
  t.equal(planUpdate(all, p1, 'p1', { alias: 'Auditor' }, undefined, 7).next.revision, 8);
  const same = planUpdate(all, p1, 'p1', { alias: 'Reviewer' }, undefined, 7);
  t.same([same.changed, same.next], [false, p1], 'nothing changes: the same record, the same revision');
  t.throws(() => planUpdate(all, p1, 'p1', { alias: 'Auditor' }, undefined, 6), {
    code: 'profile_conflict',
    details: { id: 'p1', revision: 7, expectedRevision: 6 },
  });
  t.throws(
    () => planUpdate(all, p1, 'p1', { alias: 'Reviewer' }, undefined, 8),
    { code: 'profile_conflict' },
    'even for a change that changes nothing',
  );
  t.throws(() => planUpdate(all, p1, 'p1', { alias: 'writer' }, undefined, 6), { code: 'profile_conflict' }, 'before the alias check');
  t.throws(() => planUpdate(all, p1, 'p1', { alias: 'Auditor' }, ['stale'], 6), { code: 'precondition_failed' }, 'after If-Match');
  const older = profile('p3');
  t.equal(planUpdate([older], older, 'p3', { alias: 'Older' }, undefined, 1).next.revision, 2, 'a record without a revision is at 1');
  t.throws(() => planUpdate([older], older, 'p3', { alias: 'Older' }, undefined, 0), { code: 'profile_conflict' });
  t.not(profileRevision(p1), profileRevision({ ...p1, revision: 8 }), 'the ETag covers the revision');
  t.end();
});

// --- Registry-file migration ---------------------------------------------------------------------------------

const v1Profile = (id: string, alias = id) => ({
  id,
  alias,
  agentletId: 'mac-a',
  workingDirPath: '/w',
  launch: { kind: 'acp-command', command: 'agent' },
  resourceIds: ['ignored'],
});

// The Agent Team state every upstream registry file carries (test/fixtures/registry/ has full examples).
const ROOTS = [{ machine: 'mac-a', path: '/teams', scan: { status: 'success', scannedAt: 100, diagnostics: [] } }];
const MEMBERS = [
  {
    machine: 'mac-a',
    manifestPath: '/teams/m.yaml',
    name: 'm',
    description: 'M',
    harnesses: ['h'],
    env: [],
    discoveredBy: [{ machine: 'mac-a', path: '/teams' }],
    status: 'active',
  },
];
const CONFIGS = [{ machine: 'mac-a', manifestPath: '/teams/m.yaml', values: { ENDPOINT: 'https://example.test' } }];
const team = { roots: ROOTS, members: MEMBERS };
const LOG_ENTRY = { receivedAt: 101, phase: 'installing_tools', status: 'started', message: 'Installing CLI tools' };
/** A v1 deployment as upstream's store wrote it. */
const deployment = (id: string, alias = id, over: Record<string, unknown> = {}) => ({
  schemaVersion: 2,
  id,
  alias,
  revision: 1,
  enabled: true,
  machine: 'mac-a',
  manifestPath: '/teams/m.yaml',
  harness: 'h',
  workingDirPath: `/w/${id}`,
  setup: { status: 'ready', completedAt: 100 },
  ...over,
});
/** The manifest-backed Profile v2 a deployment becomes. */
const manifestProfile = (id: string, alias = id, preparation: Record<string, unknown> = { status: 'ready', completedAt: 100 }) => ({
  schemaVersion: 2,
  id,
  alias,
  agentletId: 'mac-a',
  workingDirPath: `/w/${id}`,
  resourceIds: [],
  launch: { kind: 'agent-team-manifest', manifestPath: '/teams/m.yaml', harness: 'h' },
  preparation,
});
/** `record` without `key`, as a JSON file that lacks it. */
const without = (record: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(record).filter(([k]) => k !== key));
/** The error a migration throws (undefined when it does not). */
const refusalOf = (doc: unknown): unknown => {
  try {
    migrateRegistryDocument(doc);
  } catch (err) {
    return err;
  }
  return undefined;
};

t.test('a v4 file holding a legacy profile keeps every profile and every other state and top-level key', (t) => {
  const v2 = { schemaVersion: 2, ...v1Profile('current'), resourceIds: ['kept'] };
  const doc = {
    schemaVersion: 4,
    topLevel: { keep: true },
    state: { ...team, profiles: [v1Profile('legacy'), v2], configs: CONFIGS, unknownKey: { keep: 1 } },
  };
  const before = structuredClone(doc);
  const result = migrateRegistryDocument(doc);
  t.strictSame(result.doc, {
    schemaVersion: 4,
    topLevel: { keep: true },
    state: {
      roots: ROOTS,
      members: MEMBERS,
      profiles: [{ schemaVersion: 2, ...v1Profile('legacy'), resourceIds: [] }, v2],
      configs: CONFIGS,
      unknownKey: { keep: 1 },
    },
  });
  t.strictSame(result.upgradedIds, ['legacy']);
  t.strictSame(result.steps, ['v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []']);
  t.equal(result.from, 4);
  t.strictSame(result.setupLogs, new Map(), 'a v4 file has no setup log to move');
  t.strictSame(doc, before, 'the input document is not modified');
  t.end();
});

t.test('a v4 file with only current profiles is returned as it is, with no step', (t) => {
  const doc = {
    schemaVersion: 4,
    state: { ...team, profiles: [manifestProfile('m'), { schemaVersion: 2, ...v1Profile('p') }], configs: CONFIGS },
  };
  const result = migrateRegistryDocument(doc);
  t.strictSame(result, { from: 4, doc, steps: [], upgradedIds: [], setupLogs: new Map() });
  t.equal(result.doc, doc, 'the very same document');
  // A v4 file this service wrote before it kept upstream's roots/members is current too.
  const older = { schemaVersion: 4, state: { profiles: [{ schemaVersion: 2, ...v1Profile('p') }] } };
  const olderResult = migrateRegistryDocument(older);
  t.strictSame(olderResult, { from: 4, doc: older, steps: [], upgradedIds: [], setupLogs: new Map() });
  t.equal(olderResult.doc, older);
  t.end();
});

t.test('a v1 file listing one profile ID twice is refused, not merged', (t) => {
  // v1 lists deployments, each becoming a profile; two with one ID are refused when the v4 document is
  // validated, whichever step they came through, and wherever they come from.
  const v1 = {
    schemaVersion: 1,
    state: { ...team, deployments: [deployment('d', 'First'), deployment('d', 'Second', { setupLog: [LOG_ENTRY] })] },
  };
  const err = refusalOf(v1);
  t.type(err, MigrationError);
  t.equal((err as Error).message, 'profile d appears twice');
  // The v1 → v2 step keeps both records as they are: nothing is merged before the refusal sees them.
  t.strictSame(REGISTRY_FILE_STEPS[0]!.up(v1).state, {
    ...team,
    profiles: [manifestProfile('d', 'First'), { ...manifestProfile('d', 'Second'), setupLog: [LOG_ENTRY] }],
    configs: [],
  });
  for (const version of [2, 3, 4]) {
    const second = { ...manifestProfile('p', 'Second'), ...(version < 4 ? { setupLog: [LOG_ENTRY] } : {}) };
    const dup = refusalOf({
      schemaVersion: version,
      state: { ...team, profiles: [manifestProfile('p', 'First'), second], configs: CONFIGS },
    });
    t.type(dup, MigrationError, `v${version}`);
    t.equal((dup as Error).message, 'profile p appears twice', `v${version}`);
  }
  const legacyAndCurrent = refusalOf({
    schemaVersion: 4,
    state: { ...team, profiles: [v1Profile('p', 'First'), { schemaVersion: 2, ...v1Profile('p', 'Second') }], configs: CONFIGS },
  });
  t.type(legacyAndCurrent, MigrationError, 'a legacy record and a current one with the same ID');
  t.equal((legacyAndCurrent as Error).message, 'profile p appears twice');
  t.end();
});

t.test('a v1 file migrates all the way, reporting each step and each upgraded ID', (t) => {
  const completed = { ...LOG_ENTRY, receivedAt: 102, status: 'completed', message: 'CLI tools installed' };
  const input = {
    schemaVersion: 1,
    topLevel: 'kept',
    state: {
      ...team,
      deployments: [
        deployment('a', 'Ay', { setupLog: [] }),
        deployment('b', 'Bee', { setup: { status: 'disabled' }, setupLog: [LOG_ENTRY, { ...completed, extra: 'dropped' }] }),
        deployment('c', 'Cee', {
          setup: { status: 'error', failedAt: 7, error: { code: 'boom', message: 'It failed', extra: 1 }, extra: 2 },
        }),
      ],
      unknownKey: 1,
    },
  };
  const result = migrateRegistryDocument(input);
  t.equal(result.from, 1);
  t.strictSame(result.steps, [
    'v1 → v2: deployments become manifest-backed profiles (machine → agentletId, setup → preparation)',
    'v2 → v3: embedded setup logs move to agent-team/<profile id>.setup.jsonl',
    'v3 → v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []',
  ]);
  t.strictSame(
    result.steps,
    REGISTRY_FILE_STEPS.map((s) => s.describe),
    'every step, in order',
  );
  t.strictSame(result.upgradedIds, [], 'a deployment becomes a Profile v2 directly: no Profile v1 record is upgraded');
  t.strictSame(result.doc, {
    schemaVersion: 4,
    topLevel: 'kept',
    state: {
      ...team,
      unknownKey: 1,
      profiles: [
        manifestProfile('a', 'Ay'),
        manifestProfile('b', 'Bee', { status: 'not_prepared' }),
        manifestProfile('c', 'Cee', { status: 'error', failedAt: 7, error: { code: 'boom', message: 'It failed' } }),
      ],
      configs: [],
    },
  });
  t.strictSame(
    result.setupLogs,
    new Map([
      ['a', []],
      ['b', [LOG_ENTRY, completed]],
    ]),
    'every embedded setup log leaves the file, reduced to its four fields',
  );

  // A Profile v1 record (no schemaVersion) in an older file is upgraded on the way and reported.
  const fromV2 = migrateRegistryDocument({
    schemaVersion: 2,
    state: {
      ...team,
      profiles: [
        { ...v1Profile('old'), setupLog: [LOG_ENTRY] },
        { schemaVersion: 2, ...v1Profile('new') },
      ],
      configs: CONFIGS,
    },
  });
  t.equal(fromV2.from, 2);
  t.strictSame(
    fromV2.steps,
    REGISTRY_FILE_STEPS.slice(1).map((s) => s.describe),
  );
  t.strictSame(fromV2.upgradedIds, ['old']);
  t.strictSame(fromV2.doc, {
    schemaVersion: 4,
    state: {
      ...team,
      profiles: [
        { schemaVersion: 2, ...v1Profile('old'), resourceIds: [] },
        { schemaVersion: 2, ...v1Profile('new') },
      ],
      configs: CONFIGS,
    },
  });
  t.strictSame(fromV2.setupLogs, new Map([['old', [LOG_ENTRY]]]));

  const noDeployments = migrateRegistryDocument({ schemaVersion: 1, state: team });
  t.strictSame(
    noDeployments.doc,
    { schemaVersion: 4, state: { ...team, profiles: [], configs: [] } },
    'a v1 file without deployments has no profiles',
  );
  const v2NoProfiles = migrateRegistryDocument({ schemaVersion: 2, state: team });
  t.strictSame(v2NoProfiles.doc, { schemaVersion: 4, state: { ...team, profiles: [] } }, 'a v2 file without profiles has none');
  const v4NoProfiles = migrateRegistryDocument({ schemaVersion: 4, state: {} });
  t.strictSame(v4NoProfiles.doc, { schemaVersion: 4, state: {} }, 'a v4 file without profiles is valid as it is');
  t.end();
});

t.test('every malformed legacy file is refused with a message naming what is wrong', (t) => {
  const shape: Record<number, string> = {
    1: '{schemaVersion: 1, state: {roots: [...], members: [...], deployments?: [...], configs?: [...]}}',
    2: '{schemaVersion: 2, state: {roots: [...], members: [...], profiles?: [profile with setupLog?, ...], configs?: [...]}}',
    3: '{schemaVersion: 3, state: {roots: [...], members: [...], profiles?: [...], configs?: [...]}}',
    4: '{schemaVersion: 4, state: {roots: [...], members: [...], profiles: [...], configs: [...]}}',
  };
  const notV = (v: number, found: string) => `is not a registry file v${v}: expected ${shape[v]}, but ${found}`;
  const v1With = (...deployments: unknown[]) => ({ schemaVersion: 1, state: { ...team, deployments } });
  const withSetup = (setup: unknown) => v1With(deployment('a'), deployment('b', 'b', { setup }));
  const v2With = (...profiles: unknown[]) => ({ schemaVersion: 2, state: { ...team, profiles } });
  const withLog = (setupLog: unknown) => v2With({ ...manifestProfile('p'), setupLog });
  const PHASES =
    'validating_manifest, preparing_workspace, installing_tools, installing_skills, placing_prompt, copying_files, running_custom_setup';
  const cases: [string, unknown, string][] = [
    ['not an object', [], 'is not a JSON object'],
    ['null', null, 'is not a JSON object'],
    ['no schemaVersion', { state: team }, 'has no integer schemaVersion'],
    ['string schemaVersion', { schemaVersion: '2', state: team }, 'has no integer schemaVersion'],
    ['fractional schemaVersion', { schemaVersion: 2.5, state: { ...team, profiles: {} } }, 'has no integer schemaVersion'],
    ['newer', { schemaVersion: 5, state: team }, 'has schemaVersion 5, newer than this version of the service understands (4)'],
    ['zero', { schemaVersion: 0, state: team }, 'has unknown schemaVersion 0'],
    // v1: upstream's discovery file with deployments
    ['flat v1 without state', { schemaVersion: 1, profiles: [], ...team }, notV(1, 'it has no `state` object')],
    ['v1 state a list', { schemaVersion: 1, state: [] }, notV(1, 'it has no `state` object')],
    ['v1 without roots', { schemaVersion: 1, state: { members: [] } }, notV(1, 'state.roots is missing')],
    ['v1 roots not a list', { schemaVersion: 1, state: { roots: {}, members: [] } }, notV(1, 'state.roots is not a list')],
    ['v1 without members', { schemaVersion: 1, state: { roots: [], deployments: [] } }, notV(1, 'state.members is missing')],
    [
      'v1 deployments keyed by id',
      { schemaVersion: 1, state: { ...team, deployments: { a: deployment('a') } } },
      notV(1, 'state.deployments is not a list'),
    ],
    ['v1 configs not a list', { schemaVersion: 1, state: { ...team, configs: { retries: 3 } } }, notV(1, 'state.configs is not a list')],
    ['v1 deployment not an object', v1With(deployment('a'), 'b'), 'state.deployments[1] must be an object'],
    ['v1 deployment without id', v1With(without(deployment('a'), 'id')), 'state.deployments[0].id must be a non-empty string'],
    ['v1 deployment with a blank alias', v1With(deployment('a', ' ')), 'state.deployments[0].alias must be a non-empty string'],
    [
      'v1 deployment without machine',
      v1With(deployment('a'), without(deployment('b'), 'machine')),
      'state.deployments[1].machine must be a non-empty string',
    ],
    [
      'v1 deployment without working directory',
      v1With({ ...deployment('a'), workingDirPath: '' }),
      'state.deployments[0].workingDirPath must be a non-empty string',
    ],
    [
      'v1 deployment without manifest',
      v1With({ ...deployment('a'), manifestPath: 7 }),
      'state.deployments[0].manifestPath must be a non-empty string',
    ],
    [
      'v1 deployment without harness',
      v1With(without(deployment('a'), 'harness')),
      'state.deployments[0].harness must be a non-empty string',
    ],
    ['v1 deployment without setup', v1With(without(deployment('a'), 'setup')), 'state.deployments[0].setup must be an object'],
    [
      'v1 setup of unknown status',
      withSetup({ status: 'paused' }),
      'state.deployments[1].setup.status must be not_prepared, disabled, setting_up, ready or error',
    ],
    [
      'v1 setup setting up without start',
      withSetup({ status: 'setting_up', operationId: 'op' }),
      'state.deployments[1].setup.startedAt must be a number',
    ],
    [
      'v1 setup setting up without operation',
      withSetup({ status: 'setting_up', startedAt: 1 }),
      'state.deployments[1].setup.operationId must be a non-empty string',
    ],
    [
      'v1 setup ready without completion',
      withSetup({ status: 'ready', completedAt: Infinity }),
      'state.deployments[1].setup.completedAt must be a number',
    ],
    [
      'v1 setup error without failure time',
      withSetup({ status: 'error', error: { code: 'c', message: 'm' } }),
      'state.deployments[1].setup.failedAt must be a number',
    ],
    [
      'v1 setup error without error',
      withSetup({ status: 'error', failedAt: 1, error: 'boom' }),
      'state.deployments[1].setup.error must be an object',
    ],
    [
      'v1 setup error without code',
      withSetup({ status: 'error', failedAt: 1, error: { message: 'm' } }),
      'state.deployments[1].setup.error.code must be a non-empty string',
    ],
    [
      'v1 setup error without message',
      withSetup({ status: 'error', failedAt: 1, error: { code: 'c', message: '' } }),
      'state.deployments[1].setup.error.message must be a non-empty string',
    ],
    ['v1 setup log not a list', v1With(deployment('a', 'a', { setupLog: {} })), 'state.profiles[0].setupLog must be a list'],
    // v2: a list of profiles embedding their setup logs
    ['v2 without state', { schemaVersion: 2, profiles: [] }, notV(2, 'it has no `state` object')],
    ['v2 without members', { schemaVersion: 2, state: { roots: [], profiles: [] } }, notV(2, 'state.members is missing')],
    [
      'v2 profiles keyed by id',
      { schemaVersion: 2, state: { ...team, profiles: { p: manifestProfile('p') } } },
      notV(2, 'state.profiles is not a list'),
    ],
    ['v2 configs not a list', { schemaVersion: 2, state: { ...team, profiles: [], configs: {} } }, notV(2, 'state.configs is not a list')],
    [
      'v2 holding deployments',
      { schemaVersion: 2, state: { ...team, deployments: [] } },
      notV(2, 'it holds `state.deployments` (a v1 key)'),
    ],
    ['v2 profile not an object', v2With(manifestProfile('p'), 7), 'profiles[1] is not a JSON object'],
    ['v2 setup log not a list', withLog('x'), 'state.profiles[0].setupLog must be a list'],
    ['v2 setup-log entry not an object', withLog([LOG_ENTRY, null]), 'state.profiles[0].setupLog[1] must be an object'],
    [
      'v2 setup-log entry without time',
      withLog([{ ...LOG_ENTRY, receivedAt: '101' }]),
      'state.profiles[0].setupLog[0].receivedAt must be a number',
    ],
    [
      'v2 setup-log entry of unknown phase',
      withLog([{ ...LOG_ENTRY, phase: 'dancing' }]),
      `state.profiles[0].setupLog[0].phase must be one of ${PHASES}`,
    ],
    [
      'v2 setup-log entry of unknown status',
      withLog([{ ...LOG_ENTRY, status: 'failed' }]),
      'state.profiles[0].setupLog[0].status must be started or completed',
    ],
    [
      'v2 setup-log entry without message',
      withLog([{ ...LOG_ENTRY, message: ' ' }]),
      'state.profiles[0].setupLog[0].message must be a non-empty string',
    ],
    // v3: setup logs already moved out
    ['v3 without state', { schemaVersion: 3 }, notV(3, 'it has no `state` object')],
    ['v3 members not a list', { schemaVersion: 3, state: { roots: [], members: 'm' } }, notV(3, 'state.members is not a list')],
    ['v3 profiles not a list', { schemaVersion: 3, state: { ...team, profiles: {} } }, notV(3, 'state.profiles is not a list')],
    [
      'v3 holding deployments',
      { schemaVersion: 3, state: { ...team, deployments: [] } },
      notV(3, 'it holds `state.deployments` (a v1 key)'),
    ],
    [
      'v3 profile not an object',
      { schemaVersion: 3, state: { ...team, profiles: [v1Profile('a'), 7] } },
      'profiles[1] is not a JSON object',
    ],
    [
      'v3 setup log still embedded and broken',
      { schemaVersion: 3, state: { ...team, profiles: [v1Profile('a'), { ...v1Profile('b'), setupLog: 'x' }] } },
      'state.profiles[1].setupLog must be a list',
    ],
    // v4: current
    ['v4 without state', { schemaVersion: 4 }, notV(4, 'it has no `state` object')],
    [
      'v4 roots not a list',
      { schemaVersion: 4, state: { roots: {}, members: [], profiles: [], configs: [] } },
      notV(4, 'state.roots is not a list'),
    ],
    [
      'v4 profiles not a list',
      { schemaVersion: 4, state: { ...team, profiles: 'x', configs: [] } },
      notV(4, 'state.profiles is not a list'),
    ],
    [
      'v4 configs not a list',
      { schemaVersion: 4, state: { ...team, profiles: [], configs: { retries: 3 } } },
      notV(4, 'state.configs is not a list'),
    ],
    [
      'v4 holding deployments',
      { schemaVersion: 4, state: { ...team, profiles: [], configs: [], deployments: [] } },
      notV(4, 'it holds `state.deployments` (a v1 key)'),
    ],
    [
      'unknown profile version',
      { schemaVersion: 4, state: { ...team, profiles: [{ ...v1Profile('a'), schemaVersion: 3 }], configs: [] } },
      'profiles[0] (a) has unknown profile schemaVersion 3; this version of the service reads profiles v1 (no schemaVersion) and v2',
    ],
    [
      'unknown profile version, no id',
      { schemaVersion: 4, state: { ...team, profiles: [{ schemaVersion: '2' }], configs: [] } },
      'profiles[0] has unknown profile schemaVersion "2"; this version of the service reads profiles v1 (no schemaVersion) and v2',
    ],
    [
      'v4 duplicate',
      {
        schemaVersion: 4,
        state: {
          ...team,
          profiles: [
            { schemaVersion: 2, ...v1Profile('a') },
            { schemaVersion: 2, ...v1Profile('a') },
          ],
          configs: [],
        },
      },
      'profile a appears twice',
    ],
    [
      'v4 invalid profile',
      { schemaVersion: 4, state: { ...team, profiles: [{ schemaVersion: 2, ...v1Profile('a'), alias: 7 }], configs: [] } },
      'profiles[0] (a) is not a valid AgentProfile v2: /alias must be string',
    ],
    [
      'v4 invalid profile without id',
      { schemaVersion: 4, state: { ...team, profiles: [{ schemaVersion: 2 }], configs: [] } },
      'profiles[0] is not a valid AgentProfile v2: / must have required properties id, alias, agentletId, workingDirPath, resourceIds, launch',
    ],
    [
      'a legacy record invalid once upgraded',
      { schemaVersion: 3, state: { ...team, profiles: [without(v1Profile('no-alias'), 'alias')] } },
      'profiles[0] (no-alias) is not a valid AgentProfile v2: / must have required properties alias',
    ],
  ];
  for (const [what, doc, message] of cases) {
    const error = refusalOf(doc);
    t.type(error, MigrationError, what);
    t.equal((error as Error | undefined)?.message, message, what);
  }
  t.end();
});

t.test('the file version is an integer 1..4', (t) => {
  for (const v of [1, 2, 3, 4]) t.equal(fileVersion({ schemaVersion: v }), v);
  for (const v of [2.5, '3', null, NaN, 0, -1, 5]) t.throws(() => fileVersion({ schemaVersion: v }), MigrationError, String(v));
  t.end();
});

t.test('profile v1 → v2: the carried resourceIds are dropped, a v2 record is left alone', (t) => {
  const up = upgradeProfile(v1Profile('a'), 'here');
  t.same(up, { record: { schemaVersion: 2, ...v1Profile('a'), resourceIds: [] }, upgraded: true });
  t.same(Object.keys(up.record)[0], 'schemaVersion');
  const v2 = { schemaVersion: 2, ...v1Profile('b') };
  const same = upgradeProfile(v2, 'here');
  t.equal(same.record, v2, 'the very same object');
  t.equal(same.upgraded, false);
  t.same(upgradeProfiles([v2, v1Profile('c')]).upgradedIds, ['c']);
  t.same(upgradeProfiles(), { profiles: [], upgradedIds: [] });
  t.throws(() => upgradeProfile(null, 'where'), { message: 'where is not a JSON object' });
  t.throws(() => upgradeProfile([], 'where'), { message: 'where is not a JSON object' });
  validateRegistryDocument({ schemaVersion: 4, state: {} });
  t.pass('a v4 document without profiles validates');
  t.end();
});

// --- Canvas tokens ------------------------------------------------------------------------------------------

const claims = { canvasId: 'canvas-x', agentletId: 'agentlet-a', enrolledAt: '2026-01-01T00:00:00.000Z', exp: 1_000 };
const signed = (payload: string, secret = SECRET) =>
  `${TOKEN_PREFIX.canvas}${payload}.${createHmac('sha256', secret).update(payload).digest('base64url')}`;
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

t.test('a canvas token is valid until the second before its expiry, and expired from that second on', (t) => {
  const token = mintCanvasToken(claims, SECRET);
  t.same(verifyCanvasToken(token, SECRET, 999), { ok: true, claims });
  t.same(verifyCanvasToken(token, SECRET, 1_000), { ok: false, reason: 'expired' }, 'expired during its expiry second');
  t.same(verifyCanvasToken(token, SECRET, 1_001), { ok: false, reason: 'expired' });
  // The prefix says what a token is: the same characters under another kind's prefix are no canvas token.
  const rest = token.slice(TOKEN_PREFIX.canvas.length);
  t.same(verifyCanvasToken(`${TOKEN_PREFIX.machine}${rest}`, SECRET, 999), { ok: false, reason: 'malformed' }, 'another kind of token');
  t.same(verifyCanvasToken(rest, SECRET, 999), { ok: false, reason: 'malformed' }, 'no prefix at all');
  t.same(
    verifyCanvasToken(`${'x'.repeat(TOKEN_PREFIX.canvas.length)}${rest}`, SECRET, 999),
    { ok: false, reason: 'malformed' },
    'other characters where the prefix belongs',
  );
  t.end();
});

t.test('a canvas token carries its mint time when given one, and reports exactly the claims it was minted with', (t) => {
  // The mint time (`t`) is what a per-canvas revocation compares with its cut-off (tokens without one count
  // as minted at 0 and die with any revocation of their canvas).
  const minted = mintCanvasToken({ ...claims, mintedAtMs: 1_234_567 }, SECRET);
  t.strictSame(
    JSON.parse(Buffer.from(minted.slice(TOKEN_PREFIX.canvas.length).split('.')[0]!, 'base64url').toString('utf8')).t,
    1_234_567,
    'the payload holds it',
  );
  t.strictSame(
    verifyCanvasToken(minted, SECRET, 999),
    { ok: true, claims: { ...claims, mintedAtMs: 1_234_567 } },
    'verified, it is reported',
  );
  const plain = mintCanvasToken(claims, SECRET);
  t.notOk(
    't' in JSON.parse(Buffer.from(plain.slice(TOKEN_PREFIX.canvas.length).split('.')[0]!, 'base64url').toString('utf8')),
    'none given, none in the payload',
  );
  const verified = verifyCanvasToken(plain, SECRET, 999);
  t.strictSame(verified, { ok: true, claims }, 'none reported');
  t.notOk(verified.ok && 'mintedAtMs' in verified.claims, 'not even as an undefined key');
  t.end();
});

/** Spellings of a 43-character base64url signature that a lenient decoder reads as the same 32 bytes. */
function respelled(signature: string): string[] {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(signature.at(-1)!);
  const unusedBits = [0, 1, 2, 3].map((k) => signature.slice(0, -1) + alphabet[(last & ~3) | k]).filter((s) => s !== signature);
  const standard = signature.replaceAll('-', '+').replaceAll('_', '/');
  return [
    ...unusedBits,
    `${signature}=`,
    `${signature}==`,
    `!${signature}`,
    `${signature.slice(0, 20)} ${signature.slice(20)}`,
    ...(standard === signature ? [] : [standard]),
  ];
}

t.test('canonical base64url only: no padding, no stray or standard-alphabet characters, unused bits zero, exact length', (t) => {
  const bytes = Buffer.from('fe0ffa7b1c2d3e4f', 'hex');
  const text = bytes.toString('base64url');
  t.same(decodeBase64url(text), bytes);
  t.same(decodeBase64url(text, 8), bytes, 'the exact length');
  t.equal(decodeBase64url(text, 9), undefined, 'another length');
  t.same(decodeBase64url(''), Buffer.alloc(0));
  for (const spelling of [
    `${text}=`,
    `${text} `,
    `!${text}`,
    text.replace('-', '+').replace('_', '/'),
    `${text.slice(0, -1)}${String.fromCharCode(text.charCodeAt(text.length - 1) + 1)}`,
    'A',
  ]) {
    t.equal(decodeBase64url(spelling), undefined, JSON.stringify(spelling));
  }
  t.end();
});

t.test('a re-spelled grant is malformed; its identity is its claims', (t) => {
  const key = grantKey(SECRET);
  const claims = {
    machineId: 'mac-1',
    enrolledAt: '2026-01-01T00:00:00.000Z',
    profileId: 'p',
    canvasId: 'c',
    threadId: 't',
    allowedResourceIds: ['web-search'],
    exp: 1000,
    policyVersion: 'v',
    mintedAtMs: 5,
  };
  const grant = mintGrant(claims, key);
  const check = verifyGrant(grant, key, 10);
  t.match(check, { ok: true, claims, id: /^[0-9a-f]{64}$/ });
  const [payload, signature] = grant.slice('arr_grant_'.length).split('.') as [string, string];
  for (const s of respelled(signature)) t.same(verifyGrant(`arr_grant_${payload}.${s}`, key, 10), { ok: false, reason: 'malformed' }, s);
  t.same(verifyGrant(`arr_grant_${payload}.${signature.slice(0, 42)}`, key, 10), { ok: false, reason: 'malformed' }, 'a short signature');
  t.same(verifyGrant(mintGrant(claims, grantKey(SECRET + 'x')), key, 10), { ok: false, reason: 'bad_signature' }, 'another key');
  t.equal(
    (verifyGrant(mintGrant(claims, key), key, 10) as { id: string }).id,
    (check as { id: string }).id,
    'the same claims, the same identity',
  );
  t.not(
    (verifyGrant(mintGrant({ ...claims, mintedAtMs: 6 }, key), key, 10) as { id: string }).id,
    (check as { id: string }).id,
    'other claims, another',
  );
  const { mintedAtMs: _at, ...older } = claims;
  t.same(
    verifyGrant(mintGrant(older, key), key, 10),
    { ok: true, claims: older, id: (verifyGrant(mintGrant(older, key), key, 10) as { id: string }).id },
    'a grant without a mint time still verifies',
  );
  const signedGrant = (value: unknown) => {
    const body = Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
    return `arr_grant_${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
  };
  const raw = { v: 1, m: 'mac-1', e: 'e', p: 'p', c: 'c', t: 't', r: ['x'], exp: 1000, pv: 'v' };
  for (const [what, value] of [
    ['not JSON', 'not json {'],
    ['null', 'null'],
    ['a number', '7'],
    ['another version', { ...raw, v: 2 }],
    ['an empty thread', { ...raw, t: '' }],
    ['resources not a list', { ...raw, r: 'x' }],
    ['exp a string', { ...raw, exp: '1000' }],
    ['the mint time a string', { ...raw, at: '5' }],
  ] as [string, unknown][]) {
    t.same(verifyGrant(signedGrant(value), key, 10), { ok: false, reason: 'malformed' }, what);
  }
  t.same(verifyGrant(signedGrant(raw), key, 1000), { ok: false, reason: 'expired' }, 'expired from its exp second');
  t.same(verifyGrant('arr_canvas_x.y', key, 10), { ok: false, reason: 'malformed' }, 'another prefix');
  t.end();
});

t.test('a malformed canvas token is refused as malformed, never with an exception', (t) => {
  const good = mintCanvasToken(claims, SECRET);
  const [payload, signature] = good.slice(TOKEN_PREFIX.canvas.length).split('.') as [string, string];
  const cases: [string, string, string][] = [
    ['another prefix', `arr_owner_${payload}.${signature}`, 'malformed'],
    ['no signature segment', `${TOKEN_PREFIX.canvas}${payload}`, 'malformed'],
    ['empty signature', `${TOKEN_PREFIX.canvas}${payload}.`, 'malformed'],
    ['empty payload', `${TOKEN_PREFIX.canvas}.${signature}`, 'malformed'],
    ['an extra segment', `${good}.${signature}`, 'malformed'],
    ['an empty extra segment', `${good}.`, 'malformed'],
    ['a short signature', `${TOKEN_PREFIX.canvas}${payload}.${signature.slice(0, 10)}`, 'malformed'],
    ['a long signature', `${TOKEN_PREFIX.canvas}${payload}.${signature}AAAA`, 'malformed'],
    ...respelled(signature).map((s, i): [string, string, string] => [
      `the signature re-spelled (${i})`,
      `${TOKEN_PREFIX.canvas}${payload}.${s}`,
      'malformed',
    ]),
    ['the payload padded', `${TOKEN_PREFIX.canvas}${payload}=.${signature}`, 'malformed'],
    ['another secret', mintCanvasToken(claims, SECRET + 'x'), 'bad_signature'],
    ['signed non-JSON payload', signed(b64('not json {')), 'malformed'],
    ['signed JSON null', signed(b64('null')), 'malformed'],
    ['canvas not a string', signed(b64({ e: '2026-01-01T00:00:00.000Z', c: 7, m: 'agentlet-a', exp: 1_000 })), 'malformed'],
    ['machine missing', signed(b64({ e: '2026-01-01T00:00:00.000Z', c: 'canvas-x', exp: 1_000 })), 'malformed'],
    ['machine not a string', signed(b64({ e: '2026-01-01T00:00:00.000Z', c: 'canvas-x', m: true, exp: 1_000 })), 'malformed'],
    ['exp a string', signed(b64({ e: '2026-01-01T00:00:00.000Z', c: 'canvas-x', m: 'agentlet-a', exp: '1000' })), 'malformed'],
    ['enrollment missing', signed(b64({ c: 'canvas-x', m: 'agentlet-a', exp: 1_000 })), 'malformed'],
    ['enrollment not a string', signed(b64({ c: 'canvas-x', m: 'agentlet-a', e: 5, exp: 1_000 })), 'malformed'],
    ['exp missing', signed(b64({ e: '2026-01-01T00:00:00.000Z', c: 'canvas-x', m: 'agentlet-a' })), 'malformed'],
  ];
  for (const [what, token, reason] of cases) {
    let result: unknown;
    t.doesNotThrow(() => (result = verifyCanvasToken(token, SECRET, 10)), what);
    t.same(result, { ok: false, reason }, what);
  }
  t.same(
    verifyCanvasToken(signed(b64({ c: 'canvas-x', m: 'agentlet-a', e: '2026-01-01T00:00:00.000Z', exp: 1_000 })), SECRET, 10),
    { ok: true, claims },
    'hand-signed valid',
  );
  t.end();
});

t.test('token digests: every candidate compared, the first match reported', (t) => {
  const a = tokenDigest('a');
  const b = tokenDigest('b');
  t.equal(matchDigest(a, [b, a]), 1);
  t.equal(matchDigest(a, [a, b, a]), 0, 'the first match, not the last');
  t.equal(matchDigest(tokenDigest('c'), [a, b]), -1);
  t.equal(matchDigest(a, []), -1);
  const token = generateToken(TOKEN_PREFIX.machine);
  t.match(token, /^arr_machine_[A-Za-z0-9_-]{43}$/);
  t.not(generateToken(TOKEN_PREFIX.machine), token);
  t.end();
});
