// The durable write and group commit, step by step, on a real file system.
import t from 'tap';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DurableDocument } from '../../src/storage/durable-document.js';
import { nodeFileSystem, writeFileDurably, type FileSystemSeam } from '../../src/storage/durable-file.js';

const codec = {
  clone: (s: { items: string[] }) => ({ items: [...s.items] }),
  serialize: (s: { items: string[] }) => JSON.stringify(s),
};

/** A seam that records each step and can stop the write right after a chosen one. */
function steppingFs(stopAfter?: string) {
  const steps: string[] = [];
  const step = (name: string) => {
    steps.push(name);
    if (name === stopAfter) throw Object.assign(new Error(`interrupted after ${name}`), { code: 'EINTR_TEST' });
  };
  const fs: FileSystemSeam = {
    async open(file, flags, mode) {
      const handle = await nodeFileSystem.open(file, flags, mode);
      const isDir = flags === 'r';
      const writeFile = handle.writeFile.bind(handle);
      const sync = handle.sync.bind(handle);
      handle.writeFile = async (data: Parameters<typeof writeFile>[0]) => {
        await writeFile(data);
        step('temp written');
      };
      handle.sync = async () => {
        await sync();
        step(isDir ? 'directory fsynced' : 'temp fsynced');
      };
      return handle;
    },
    async rename(from, to) {
      await nodeFileSystem.rename(from, to);
      step('renamed');
    },
    unlink: (file) => nodeFileSystem.unlink(file),
  };
  return { fs, steps };
}

t.test('a durable write takes its four steps in order', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'arr-durable-'));
  const { fs, steps } = steppingFs();
  await writeFileDurably(path.join(dir, 'f.json'), 'new', fs);
  t.same(steps, ['temp written', 'temp fsynced', 'renamed', 'directory fsynced']);
  t.equal(await readFile(path.join(dir, 'f.json'), 'utf8'), 'new');
});

t.test('interrupted after any step, the file is entirely old or entirely new', async (t) => {
  for (const stopAfter of ['temp written', 'temp fsynced', 'renamed', 'directory fsynced']) {
    const dir = await mkdtemp(path.join(tmpdir(), 'arr-durable-'));
    const file = path.join(dir, 'f.json');
    const old = JSON.stringify({ items: ['old'] });
    const next = JSON.stringify({ items: ['new', 'x'.repeat(100_000)] });
    await writeFile(file, old);
    const { fs } = steppingFs(stopAfter);
    await t.rejects(writeFileDurably(file, next, fs), /interrupted/);
    const content = await readFile(file, 'utf8');
    t.ok(content === old || content === next, `after "${stopAfter}": ${content === old ? 'old' : 'new'}`);
    t.equal(content === next, stopAfter === 'renamed' || stopAfter === 'directory fsynced', `after "${stopAfter}" the rename decides`);
    const left = (await readdir(dir)).filter((n) => n.endsWith('.tmp'));
    t.same(left, [], `after "${stopAfter}": no temp file left`);
  }
});

t.test('group commit: concurrent updates share one durable write; each caller waits for it', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'arr-durable-'));
  let writes = 0;
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async rename(from, to) {
      writes++;
      if (writes === 1) await gate; // hold the first write while the others queue
      return nodeFileSystem.rename(from, to);
    },
  };
  const batches: number[] = [];
  const doc = new DurableDocument(path.join(dir, 'd.json'), { items: [] as string[] }, codec, fs, (info) => batches.push(info.operations));
  const first = doc.update((d) => (d.items.push('a'), { result: 'a', changed: true }));
  await new Promise((r) => setTimeout(r, 20));
  let acknowledged = 0;
  const rest = Array.from({ length: 31 }, (_, i) =>
    doc.update((d) => (d.items.push(`b${i}`), { result: i, changed: true })).then((v) => (acknowledged++, v)),
  );
  await new Promise((r) => setTimeout(r, 20));
  t.equal(acknowledged, 0, 'nobody is acknowledged before their batch is durable');
  t.same(doc.state.items, [], 'readers see only committed state');
  release();
  await first;
  t.same(
    await Promise.all(rest),
    Array.from({ length: 31 }, (_, i) => i),
  );
  t.same(batches, [1, 31], 'the 31 queued updates went to disk in one write');
  t.equal(JSON.parse(await readFile(path.join(dir, 'd.json'), 'utf8')).items.length, 32);
});

