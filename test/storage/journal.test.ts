// The journaled durable document on a real file system: replay at start, a torn last line (and only that)
// tolerated, compaction into the versioned file, restart, and the same for resources.json in a DATA_DIR.
import t from 'tap';
import { mkdtemp, readFile, writeFile, appendFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DurableDocument, type JournalCodec } from '../../src/storage/durable-document.js';
import { JournalCorruptError, journalLinePieces, journalPathFor, readJournal } from '../../src/storage/journal.js';
import { OverlayMap, type RecordMap } from '../../src/storage/overlay-map.js';
import { JsonFileStore, readStoredResources, StoreFileError } from '../../src/storage/json-file-store.js';
import { nodeFileSystem, TEMP_SUFFIX, type FileSystemSeam } from '../../src/storage/durable-file.js';
import { resourcesFilePieces, serializeResourcesFile } from '../../src/migrations/resources-file.js';
import { REVISIONS_FILE_VERSION, revisionsFilePieces } from '../../src/storage/json-revisions.js';

interface Items {
  items: RecordMap<string>;
}
const codec: JournalCodec<Items> = {
  clone: (s) => ({ items: new OverlayMap(s.items as Map<string, string>) }),
  serialize: (s) => JSON.stringify(Object.fromEntries([...s.items.keys()].sort().map((k) => [k, s.items.get(k)]))),
  changes: (d) => (d.items as OverlayMap<string>).changes().map(([k, v]) => (v === undefined ? { del: k } : { set: [k, v] })),
  apply(s, changes) {
    for (const c of changes as ({ set: [string, string] } | { del: string })[]) {
      if ('set' in c) s.items.set(c.set[0], c.set[1]);
      else if ('del' in c) s.items.delete(c.del);
      else throw new Error('invalid change');
    }
  },
};
const load = async (file: string): Promise<Items> => {
  const text = await readFile(file, 'utf8').catch(() => '{}');
  return { items: new Map(Object.entries(JSON.parse(text) as Record<string, string>)) };
};
const open = async (file: string, compactAtBytes?: number) =>
  DurableDocument.openJournaled(file, await load(file), codec, undefined, undefined, undefined, compactAtBytes ? { compactAtBytes } : {});
const set = (doc: DurableDocument<Items>, k: string, v: string) =>
  doc.update((d) => (d.items.set(k, v), { result: undefined, changed: true }));
const del = (doc: DurableDocument<Items>, k: string) => doc.update((d) => ({ result: d.items.delete(k), changed: true }));
const dir = () => mkdtemp(path.join(tmpdir(), 'arr-journal-'));
const contents = (doc: DurableDocument<Items>) =>
  Object.fromEntries([...doc.state.items.keys()].sort().map((k) => [k, doc.state.items.get(k)]));

t.test('a batch appends one journal line; the versioned file is untouched until compaction', async (t) => {
  const file = path.join(await dir(), 'd.json');
  const doc = await open(file);
  t.equal(await readFile(file, 'utf8'), '{}', 'the versioned file exists from the start');
  await Promise.all([set(doc, 'a', '1'), set(doc, 'b', '2'), del(doc, 'a')]);
  await set(doc, 'c', '3');
  t.same(contents(doc), { b: '2', c: '3' });
  const journal = await readJournal(journalPathFor(file));
  t.same(
    journal.batches,
    [[{ set: ['a', '1'] }], [{ set: ['b', '2'] }, { del: 'a' }], [{ set: ['c', '3'] }]],
    'one line per batch (the first went alone; the two queued behind it shared one)',
  );
  t.equal(await readFile(file, 'utf8'), '{}');
});

t.test('start-up replays the journal, compacts it into the file, and a restart sees the same', async (t) => {
  const file = path.join(await dir(), 'd.json');
  const doc = await open(file);
  for (let i = 0; i < 20; i++) await set(doc, `k${i % 5}`, String(i));
  await del(doc, 'k0');
  // No close: as after a crash, the journal still holds every batch.
  const again = await open(file);
  t.same(contents(again), { k1: '16', k2: '17', k3: '18', k4: '19' });
  t.same(JSON.parse(await readFile(file, 'utf8')), contents(again), 'compacted into the versioned file');
  t.equal((await readJournal(journalPathFor(file))).bytes, 0, 'journal emptied');
  await set(again, 'k9', 'x');
  const third = await open(file);
  t.same(contents(third), { k1: '16', k2: '17', k3: '18', k4: '19', k9: 'x' });
});

