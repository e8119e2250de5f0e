// The storage contract: the rules of src/registry/store.ts that every RegistryStore keeps, run against each
// implementation (test/storage/contract.test.ts: JSON files; test/postgres/storage-contract.test.ts:
// PostgreSQL). Each subtest starts from an empty store; `replica` (when the store supports several
// processes) opens a second store over the same state, so the atomic rules are checked across replicas.
import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import { AppError } from '../../src/errors.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import type { AgentResource, StoredResource } from '../../src/schemas/resource.js';
import { recordBytes } from '../../src/registry/record-quota.js';
import type { WorkloadRecord } from '../../src/schemas/workload.js';
import type { AuditEntry, RegistryStore } from '../../src/registry/store.js';
import { until } from './wait.js';
import { profileRecord } from './profiles.js';

export interface ContractTarget {
  /** An empty store (closed by the contract in teardown). */
  fresh(t: Test): Promise<RegistryStore>;
  /** A second store over the state of the last fresh one, as another replica would be (optional). */
  replica?(t: Test): Promise<RegistryStore>;
  /** The audit log of the last fresh store as it is persisted (file lines, table rows), oldest first. */
  readAudit(): Promise<AuditEntry[]>;
}

export const resource = (provider: string, id: string, name = `Name of ${id}`): AgentResource => ({
  schemaVersion: 1,
  id,
  name,
  provider,
  description: `About ${id}.`,
  instructions: `Use ${id} via $HUABU_RFS_URL.`,
});

export const profile = (id: string, alias: string, over: Partial<AgentProfile> = {}): AgentProfile =>
  profileRecord(id, { alias, agentletId: 'agentlet-a', launch: { kind: 'acp-command', command: 'claude-code-acp' }, ...over });

export const workload = (canvasId: string, threadId: string, agentletId = 'agentlet-a'): WorkloadRecord => ({
  driverSchemaVersion: 1,
  canvasId,
  threadId,
  realizedAt: new Date().toISOString(),
  spec: {
    binding: { profileId: 'prf-aaaaaaaaaaaaaaaa', alias: 'Reviewer' },
    agentletId,
    cwd: '/home/me/site',
    resourceIds: ['huabu-access'],
    resourceScope: { canvasId, threadId },
    initialPreamble: ['bootstrap'],
    env: { HUABU_RFS_URL: `http://registry.test/api/rfs/${canvasId}`, HUABU_THREAD_ID: threadId },
  },
});

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** The rejection of `p` as {code, details}, or a failure when it resolves. */
async function rejection(t: Test, p: Promise<unknown>): Promise<{ code: string; details: Record<string, unknown> | undefined }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, details: err.details };
    throw err;
  }
  t.fail('expected a rejection');
  return { code: 'none', details: undefined };
}

/**
 * The feed's head once every committed event is published: a PostgreSQL replica publishes its own commits
 * when their notification arrives, so the head may trail a write that has returned.
 */
export async function publishedHead(store: RegistryStore): Promise<string> {
  return until('every committed event published', async () => {
    const head = store.events.head();
    return (await store.events.read(head, 1)).events.length === 0 && head;
  });
}

