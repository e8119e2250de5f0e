// The JSON store's change log (src/storage/event-log.ts) on real files: a change whose write fails keeps no
// event, before or after a restart; a batch a crash left undecided is kept when the records it names are
// stored as it left them and dropped otherwise; a torn last line is ignored; retention by age.
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../src/errors.js';
import { nodeFileSystem, type FileSystemSeam } from '../../src/storage/durable-file.js';
import { EVENTS_FILE, recordCheck } from '../../src/storage/event-log.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';

const machine = (machineId: string) => ({ machineId, tokenDigest: 'a'.repeat(64), enrolledAt: '2026-01-01T00:00:00.000Z' });

t.test('a change whose durable write fails is answered 503 and keeps no event, now or after a restart', async (t) => {
  const dataDir = await tempDataDir();
  let failRenames = false;
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async rename(from, to) {
      if (failRenames && to.endsWith('machines.json')) throw Object.assign(new Error('injected'), { code: 'EIO' });
      return nodeFileSystem.rename(from, to);
    },
  };
  const store = await JsonFileStore.open({ dataDir, fs });
  await store.enrollMachine(machine('m-ok'));
  failRenames = true;
  const err = await store.enrollMachine(machine('m-lost')).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.code === 'storage_unavailable', 'the write failed');
  failRenames = false;
  await store.enrollMachine(machine('m-after'));
  const ids = (await store.events.read(undefined, 100)).events.map((e) => e.subject.id);
  t.same(ids, ['m-ok', 'm-after'], 'no event was published for the failed change');
  await store.close();
  const again = await JsonFileStore.open({ dataDir });
  t.teardown(() => again.close());
  t.same(
    (await again.events.read(undefined, 100)).events.map((e) => e.subject.id),
    ['m-ok', 'm-after'],
    'nor kept for after a restart',
  );
  t.same(
    (await again.listMachines()).map((m) => m.machineId),
    ['m-after', 'm-ok'],
  );
});

t.test('at start, an undecided batch is kept when its records are stored as it left them, dropped otherwise', async (t) => {
  const dataDir = await tempDataDir();
  const store = await JsonFileStore.open({ dataDir });
  await store.enrollMachine(machine('m-1'));
  await store.close();
  const stored = machine('m-1');
  const file = path.join(dataDir, EVENTS_FILE);
  const at = new Date().toISOString();
  const line = (o: unknown) => JSON.stringify(o) + '\n';
  // What a crash between the two phases leaves: batches without their markers, and a torn last line.
  await writeFile(
    file,
    (await readFile(file, 'utf8')) +
      line({
        batch: [{ id: '2', type: 'machine.enrolled', at, subject: { kind: 'machine', id: 'm-1' } }],
        checks: { 'machine\u0000m-1': recordCheck(stored) },
      }) +
      line({
        batch: [{ id: '3', type: 'machine.rotated', at, subject: { kind: 'machine', id: 'm-1' } }],
        checks: { 'machine\u0000m-1': recordCheck({ ...stored, tokenDigest: 'b'.repeat(64) }) },
      }) +
      '{"batch":[{"id":"4","ty',
  );
  const again = await JsonFileStore.open({ dataDir });
  t.teardown(() => again.close());
  const { events } = await again.events.read(undefined, 100);
  t.same(
    events.map((e) => `${e.id} ${e.type}`),
    ['1 machine.enrolled', '2 machine.enrolled'],
    'the batch whose record is not stored is dropped; the one that is, kept; the torn line ignored',
  );
  await again.rotateMachineToken('m-1', 'c'.repeat(64));
  const next = (await again.events.read('2', 10)).events;
  t.same(
    next.map((e) => e.type),
    ['machine.rotated'],
  );
  t.ok(Number(next[0]!.id) > 3, 'the number of a dropped batch is never used again');
});

t.test('events older than EVENTS_RETAIN_DAYS are dropped; their cursors are 410', async (t) => {
  const dataDir = await tempDataDir();
  let now = new Date('2026-01-01T00:00:00.000Z');
  const store = await JsonFileStore.open({ dataDir, now: () => now, eventRetention: { retainCount: 1000, retainDays: 2 } });
  t.teardown(() => store.close());
  await store.enrollMachine(machine('old'));
  now = new Date('2026-01-04T00:00:00.000Z');
  await store.enrollMachine(machine('new'));
  const { events } = await store.events.read(undefined, 10);
  t.same(
    events.map((e) => e.subject.id),
    ['new'],
  );
  const err = await store.events.read('0', 10).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.code === 'cursor_expired');
});

t.test('events of no stored change are durable on their own: kept after a restart, and after a crash before their marker', async (t) => {
  const dataDir = await tempDataDir();
  const store = await JsonFileStore.open({ dataDir });
  await store.recordEvents([{ type: 'machine.connected', subject: { kind: 'machine', id: 'm-1' } }]);
  await store.recordEvents([{ type: 'job.succeeded', subject: { kind: 'job', id: 'j-1', provider: 'm-1' } }]);
  await store.close();
  const file = path.join(dataDir, EVENTS_FILE);
  // A crash after the batch's fdatasync and before its marker: the batch is all there is (no checks to decide by).
  const at = new Date().toISOString();
  await writeFile(
    file,
    (await readFile(file, 'utf8')) +
      JSON.stringify({ batch: [{ id: '3', type: 'machine.disconnected', at, subject: { kind: 'machine', id: 'm-1' } }], checks: {} }) +
      '\n',
  );
  const again = await JsonFileStore.open({ dataDir });
  t.teardown(() => again.close());
  const { events } = await again.events.read(undefined, 100);
  t.same(
    events.map((e) => `${e.id} ${e.type} ${e.subject.id}`),
    ['1 machine.connected m-1', '2 job.succeeded j-1', '3 machine.disconnected m-1'],
  );
  await again.recordEvents([{ type: 'machine.connected', subject: { kind: 'machine', id: 'm-1' } }]);
  t.same(
    (await again.events.read('3', 10)).events.map((e) => e.id),
    ['4'],
    'numbering goes on after them',
  );
});