t.test('a torn last line (a crash mid-append) is ignored, and only that', async (t) => {
  const file = path.join(await dir(), 'd.json');
  const doc = await open(file);
  await set(doc, 'a', '1');
  await appendFile(journalPathFor(file), '{"changes":[{"set":["b","2"]}');
  const reopened = await open(file);
  t.same(contents(reopened), { a: '1' }, 'the unacknowledged batch is not there');
  await set(reopened, 'c', '3');
  t.same(contents(await open(file)), { a: '1', c: '3' }, 'appends after the torn tail are readable');

  const other = path.join(await dir(), 'd.json');
  await writeFile(other, '{}');
  const journal = '{"changes":[{"set":["a","1"]}]}\n{"chan\n{"changes":[{"set":["b","2"]}]}\n';
  await writeFile(journalPathFor(other), journal);
  await t.rejects(open(other), JournalCorruptError, 'a bad line before the last one stops the start');
  t.equal(await readFile(journalPathFor(other), 'utf8'), journal, 'and the journal is left as it is');
  t.equal(await readFile(other, 'utf8'), '{}');
});

t.test('compaction folds the journal into the file once it is large enough; a crash between the two steps is harmless', async (t) => {
  const file = path.join(await dir(), 'd.json');
  const doc = await open(file, 200);
  for (let i = 0; i < 10; i++) await set(doc, `k${i}`, 'v'.repeat(30));
  t.ok((await readJournal(journalPathFor(file))).bytes < 200, 'the journal was emptied on the way');
  t.equal(Object.keys(JSON.parse(await readFile(file, 'utf8'))).length >= 4, true, 'the file holds the compacted records');
  await doc.close();
  t.same(JSON.parse(await readFile(file, 'utf8')), contents(doc), 'close compacts everything into the file');
  t.equal((await readJournal(journalPathFor(file))).bytes, 0);
  await t.rejects(set(doc, 'late', 'x'), { code: 'storage_unavailable' }, 'no update after close');

  // Crash after the compacted file was written but before the journal was emptied: replay changes nothing.
  const crashed = path.join(await dir(), 'd.json');
  await writeFile(crashed, JSON.stringify({ a: '2', c: '1' }));
  await writeFile(
    journalPathFor(crashed),
    '{"changes":[{"set":["a","1"]},{"set":["b","1"]}]}\n{"changes":[{"set":["a","2"]},{"del":"b"},{"set":["c","1"]}]}\n',
  );
  t.same(contents(await open(crashed)), { a: '2', c: '1' });
});

t.test('resources.json: a DATA_DIR with a journal restarts with it replayed; a bad journal stops the start untouched', async (t) => {
  const dataDir = await dir();
  const store = await JsonFileStore.open({ dataDir });
  const record = (id: string, name: string) => ({
    schemaVersion: 1 as const,
    id,
    name,
    provider: 'huabu',
    description: 'd',
    instructions: 'i',
  });
  await Promise.all([store.putResource(record('one', 'One')), store.putResource(record('two', 'Two'))]);
  await store.withdrawResource('huabu', 'one');
  t.same(
    (await readStoredResources(dataDir)).map((r) => r.id),
    ['two'],
    'file + journal hold the acknowledged state',
  );
  await store.close();
  const file = path.join(dataDir, 'agent-resources', 'resources.json');
  t.same(
    JSON.parse(await readFile(file, 'utf8')).state.resources,
    [record('two', 'Two')],
    'after close the versioned file alone is complete',
  );

  const bad = await dir();
  await mkdir(path.join(bad, 'agent-resources'));
  const badFile = path.join(bad, 'agent-resources', 'resources.json');
  await writeFile(badFile, JSON.stringify({ schemaVersion: 1, state: { resources: [] } }));
  await writeFile(`${badFile}.journal`, '{"changes":[{"put":{"id":"no-fields"}}]}\n');
  await t.rejects(JsonFileStore.open({ dataDir: bad }), StoreFileError);
  t.equal(await readFile(`${badFile}.journal`, 'utf8'), '{"changes":[{"put":{"id":"no-fields"}}]}\n', 'left unchanged');
});

