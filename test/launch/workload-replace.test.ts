// A workload replaced by a pin move, through the shared journal on a real file system: the replacement is
// replayed after a crash over the record it replaced (whether the canvas file was written before or not),
// and kept by the compactions that follow.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { JsonWorkloadFiles } from '../../src/storage/json-workload-files.js';
import { workloadRecord } from '../helpers/workload-record.js';

const dataDir = () => mkdtemp(path.join(tmpdir(), 'arr-wlreplace-'));
const open = (dir: string) => JsonWorkloadFiles.open(dir, nodeFileSystem);
const entry = { at: '2026-06-01T10:00:00.000Z', actor: 'owner', action: 'workload.repin', id: 'c-1/t-1', outcome: 'repinned' };
const moved = (cwd: string) => ({ ...workloadRecord('c-1', 't-1'), spec: { ...workloadRecord('c-1', 't-1').spec, cwd } });

t.test('a replacement in the journal survives a crash, over a record already in the canvas file', async (t) => {
  const dir = await dataDir();
  const first = await open(dir);
  await first.realize(workloadRecord('c-1', 't-1'));
  await first.close(); // the record is in the canvas file now
  const second = await open(dir);
  const replaced = await second.replace('c-1', 't-1', () => moved('/replaced'), entry);
  t.equal(replaced.spec.cwd, '/replaced');
  // No close, as after a kill: the replacement is only in the journal.
  const third = await open(dir);
  t.equal((await third.get('c-1', 't-1'))?.spec.cwd, '/replaced', 'the journal’s replacement wins over the canvas file');
  await third.close();
  const fourth = await open(dir);
  t.equal((await fourth.get('c-1', 't-1'))?.spec.cwd, '/replaced', 'and the compaction wrote it');
  await fourth.close();
});

t.test('a realization and its replacement both in the journal replay in order', async (t) => {
  const dir = await dataDir();
  const files = await open(dir);
  await files.realize(workloadRecord('c-1', 't-1'));
  await files.replace('c-1', 't-1', () => moved('/one'), entry);
  await files.replace('c-1', 't-1', () => moved('/two'), entry);
  const again = await open(dir);
  t.equal((await again.get('c-1', 't-1'))?.spec.cwd, '/two');
  await t.rejects(
    again.replace('c-1', 'never', () => moved('/x'), entry),
    { code: 'workload_not_found' },
  );
  await again.close();
});