export function runContract(t: Test, name: string, target: ContractTarget): void {
  const open = async (t: Test) => {
    const store = await target.fresh(t);
    t.teardown(() => store.close());
    return store;
  };
  const openReplica = async (t: Test, first: RegistryStore) => {
    if (!target.replica) return first;
    const store = await target.replica(t);
    t.teardown(() => store.close());
    return store;
  };

  t.test(`${name}: put creates, replaces, leaves an identical record unchanged; the revision follows changes`, async (t) => {
    const s = await open(t);
    const r0 = s.resourcesRevision();
    t.equal(await s.putResource(resource('huabu', 'web-search')), 'created');
    const r1 = s.resourcesRevision();
    t.not(r1, r0, 'a create changes the revision');
    t.equal(await s.putResource(resource('huabu', 'web-search')), 'unchanged');
    t.equal(await s.putResource(resource('huabu', 'web-search', 'Renamed')), 'replaced');
    t.not(s.resourcesRevision(), r1, 'a replace changes the revision');
    await s.putResource(resource('agentlet-a', 'a-tool'));
    t.same(
      (await s.listResources()).map((r) => r.id),
      ['a-tool', 'web-search'],
      'sorted by id',
    );
    t.same(await s.getResource('web-search'), resource('huabu', 'web-search', 'Renamed'));
    t.equal(await s.getResource('nope'), undefined);
  });

  t.test(`${name}: registerResource stores the record with its audit entry and answers with the record as stored`, async (t) => {
    const s = await open(t);
    const by = (second: number, actor = 'provider:huabu') => ({
      at: `2026-01-01T00:00:0${second}.000Z`,
      actor,
      action: 'resource.register',
    });
    t.strictSame(await s.registerResource(resource('huabu', 'web-search'), by(0)), {
      outcome: 'created',
      record: resource('huabu', 'web-search'),
    });
    await s.customizeResource('web-search', { displayName: 'Search', userContent: 'Be brief.' });
    const replaced = await s.registerResource(resource('huabu', 'web-search', 'Renamed'), by(1));
    t.same(
      replaced,
      { outcome: 'replaced', record: { ...resource('huabu', 'web-search', 'Renamed'), displayName: 'Search', userContent: 'Be brief.' } },
      "the owner's fields carried",
    );
    t.notOk('auditError' in replaced);
    t.same(await s.getResource('web-search'), replaced.record, 'the record as stored');
    t.same(await s.registerResource(resource('huabu', 'web-search', 'Renamed'), by(2)), { outcome: 'unchanged', record: replaced.record });
    const refused = await rejection(t, s.registerResource(resource('agentlet-a', 'web-search', 'Hijack'), by(3, 'provider:agentlet-a')));
    t.equal(refused.code, 'resource_conflict');
    const audit = await target.readAudit();
    t.strictSame(
      audit,
      (['created', 'replaced', 'unchanged'] as const).map((outcome, i) => ({ ...by(i), id: 'web-search', outcome })),
      'one entry per registration stored, with its outcome; a refusal writes none (the caller audits it)',
    );
    t.same(
      audit.map((e) => Object.keys(e)),
      Array(3).fill(['at', 'actor', 'action', 'id', 'outcome']),
      "in the audit trail's key order",
    );
  });

  t.test(`${name}: reconcileResourcesAudited applies the set with one audit entry per change`, async (t) => {
    const s = await open(t);
    const by = { at: '2026-01-01T00:00:00.000Z', actor: 'provider:huabu', action: 'resource.reconcile' };
    await s.putResource(resource('huabu', 'keep'));
    await s.putResource(resource('huabu', 'change'));
    await s.putResource(resource('huabu', 'drop'));
    await s.putResource(resource('other', 'taken'));
    const records = [
      resource('huabu', 'keep'),
      resource('huabu', 'change', 'Changed'),
      resource('huabu', 'new-b'),
      resource('huabu', 'new-a'),
    ];
    const done = await s.reconcileResourcesAudited('huabu', records, by);
    t.strictSame(done, {
      result: { dryRun: false, created: ['new-a', 'new-b'], replaced: ['change'], withdrawn: ['drop'], unchanged: ['keep'] },
    });
    t.same(
      (await s.listResources()).map((r) => r.id),
      ['change', 'keep', 'new-a', 'new-b', 'taken'],
    );
    const conflict = await rejection(t, s.reconcileResourcesAudited('huabu', [resource('huabu', 'taken')], by));
    t.equal(conflict.code, 'resource_conflict');
    t.same(await s.reconcileResourcesAudited('huabu', records, by), {
      result: { dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: ['change', 'keep', 'new-a', 'new-b'] },
    });
    t.strictSame(
      await target.readAudit(),
      [
        ['new-a', 'created'],
        ['new-b', 'created'],
        ['change', 'replaced'],
        ['drop', 'withdrawn'],
      ].map(([id, outcome]) => ({ ...by, id, outcome })),
      'created, replaced, withdrawn; a refusal or a reconcile that changes nothing writes none',
    );
  });

  t.test(`${name}: another provider's ID is a 409 and the held record is untouched`, async (t) => {
    const s = await open(t);
    await s.putResource(resource('huabu', 'web-search'));
    const before = s.resourcesRevision();
    const err = await rejection(t, s.putResource(resource('agentlet-a', 'web-search', 'Hijack')));
    t.equal(err.code, 'resource_conflict');
    t.same(err.details, { ids: ['web-search'], conflicts: [{ id: 'web-search', provider: 'huabu' }] });
    t.same(await s.getResource('web-search'), resource('huabu', 'web-search'), 'untouched');
    const withdraw = await rejection(t, s.withdrawResource('agentlet-a', 'web-search'));
    t.equal(withdraw.code, 'resource_conflict');
    t.same(await s.getResource('web-search'), resource('huabu', 'web-search'), 'still there');
    t.equal(s.resourcesRevision(), before, 'nothing changed');
  });

  t.test(`${name}: withdraw removes only the caller's own record; a missing ID is 404`, async (t) => {
    const s = await open(t);
    await s.putResource(resource('huabu', 'web-search'));
    t.equal((await rejection(t, s.withdrawResource('huabu', 'nope'))).code, 'resource_not_found');
    await s.withdrawResource('huabu', 'web-search');
    t.equal(await s.getResource('web-search'), undefined);
    t.equal((await rejection(t, s.withdrawResource('huabu', 'web-search'))).code, 'resource_not_found');
    t.equal(await s.putResource(resource('agentlet-a', 'web-search')), 'created', 'a withdrawn ID is free again');
  });

  t.test(`${name}: reconcile applies the whole set, dry run changes nothing, a conflict changes nothing`, async (t) => {
    const s = await open(t);
    await s.putResource(resource('huabu', 'keep'));
    await s.putResource(resource('huabu', 'change'));
    await s.putResource(resource('huabu', 'drop'));
    await s.putResource(resource('other', 'taken'));
    const set = [resource('huabu', 'keep'), resource('huabu', 'change', 'Changed'), resource('huabu', 'new')];

    const before = await s.listResources();
    const rev = s.resourcesRevision();
    const dry = await s.reconcileResources('huabu', set, true);
    t.same(dry, { dryRun: true, created: ['new'], replaced: ['change'], withdrawn: ['drop'], unchanged: ['keep'] });
    t.same(await s.listResources(), before, 'dry run: nothing written');
    t.equal(s.resourcesRevision(), rev);

    const conflict = await rejection(t, s.reconcileResources('huabu', [...set, resource('huabu', 'taken')], false));
    t.equal(conflict.code, 'resource_conflict');
    t.same(conflict.details, { ids: ['taken'], conflicts: [{ id: 'taken', provider: 'other' }] });
    t.same(await s.listResources(), before, 'a conflict rolls back the whole set');

    const done = await s.reconcileResources('huabu', set, false);
    t.same(done, { dryRun: false, created: ['new'], replaced: ['change'], withdrawn: ['drop'], unchanged: ['keep'] });
    t.same(
      (await s.listResources()).map((r) => `${r.provider}/${r.id}/${r.name}`),
      ['huabu/change/Changed', 'huabu/keep/Name of keep', 'huabu/new/Name of new', 'other/taken/Name of taken'],
    );
    t.not(s.resourcesRevision(), rev);
    const again = await s.reconcileResources('huabu', set, false);
    t.same(again, { dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: ['change', 'keep', 'new'] }, 'idempotent');
    t.same(await s.reconcileResources('huabu', [], false), {
      dryRun: false,
      created: [],
      replaced: [],
      withdrawn: ['change', 'keep', 'new'],
      unchanged: [],
    });
    t.same(
      (await s.listResources()).map((r) => r.id),
      ['taken'],
    );
  });

  t.test(`${name}: machines enroll once, revoke, and re-enroll with a new token`, async (t) => {
    const s = await open(t);
    const first = { machineId: 'agentlet-a', tokenDigest: digest('one'), enrolledAt: '2026-01-01T00:00:00.000Z' };
    await s.enrollMachine(first);
    t.equal((await rejection(t, s.enrollMachine({ ...first, tokenDigest: digest('two') }))).code, 'machine_exists');
    t.same(await s.findMachineByTokenDigest(digest('one')), first);
    t.equal(await s.findMachineByTokenDigest(digest('two')), undefined, 'the refused token was not stored');
    await s.revokeMachine('agentlet-a', '2026-01-02T00:00:00.000Z');
    t.equal((await rejection(t, s.revokeMachine('agentlet-a', '2026-01-03T00:00:00.000Z'))).code, 'machine_not_found');
    t.equal((await rejection(t, s.revokeMachine('nobody', '2026-01-03T00:00:00.000Z'))).code, 'machine_not_found');
    t.equal(await s.findMachineByTokenDigest(digest('one')), undefined, 'a revoked token no longer authenticates');
    t.same(await s.getMachine('agentlet-a'), { ...first, revokedAt: '2026-01-02T00:00:00.000Z' });
    const again = { machineId: 'agentlet-a', tokenDigest: digest('three'), enrolledAt: '2026-01-04T00:00:00.000Z' };
    await s.enrollMachine(again);
    t.same(await s.findMachineByTokenDigest(digest('three')), again);
    await s.enrollMachine({ machineId: 'agentlet-0', tokenDigest: digest('zero'), enrolledAt: '2026-01-05T00:00:00.000Z' });
    t.same(
      (await s.listMachines()).map((m) => m.machineId),
      ['agentlet-0', 'agentlet-a'],
    );
  });

  t.test(`${name}: profiles: alias unique ignoring case, If-Match, manifest-backed records never change`, async (t) => {
    const s = await open(t);
    const a = await s.createProfile(profile('prf-a', 'Reviewer'));
    t.ok(a.revision);
    const clash = await rejection(t, s.createProfile(profile('prf-b', 'REVIEWER')));
    t.equal(clash.code, 'alias_conflict');
    t.same(clash.details, { field: '/alias', id: 'prf-a' });
    t.equal(await s.getProfile('prf-b'), undefined);
    await s.createProfile(profile('prf-b', 'Writer'));
    t.equal((await rejection(t, s.updateProfile('prf-b', { alias: 'reviewer' }))).code, 'alias_conflict');

    const stale = await rejection(t, s.updateProfile('prf-a', { workingDirPath: '/elsewhere' }, ['not-it']));
    t.equal(stale.code, 'precondition_failed');
    const updated = await s.updateProfile('prf-a', { workingDirPath: '/elsewhere' }, ['x', a.revision]);
    t.equal(updated.changed, true);
    t.not(updated.revision, a.revision, 'a change gives a new revision');
    t.equal(updated.profile.workingDirPath, '/elsewhere');
    t.same(await s.getProfile('prf-a'), { profile: updated.profile, revision: updated.revision });
    t.equal(
      (await rejection(t, s.updateProfile('prf-a', { alias: 'Other' }, [a.revision]))).code,
      'precondition_failed',
      'the old ETag is stale',
    );
    const same = await s.updateProfile('prf-a', { workingDirPath: '/elsewhere' });
    t.equal(same.changed, false);
    t.equal(same.revision, updated.revision, 'no change, same revision');
    const renamed = await s.updateProfile('prf-a', { alias: 'reviewer' });
    t.equal(renamed.profile.alias, 'reviewer', 'a profile may change the case of its own alias');

    t.equal((await rejection(t, s.deleteProfile('prf-a', [a.revision]))).code, 'precondition_failed');
    t.equal((await rejection(t, s.updateProfile('prf-nope', { alias: 'X' }))).code, 'profile_not_found');
    t.equal((await rejection(t, s.deleteProfile('prf-nope'))).code, 'profile_not_found');
    await s.deleteProfile('prf-a', [renamed.revision]);
    t.equal(await s.getProfile('prf-a'), undefined);
    const reused = await s.createProfile(profile('prf-c', 'REVIEWER'));
    t.equal(reused.profile.alias, 'REVIEWER', 'a deleted alias is free again (in any case)');
    t.same((await s.getProfile('prf-c'))?.profile, profile('prf-c', 'REVIEWER'), 'and the new profile reads back under it');
    t.equal((await rejection(t, s.createProfile(profile('prf-d', 'reviewer')))).code, 'alias_conflict', 'now held by the new profile');

    const manifest = profile('prf-m', 'Team agent', {
      launch: { kind: 'agent-team-manifest', manifestPath: '/team/agent.md', harness: 'claude' },
    });
    await s.createProfile(manifest);
    t.equal((await rejection(t, s.updateProfile('prf-m', { alias: 'Renamed' }))).code, 'invalid_profile_kind');
    t.equal((await rejection(t, s.deleteProfile('prf-m'))).code, 'invalid_profile_kind');
    t.same((await s.getProfile('prf-m'))?.profile, manifest, 'stored exactly as written');
    t.same(
      (await s.listProfiles()).map((e) => e.profile.id),
      ['prf-b', 'prf-c', 'prf-m'],
      'sorted by id',
    );
  });

  t.test(`${name}: profiles carry the Huabu UI's metadata and customData; null removes either`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    const created = await s.createProfile(
      profile('prf-u', 'UI', { metadata: { cliId: 'copilot' }, customData: { icon: { shape: 'spark', color: 'blue' } } }),
    );
    t.same((await r.getProfile('prf-u'))?.profile.metadata, { cliId: 'copilot' }, 'stored and read back (by another replica too)');
    const changed = await s.updateProfile('prf-u', { metadata: { cliId: 'claude' } }, [created.revision]);
    t.same(changed.profile.metadata, { cliId: 'claude' });
    t.not(changed.revision, created.revision, 'the revision follows the metadata');
    const cleared = await r.updateProfile('prf-u', { metadata: null, customData: null });
    t.ok(cleared.changed);
    t.notOk('metadata' in cleared.profile || 'customData' in cleared.profile, 'both removed');
    t.same(
      (await s.getProfile('prf-u'))?.profile,
      { ...profile('prf-u', 'UI'), revision: 3 },
      'stored without them (and two changes later)',
    );
    const team = await s.getTeamState();
    t.same([team.members ?? [], team.configs ?? []], [[], []], 'an empty store holds no Agent Team members or configs');
  });

  t.test(`${name}: profiles: the integer revision counts changes; a stale expectedRevision is 409 and writes nothing`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    const created = await s.createProfile(profile('prf-r', 'Counted', { revision: 1 }));
    t.equal(created.profile.revision, 1);
    const once = await s.updateProfile('prf-r', { alias: 'Counted once' }, undefined, 1);
    t.equal(once.profile.revision, 2, 'a change raises it by one');
    const noop = await r.updateProfile('prf-r', { alias: 'Counted once' }, undefined, 2);
    t.equal(noop.changed, false);
    t.equal(noop.profile.revision, 2, 'a change that changes nothing keeps it');
    t.equal(noop.revision, once.revision, 'and keeps the ETag');

    const stale = await rejection(t, r.updateProfile('prf-r', { alias: 'Lost update' }, undefined, 1));
    t.equal(stale.code, 'profile_conflict');
    t.same(stale.details, { id: 'prf-r', revision: 2, expectedRevision: 1 });
    t.same(await s.getProfile('prf-r'), { profile: once.profile, revision: once.revision }, 'nothing was written');
    const staleEtag = await rejection(t, r.updateProfile('prf-r', { alias: 'Lost update' }, [created.revision], 2));
    t.equal(staleEtag.code, 'precondition_failed', 'a stale If-Match is 412 even with a current revision: both name the same change');

    const twice = await r.updateProfile('prf-r', { resourceIds: [], workingDirPath: '/elsewhere' }, [once.revision], 2);
    t.equal(twice.profile.revision, 3);
    t.equal((await s.getProfile('prf-r'))?.profile.revision, 3, 'stored: read back (by another replica too)');

    // A record stored before revisions existed carries none; its first change stores revision 2.
    await s.createProfile(profile('prf-old', 'Older'));
    t.equal((await r.getProfile('prf-old'))?.profile.revision, undefined, 'read as stored');
    t.equal(
      (await rejection(t, s.updateProfile('prf-old', { alias: 'Older too' }, undefined, 0))).code,
      'profile_conflict',
      'it is at revision 1',
    );
    t.equal((await r.updateProfile('prf-old', { alias: 'Older too' }, undefined, 1)).profile.revision, 2);
  });

  t.test(`${name}: concurrent conditional updates of one profile with one ETag: exactly one wins`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    const a = await s.createProfile(profile('prf-a', 'Reviewer'));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? s : r).updateProfile('prf-a', { workingDirPath: `/dir-${i}` }, [a.revision])),
    );
    t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, 'one winner');
    t.ok(
      outcomes.every((o) => o.status === 'fulfilled' || (o.reason as AppError).code === 'precondition_failed'),
      'the others are told the ETag is stale',
    );
  });

  t.test(`${name}: concurrent conflicting registrations of one ID by two providers give exactly one owner`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? s : r).putResource(resource(i % 4 < 2 ? 'huabu' : 'agentlet-a', 'contested', `Write ${i}`)),
      ),
    );
    const owner = (await s.getResource('contested'))!.provider;
    t.ok(owner === 'huabu' || owner === 'agentlet-a');
    for (const [i, o] of outcomes.entries()) {
      const provider = i % 4 < 2 ? 'huabu' : 'agentlet-a';
      if (provider === owner) t.equal(o.status, 'fulfilled', `write ${i} by the owner succeeded`);
      else
        t.equal(
          o.status === 'rejected' && (o.reason as AppError).code,
          'resource_conflict',
          `write ${i} by the other provider is a conflict`,
        );
    }
    t.equal(outcomes.filter((o) => o.status === 'fulfilled' && o.value === 'created').length, 1, 'created once');
  });

  t.test(`${name}: a reconcile racing registrations of the IDs it creates: one owner each, refused only by another provider`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    for (let round = 0; round < 10; round++) {
      const ids = Array.from({ length: 8 }, (_, i) => `race-${round}-${i}`);
      // Even IDs: the reconciling provider's own identical registration; odd IDs: another provider's.
      const putter = (i: number) => (i % 2 ? 'huabu' : 'agentlet-a');
      const [reconciled, ...puts] = await Promise.allSettled([
        s.reconcileResources(
          'agentlet-a',
          ids.map((id) => resource('agentlet-a', id)),
          false,
        ),
        ...ids.map((id, i) => (i % 2 ? r : s).putResource(resource(putter(i), id))),
      ]);
      if (reconciled.status === 'rejected') {
        const err = reconciled.reason as AppError;
        t.equal(err.code, 'resource_conflict', `round ${round}: a refused reconcile is a conflict`);
        const conflicts = (err.details as { conflicts: { provider: string }[] }).conflicts;
        t.ok(
          conflicts.length > 0 && conflicts.every((c) => c.provider === 'huabu'),
          `round ${round}: it names only the other provider's IDs`,
        );
      } else {
        const { created, replaced, unchanged } = reconciled.value;
        t.same([...created, ...replaced, ...unchanged].sort(), [...ids].sort(), `round ${round}: every listed ID is the provider's`);
      }
      for (const [i, id] of ids.entries()) {
        const owner = (await s.getResource(id))?.provider;
        const put = puts[i]!;
        if (putter(i) === 'agentlet-a') {
          t.equal(put.status, 'fulfilled', `round ${round}: ${id}: the provider's own write is accepted`);
          t.equal(owner, 'agentlet-a', `round ${round}: ${id}: held by the provider`);
        } else if (put.status === 'fulfilled') {
          t.equal(owner, 'huabu', `round ${round}: ${id}: the other provider's accepted write holds it`);
          t.equal(reconciled.status, 'rejected', `round ${round}: ${id}: so the reconcile was refused`);
        } else {
          t.equal((put.reason as AppError).code, 'resource_conflict', `round ${round}: ${id}: the other provider's write is a conflict`);
          t.equal(owner, 'agentlet-a', `round ${round}: ${id}: held by the provider that reconciled`);
        }
      }
    }
  });

  t.test(`${name}: concurrent first realizations of one thread store exactly one record`, async (t) => {
    const s = await open(t);
    const r = await openReplica(t, s);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? s : r).realizeWorkload(workload('canvas-1', 'thread-1', `agentlet-${i}`))),
    );
    t.equal(results.filter((x) => x.created).length, 1, 'one creation');
    const winner = results.find((x) => x.created)!.workload;
    t.ok(
      results.every((x) => JSON.stringify(x.workload) === JSON.stringify(winner)),
      'every caller gets the winning record',
    );
    t.same(await s.getWorkload('canvas-1', 'thread-1'), winner);
    await s.realizeWorkload(workload('canvas-1', 'thread-0'));
    await s.realizeWorkload(workload('canvas-2', 'thread-9'));
    t.same(
      (await r.listWorkloads('canvas-1')).map((w) => w.threadId),
      ['thread-0', 'thread-1'],
      'sorted by thread',
    );
    t.same(await s.listWorkloads('canvas-none'), []);
    t.equal(await s.getWorkload('canvas-2', 'thread-1'), undefined);
  });

  t.test(`${name}: the audit log takes entries`, async (t) => {
    const s = await open(t);
    await s.appendAudit([
      { at: '2026-01-01T00:00:00.000Z', actor: 'owner', action: 'machine.enroll', id: 'agentlet-a', outcome: 'enrolled' },
      { at: '2026-01-01T00:00:01.000Z', actor: 'provider:huabu', action: 'resource.register', id: 'web-search', outcome: 'created' },
    ]);
    await s.appendAudit([]);
    await s.appendAudit([
      { at: '2026-01-01T00:00:02.000Z', actor: 'owner', action: 'machine.revoke', id: 'agentlet-a', outcome: 'revoked' },
    ]);
    const details = { machine: 'agentlet-a', profile: 'p-1', canvas: 'canvas-1', thread: 'thread-1', durationMs: 12, outputBytes: 34 };
    await s.appendAudit([
      { at: '2026-01-01T00:00:03.000Z', actor: 'canvas:canvas-1', action: 'resource.invoke', id: 'web-search', outcome: 'ok', details },
    ]);
    t.strictSame(
      (await target.readAudit()).at(-1),
      { at: '2026-01-01T00:00:03.000Z', actor: 'canvas:canvas-1', action: 'resource.invoke', id: 'web-search', outcome: 'ok', details },
      'details persisted with their entry',
    );
    t.same(
      (await target.readAudit()).slice(0, -1),
      [
        { at: '2026-01-01T00:00:00.000Z', actor: 'owner', action: 'machine.enroll', id: 'agentlet-a', outcome: 'enrolled' },
        { at: '2026-01-01T00:00:01.000Z', actor: 'provider:huabu', action: 'resource.register', id: 'web-search', outcome: 'created' },
        { at: '2026-01-01T00:00:02.000Z', actor: 'owner', action: 'machine.revoke', id: 'agentlet-a', outcome: 'revoked' },
      ],
      'every entry persisted, in order; an empty batch adds nothing',
    );
  });

  t.test(`${name}: a realization given its audit intent writes its entry with it; a repeat writes none`, async (t) => {
    const s = await open(t);
    const intent = { at: '2026-01-01T00:00:05.000Z', actor: 'owner', action: 'workload.launch' };
    const entry = { at: intent.at, actor: 'owner', action: 'workload.launch', id: 'canvas-1/thread-1', outcome: 'realized' };
    const before = (await target.readAudit()).length;
    t.equal((await s.realizeWorkload(workload('canvas-1', 'thread-1'), intent)).created, true);
    // The JSON store writes the entry to its audit log just after the journal line that carries it.
    await until('the audit entry', async () => (await target.readAudit()).length !== before);
    t.same((await target.readAudit()).slice(before), [entry], 'the entry of the realization, once');
    t.equal((await s.realizeWorkload(workload('canvas-1', 'thread-1'), { ...intent, at: '2026-01-01T00:00:06.000Z' })).created, false);
    t.equal((await s.realizeWorkload(workload('canvas-1', 'thread-2'))).created, true, 'without an intent');
    await s.appendAudit([{ at: '2026-01-01T00:00:07.000Z', actor: 'owner', action: 'marker', id: 'm', outcome: 'ok' }]);
    t.same(
      (await target.readAudit()).slice(before).map((e) => `${e.id} ${e.outcome}`),
      ['canvas-1/thread-1 realized', 'm ok'],
      'a repeat and a realization without an intent write no entry',
    );
  });

  t.test(
    `${name}: every change appends exactly one event per object changed, in commit order; refusals and unchanged answers none`,
    async (t) => {
      const s = await open(t);
      const start = s.events.head();
      await s.putResource(resource('huabu', 'web-search'));
      await s.putResource(resource('huabu', 'web-search'));
      await s.putResource(resource('huabu', 'web-search', 'Renamed'));
      await rejection(t, s.putResource(resource('agentlet-a', 'web-search', 'Hijack')));
      await s.customizeResource('web-search', { userContent: 'Be brief.' });
      await s.customizeResource('web-search', { userContent: 'Be brief.' });
      await s.putResource(resource('agentlet-a', 'old-tool'));
      await s.reconcileResources('agentlet-a', [resource('agentlet-a', 'new-tool'), resource('agentlet-a', 'other-tool')], false);
      await s.reconcileResources('agentlet-a', [resource('agentlet-a', 'new-tool')], true);
      await s.withdrawResource('huabu', 'web-search');
      await s.enrollMachine({ machineId: 'agentlet-a', tokenDigest: digest('t1'), enrolledAt: '2026-01-01T00:00:00.000Z' });
      await s.rotateMachineToken('agentlet-a', digest('t2'));
      await s.revokeMachine('agentlet-a', '2026-01-02T00:00:00.000Z');
      await s.enrollMachine({ machineId: 'agentlet-a', tokenDigest: digest('t3'), enrolledAt: '2026-01-03T00:00:00.000Z' });
      await s.createProfile(profile('p-1', 'Reviewer'));
      await s.updateProfile('p-1', { alias: 'Reviewer two' });
      await s.updateProfile('p-1', { alias: 'Reviewer two' });
      await s.deleteProfile('p-1');
      await s.realizeWorkload(workload('canvas-1', 'thread-1'));
      await s.realizeWorkload(workload('canvas-1', 'thread-1'));
      const page = await s.events.read(start, 1000);
      const seen = page.events.map(
        (e) => `${e.type} ${e.subject.kind}:${e.subject.id}${e.subject.provider ? `@${e.subject.provider}` : ''}`,
      );
      // The events of one reconcile are in the order the store wrote the rows: compared as a set.
      t.same(
        [...seen.slice(0, 4), ...seen.slice(4, 7).sort(), ...seen.slice(7)],
        [
          'resource.created resource:web-search@huabu',
          'resource.replaced resource:web-search@huabu',
          'resource.customized resource:web-search@huabu',
          'resource.created resource:old-tool@agentlet-a',
          ...[
            'resource.created resource:new-tool@agentlet-a',
            'resource.created resource:other-tool@agentlet-a',
            'resource.withdrawn resource:old-tool@agentlet-a',
          ].sort(),
          'resource.withdrawn resource:web-search@huabu',
          'machine.enrolled machine:agentlet-a',
          'machine.rotated machine:agentlet-a',
          'machine.revoked machine:agentlet-a',
          'machine.enrolled machine:agentlet-a',
          'profile.created profile:p-1',
          'profile.updated profile:p-1',
          'profile.deleted profile:p-1',
          'workload.launched workload:canvas-1/thread-1',
        ],
      );
      const ids = page.events.map((e) => Number(e.id));
      t.same(
        ids,
        [...new Set(ids)].sort((a, b) => a - b),
        'cursors increase',
      );
      t.equal(page.next, page.events.at(-1)!.id, 'next is the last event');
      t.ok(
        page.events.every((e) => !Number.isNaN(Date.parse(e.at))),
        'each has its time',
      );
      // A store publishes a commit once it has read it back (PostgreSQL: on its notification), so head()
      // reaches the newest event soon after the write returns, not necessarily at once.
      await until('the event published', () => s.events.head() === page.next);
      t.equal(s.events.head(), page.next, 'head is the newest event once published');
      // Pages.
      const two = await s.events.read(start, 2);
      t.same(
        two.events.map((e) => e.id),
        ids.slice(0, 2).map(String),
      );
      const rest = await s.events.read(two.next, 1000);
      t.same(
        rest.events.map((e) => e.id),
        ids.slice(2).map(String),
        'the next page goes on from next',
      );
      t.same(await s.events.read(page.next, 10), { events: [], next: page.next }, 'nothing after the newest');
      t.equal((await rejection(t, s.events.read(String(ids.at(-1)! + 1000), 10))).code, 'cursor_expired', 'a cursor never issued');
    },
  );

  t.test(`${name}: a burst of concurrent changes has one event each, in the order they were committed`, async (t) => {
    const s = await open(t);
    const start = s.events.head();
    const ids = Array.from({ length: 50 }, (_, i) => `burst-${i}`);
    await Promise.all([
      ...ids.map((id) => s.putResource(resource('huabu', id))),
      ...ids
        .slice(0, 10)
        .map((id, i) => s.enrollMachine({ machineId: `m-${i}`, tokenDigest: digest(id), enrolledAt: '2026-01-01T00:00:00.000Z' })),
    ]);
    const { events } = await s.events.read(start, 1000);
    t.equal(events.length, 60, 'one event per change');
    t.same(
      events
        .filter((e) => e.subject.kind === 'resource')
        .map((e) => e.subject.id)
        .sort(),
      [...ids].sort(),
    );
    const seq = events.map((e) => Number(e.id));
    t.same(
      seq,
      [...new Set(seq)].sort((a, b) => a - b),
      'increasing, none twice',
    );
  });

  t.test(
    `${name}: events of no stored change (a channel, a job, a machine's problems) are recorded on their own, in order with the rest`,
    async (t) => {
      const s = await open(t);
      const start = s.events.head();
      await s.putResource(resource('huabu', 'before'));
      await s.recordEvents([{ type: 'machine.connected', subject: { kind: 'machine', id: 'm-1' } }]);
      await s.recordEvents([
        { type: 'job.succeeded', subject: { kind: 'job', id: 'job-1', provider: 'm-1' } },
        { type: 'job.failed', subject: { kind: 'job', id: 'job-2', provider: 'm-1' } },
      ]);
      await s.recordEvents([{ type: 'machine.problems', subject: { kind: 'machine', id: 'm-1' } }]);
      await s.recordEvents([]);
      await s.putResource(resource('huabu', 'after'));
      const { events } = await s.events.read(start, 100);
      t.same(
        events.map((e) => `${e.type} ${e.subject.kind}:${e.subject.id}${e.subject.provider ? `@${e.subject.provider}` : ''}`),
        [
          'resource.created resource:before@huabu',
          'machine.connected machine:m-1',
          'job.succeeded job:job-1@m-1',
          'job.failed job:job-2@m-1',
          'machine.problems machine:m-1',
          'resource.created resource:after@huabu',
        ],
        'each once, in the order written; an empty list writes none',
      );
      t.same(await s.listMachines(), [], 'no machine record is written by its event');
      const seq = events.map((e) => Number(e.id));
      t.same(
        seq,
        [...new Set(seq)].sort((a, b) => a - b),
        'increasing cursors',
      );
    },
  );

  t.test(`${name}: recordUsage counts a provider's records and the UTF-8 bytes of what it wrote, never the owner's fields`, async (t) => {
    const s = await open(t);
    t.same(await s.recordUsage('agentlet-a'), { count: 0, bytes: 0, pinnedBytes: 0 }, 'nothing held');
    const v1 = resource('agentlet-a', 'a-tool', 'Grüße 工具');
    const v2: StoredResource = {
      schemaVersion: 2,
      id: 'b-skill',
      name: 'Skill ✓',
      provider: 'agentlet-a',
      sourceContent: 'Emoji 🚀 and café.',
      userContent: '',
    };
    await s.putResource(v1);
    await s.reconcileResources('agentlet-b', [resource('agentlet-b', 'other')], false);
    await s.putResource(v2);
    const expected = { count: 2, bytes: recordBytes(v1) + recordBytes(v2), pinnedBytes: 0 };
    t.same(await s.recordUsage('agentlet-a'), expected, 'the sum src/registry/record-quota.ts defines');
    await s.customizeResource('b-skill', { displayName: 'A long owner name', userContent: 'The owner wrote this much text.' });
    t.same(await s.recordUsage('agentlet-a'), expected, "the owner's fields are not the machine's to spend");
    t.same(await s.recordUsage('agentlet-b'), { count: 1, bytes: recordBytes(resource('agentlet-b', 'other')), pinnedBytes: 0 });
    await s.withdrawResource('agentlet-a', 'a-tool');
    t.same(await s.recordUsage('agentlet-a'), { count: 1, bytes: recordBytes(v2), pinnedBytes: 0 }, 'a withdrawal frees');
  });

  if (target.replica) {
    t.test(`${name}: a change through one replica changes the other's resources revision`, async (t) => {
      const s = await open(t);
      const r = await openReplica(t, s);
      const before = r.resourcesRevision();
      await s.putResource(resource('huabu', 'web-search'));
      await until('the other replica to see the write', () => r.resourcesRevision() !== before);
      t.not(r.resourcesRevision(), before, 'the other replica sees the write');
      t.same(await r.getResource('web-search'), resource('huabu', 'web-search'));
    });

    t.test(`${name}: an event written through one replica reaches a subscriber of the other`, async (t) => {
      const s = await open(t);
      const r = await openReplica(t, s);
      const from = r.events.head();
      let woken = 0;
      const off = r.events.onPublished(() => woken++);
      t.teardown(off);
      await s.putResource(resource('huabu', 'web-search'));
      await until('the other replica to wake its subscribers', () => woken > 0);
      t.ok(woken > 0, 'the other replica woke its subscribers');
      const { events } = await r.events.read(from, 10);
      t.same(
        events.map((e) => [e.type, e.subject.id]),
        [['resource.created', 'web-search']],
      );
    });
  }
}
