// The store's side of an online backup (src/storage/backup-control.ts), with a real JSON store and a raw
// client on the DATA_DIR lock's socket: a connection that asks nothing holds nothing, anything but a pause is
// refused; while paused, writes wait (and are answered once resumed); a client that goes away, or holds the
// pause past its bound, or a store that closes, never leaves the writes paused; one backup at a time.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { messageReader, send } from '../../src/storage/backup-control.js';
import { connectToHolder } from '../../src/storage/data-dir-lock.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';

async function openStore(maxBackupPauseMs = 30_000) {
  const dataDir = await tempDataDir();
  const events: { pausedMs: number; ok: boolean; reason?: string }[] = [];
  const store = await JsonFileStore.open({ dataDir, maxBackupPauseMs, onBackup: (e) => events.push(e) });
  return { dataDir, store, events };
}

async function client(dataDir: string) {
  const socket = (await connectToHolder(dataDir))!;
  return { socket, next: messageReader(socket) };
}

const entry = (id: string) => ({ at: new Date().toISOString(), actor: 'owner', action: 'test.write', id, outcome: 'ok' });

/** Resolves to 'done' if the write finishes within ms, else 'waiting'. */
const within = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => 'done'), sleep(ms, 'waiting')]);

async function pausedClient(dataDir: string) {
  const c = await client(dataDir);
  send(c.socket, { op: 'pause' });
  return { ...c, answer: (await c.next())! };
}

t.test('a connection that asks nothing holds nothing; anything but a pause is refused and pauses nothing', async (t) => {
  const { dataDir, store } = await openStore();
  t.teardown(() => store.close());
  const idle = await client(dataDir);
  const c = await pausedClient(dataDir);
  t.same(c.answer, { paused: true, maxPauseMs: 30_000 }, 'an idle connection does not take the one-backup slot');
  send(c.socket, { op: 'resume' });
  t.match(await c.next(), { resumed: true });
  c.socket.destroy();
  idle.socket.destroy();

  const wrong = await client(dataDir);
  send(wrong.socket, { op: 'pause-please', nonce: 'x' });
  t.match((await wrong.next())!.error, /expected \{"op":"pause"\}/);
  t.equal(await within(store.appendAudit([entry('a')]), 2_000), 'done', 'writes go on');
  t.equal(await wrong.next(), undefined, 'and the connection is closed');
});

t.test('paused: writes wait until the client resumes, then are answered; the pause is reported', async (t) => {
  const { dataDir, store, events } = await openStore();
  t.teardown(() => store.close());
  const c = await pausedClient(dataDir);
  t.same(c.answer, { paused: true, maxPauseMs: 30_000 });
  const audit = store.appendAudit([entry('while-paused')]);
  const machine = store.enrollMachine({ machineId: 'paused-m', tokenDigest: 'a'.repeat(64), enrolledAt: new Date().toISOString() });
  t.equal(await within(Promise.all([audit, machine]), 300), 'waiting', 'writes wait while paused');
  t.notMatch(await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8'), 'while-paused', 'nothing reached the files');
  send(c.socket, { op: 'resume' });
  t.match(await c.next(), { resumed: true, pausedMs: Number });
  t.equal(await within(Promise.all([audit, machine]), 2_000), 'done', 'and are answered once resumed');
  t.match(await readFile(path.join(dataDir, 'machines.json'), 'utf8'), 'paused-m');
  t.match(events, [{ ok: true }]);
  c.socket.destroy();
});

t.test('a client that goes away, or holds the pause too long, never leaves the writes paused', async (t) => {
  const { dataDir, store, events } = await openStore(400);
  t.teardown(() => store.close());
  const gone = await pausedClient(dataDir);
  const write = store.appendAudit([entry('x')]);
  t.equal(await within(write, 200), 'waiting');
  gone.socket.destroy();
  t.equal(await within(write, 2_000), 'done', 'the client closing resumes the writes at once');

  const slow = await pausedClient(dataDir);
  const second = store.appendAudit([entry('y')]);
  t.equal(await within(second, 2_000), 'done', 'past maxPauseMs the writes resume on their own');
  t.match(
    (await slow.next())!.error,
    /writes resumed: the pause passed 400 ms; this backup is not consistent/,
    'and the client is told its copy is not consistent',
  );
  t.match(events, [
    { ok: false, reason: /went away/ },
    { ok: false, reason: /passed 400 ms/ },
  ]);
  slow.socket.destroy();
});

t.test('one backup at a time; closing the store ends a pause, writes what waited, and drops the client', async (t) => {
  const { dataDir, store } = await openStore();
  const first = await pausedClient(dataDir);
  const other = await client(dataDir);
  send(other.socket, { op: 'pause' });
  t.match((await other.next())!.error, /another backup of this DATA_DIR is in progress/);
  const write = store.appendAudit([entry('queued')]);
  await store.close();
  t.equal(await within(write, 100), 'done', 'the queued write was made before the store closed');
  t.match(await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8'), 'queued');
  t.equal(await first.next(), undefined, 'the backup client sees the connection closed');
});
