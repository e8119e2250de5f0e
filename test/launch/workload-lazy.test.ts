// Canvas files read on first access, on a real file system: the start lists names only
// (a bad file no longer stops it; a bad NAME still does), journal records of a canvas not read yet are
// served merged with its file and survive compaction (which reads the file first, never replacing it with
// the journal's records alone), a failed start compaction keeps the journal, and concurrent first accesses
// agree.
import t from 'tap';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { journalLine, readJournal } from '../../src/storage/journal.js';
import { JsonWorkloadFiles } from '../../src/storage/json-workload-files.js';
import { StoreFileError } from '../../src/storage/store-file-error.js';
import type { WorkloadRecord } from '../../src/schemas/workload.js';
import { workloadRecord } from '../helpers/workload-record.js';

const dataDir = () => mkdtemp(path.join(tmpdir(), 'arr-wllazy-'));
const workloadsDir = (dir: string) => path.join(dir, 'workloads');
const journalOf = (dir: string) => path.join(workloadsDir(dir), 'workloads.journal');
const fileOf = (dir: string, canvasId: string) => path.join(workloadsDir(dir), `${canvasId}.json`);
const threadsInFile = async (dir: string, canvasId: string) =>
  (JSON.parse(await readFile(fileOf(dir, canvasId), 'utf8')) as { state: { workloads: WorkloadRecord[] } }).state.workloads.map(
    (w) => w.threadId,
  );

const record = workloadRecord;
const canvasFile = (...records: WorkloadRecord[]) => JSON.stringify({ schemaVersion: 1, state: { workloads: records } }, null, 2) + '\n';

/** A DATA_DIR as a crash leaves it: canvas files as given, and journal lines not yet compacted into them. */
async function crashedDir(files: Record<string, string>, journal: WorkloadRecord[][]): Promise<string> {
  const dir = await dataDir();
  await mkdir(workloadsDir(dir), { recursive: true });
  for (const [canvasId, text] of Object.entries(files)) await writeFile(fileOf(dir, canvasId), text);
  await writeFile(journalOf(dir), journal.map((batch) => journalLine(batch)).join(''));
  return dir;
}

t.test('the start reads no canvas file: a bad one does not stop it, a bad name still does', async (t) => {
  const dir = await crashedDir({ 'c-good': canvasFile(record('c-good', 't-1')), 'c-bad': '{"schemaVersion": 1, "state": {' }, []);
  const reports: string[] = [];
  const files = await JsonWorkloadFiles.open(dir, nodeFileSystem, undefined, undefined, (err, canvasId) =>
    reports.push(`${canvasId}: ${err.message}`),
  );
  t.same(files.canvasIds(), ['c-bad', 'c-good'], 'every canvas is known by its file name');
  t.same(reports, [], 'nothing read, nothing reported at start');
  t.same(
    (await files.list('c-good')).map((w) => w.threadId),
    ['t-1'],
    'read on first access',
  );
  for (let i = 0; i < 3; i++) await t.rejects(files.get('c-bad', 't-1'), { code: 'storage_unavailable', details: { canvasId: 'c-bad' } });
  await t.rejects(files.realize(record('c-bad', 't-2')), { code: 'storage_unavailable' }, 'a launch there is refused');
  t.equal(reports.length, 1, 'reported once for repeated requests');
  t.match(reports[0], /c-bad: .*c-bad\.json: does not parse as JSON/);
  t.equal((await readJournal(journalOf(dir))).bytes, 0, 'the refused launch wrote nothing');
  t.equal(await readFile(fileOf(dir, 'c-bad'), 'utf8'), '{"schemaVersion": 1, "state": {', 'left as it is');
  await files.close();

  const badName = await crashedDir({ 'Not A Canvas!': canvasFile() }, []);
  await t.rejects(JsonWorkloadFiles.open(badName, nodeFileSystem), StoreFileError, 'a file not named after a canvas ID stops the start');
});

t.test(
  'after a crash, journal records of a canvas not read yet are served with its file and compacted into it, never over it',
  async (t) => {
    // c-1's file holds t-1; the crash left t-2 (c-1) and t-1 (c-2, no file yet) in the journal.
    const dir = await crashedDir({ 'c-1': canvasFile(record('c-1', 't-1')) }, [[record('c-1', 't-2')], [record('c-2', 't-1')]]);
    const files = await JsonWorkloadFiles.open(dir, nodeFileSystem);
    t.same(await threadsInFile(dir, 'c-1'), ['t-1', 't-2'], 'the start compaction read the file before rewriting it');
    t.same(await threadsInFile(dir, 'c-2'), ['t-1']);
    t.same(
      (await files.list('c-1')).map((w) => w.threadId),
      ['t-1', 't-2'],
    );
    t.equal((await files.realize(record('c-1', 't-1', '/elsewhere'))).created, false, 'the file record is realized already');
    t.equal((await files.get('c-1', 't-1'))?.spec.cwd, '/home/me/site');
    await files.close();
  },
);

