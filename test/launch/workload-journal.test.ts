// Workloads through the shared journal on a real file system: one journal line per batch across canvases,
// the canvas files brought up to date by compaction (at start, at close, past the size threshold), replay
// after a crash (a torn last line dropped, anything else refused), and exactly one record per thread.
import t from 'tap';
import { appendFile, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { readJournal } from '../../src/storage/journal.js';
import { JsonWorkloadFiles } from '../../src/storage/json-workload-files.js';
import { StoreFileError } from '../../src/storage/store-file-error.js';
import type { WorkloadRecord } from '../../src/schemas/workload.js';
import { workloadRecord } from '../helpers/workload-record.js';
import { until } from '../helpers/wait.js';

const dataDir = () => mkdtemp(path.join(tmpdir(), 'arr-wljournal-'));
const journalOf = (dir: string) => path.join(dir, 'workloads', 'workloads.journal');
const open = (dir: string, compactAtBytes?: number) => JsonWorkloadFiles.open(dir, nodeFileSystem, undefined, compactAtBytes);
const canvasFile = async (dir: string, canvasId: string) =>
  JSON.parse(await readFile(path.join(dir, 'workloads', `${canvasId}.json`), 'utf8')) as {
    schemaVersion: number;
    state: { workloads: WorkloadRecord[] };
  };

const record = workloadRecord;

t.test('launches of several canvases share journal lines; canvas files are written at close', async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  const first = await files.realize(record('c-1', 't-1'));
  t.equal(first.created, true);
  await Promise.all([files.realize(record('c-1', 't-2')), files.realize(record('c-2', 't-1')), files.realize(record('c-3', 't-1'))]);
  const journal = await readJournal(journalOf(dir));
  t.same(
    journal.batches.map((b) => b.length),
    [1, 3],
    'the first went alone; the three queued behind it shared one line',
  );
  t.same((await readdir(path.join(dir, 'workloads'))).sort(), ['workloads.journal'], 'no canvas file before compaction');
  t.same(
    (await files.list('c-1')).map((w) => w.threadId),
    ['t-1', 't-2'],
    'reads are served from memory',
  );
  t.same(files.canvasIds(), ['c-1', 'c-2', 'c-3']);
  await files.close();
  t.same(
    (await canvasFile(dir, 'c-1')).state.workloads,
    [record('c-1', 't-1'), record('c-1', 't-2')],
    'sorted by thread, the format as before',
  );
  t.same((await canvasFile(dir, 'c-2')).state.workloads, [record('c-2', 't-1')]);
  t.equal((await readJournal(journalOf(dir))).bytes, 0, 'journal emptied at close');
  await t.rejects(files.realize(record('c-1', 't-9')), { code: 'storage_unavailable' }, 'refused after close');
});

t.test('a crash leaves the records in the journal: start replays them into the canvas files', async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  for (let i = 0; i < 5; i++) await files.realize(record(`c-${i % 2}`, `t-${i}`));
  // No close, as after a kill. The journal is not locked: a second open reads it as a restart would.
  const again = await open(dir);
  t.same(
    (await again.list('c-0')).map((w) => w.threadId),
    ['t-0', 't-2', 't-4'],
  );
  t.same(
    (await canvasFile(dir, 'c-1')).state.workloads.map((w) => w.threadId),
    ['t-1', 't-3'],
    'compacted at start',
  );
  t.equal((await readJournal(journalOf(dir))).bytes, 0);
  t.equal((await again.realize(record('c-0', 't-0', '/elsewhere'))).created, false, 'a replayed thread is realized already');
  await again.close();
  const third = await open(dir);
  t.same((await third.get('c-0', 't-0'))?.spec.cwd, '/home/me/site', 'the first realization stays');
  await third.close();
});

