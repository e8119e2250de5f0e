// A workload's pins are held beside its journal line, and never left unheld: the realization that creates
// the record holds them as its line is written (a repeat holds nothing), and a compaction (at start after a
// crash, at close, past the threshold) holds the pins of every record it folds before its canvas files are
// written, so a record never leaves the journal while its pins are not held.
import t from 'tap';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { JsonWorkloadFiles, type HoldPins } from '../../src/storage/json-workload-files.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { digestOf } from '../../src/registry/record-digest.js';
import type { WorkloadRecord } from '../../src/schemas/workload.js';
import { workloadRecord } from '../helpers/workload-record.js';

const dataDir = () => mkdtemp(path.join(tmpdir(), 'arr-wlpins-'));
const pinned = (canvasId: string, threadId: string, digest = `sha256:${'a'.repeat(64)}`): WorkloadRecord => {
  const record = workloadRecord(canvasId, threadId);
  return { ...record, spec: { ...record.spec, resourcePins: [{ id: 'web-search', digest }] } };
};

/** A HoldPins that records what it was asked to hold, and whether a canvas file existed by then. */
function recorder(dir: string) {
  const calls: { threads: string[]; canvasFiles: string[] }[] = [];
  const hold: HoldPins = async (records) => {
    const canvasFiles = (await readdir(path.join(dir, 'workloads'))).filter((f) => f.endsWith('.json')).sort();
    calls.push({ threads: records.map((r) => `${r.canvasId}/${r.threadId}`).sort(), canvasFiles });
  };
  return { calls, hold };
}

const open = (dir: string, hold?: HoldPins, compactAtBytes?: number) =>
  JsonWorkloadFiles.open(dir, nodeFileSystem, undefined, compactAtBytes, undefined, undefined, undefined, hold);

t.test('the realization that creates the record holds its pins; a repeat holds nothing', async (t) => {
  const dir = await dataDir();
  const { calls, hold } = recorder(dir);
  const files = await open(dir, hold);
  t.equal((await files.realize(pinned('c-1', 't-1'))).created, true);
  t.same(
    calls.map((c) => c.threads),
    [['c-1/t-1']],
  );
  const repeat = await files.realize(pinned('c-1', 't-1', `sha256:${'b'.repeat(64)}`));
  t.equal(repeat.created, false);
  t.same(calls.length, 1, "a repeat's pins would move the winner's hold: none asked");
  const both = await Promise.all([files.realize(pinned('c-1', 't-2')), files.realize(pinned('c-1', 't-2'))]);
  t.same(both.map((o) => o.created).sort(), [false, true]);
  t.same(calls.length, 2, 'two launches of one thread at once: only the winner holds');
  await files.close();
});

t.test('a launch whose pins cannot be held fails, and the record is held again before it leaves the journal', async (t) => {
  const dir = await dataDir();
  let failing = true;
  const { calls, hold } = recorder(dir);
  const files = await open(dir, async (records) => {
    if (failing) throw new Error('disk full');
    await hold(records);
  });
  await t.rejects(files.realize(pinned('c-1', 't-1')), /disk full/, 'not answered as launched');
  failing = false;
  await files.close();
  t.same(calls, [{ threads: ['c-1/t-1'], canvasFiles: [] }], 'held by the compaction at close, before the canvas file was written');
  t.same(JSON.parse(await readFile(path.join(dir, 'workloads', 'c-1.json'), 'utf8')).state.workloads[0].threadId, 't-1');
});

t.test("after a crash, the journal's records are held before the compaction at start writes them", async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  for (let i = 0; i < 3; i++) await files.realize(pinned(`c-${i % 2}`, `t-${i}`));
  // No close, as after a kill, and no holds written: the start must hold what the journal carries.
  const { calls, hold } = recorder(dir);
  const again = await open(dir, hold);
  t.same(calls, [{ threads: ['c-0/t-0', 'c-0/t-2', 'c-1/t-1'], canvasFiles: [] }]);
  t.same((await readdir(path.join(dir, 'workloads'))).filter((f) => f.endsWith('.json')).sort(), ['c-0.json', 'c-1.json']);
  await again.close();
});

t.test('a compaction past the threshold holds the records it folds first', async (t) => {
  const dir = await dataDir();
  const { calls, hold } = recorder(dir);
  const files = await open(dir, hold, 1);
  await files.realize(pinned('c-1', 't-1'));
  await files.realize(pinned('c-1', 't-2'));
  await files.close();
  t.ok(
    calls.some((c) => c.canvasFiles.length === 0 && c.threads.length === 1 && c.threads[0] === 'c-1/t-1' && c !== calls[0]),
    "a compaction beside the launches asked for the first record's pins before writing its canvas file",
  );
});

t.test("a launch's holds leave the catalogue's list as it was: only a change of records makes it anew", async (t) => {
  const store = await JsonFileStore.open({ dataDir: await dataDir() });
  t.teardown(() => store.close());
  const tool = {
    schemaVersion: 1 as const,
    id: 'web-search',
    name: 'Web search',
    provider: 'huabu',
    description: 'Searches.',
    instructions: 'Search.',
  };
  await store.putResource(tool);
  const before = await store.listResources();
  const digest = digestOf((await store.getResource('web-search'))!);
  await store.realizeWorkload(pinned('c-1', 't-1', digest));
  await store.holdRevisions('profile:p-1', [{ id: 'web-search', digest }]);
  t.equal(await store.listResources(), before, 'the very same list after a launch and a profile held a revision');
  await store.putResource({ ...tool, instructions: 'Search again.' });
  const after = await store.listResources();
  t.not(after, before, 'a replaced record makes a new list');
  t.equal(after[0]!.schemaVersion === 1 && after[0]!.instructions, 'Search again.');
});
