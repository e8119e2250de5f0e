// Record v2 in the storage contract: both stores keep each record in the version it was written in, carry
// the owner's customization over a provider's put and reconcile (whatever version the provider writes),
// apply a customization atomically, and give back exactly what they were given after a reopen.
import type { Test } from 'tap';
import { AppError } from '../../src/errors.js';
import { toV1 } from '../../src/registry/resource-versions.js';
import type { AgentResourceV2, StoredResource } from '../../src/schemas/resource.js';
import type { RegistryStore } from '../../src/registry/store.js';
import { resource, type ContractTarget } from './storage-contract.js';

export const resourceV2 = (provider: string, id: string, sourceContent = `Use ${id}.`): AgentResourceV2 => ({
  schemaVersion: 2,
  id,
  name: `Name of ${id}`,
  provider,
  sourceContent,
  userContent: '',
});

export function runV2Contract(
  t: Test,
  name: string,
  target: Pick<ContractTarget, 'fresh'> & { reopen?(t: Test): Promise<RegistryStore> },
): void {
  const open = async (t: Test) => {
    const store = await target.fresh(t);
    t.teardown(() => store.close());
    return store;
  };

  t.test(`${name}: records keep their version; the owner's fields survive put and reconcile`, async (t) => {
    const store = await open(t);
    t.equal(await store.putResource(resourceV2('huabu', 'web')), 'created');
    t.equal(await store.putResource(resource('huabu', 'old')), 'created');
    t.same(await store.getResource('web'), resourceV2('huabu', 'web'));
    t.same(await store.getResource('old'), resource('huabu', 'old'), 'a v1 record is a v1 record');

    const customized = await store.customizeResource('web', { displayName: 'Search', userContent: 'Be brief.' });
    t.same(customized, { ...resourceV2('huabu', 'web'), displayName: 'Search', userContent: 'Be brief.' });
    t.same(Object.keys(customized), ['schemaVersion', 'id', 'name', 'displayName', 'provider', 'sourceContent', 'userContent']);
    const old = await store.customizeResource('old', { displayName: 'Old one' });
    t.same(old, { ...resource('huabu', 'old'), displayName: 'Old one' });
    t.same(toV1(old), resource('huabu', 'old'));

    t.equal(
      await store.putResource(resourceV2('huabu', 'web')),
      'unchanged',
      "the provider's same record with the owner's fields is unchanged",
    );
    t.equal(await store.putResource(resource('huabu', 'web')), 'replaced', 'v2 → v1 by its provider');
    t.same(await store.getResource('web'), { ...resource('huabu', 'web'), displayName: 'Search', userContent: 'Be brief.' });

    const plan = await store.reconcileResources('huabu', [resourceV2('huabu', 'old', 'New content.'), resourceV2('huabu', 'web')], false);
    t.same(plan, { dryRun: false, created: [], replaced: ['old', 'web'], withdrawn: [], unchanged: [] });
    t.same(await store.getResource('old'), { ...resourceV2('huabu', 'old', 'New content.'), displayName: 'Old one' });
    t.same(await store.getResource('web'), { ...resourceV2('huabu', 'web'), displayName: 'Search', userContent: 'Be brief.' });
    const again = await store.reconcileResources('huabu', [resourceV2('huabu', 'old', 'New content.'), resourceV2('huabu', 'web')], false);
    t.same(again.unchanged, ['old', 'web']);

    const cleared = await store.customizeResource('web', { displayName: null, userContent: '' });
    t.same(cleared, resourceV2('huabu', 'web'));
    const missing = await store.customizeResource('nope', { userContent: 'x' }).catch((e: unknown) => e);
    t.ok(missing instanceof AppError && missing.code === 'resource_not_found');
  });

  t.test(`${name}: another provider never inherits a customization`, async (t) => {
    const store = await open(t);
    await store.putResource(resourceV2('mac-a', 'tool'));
    await store.customizeResource('tool', { userContent: 'Mine.' });
    await store.withdrawResource('mac-a', 'tool');
    t.equal(await store.putResource(resourceV2('mac-b', 'tool')), 'created');
    t.same(await store.getResource('tool'), resourceV2('mac-b', 'tool'));
  });

  t.test(`${name}: the owner's import mark moves the revision, survives the provider's replace, goes with its record`, async (t) => {
    const store = await open(t);
    await store.putResource(resourceV2('mac-a', 'skill'));
    await store.putResource(resource('mac-a', 'old-skill'));
    const before = store.resourcesRevision();
    const marked = await store.customizeResource('skill', { displayName: 'Skill', userContent: 'Mine.', imported: true });
    t.same(marked, { ...resourceV2('mac-a', 'skill'), displayName: 'Skill', userContent: 'Mine.', imported: true });
    t.not(store.resourcesRevision(), before, 'marking moves the revision (and so the catalogue ETags)');
    t.same(
      await store.customizeResource('old-skill', { imported: true }),
      { ...resource('mac-a', 'old-skill'), imported: true },
      'a v1 record is marked too',
    );
    t.same(await store.customizeResource('skill', { imported: true }), marked, 'marking a marked record changes nothing');

    t.equal(await store.putResource(resourceV2('mac-a', 'skill', 'Refreshed.')), 'replaced');
    t.same(
      await store.getResource('skill'),
      { ...resourceV2('mac-a', 'skill', 'Refreshed.'), displayName: 'Skill', userContent: 'Mine.', imported: true },
      "the provider's replace keeps the mark",
    );
    const plan = await store.reconcileResources('mac-a', [resourceV2('mac-a', 'skill', 'Again.'), resource('mac-a', 'old-skill')], false);
    t.same(plan.replaced, ['skill']);
    t.same(
      (await store.listResources()).map((r) => [r.id, r.imported ?? false]),
      [
        ['old-skill', true],
        ['skill', true],
      ],
      'a reconcile keeps the marks',
    );

    await store.customizeResource('old-skill', { imported: false });
    t.equal((await store.getResource('old-skill'))!.imported, undefined, 'the mark can be cleared');
    await store.withdrawResource('mac-a', 'skill');
    t.equal(await store.putResource(resourceV2('mac-a', 'skill')), 'created');
    t.same(await store.getResource('skill'), resourceV2('mac-a', 'skill'), 'a record published again after a withdrawal is not marked');
  });

  if (target.reopen) {
    const reopen = target.reopen;
    t.test(`${name}: a reopen gives back exactly what was stored, in both versions`, async (t) => {
      const store = await target.fresh(t);
      const records: StoredResource[] = [
        { ...resource('huabu', 'a-v1'), name: ' Spaced name ', displayName: 'A', userContent: 'U' },
        resource('huabu', 'b-v1'),
        { ...resourceV2('mac-a', 'c-v2'), displayName: 'C', userContent: 'Owner text.' },
        resourceV2('mac-a', 'd-v2'),
        { ...resourceV2('mac-a', 'e-imported'), displayName: 'E', userContent: '', imported: true },
        { ...resource('mac-a', 'f-imported-v1'), imported: true },
      ];
      for (const r of records) {
        const { displayName, userContent, imported, ...source } = r;
        await store.putResource(r.schemaVersion === 2 ? { ...(source as AgentResourceV2), userContent: '' } : (source as StoredResource));
        if (displayName !== undefined || userContent || imported) {
          await store.customizeResource(r.id, {
            ...(displayName !== undefined ? { displayName } : {}),
            ...(userContent ? { userContent } : {}),
            ...(imported ? { imported } : {}),
          });
        }
      }
      await store.close();
      const again = await reopen(t);
      t.teardown(() => again.close());
      t.same(await again.listResources(), records);
    });
  }
}