t.test('a mutation that refuses rejects only its caller; a failed write rejects the batch and keeps the state', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'arr-durable-'));
  let fail = false;
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async rename(from, to) {
      if (fail) throw Object.assign(new Error('EIO'), { code: 'EIO' });
      return nodeFileSystem.rename(from, to);
    },
  };
  const doc = new DurableDocument(path.join(dir, 'd.json'), { items: [] as string[] }, codec, fs);
  const results = await Promise.allSettled([
    doc.update((d) => (d.items.push('ok'), { result: 1, changed: true })),
    doc.update(() => {
      throw new Error('refused');
    }),
  ]);
  t.equal(results[0].status, 'fulfilled');
  t.match(results[1], { status: 'rejected', reason: { message: 'refused' } });
  fail = true;
  await t.rejects(
    doc.update((d) => (d.items.push('lost'), { result: 2, changed: true })),
    { code: 'storage_unavailable' },
  );
  t.same(doc.state.items, ['ok'], 'memory still equals disk');
  t.same(JSON.parse(await readFile(path.join(dir, 'd.json'), 'utf8')).items, ['ok']);
});

t.test('a refusal that rests on an uncommitted change of its batch is answered only once that change is durable', async (t) => {
  // Found by the crash test: a 409 named a holder whose record the kill then lost.
  const dir = await mkdtemp(path.join(tmpdir(), 'arr-durable-'));
  const gates: { open: () => void; opened: Promise<void> }[] = [];
  const gate = (i: number) => {
    while (gates.length <= i) {
      let open: () => void = () => undefined;
      const opened = new Promise<void>((r) => (open = r));
      gates.push({ open, opened });
    }
    return gates[i]!;
  };
  let writes = 0;
  let fail = false;
  const fs: FileSystemSeam = {
    ...nodeFileSystem,
    async rename(from, to) {
      await gate(writes++).opened;
      if (fail) throw Object.assign(new Error('EIO'), { code: 'EIO' });
      return nodeFileSystem.rename(from, to);
    },
  };
  const doc = new DurableDocument(path.join(dir, 'd.json'), { items: [] as string[] }, codec, fs);
  const claim = (item: string) =>
    doc.update((d) => {
      if (d.items.includes(item)) throw new Error(`${item} is taken`);
      d.items.push(item);
      return { result: item, changed: true };
    });
  const tick = () => new Promise((r) => setTimeout(r, 20));

  // Hold a first write so the two claims of x queue into one batch.
  const first = claim('w');
  await tick();
  let answered = 0;
  const created = claim('x').finally(() => answered++);
  const refused = claim('x').finally(() => answered++);
  refused.catch(() => undefined);
  gate(0).open();
  await first;
  await tick();
  t.equal(answered, 0, 'neither the change nor the refusal is answered before the batch is durable');
  gate(1).open();
  t.equal(await created, 'x');
  await t.rejects(refused, { message: 'x is taken' });

  // When the batch's write fails, the change never happened: the refusal that rested on it is a 503 too.
  const second = claim('v');
  await tick();
  fail = true;
  const lost = claim('y');
  const refusedToo = claim('y');
  gate(2).open();
  await t.rejects(second, { code: 'storage_unavailable' });
  gate(3).open();
  await t.rejects(lost, { code: 'storage_unavailable' });
  await t.rejects(refusedToo, { code: 'storage_unavailable' });
  t.same(doc.state.items, ['w', 'x']);
});
