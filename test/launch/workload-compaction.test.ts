// Workload compaction beside the launches, on a real file system: a launch is answered
// while a compaction is held mid-write, a canvas touched meanwhile stays due for the next compaction, close
// waits for a running compaction, failures keep the journal whole, and a kill at every step of a
// compaction (the canvas writes, the journal's swap for its kept tail) loses no acknowledged launch.
import t from 'tap';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import type * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nodeFileSystem, type FileSystemSeam } from '../../src/storage/durable-file.js';
import { readJournal } from '../../src/storage/journal.js';
import { JsonWorkloadFiles } from '../../src/storage/json-workload-files.js';
import type { WorkloadRecord } from '../../src/schemas/workload.js';
import { workloadRecord } from '../helpers/workload-record.js';
import { until } from '../helpers/wait.js';

const dataDir = () => mkdtemp(path.join(tmpdir(), 'arr-wlcompact-'));
const journalOf = (dir: string) => path.join(dir, 'workloads', 'workloads.journal');
const canvasFile = async (dir: string, canvasId: string) =>
  JSON.parse(await readFile(path.join(dir, 'workloads', `${canvasId}.json`), 'utf8')) as { state: { workloads: WorkloadRecord[] } };
const onDisk = async (dir: string, canvasId: string) =>
  (await canvasFile(dir, canvasId).catch(() => ({ state: { workloads: [] } }))).state.workloads;
const tick = (ms: number) => new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms));
/** Small enough that a handful of launches (~400 bytes of journal each) starts a compaction. */
const COMPACT_AT = 2048;

const record = workloadRecord;

/** A seam that holds every write of a canvas file (its temp file's open) until released. */
function gatedCanvasWrites() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const held = new Promise<void>((r) => (entered = r));
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async open(file, flags, mode) {
      if (/\/c-[^/]*\.json\..*\.tmp$/.test(file)) {
        entered();
        await released;
      }
      return nodeFileSystem.open(file, flags, mode);
    },
  };
  return { fs, held, release };
}

/** Launches `count` new threads one after another (canvas `c-<i mod canvases>`), returning the records. */
async function launchSeries(files: JsonWorkloadFiles, from: number, count: number, canvases = 3): Promise<WorkloadRecord[]> {
  const out: WorkloadRecord[] = [];
  for (let i = from; i < from + count; i++) {
    const r = record(`c-${i % canvases}`, `t-${i}`);
    if (!(await files.realize(r)).created) throw new Error(`${r.threadId} was realized already`);
    out.push(r);
  }
  return out;
}

/** Opens the files on a gated seam and launches until a compaction starts and is held on its first canvas file. */
async function heldCompaction(dir: string) {
  const gate = gatedCanvasWrites();
  const files = await JsonWorkloadFiles.open(dir, gate.fs, undefined, COMPACT_AT);
  let started = false;
  void gate.held.then(() => (started = true));
  for (let i = 0; !started && i < 50; i++) await launchSeries(files, i, 1);
  await Promise.race([gate.held, tick(5_000)]);
  return { files, gate, started };
}

t.test('a launch is answered while a compaction is held writing a canvas file', async (t) => {
  const dir = await dataDir();
  const gate = gatedCanvasWrites();
  const files = await JsonWorkloadFiles.open(dir, gate.fs, undefined, COMPACT_AT);
  let i = 0;
  const launched: WorkloadRecord[] = [];
  // Launch until the compaction starts (and blocks on its first canvas file).
  let started = false;
  void gate.held.then(() => (started = true));
  while (!started && i < 50) launched.push(...(await launchSeries(files, i++, 1)));
  await Promise.race([gate.held, tick(5_000)]);
  t.ok(started, `a compaction started after ${i} launches and is held`);

  // Today's code made the next batch wait for the compaction: these would time out.
  const during = [record('c-0', 'during-0'), record('c-new', 'during-1')];
  const answers = await Promise.race([Promise.all(during.map((r) => files.realize(r))), tick(3_000)]);
  t.not(answers, 'timeout', 'launches are answered while the compaction is held');
  if (answers !== 'timeout')
    t.same(
      answers.map((a) => a.created),
      [true, true],
    );
  const journaled = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
  for (const r of [...launched, ...during])
    t.ok(
      journaled.some((w) => w.threadId === r.threadId),
      `${r.threadId} is durable in the journal`,
    );
  t.same(
    (await files.list('c-new')).map((w) => w.threadId),
    ['during-1'],
    'and served',
  );

  gate.release();
  await until('the journal swapped for its tail', async () => (await readJournal(journalOf(dir))).bytes < COMPACT_AT);
  const tail = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
  t.same(
    tail.map((w) => w.threadId).sort(),
    during.map((r) => r.threadId).sort(),
    'the kept tail holds exactly the launches made during the compaction',
  );
  t.same((await onDisk(dir, 'c-0')).map((w) => w.threadId).includes('during-0'), false, 'which the canvas file does not hold yet');
  t.notOk((await readdir(path.join(dir, 'workloads'))).includes('c-new.json'), 'nor a file for the new canvas');
  await files.close();
  t.ok(
    (await onDisk(dir, 'c-0')).some((w) => w.threadId === 'during-0'),
    'close folds the tail in',
  );
  t.same(
    (await onDisk(dir, 'c-new')).map((w) => w.threadId),
    ['during-1'],
  );
  t.equal((await readJournal(journalOf(dir))).bytes, 0);
});