t.test('resources.json and revisions.json written in pieces hold exactly the bytes of the whole document', (t) => {
  const v1 = (id: string) => ({
    schemaVersion: 1 as const,
    id,
    name: `N ${id}`,
    provider: 'huabu',
    description: 'd "q"\n',
    instructions: 'i ✓',
  });
  const v2 = (id: string) => ({
    schemaVersion: 2 as const,
    id,
    name: id,
    displayName: `Shown\t${id}`,
    provider: 'm-1',
    sourceContent: '---\nname: x\n---\nline one\nline two {"a": [1, 2]}',
    userContent: '',
  });
  const onlyV1 = ['a', 'b', 'c'].map(v1);
  const mixed = [v1('a'), v2('b'), v1('c'), v2('d')];
  for (const size of [1, 40, 1 << 20]) {
    t.equal(
      [...resourcesFilePieces(onlyV1, size)].join(''),
      JSON.stringify({ schemaVersion: 1, state: { resources: onlyV1 } }) + '\n',
      `v1, pieces of ${size}`,
    );
    // v2: what JSON.stringify writes for the same document in two-space JSON.
    const text = [...resourcesFilePieces(mixed, size)].join('');
    t.equal(text, JSON.stringify(JSON.parse(text), null, 2) + '\n', `v2, pieces of ${size}`);
  }
  t.ok([...resourcesFilePieces(mixed, 40)].length > 3, 'a small piece size cuts the file into many pieces');
  t.equal(serializeResourcesFile([]), '{"schemaVersion":1,"state":{"resources":[]}}\n', 'an empty catalogue');
  const v2Text = serializeResourcesFile(mixed);
  t.same(
    JSON.parse(v2Text).state.resources.map((e: { id: string; v1?: unknown }) => [e.id, e.v1 !== undefined]),
    [
      ['a', true],
      ['b', false],
      ['c', true],
      ['d', false],
    ],
    'the v2 file keeps what a v1 record was written as',
  );
  t.ok(
    v2Text.startsWith('{\n  "schemaVersion": 2,\n  "state": {\n    "resources": [\n      {\n        "'),
    'two-space JSON, entries three levels deep',
  );

  const revision = (id: string, seq: number) => ({
    id,
    digest: `sha256:${String(seq).repeat(64)}`,
    provider: 'huabu',
    createdAt: '2026-01-01T00:00:00.000Z',
    seq,
    record: v1(id),
  });
  const snapshot = {
    revisions: [revision('a', 1), revision('a', 2), revision('b', 3)],
    holds: [{ holder: 'h', id: 'a', digest: 'sha256:1' }],
    notices: [],
  };
  for (const size of [1, 60, 1 << 20]) {
    t.equal(
      [...revisionsFilePieces(snapshot, size)].join(''),
      JSON.stringify({ schemaVersion: REVISIONS_FILE_VERSION, revisions: snapshot.revisions, holds: snapshot.holds }) + '\n',
      `revisions, pieces of ${size}`,
    );
  }
  const notices = [{ id: 'a', holder: 'h', told: 'sha256:2' }];
  t.equal(
    [...revisionsFilePieces({ ...snapshot, notices }, 30)].join(''),
    JSON.stringify({ schemaVersion: REVISIONS_FILE_VERSION, revisions: snapshot.revisions, holds: snapshot.holds, notices }) + '\n',
    'drift notices follow when there are any',
  );
  t.end();
});

t.test(
  'resources.json compacts beside later writes: a write is answered while the compaction writes the file, and nothing is lost',
  async (t) => {
    const dataDir = await dir();
    let held: (() => void) | undefined;
    let armed = false;
    const seam: FileSystemSeam = {
      ...nodeFileSystem,
      async open(file, flags, mode) {
        // The compaction's temp file of resources.json (not its journal's) waits until the test lets it go on.
        if (/^resources\.json\.\d/.test(path.basename(file)) && file.endsWith(TEMP_SUFFIX) && armed && !held)
          await new Promise<void>((r) => (held = r));
        return nodeFileSystem.open(file, flags, mode);
      },
    };
    const store = await JsonFileStore.open({ dataDir, fs: seam });
    armed = true;
    const record = (id: string, content = `---\nname: ${id}\n---\n${'x'.repeat(90_000)}`) => ({
      schemaVersion: 2 as const,
      id,
      name: id,
      provider: 'huabu',
      sourceContent: content,
      userContent: '',
    });
    // Until the journal passes its threshold (1 MiB): that write's answer starts a compaction, held at its file.
    const ids: string[] = [];
    for (let i = 0; i < 20 && !held; i++) {
      ids.push(`big-${String(i).padStart(2, '0')}`);
      await store.putResource(record(ids.at(-1)!));
      await new Promise((r) => setImmediate(r));
    }
    t.ok(held, 'a compaction started');
    const during = await store.putResource(record('during', 'short'));
    t.equal(during, 'created', 'a write is answered while the compaction is under way');
    t.same(
      (await readStoredResources(dataDir)).map((r) => r.id),
      [...ids, 'during'],
      'file and journal hold every acknowledged write meanwhile',
    );
    held!();
    await store.close();
    const file = path.join(dataDir, 'agent-resources', 'resources.json');
    t.same(
      JSON.parse(await readFile(file, 'utf8')).state.resources.map((r: { id: string }) => r.id),
      [...ids, 'during'],
      'after close the file alone holds them',
    );
    const reopened = await JsonFileStore.open({ dataDir });
    t.same(
      (await reopened.listResources()).map((r) => r.id),
      [...ids, 'during'],
      'and a restart reads them',
    );
    await reopened.close();
  },
);

