// A launch's audit entry rides on its workloads journal line (one fdatasync for the realization and its
// entry); the audit log takes it after, without an fdatasync of its own. What a crash took from the log
// before that write reached the disk is appended again from the journal at the next start.
import t from 'tap';
import { appendFile, cp, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { AppendLog, rotatedPath } from '../../src/storage/append-log.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { JsonWorkloadFiles } from '../../src/storage/json-workload-files.js';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { tempDataDir } from '../helpers/build.js';
import { workload } from '../helpers/storage-contract.js';

const lines = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
const entry = (n: number) => ({
  at: `2026-01-01T00:00:${String(n).padStart(2, '0')}.000Z`,
  actor: 'owner',
  action: 'x',
  id: `e-${n}`,
  outcome: 'ok',
});
const text = (n: number) => JSON.stringify(entry(n));

t.test('recoverCarried appends, durably and in order, the carried entries after the last one the log holds', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  const log = await AppendLog.open(file);
  await log.append([entry(1), { other: 'a' }, entry(2), { other: 'b' }]);
  t.equal(await log.recoverCarried([entry(1), entry(2), entry(3), entry(4)]), 2, 'the two after e-2');
  t.same(await lines(file), [text(1), '{"other":"a"}', text(2), '{"other":"b"}', text(3), text(4)]);
  t.equal(await log.recoverCarried([entry(2), entry(3), entry(4)]), 0, 'all there: nothing appended');
  t.equal(await log.recoverCarried([]), 0);
  t.equal(await log.recoverCarried([entry(7), entry(8)]), 2, 'none there: all appended');
  t.same((await lines(file)).slice(-2), [text(7), text(8)]);
  await log.close();
});

t.test('recoverCarried reads back across chunks, and into the rotated files', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  // The entry sought sits before 300 KB of other lines (several of the reader's 64 KiB chunks).
  const filler = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ filler: i, pad: 'p'.repeat(80) }) + '\n').join('');
  await writeFile(rotatedPath(file, 2), `${text(1)}\n`);
  await writeFile(rotatedPath(file, 1), `${text(2)}\n${filler}`);
  await writeFile(file, filler);
  const log = await AppendLog.open(file);
  t.equal(await log.recoverCarried([entry(1), entry(2), entry(3)]), 1, 'found e-2 in audit.1.jsonl, so only e-3 was missing');
  t.equal((await lines(file)).at(-1), text(3));
  t.equal(await log.recoverCarried([entry(1), entry(3)]), 0);
  await log.close();
  // A line cut by a crash (no final newline) is ended at open and never matches an entry.
  await appendFile(file, text(4).slice(0, 20));
  const again = await AppendLog.open(file);
  t.equal(await again.recoverCarried([entry(3), entry(4)]), 1);
  t.equal((await lines(file)).at(-1), text(4));
  await again.close();
});

t.test('carried appends keep their order with durable ones; sync and close write them', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  const log = await AppendLog.open(file);
  log.appendCarried([entry(1), entry(2)]);
  await log.append([entry(3)]);
  log.appendCarried([entry(4)]);
  await log.sync();
  t.same(await lines(file), [text(1), text(2), text(3), text(4)]);
  log.appendCarried([entry(5)]);
  await log.close();
  t.same((await lines(file)).at(-1), text(5), 'close writes what is queued');
});

t.test('launch entries the audit log lost in a crash come back from the journal at start, once each, in order', async (t) => {
  const dataDir = await tempDataDir();
  const store = await JsonFileStore.open({ dataDir });
  const intent = (n: number) => ({ at: `2026-01-02T00:00:0${n}.000Z`, actor: 'owner', action: 'workload.launch' });
  for (let n = 1; n <= 4; n++) await store.realizeWorkload(workload('canvas-1', `thread-${n}`), intent(n));
  await store.appendAudit([]);
  await store.appendAudit([{ at: '2026-01-02T00:00:09.000Z', actor: 'owner', action: 'machine.revoke', id: 'm-1', outcome: 'revoked' }]);
  const journal = await lines(path.join(dataDir, 'workloads', 'workloads.journal'));
  t.same(
    journal.flatMap((line) => (JSON.parse(line) as { audit?: { id: string }[] }).audit?.map((e) => e.id) ?? []),
    [1, 2, 3, 4].map((n) => `canvas-1/thread-${n}`),
    'each journal line carries its launch entry',
  );
  const expected = [1, 2, 3, 4].map((n) => JSON.stringify({ ...intent(n), id: `canvas-1/thread-${n}`, outcome: 'realized' }));
  t.same((await lines(path.join(dataDir, 'audit.jsonl'))).slice(0, 4), expected, 'the audit log took them in order');

  // The disk as a crash leaves it (the store is still open): the audit log lost its last two launch entries.
  const crashed = await tempDataDir();
  await cp(dataDir, crashed, { recursive: true, filter: (src) => !src.includes('.control') });
  const auditFile = path.join(crashed, 'audit.jsonl');
  const kept = (await lines(auditFile)).filter((line) => !line.includes('thread-3') && !line.includes('thread-4'));
  await writeFile(auditFile, kept.map((l) => l + '\n').join(''));
  await store.close();

  const reopened = await JsonFileStore.open({ dataDir: crashed });
  t.same(
    await lines(auditFile),
    [...expected.slice(0, 2), kept[2], ...expected.slice(2)],
    'the two lost entries appended after what the log held, none twice',
  );
  t.equal((await reopened.getWorkload('canvas-1', 'thread-4'))?.threadId, 'thread-4');
  await reopened.close();
  const closed = await tempDataDir();
  await cp(crashed, closed, { recursive: true, filter: (src) => !src.includes('.control') });
  await (await JsonFileStore.open({ dataDir: closed })).close();
  t.equal((await lines(path.join(closed, 'audit.jsonl'))).length, 5, 'a start after a clean close appends nothing');
});