t.test('a canvas touched during a compaction stays due: the next compaction writes it before the journal drops it', async (t) => {
  const dir = await dataDir();
  const gate = gatedCanvasWrites();
  const files = await JsonWorkloadFiles.open(dir, gate.fs, undefined, COMPACT_AT);
  const all: WorkloadRecord[] = [];
  let started = false;
  void gate.held.then(() => (started = true));
  for (let i = 0; !started && i < 50; i++) all.push(...(await launchSeries(files, i, 1)));
  // c-0, c-1 and c-2 are being compacted; a new thread of c-1 lands meanwhile.
  const late = record('c-1', 'late');
  await files.realize(late);
  all.push(late);
  gate.release();
  await until('first compaction', async () => (await readJournal(journalOf(dir))).bytes < COMPACT_AT);
  // A second compaction of other canvases only (c-1 gets nothing new): it must still write c-1.
  for (let i = 100; i < 140 && !(await onDisk(dir, 'c-1')).some((w) => w.threadId === 'late'); i++) {
    const r = record(`d-${i % 2}`, `t-${i}`);
    await files.realize(r);
    all.push(r);
  }
  await until('c-1 written by the next compaction', async () => (await onDisk(dir, 'c-1')).some((w) => w.threadId === 'late'));
  // Its swap drops `late` from the journal (it came before the second fold point): only the file holds it then.
  const journalHasLate = async () =>
    ((await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[]).some((w) => w.threadId === 'late');
  await until('second compaction swapped the journal', async () => !(await journalHasLate()));
  // Every acknowledged launch is in its canvas file or in the journal at this moment: a kill here loses none.
  const journaled = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
  for (const r of all) {
    const inFile = (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId);
    t.ok(inFile || journaled.some((w) => w.canvasId === r.canvasId && w.threadId === r.threadId), `${r.canvasId}/${r.threadId} is on disk`);
  }
  // Restart without close (as after a kill).
  const again = await JsonWorkloadFiles.open(dir, nodeFileSystem);
  for (const r of all) t.same(await again.get(r.canvasId, r.threadId), r, `${r.canvasId}/${r.threadId} served after restart`);
  await again.close();
});

t.test('close waits for a running compaction, then folds everything in', async (t) => {
  const dir = await dataDir();
  const gate = gatedCanvasWrites();
  const files = await JsonWorkloadFiles.open(dir, gate.fs, undefined, COMPACT_AT);
  const all: WorkloadRecord[] = [];
  let started = false;
  void gate.held.then(() => (started = true));
  for (let i = 0; !started && i < 50; i++) all.push(...(await launchSeries(files, i, 1)));
  let closed = false;
  const closing = files.close().then(() => (closed = true));
  await tick(200);
  t.equal(closed, false, 'close has not returned while the compaction is held');
  gate.release();
  await closing;
  for (const r of all)
    t.ok(
      (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId),
      `${r.threadId} in its canvas file`,
    );
  t.equal((await readJournal(journalOf(dir))).bytes, 0, 'journal empty after close');
  t.same(
    (await readdir(path.join(dir, 'workloads'))).filter((n) => n.endsWith('.tmp')),
    [],
    'no temp file left',
  );
});

t.test('a failed compaction keeps the journal whole and its canvases due; a later one succeeds', async (t) => {
  for (const failing of ['a canvas file', 'the journal swap'] as const) {
    const dir = await dataDir();
    let fail = true;
    const fs: FileSystemSeam = {
      ...nodeFileSystem,
      rename: (from, to) => {
        const hit = failing === 'a canvas file' ? /\/c-[^/]*\.json$/.test(to) : to.endsWith('.journal');
        return fail && hit ? Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' })) : nodeFileSystem.rename(from, to);
      },
    };
    const files = await JsonWorkloadFiles.open(dir, fs, undefined, COMPACT_AT);
    const all = await launchSeries(files, 0, 12);
    // Let any compaction attempt settle: the journal still holds every launch, no temp file remains.
    await tick(300);
    const journal = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
    t.equal(journal.length, 12, `${failing} failing: the journal holds every launch`);
    fail = false;
    // Launch on until a compaction has folded the first twelve in (the retry waits for the journal to double).
    const more: WorkloadRecord[] = [];
    const firstInJournal = async () =>
      ((await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[]).some((w) => w.threadId === 't-0');
    for (let i = 12; i < 200 && (await firstInJournal()); i++) {
      more.push(...(await launchSeries(files, i, 1)));
      await tick(2);
    }
    t.notOk(await firstInJournal(), `${failing}: a later compaction folded the failed one's launches in (after ${more.length} more)`);
    const tail = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
    for (const r of [...all, ...more]) {
      const inFile = (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId);
      t.ok(inFile || tail.some((w) => w.threadId === r.threadId), `${failing}: ${r.threadId} on disk`);
    }
    t.same(
      (await readdir(path.join(dir, 'workloads'))).filter((n) => n.endsWith('.tmp')),
      [],
      `${failing}: no temp file left`,
    );
    await files.close();
    for (const r of [...all, ...more])
      t.ok(
        (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId),
        `${failing}: ${r.threadId} in its file after close`,
      );
  }
});

/**
 * A seam that stops the process's file-system work dead at its `killAt`-th operation (seam calls and
 * every call on the handles it opened): that operation and all later ones never happen and never return,
 * as when the process is killed just before it. `ops` counts what ran.
 */
function killableSeam(killAt: number) {
  const state = { ops: 0, killed: false };
  const never = new Promise<never>(() => undefined);
  const step = async <T>(work: () => Promise<T>): Promise<T> => {
    if (state.killed || ++state.ops >= killAt) {
      state.killed = true;
      return never;
    }
    return work();
  };
  const wrap = (handle: fsp.FileHandle): fsp.FileHandle =>
    new Proxy(handle, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        if (['write', 'writeFile', 'sync', 'datasync', 'truncate', 'close'].includes(prop as string)) {
          return (...args: unknown[]) => step(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
  const fs: FileSystemSeam = {
    open: (file, flags, mode) => step(async () => wrap(await nodeFileSystem.open(file, flags, mode))),
    rename: (from, to) => step(() => nodeFileSystem.rename(from, to)),
    unlink: (file) => step(() => nodeFileSystem.unlink(file)),
  };
  return { fs, state };
}

t.test('a kill at any step of a compaction loses no acknowledged launch', async (t) => {
  // The scenario: 8 launches one by one (a compaction starts on the way), 4 more at once while it runs,
  // then 4 more one by one. Run it once without a kill to count its file-system steps, then kill at each.
  const scenario = async (files: JsonWorkloadFiles, acked: WorkloadRecord[]) => {
    const ack = (r: WorkloadRecord) => files.realize(r).then(() => void acked.push(r));
    for (let i = 0; i < 8; i++) await ack(record(`c-${i % 3}`, `t-${i}`));
    await Promise.all([8, 9, 10, 11].map((i) => ack(record(`c-${i % 4}`, `t-${i}`))));
    for (let i = 12; i < 16; i++) await ack(record(`c-${i % 3}`, `t-${i}`));
  };
  const full = killableSeam(Number.MAX_SAFE_INTEGER);
  const fullDir = await dataDir();
  const files = await JsonWorkloadFiles.open(fullDir, full.fs, undefined, COMPACT_AT);
  const opened = full.state.ops;
  await scenario(files, []);
  await until('the unkilled run compacts', async () => (await readJournal(journalOf(fullDir))).bytes < COMPACT_AT);
  await tick(50);
  const total = full.state.ops;
  await files.close();
  t.ok(total - opened > 40, `the scenario takes ${total - opened} file-system steps after open`);

  let checked = 0;
  // Killed instances keep their files open (as a dead process would until the restart): hold them.
  const victims: JsonWorkloadFiles[] = [];
  for (let killAt = opened + 1; killAt <= total + 1; killAt++) {
    const dir = await dataDir();
    const seam = killableSeam(killAt);
    const victim = await JsonWorkloadFiles.open(dir, seam.fs, undefined, COMPACT_AT);
    victims.push(victim);
    const acked: WorkloadRecord[] = [];
    // Runs until the kill freezes it (its launches then never settle) or to its end, where it is killed.
    let finished = false;
    void scenario(victim, acked).then(() => (finished = true));
    while (!seam.state.killed && !finished) await tick(2);
    if (seam.state.killed) await tick(30);
    seam.state.killed = true;
    const restarted = await JsonWorkloadFiles.open(dir, nodeFileSystem);
    const lost = [];
    for (const r of acked) if (JSON.stringify(await restarted.get(r.canvasId, r.threadId)) !== JSON.stringify(r)) lost.push(r.threadId);
    t.same(lost, [], `killed at step ${killAt - opened}: ${acked.length} acknowledged, none lost`);
    await restarted.close();
    checked++;
  }
  t.ok(checked > 40, `${checked} kill points checked`);
});

t.test("an online backup's pause waits for a compaction under way; nothing on disk changes while paused", async (t) => {
  const dir = await dataDir();
  const { files, gate, started } = await heldCompaction(dir);
  t.ok(started, 'a compaction is held writing a canvas file');

  let paused = false;
  const pausing = files.pause().then(() => (paused = true));
  await tick(200);
  t.notOk(paused, 'the pause is not granted while the compaction writes canvas files');
  gate.release();
  await Promise.race([pausing, tick(10_000)]);
  t.ok(paused, 'granted once the compaction has finished');
  const snapshot = async () => {
    const names = (await readdir(path.join(dir, 'workloads'))).sort();
    return Promise.all(names.map(async (n) => [n, await readFile(path.join(dir, 'workloads', n), 'utf8')]));
  };
  const before = await snapshot();
  t.notOk(
    before.some(([n]) => n!.endsWith('.tmp')),
    'no temp file: the journal swap is done too',
  );
  // A launch during the pause waits; the files do not change until the pause ends.
  let answered = false;
  const during = files.realize(record('c-0', 'during-pause')).then((r) => ((answered = true), r));
  await tick(200);
  t.notOk(answered, 'a launch waits while writes are paused');
  t.same(await snapshot(), before, 'the files are as they were when the pause was granted');
  files.resume();
  t.equal((await during).created, true, 'and is written once the pause ends');
  t.ok(
    ((await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[]).some((w) => w.threadId === 'during-pause'),
    'durably',
  );
  await files.close();
});

/** A seam that logs every file-system step of canvas files, the directory and the journal, in order. */
function recordingSeam(dir: string) {
  const log: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const name = (file: string) =>
    file === path.join(dir, 'workloads')
      ? 'dir'
      : /\/c-[^/]*\.json($|\.)/.test(file)
        ? 'canvas'
        : /journal/.test(file)
          ? 'journal'
          : 'other';
  const fs: FileSystemSeam = {
    async open(file, flags, mode) {
      const kind = name(file);
      const handle = await nodeFileSystem.open(file, flags, mode);
      if (kind === 'canvas') maxInFlight = Math.max(maxInFlight, ++inFlight);
      return new Proxy(handle, {
        get(target, prop) {
          const value = Reflect.get(target, prop, target) as unknown;
          if (typeof value !== 'function') return value;
          return async (...args: unknown[]) => {
            const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (prop === 'sync') log.push(`${kind} sync`);
            if (prop === 'close' && kind === 'canvas') inFlight--;
            return result;
          };
        },
      });
    },
    async rename(from, to) {
      await nodeFileSystem.rename(from, to);
      log.push(`${name(to)} rename`);
    },
    unlink: (file) => nodeFileSystem.unlink(file),
  };
  return { fs, log, maxInFlight: () => maxInFlight };
}

t.test('a compaction beside the launches writes one canvas file at a time and fsyncs the directory once, after its renames', async (t) => {
  const dir = await dataDir();
  const seam = recordingSeam(dir);
  const files = await JsonWorkloadFiles.open(dir, seam.fs, undefined, COMPACT_AT);
  const from = seam.log.length;
  // Many canvases, so a compaction has many files to write.
  for (let i = 0; i < 12; i++) await launchSeries(files, i, 1, 12);
  await until('a compaction', async () => (await readJournal(journalOf(dir))).bytes < COMPACT_AT);
  const steps = seam.log.slice(from);
  // The first compaction: from its first canvas file to its journal swap (which fsyncs the directory itself).
  const first = steps.indexOf('canvas rename');
  const journalSwap = steps.findIndex((s, i) => i > first && s === 'journal rename');
  t.ok(first >= 0 && journalSwap > first, 'a compaction wrote canvas files, then swapped the journal for its tail');
  const renames = steps.flatMap((s, i) => (s === 'canvas rename' && i < journalSwap ? [i] : []));
  t.ok(renames.length >= 6, `the compaction wrote ${renames.length} canvas files`);
  t.equal(seam.maxInFlight(), 1, 'never two canvas files open at once (sixteen before): a launch waits behind one write at most');
  const dirSyncs = steps.flatMap((s, i) => (s === 'dir sync' && i > renames[0]! && i < journalSwap ? [i] : []));
  t.equal(dirSyncs.length, 1, 'one directory fsync for the whole compaction, not one per file');
  t.ok(dirSyncs[0]! > renames.at(-1)!, 'after the last canvas rename, before the journal swap');
  await files.close();
});

t.test('a directory fsync that fails fails the compaction: the journal is kept and every canvas of it stays due', async (t) => {
  const dir = await dataDir();
  let failDirSync = false;
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async open(file, flags, mode) {
      const handle = await nodeFileSystem.open(file, flags, mode);
      if (file !== path.join(dir, 'workloads') || !failDirSync) return handle;
      return new Proxy(handle, {
        get(target, prop) {
          if (prop === 'sync') return () => Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    },
  };
  const files = await JsonWorkloadFiles.open(dir, fs, undefined, COMPACT_AT);
  failDirSync = true;
  const launched = await launchSeries(files, 0, 8, 4);
  await tick(300);
  const journaled = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
  t.same(
    launched.filter((r) => !journaled.some((w) => w.threadId === r.threadId)),
    [],
    'every launch is still in the journal',
  );
  failDirSync = false;
  // The next compaction (the journal doubled) writes every canvas again, the ones written before the failure too.
  const more = await launchSeries(files, 100, 16, 1);
  await until('a later compaction', async () => (await readJournal(journalOf(dir))).bytes < COMPACT_AT);
  for (const r of [...launched, ...more]) {
    const tail = (await readJournal(journalOf(dir))).batches.flat() as WorkloadRecord[];
    t.ok(
      (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId) || tail.some((w) => w.threadId === r.threadId),
      `${r.threadId} kept`,
    );
  }
  await files.close();
  for (const r of [...launched, ...more])
    t.ok(
      (await onDisk(dir, r.canvasId)).some((w) => w.threadId === r.threadId),
      `${r.threadId} in its file after close`,
    );
});

t.test('a journal filled again while a compaction ran is compacted when it ends, without waiting for another launch', async (t) => {
  const dir = await dataDir();
  const { files, gate, started } = await heldCompaction(dir);
  t.ok(started, 'a compaction is held');
  // Past the threshold again while it is held: the kept tail alone needs a compaction.
  await launchSeries(files, 200, 12);
  t.ok((await readJournal(journalOf(dir))).bytes > 2 * COMPACT_AT, 'the journal is full again');
  gate.release();
  // No launch from here on: only the end of the first compaction can start the second.
  await until('the second compaction, started by the end of the first', async () => (await readJournal(journalOf(dir))).bytes < COMPACT_AT);
  for (const r of ['t-200', 't-211'])
    t.ok(
      (await onDisk(dir, `c-${Number(r.slice(2)) % 3}`)).some((w) => w.threadId === r),
      `${r} in its canvas file`,
    );
  await files.close();
});