t.test('a batch larger than a piece is one journal line, written a piece at a time, and replays whole', async (t) => {
  const changes = [{ set: ['a', 'é'.repeat(10)] }, { set: ['b', '"quoted"'] }, { del: 'c' }];
  const audit = [{ action: 'x', detail: { n: 1 } }];
  for (const size of [1, 20, 1 << 20]) {
    t.equal(
      [...journalLinePieces(changes, audit, size)].join(''),
      JSON.stringify({ changes, audit }) + '\n',
      `with audit, pieces of ${size}`,
    );
    t.equal([...journalLinePieces(changes, [], size)].join(''), JSON.stringify({ changes }) + '\n', `without, pieces of ${size}`);
  }
  const file = path.join(await dir(), 'd.json');
  const doc = await open(file, 64 * 1024 * 1024);
  const big = (c: string) => c.repeat(700_000);
  await doc.update((d) => {
    for (const k of ['x', 'y', 'z']) d.items.set(k, big(k));
    return { result: undefined, changed: true };
  });
  const journal = await readJournal(journalPathFor(file));
  t.equal(journal.batches.length, 1, 'one line for the batch');
  t.ok(journal.bytes > 2 * (1 << 20), 'larger than two pieces');
  await set(doc, 'after', '1');
  t.equal((await readJournal(journalPathFor(file))).batches.length, 2, 'the next batch is the next line');
  const reopened = await open(file);
  t.same(contents(reopened), { after: '1', x: big('x'), y: big('y'), z: big('z') }, 'a start replays it whole');
  await reopened.close();
  await doc.close();
});

t.test("a machine's set sent again with one record changed journals that record alone, and keeps the others' stored objects", async (t) => {
  const dataDir = await dir();
  const store = await JsonFileStore.open({ dataDir });
  t.teardown(() => store.close());
  const set = (changed: string) =>
    Array.from({ length: 50 }, (_, i) => ({
      schemaVersion: 2 as const,
      id: `skill-${i}`,
      name: `skill-${i}`,
      provider: 'mac-1',
      sourceContent: `---\nname: skill-${i}\ndescription: Does ${i}.\n---\n${i === 7 ? changed : 'Unchanged.'}`,
      userContent: '',
    }));
  await store.reconcileResources('mac-1', set('First.'), false);
  await store.findResources({ terms: [{ word: 'does', prefix: false, fuzzy: false }], limit: 5 }); // the word index is built
  const before = new Map((await store.listResources()).map((r) => [r.id, r]));
  const journal = journalPathFor(path.join(dataDir, 'agent-resources', 'resources.json'));
  const lines = (await readJournal(journal)).batches.length;
  const result = await store.reconcileResources('mac-1', set('Second.'), false);
  t.same(result.replaced, ['skill-7']);
  t.equal(result.unchanged.length, 49);
  const batches = (await readJournal(journal)).batches;
  t.equal(batches.length, lines + 1, 'one journal line');
  const puts = (batches.at(-1) as { put?: { id: string } }[]).filter((c) => c.put).map((c) => c.put!.id);
  t.same(puts, ['skill-7'], 'the line holds the changed record alone');
  const after = await store.listResources();
  t.ok(
    after.filter((r) => r.id !== 'skill-7').every((r) => r === before.get(r.id)),
    'every unchanged record is the object stored before',
  );
});