/** Wraps the audit log's handles: counts fdatasyncs, and fails the next `failWrites` writes. */
function spy() {
  const seen = { datasyncs: 0, failWrites: 0 };
  const wrap = (handle: FileHandle): FileHandle =>
    new Proxy(handle, {
      get(target, key) {
        if (key === 'datasync') return () => (seen.datasyncs++, target.datasync());
        if (key === 'write' && seen.failWrites > 0) return () => (seen.failWrites--, Promise.reject(new Error('EIO (test)')));
        const value = Reflect.get(target, key) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  return { seen, wrap };
}

t.test('carried appends cost no fdatasync; sync flushes them once; a durable append covers them', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  const { seen, wrap } = spy();
  const log = await AppendLog.open(file, undefined, wrap);
  log.appendCarried([entry(1)]);
  log.appendCarried([entry(2)]);
  await log.sync();
  t.equal(seen.datasyncs, 1, 'two carried appends, one sync: one fdatasync');
  await log.sync();
  t.equal(seen.datasyncs, 1, 'nothing new: a sync writes and flushes nothing');
  log.appendCarried([entry(3)]);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(seen.datasyncs, 1, 'a carried append alone is written without a flush');
  t.equal((await lines(file)).at(-1), text(3), 'but it is written');
  await log.append([entry(4)]);
  t.equal(seen.datasyncs, 2, 'a durable append flushes');
  await log.sync();
  t.equal(seen.datasyncs, 2, 'and covered the carried one before it');
  log.appendCarried([entry(5)]);
  await new Promise((r) => setTimeout(r, 20));
  await log.close();
  t.equal(seen.datasyncs, 3, 'close flushes what is unsynced');
  t.same(await lines(file), [1, 2, 3, 4, 5].map(text));
});

t.test('a carried write that fails is written first in the next batch; a rotation flushes carried lines before moving them', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  const { seen, wrap } = spy();
  const log = await AppendLog.open(file, { maxBytes: 350, maxFiles: 3 }, wrap);
  seen.failWrites = 1;
  log.appendCarried([entry(1)]);
  await new Promise((r) => setTimeout(r, 20));
  t.same(await lines(file), [], 'the write failed');
  await log.append([entry(2)]);
  t.same(await lines(file), [text(1), text(2)], 'the failed carried line went first, in order');
  const flushed = seen.datasyncs;
  log.appendCarried([entry(3)]);
  await new Promise((r) => setTimeout(r, 20));
  t.equal(seen.datasyncs, flushed, 'entry 3 written, not flushed');
  await log.append([entry(4), entry(5)]); // past 350 bytes: rotates first
  t.equal(seen.datasyncs, flushed + 2, 'the rotation flushed the active file before renaming it, then the batch');
  t.same(await lines(rotatedPath(file, 1)), [text(1), text(2), text(3)]);
  t.same(await lines(file), [text(4), text(5)]);
  await log.close();
});

/** Realizes threads 0..count-1 of a canvas, each with its entry, one after the other. */
async function launchAll(files: JsonWorkloadFiles, canvasId: string, count: number): Promise<void> {
  for (let n = 0; n < count; n++) {
    const id = `${canvasId}/thread-${n}`;
    await files.realize(workload(canvasId, `thread-${n}`), { at: 'a', actor: 'owner', action: 'workload.launch', id, outcome: 'realized' });
  }
}

t.test('the journal lets go of a line only after the audit log has synced the entries it carries', async (t) => {
  const dataDir = await tempDataDir();
  const journal = path.join(dataDir, 'workloads', 'workloads.journal');
  const carried: string[] = [];
  let synced = 0;
  const missing: string[] = [];
  const audit = {
    carry: (entries: readonly unknown[]) => carried.push(...entries.map((e) => (e as { id: string }).id)),
    async sync() {
      // A sync covers the entries handed over before it was called (those handed over while it reads are
      // the next one's): each must still be in the journal now.
      const upTo = carried.length;
      const text = await readFile(journal, 'utf8').catch(() => '');
      for (const id of carried.slice(synced, upTo)) if (!text.includes(`"id":"${id}"`)) missing.push(id);
      synced = upTo;
    },
    recover: () => Promise.resolve(0),
  };
  // A tiny threshold: compactions beside the launches, then one at close.
  const files = await JsonWorkloadFiles.open(dataDir, nodeFileSystem, undefined, 2_000, undefined, undefined, audit);
  await launchAll(files, 'canvas-1', 30);
  await files.close();
  t.equal(carried.length, 30, 'each launch handed its entry over');
  t.equal(synced, 30, 'every one was synced before its line left the journal');
  t.same(missing, [], 'no line left before its entry was synced');
  t.equal((await readFile(journal, 'utf8')).length, 0, 'the journal was emptied at close');

  // No compaction beside the launches: only the one at close folds the journal, and syncs first.
  const before = carried.length;
  const quiet = await JsonWorkloadFiles.open(dataDir, nodeFileSystem, undefined, 1024 * 1024, undefined, undefined, audit);
  await launchAll(quiet, 'canvas-2', 3);
  t.equal(synced, before, 'nothing synced while the journal keeps every line');
  await quiet.close();
  t.equal(synced, before + 3, 'the close synced the three entries before emptying the journal');
  t.same(missing, []);
});
