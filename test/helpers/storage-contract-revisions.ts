// Digests and revisions in the storage contract: both stores give every record the digest of its canonical
// form (the same on both, and after a reopen), keep each new content as a revision with the write that made
// it (newest first), keep a withdrawn record's revisions, and drop the oldest beyond the retention unless a
// hold pins them. A workload's realization holds its pins; a repeat moves none.
import type { Test } from 'tap';
import { computeDigest, digestOf, REVISIONS_KEPT } from '../../src/registry/record-digest.js';
import { recordBytes } from '../../src/registry/record-quota.js';
import type { RegistryStore } from '../../src/registry/store.js';
import { publishedHead, resource, workload, type ContractTarget } from './storage-contract.js';
import { resourceV2 } from './storage-contract-v2.js';
import type { StoredResource } from '../../src/schemas/resource.js';

export function runRevisionContract(
  t: Test,
  name: string,
  target: Pick<ContractTarget, 'fresh'> & { reopen(t: Test): Promise<RegistryStore> },
): void {
  const open = async (t: Test, how: 'fresh' | 'reopen' = 'fresh') => {
    const store = await target[how](t);
    t.teardown(() => store.close());
    return store;
  };

  t.test(`${name}: every record has the digest of its canonical form, after a reopen too`, async (t) => {
    let store = await open(t);
    await store.putResource(resourceV2('huabu', 'web', 'Search the web.'));
    await store.putResource(resource('mac-a', 'old'));
    await store.customizeResource('old', { displayName: 'Old one', userContent: 'Ask first.' });
    const web = (await store.getResource('web'))!;
    const old = (await store.getResource('old'))!;
    t.match(digestOf(web), /^sha256:[0-9a-f]{64}$/);
    t.equal(digestOf(web), computeDigest(resourceV2('huabu', 'web', 'Search the web.')), 'the digest of the content, whoever computed it');
    t.equal(digestOf(old), computeDigest({ ...resource('mac-a', 'old'), displayName: 'Old one', userContent: 'Ask first.' }));
    t.not(digestOf(old), computeDigest(resource('mac-a', 'old')), "the owner's notes are part of what an agent reads");
    const listed = await store.listResources();
    t.same(
      listed.map((r) => digestOf(r)),
      [digestOf(old), digestOf(web)],
    );
    await store.close();
    store = await open(t, 'reopen');
    t.equal(digestOf((await store.getResource('web'))!), digestOf(web), 'the same digest after a restart');
    t.equal(digestOf((await store.getResource('old'))!), digestOf(old));
  });

  t.test(`${name}: each write that changes the digest keeps a revision, newest first; withdrawal keeps them`, async (t) => {
    let store = await open(t);
    t.same(await store.listRevisions('web'), [], 'an ID never seen has none');
    await store.putResource(resourceV2('mac-a', 'web', 'First.'));
    const first = digestOf((await store.getResource('web'))!);
    t.equal(await store.putResource(resourceV2('mac-a', 'web', 'First.')), 'unchanged');
    await store.putResource(resourceV2('mac-a', 'web', 'Second.'));
    const second = digestOf((await store.getResource('web'))!);
    await store.customizeResource('web', { userContent: 'Be brief.' });
    const third = digestOf((await store.getResource('web'))!);
    await store.customizeResource('web', { imported: true });
    t.equal(digestOf((await store.getResource('web'))!), third, 'the import mark is not agent-readable: same digest');
    await store.reconcileResources('mac-a', [resourceV2('mac-a', 'web', 'Fourth.')], false);
    const fourth = digestOf((await store.getResource('web'))!);
    const revisions = await store.listRevisions('web');
    t.same(
      revisions.map((r) => r.digest),
      [fourth, third, second, first],
    );
    t.ok(revisions.every((r) => r.provider === 'mac-a' && !Number.isNaN(Date.parse(r.createdAt))));
    const kept = await store.getRevision('web', second);
    t.same(kept?.record, resourceV2('mac-a', 'web', 'Second.'), 'a revision is the content exactly as it was');
    t.equal(kept && digestOf(kept.record), second);
    t.equal(await store.getRevision('web', `sha256:${'0'.repeat(64)}`), undefined);

    await store.withdrawResource('mac-a', 'web');
    t.same(
      (await store.listRevisions('web')).map((r) => r.digest),
      [fourth, third, second, first],
      'withdrawal keeps the history',
    );
    await store.close();
    store = await open(t, 'reopen');
    t.same(
      (await store.listRevisions('web')).map((r) => r.digest),
      [fourth, third, second, first],
      'revisions survive a restart',
    );
    t.same((await store.getRevision('web', third))?.record, { ...resourceV2('mac-a', 'web', 'Second.'), userContent: 'Be brief.' });
  });

  t.test(
    `${name}: an imported skill's folder revision is stored, digested, kept in its revision and carried past the owner's notes`,
    async (t) => {
      let store = await open(t);
      const folder = (n: string) => n.repeat(64);
      const skill = (revision?: string): StoredResource => ({
        ...resourceV2('mac-a', 'pdf', 'Split PDFs.'),
        ...(revision === undefined ? {} : { sourceRevision: revision }),
      });
      await store.putResource(skill(folder('a')));
      const first = (await store.getResource('pdf'))!;
      t.equal(first.schemaVersion === 2 && first.sourceRevision, folder('a'), 'stored as written');
      t.equal(digestOf(first), computeDigest(skill(folder('a'))));
      t.not(digestOf(first), computeDigest(skill()), 'a change of the folder alone is a new digest');
      t.equal(await store.putResource(skill(folder('a'))), 'unchanged');
      const start = await publishedHead(store);
      t.equal(await store.putResource(skill(folder('b'))), 'replaced', 'the same text from another folder is a replace');
      t.same(
        (await store.events.read(start, 10)).events.map((e) => `${e.type} ${e.subject.id}`),
        ['resource.replaced pdf'],
        'and announced as one',
      );
      await store.customizeResource('pdf', { userContent: 'Ask first.' });
      const noted = (await store.getResource('pdf'))!;
      t.same(noted, { ...skill(folder('b')), userContent: 'Ask first.' }, "the owner's notes keep the folder's revision");
      await store.reconcileResources('mac-a', [skill()], false);
      const plain = (await store.getResource('pdf'))!;
      t.notOk('sourceRevision' in plain, 'a set entry without it leaves none');
      t.same((await store.getRevision('pdf', digestOf(first)))?.record, skill(folder('a')), 'a revision keeps it');
      await store.close();
      store = await open(t, 'reopen');
      t.same(
        (await store.getRevision('pdf', digestOf(noted)))?.record,
        { ...skill(folder('b')), userContent: 'Ask first.' },
        'after a restart too',
      );
      t.equal(digestOf((await store.getResource('pdf'))!), digestOf(plain));
    },
  );

  t.test(`${name}: retention keeps the newest ${REVISIONS_KEPT} and every held revision`, async (t) => {
    let store = await open(t);
    const digests: string[] = [];
    for (let i = 0; i < REVISIONS_KEPT + 5; i++) {
      await store.putResource(resourceV2('mac-a', 'busy', `Version ${i}.`));
      digests.push(digestOf((await store.getResource('busy'))!));
      if (i === 1) await store.holdRevisions('workload:canvas-1/thread-1', [{ id: 'busy', digest: digests[1]! }]);
    }
    const kept = (await store.listRevisions('busy')).map((r) => r.digest);
    t.same(kept, [...digests.slice(-REVISIONS_KEPT).reverse(), digests[1]], 'the newest, then the held one');
    t.equal(await store.getRevision('busy', digests[0]!), undefined, 'an old unheld revision is gone');
    await store.close();
    store = await open(t, 'reopen');
    t.same(
      (await store.listRevisions('busy')).map((r) => r.digest),
      kept,
      'the same after a restart',
    );
    t.same((await store.getRevision('busy', digests[1]!))?.record, resourceV2('mac-a', 'busy', 'Version 1.'));
  });
  t.test(`${name}: a realization holds its pins, durable with the record; a repeat moves none`, async (t) => {
    let store = await open(t);
    const digests: string[] = [];
    const put = async (i: number) => {
      await store.putResource(resourceV2('mac-a', 'busy', `Version ${i}.`));
      digests.push(digestOf((await store.getResource('busy'))!));
    };
    await put(0);
    const pinned = (digest: string) => ({
      ...workload('canvas-1', 'thread-1'),
      spec: { ...workload('canvas-1', 'thread-1').spec, resourcePins: [{ id: 'busy', digest }] },
    });
    t.equal((await store.realizeWorkload(pinned(digests[0]!))).created, true);
    await put(1);
    // A second launch of the same thread that read the newer content loses: the winner's pin stays held.
    const repeat = await store.realizeWorkload(pinned(digests[1]!));
    t.equal(repeat.created, false);
    t.same(repeat.workload.spec.resourcePins, [{ id: 'busy', digest: digests[0] }]);
    await store.close();
    store = await open(t, 'reopen');
    for (let i = 2; i < REVISIONS_KEPT + 5; i++) await put(i);
    const kept = (await store.listRevisions('busy')).map((r) => r.digest);
    t.same(kept, [...digests.slice(-REVISIONS_KEPT).reverse(), digests[0]], "the newest, then the workload's pin");
    t.same((await store.getRevision('busy', digests[0]!))?.record, resourceV2('mac-a', 'busy', 'Version 0.'));
  });

  t.test(`${name}: a machine's usage counts the pinned history of its records, once each, until nothing holds it`, async (t) => {
    let store = await open(t);
    const first = resourceV2('mac-a', 'doc', 'First text, pinned by a thread.');
    const second = resourceV2('mac-a', 'doc', 'Second text, which the machine wrote after.');
    const free = resourceV2('mac-a', 'free', 'Never pinned, replaced.');
    /** The usage of `records` held now, beside `pinned` history. */
    const usage = (records: StoredResource[], pinned: StoredResource[] = []) => {
      const pinnedBytes = pinned.reduce((sum, r) => sum + recordBytes(r), 0);
      return { count: records.length, bytes: records.reduce((sum, r) => sum + recordBytes(r), pinnedBytes), pinnedBytes };
    };
    await store.putResource(first);
    await store.putResource(resourceV2('mac-a', 'free', 'Never pinned.'));
    await store.putResource(free);
    for (const thread of ['thread-1', 'thread-2'])
      await store.holdRevisions(`workload:canvas-1/${thread}`, [{ id: 'doc', digest: computeDigest(first) }]);
    t.same(await store.recordUsage('mac-a'), usage([first, free]), 'a pin of the current content costs nothing more');
    await store.putResource(second);
    t.same(
      await store.recordUsage('mac-a'),
      usage([second, free], [first]),
      'the pinned old content counts, once for two holders; unpinned history does not',
    );
    await store.customizeResource('doc', { userContent: 'The owner notes this.' });
    await store.holdRevisions('workload:canvas-1/thread-3', [{ id: 'doc', digest: digestOf((await store.getResource('doc'))!) }]);
    await store.customizeResource('doc', { userContent: 'And this.' });
    t.same(
      await store.recordUsage('mac-a'),
      usage([second, free], [first]),
      "a pinned revision with the machine's text of today costs nothing more",
    );
    await store.close();
    store = await open(t, 'reopen');
    t.same(await store.recordUsage('mac-a'), usage([second, free], [first]), 'the same after a restart');
    await store.withdrawResource('mac-a', 'doc');
    t.same(await store.recordUsage('mac-a'), usage([free], [first, second]), 'withdrawn: its pinned revisions still count');
    for (const thread of ['thread-1', 'thread-2'])
      await store.holdRevisions(`workload:canvas-1/${thread}`, [{ id: 'doc', digest: computeDigest(second) }]);
    t.same(await store.recordUsage('mac-a'), usage([free], [second]), 'a pin moved away frees what it held; one text counts once');
    t.same(await store.recordUsage('mac-b'), usage([]), "another machine's usage is its own");
  });
}
