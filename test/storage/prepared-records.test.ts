// A provider's set is prepared before the resources document's turn (src/storage/prepared-records.ts): what
// the owner changes meanwhile is what the set's records carry, and what is stored is exactly what a set
// made in the turn would store.
import t from 'tap';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { digestOf } from '../../src/registry/record-digest.js';
import type { StoredResource } from '../../src/schemas/resource.js';
import { tempDataDir } from '../helpers/build.js';

const set = (text: string): StoredResource[] =>
  Array.from({ length: 250 }, (_, i) => ({
    schemaVersion: 2,
    id: `tool-${i}`,
    name: `tool-${i}`,
    provider: 'mac-1',
    sourceContent: `---\nname: tool-${i}\ndescription: ${text}\n---\n${text}`,
    userContent: '',
  }));

t.test("the owner's customization made while a set is prepared is kept by the set's records", async (t) => {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  await store.reconcileResources('mac-1', set('First.'), false);
  // The set is prepared in slices; the customizations are committed before its turn.
  const replacing = store.reconcileResources('mac-1', set('Second.'), false);
  await Promise.all([
    store.customizeResource('tool-0', { displayName: 'The first tool' }),
    store.customizeResource('tool-249', { userContent: 'Ask first.' }),
  ]);
  const result = await replacing;
  t.equal(result.replaced.length, 250);
  const first = (await store.getResource('tool-0'))!;
  const last = (await store.getResource('tool-249'))!;
  t.match(first, { displayName: 'The first tool', sourceContent: /Second\./ }, 'the display name kept, the text replaced');
  t.match(last, { userContent: 'Ask first.', sourceContent: /Second\./ }, 'the notes kept, the text replaced');
  const revisions = await store.listRevisions('tool-0');
  t.ok(
    revisions.some((r) => r.digest === digestOf(first)),
    'the revision kept is the one stored, owner fields and all',
  );
});

t.test('a set stored after a restart reads back with the same digests and events it was committed with', async (t) => {
  const dataDir = await tempDataDir();
  let store = await JsonFileStore.open({ dataDir });
  await store.reconcileResources('mac-1', set('First.'), false);
  await store.customizeResource('tool-7', { displayName: 'Seven' });
  await store.reconcileResources('mac-1', set('Second.'), false);
  const before = new Map((await store.listResources()).map((r) => [r.id, digestOf(r)]));
  await store.close();
  store = await JsonFileStore.open({ dataDir });
  t.teardown(() => store.close());
  const after = new Map((await store.listResources()).map((r) => [r.id, digestOf(r)]));
  t.same([...after], [...before], 'each record reads back with the digest it was stored with');
  t.match(await store.getResource('tool-7'), { displayName: 'Seven', sourceContent: /Second\./ });
});