t.test(
  'a canvas file that cannot be read at start keeps the journal; its records wait, are served once fixed, and are folded in',
  async (t) => {
    const dir = await crashedDir({ 'c-1': canvasFile(record('c-1', 't-1')), 'c-bad': '{"truncated' }, [
      [record('c-1', 't-2'), record('c-bad', 't-9')],
      [record('c-3', 't-1')],
    ]);
    const journalBefore = (await readJournal(journalOf(dir))).completeBytes;
    // A torn tail after the complete lines: dropped as always.
    await writeFile(journalOf(dir), (await readFile(journalOf(dir), 'utf8')) + '{"changes":[{"drive');
    const files = await JsonWorkloadFiles.open(dir, nodeFileSystem);
    const kept = await readJournal(journalOf(dir));
    t.equal(kept.bytes, journalBefore, 'the journal is kept, its complete lines only');
    t.same(
      kept.batches
        .flat()
        .map((w) => (w as WorkloadRecord).threadId)
        .sort(),
      ['t-1', 't-2', 't-9'],
    );
    t.same(
      (await files.list('c-1')).map((w) => w.threadId),
      ['t-1', 't-2'],
      'a readable canvas is served whole',
    );
    t.same(
      (await files.list('c-3')).map((w) => w.threadId),
      ['t-1'],
    );
    await t.rejects(files.list('c-bad'), { code: 'storage_unavailable' });
    await files.realize(record('c-3', 't-2'));
    t.equal((await readJournal(journalOf(dir))).batches.length, 3, 'launches append after the kept lines');

    await writeFile(fileOf(dir, 'c-bad'), canvasFile(record('c-bad', 't-8')));
    t.same(
      (await files.list('c-bad')).map((w) => w.threadId),
      ['t-8', 't-9'],
      'once fixed: its file and its journal records',
    );
    await files.close();
    t.same(await threadsInFile(dir, 'c-bad'), ['t-8', 't-9'], 'folded in at close, the file read first');
    t.same(await threadsInFile(dir, 'c-1'), ['t-1', 't-2']);
    t.same(await threadsInFile(dir, 'c-3'), ['t-1', 't-2']);
    t.equal((await readJournal(journalOf(dir))).bytes, 0);
    const again = await JsonWorkloadFiles.open(dir, nodeFileSystem);
    t.equal((await Promise.all(again.canvasIds().map((c) => again.list(c)))).flat().length, 6, 'a restart sees all six');
    await again.close();
  },
);

t.test('concurrent first accesses of a canvas agree: one read, the stored record wins, one new record per thread', async (t) => {
  const stored = record('c-1', 't-1');
  const dir = await crashedDir({ 'c-1': canvasFile(stored) }, []);
  const files = await JsonWorkloadFiles.open(dir, nodeFileSystem);
  const results = await Promise.all([
    ...Array.from({ length: 10 }, (_, i) => files.realize(record('c-1', 't-1', `/try-${i}`))),
    ...Array.from({ length: 10 }, (_, i) => files.realize(record('c-1', 't-new', `/new-${i}`))),
    files.list('c-1'),
    files.get('c-1', 't-1'),
  ]);
  const launches = results.slice(0, 20) as { workload: WorkloadRecord; created: boolean }[];
  t.ok(
    launches.slice(0, 10).every((r) => !r.created && r.workload.spec.cwd === '/home/me/site'),
    'the stored thread is never realized again',
  );
  t.equal(launches.slice(10).filter((r) => r.created).length, 1, 'one winner for the new thread');
  const winner = launches.slice(10).find((r) => r.created)!.workload;
  t.ok(
    launches.slice(10).every((r) => r.workload === winner),
    'every loser gets the winner',
  );
  t.same((results[21] as WorkloadRecord | undefined)?.spec.cwd, '/home/me/site');
  await files.close();
  t.same(await threadsInFile(dir, 'c-1'), ['t-1', 't-new'], 'the file keeps the stored record and gains one');
});