t.test('a torn last journal line is dropped; any other bad line stops the start, leaving files as they are', async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  await files.realize(record('c-1', 't-1'));
  await appendFile(journalOf(dir), '{"changes":[{"driverSchemaVe');
  const again = await open(dir);
  t.same(again.canvasIds(), ['c-1']);
  t.same(
    (await again.list('c-1')).map((w) => w.threadId),
    ['t-1'],
    'the torn line was never acknowledged',
  );
  await again.close();

  const bad = await dataDir();
  const one = await open(bad);
  await one.realize(record('c-1', 't-1'));
  const good = await readFile(journalOf(bad), 'utf8');
  for (const [what, text] of [
    ['a malformed line before the last', `not json\n${good}`],
    ['an invalid record', `${JSON.stringify({ changes: [{ ...record('c-2', 't-1'), driverSchemaVersion: 9 }] })}\n`],
    ['no changes array', '{"put":1}\n'],
  ] as const) {
    await writeFile(journalOf(bad), text);
    await t.rejects(open(bad), StoreFileError, what);
    t.equal(await readFile(journalOf(bad), 'utf8'), text, `${what}: the journal is left as it is`);
    t.same((await readdir(path.join(bad, 'workloads'))).sort(), ['workloads.journal'], `${what}: no canvas file written`);
  }
});

t.test('the journal is compacted into the touched canvas files once it passes the threshold', async (t) => {
  const dir = await dataDir();
  const files = await open(dir, 4096);
  for (let i = 0; i < 12; i++) await files.realize(record(`c-${i % 3}`, `t-${i}`));
  // The compaction runs beside the launches (the last ones did not wait for it): let it finish.
  await until('the background compaction', async () => (await readJournal(journalOf(dir))).bytes < 4096);
  const journal = await readJournal(journalOf(dir));
  t.ok(journal.bytes < 4096, `the journal was emptied on the way (${journal.bytes} bytes now)`);
  const onDisk = (
    await Promise.all(['c-0', 'c-1', 'c-2'].map((c) => canvasFile(dir, c).catch(() => ({ state: { workloads: [] } }))))
  ).flatMap((d) => d.state.workloads);
  t.equal(onDisk.length + journal.batches.flat().length, 12, 'every record is in a canvas file or in the journal');
  t.ok(onDisk.length > 0, 'compaction wrote canvas files');
  await files.close();
  const again = await open(dir);
  t.equal((await Promise.all(again.canvasIds().map((c) => again.list(c)))).flat().length, 12, 'a restart sees all twelve');
  await again.close();
});

t.test('concurrent first launches of one thread (and others across canvases) keep exactly one record per thread', async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => files.realize(record(i % 3 === 0 ? 'c-race' : `c-${i}`, i % 3 === 0 ? 'race' : 't', `/dir-${i}`))),
  );
  const race = results.filter((r) => r.workload.canvasId === 'c-race');
  t.equal(race.filter((r) => r.created).length, 1, 'one winner');
  const winner = race.find((r) => r.created)!.workload;
  for (const r of race) t.equal(r.workload, winner, 'every loser gets the winner');
  t.equal(results.filter((r) => r.created).length, 21, 'the other canvases each realized their thread');
  t.equal(
    (await readJournal(journalOf(dir))).batches.flat().filter((w) => (w as WorkloadRecord).canvasId === 'c-race').length,
    1,
    'one journaled record',
  );
  await files.close();
  t.same((await canvasFile(dir, 'c-race')).state.workloads, [winner]);
});

t.test('a failed compaction keeps every record in the journal; the next start folds them in', async (t) => {
  const dir = await dataDir();
  let failRenames = true;
  const failing = {
    ...nodeFileSystem,
    rename: (from: string, to: string) =>
      failRenames ? Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' })) : nodeFileSystem.rename(from, to),
  };
  const files = await JsonWorkloadFiles.open(dir, failing);
  for (let i = 0; i < 40; i++) await files.realize(record(`c-${i % 20}`, `t-${i}`));
  await files.close();
  t.same((await readdir(path.join(dir, 'workloads'))).sort(), ['workloads.journal'], 'no canvas file, no temp file left');
  t.equal((await readJournal(journalOf(dir))).batches.flat().length, 40, 'the journal still holds every record');
  failRenames = false;
  const again = await open(dir);
  t.equal((await Promise.all(again.canvasIds().map((c) => again.list(c)))).flat().length, 40);
  t.equal((await readdir(path.join(dir, 'workloads'))).filter((n) => n.endsWith('.json')).length, 20, 'folded in at start');
  await again.close();
});
