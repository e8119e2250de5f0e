// audit.jsonl rotation by size, on a real file system with small limits: the active file is
// renamed to audit.1.jsonl (older ones shift up, the oldest beyond AUDIT_MAX_FILES deleted) before it would
// pass AUDIT_MAX_BYTES; read oldest first, the files hold every acknowledged entry once, in order (only the
// oldest dropped), also after a crash at any step of a rotation; the service rotates through its config.
import t, { type Test } from 'tap';
import { readdir, readFile, stat } from 'node:fs/promises';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { AppendLog, logFilesOldestFirst } from '../../src/storage/append-log.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { build, tempDataDir } from '../helpers/build.js';

const entry = (n: number) => ({ n, pad: 'x'.repeat(20) });
const LINE = JSON.stringify(entry(100)).length + 1;

/** Every entry of the log, oldest first, as numbers. */
async function entries(file: string): Promise<number[]> {
  const out: number[] = [];
  for (const f of await logFilesOldestFirst(file)) {
    const text = await readFile(f, 'utf8').catch(() => '');
    for (const line of text.split('\n').filter(Boolean)) out.push((JSON.parse(line) as { n: number }).n);
  }
  return out;
}

/** The numbers form one run without gaps or repeats, ending at `last`. */
function isSuffixRun(t: Test, seen: number[], last: number, label: string): void {
  const expected = Array.from({ length: seen.length }, (_, i) => last - seen.length + 1 + i);
  t.same(seen, expected, `${label}: one run of entries, no gap, no repeat, ending with the last acknowledged (${seen.length} entries)`);
}

t.test('rotation keeps the active file under the size, at most N rotated files, and every entry once in order', async (t) => {
  const dir = await tempDataDir();
  const file = path.join(dir, 'audit.jsonl');
  const maxBytes = LINE * 4;
  const log = await AppendLog.open(file, { maxBytes, maxFiles: 3 });
  for (let n = 100; n < 140; n++) await log.append([entry(n)]);
  await log.close();
  const names = (await readdir(dir)).sort();
  t.same(names, ['audit.1.jsonl', 'audit.2.jsonl', 'audit.3.jsonl', 'audit.jsonl'], 'the active file and 3 rotated ones');
  for (const name of names) t.ok((await stat(path.join(dir, name))).size <= maxBytes, `${name} is within the size`);
  const seen = await entries(file);
  isSuffixRun(t, seen, 139, 'after 40 appends');
  t.equal(seen.length, 16, 'four files of four lines: the oldest 24 entries were deleted with their files');
  t.equal(
    (await readFile(path.join(dir, 'audit.3.jsonl'), 'utf8')).split('\n')[0],
    JSON.stringify(entry(124)),
    'audit.3.jsonl is the oldest',
  );
  t.equal((await stat(path.join(dir, 'audit.jsonl'))).mode & 0o777, 0o600, 'the new active file is mode 0600');

  // A batch larger than the limit goes whole into a fresh file; rotation off (0) never renames.
  const big = await AppendLog.open(file, { maxBytes, maxFiles: 3 });
  await big.append(Array.from({ length: 6 }, (_, i) => entry(140 + i)));
  await big.close();
  t.same((await readFile(file, 'utf8')).split('\n').filter(Boolean).length, 6, 'one batch is never split across files');
  isSuffixRun(t, await entries(file), 145, 'after a large batch');
  const off = path.join(await tempDataDir(), 'audit.jsonl');
  const unrotated = await AppendLog.open(off, { maxBytes: 0, maxFiles: 3 });
  for (let n = 0; n < 20; n++) await unrotated.append([entry(n)]);
  await unrotated.close();
  t.same(await readdir(path.dirname(off)), ['audit.jsonl'], 'AUDIT_MAX_BYTES=0: no rotation');

  // Lowering AUDIT_MAX_FILES: the next rotation deletes every file beyond the new bound.
  const fewer = await AppendLog.open(file, { maxBytes, maxFiles: 1 });
  await fewer.append([entry(146)]);
  await fewer.close();
  t.same((await readdir(dir)).sort(), ['audit.1.jsonl', 'audit.jsonl']);
  isSuffixRun(t, await entries(file), 146, 'after lowering the bound');
});

t.test('a crash at any step of a rotation loses and repeats no acknowledged entry', async (t) => {
  // The rotation of a log with 3 rotated files (maxFiles 3) takes: unlink audit.3, rename 2→3, rename 1→2,
  // rename active→1. Fail the k-th of those calls (the process "dies" there: the log is abandoned, not
  // closed), then reopen with the real module and go on appending.
  for (let k = 1; k <= 4; k++) {
    const dir = await tempDataDir();
    const file = path.join(dir, 'audit.jsonl');
    const maxBytes = LINE * 2;
    const healthy = await AppendLog.open(file, { maxBytes, maxFiles: 3 });
    let n = 0;
    for (; n < 8; n++) await healthy.append([entry(n)]);
    await healthy.close();
    t.same(
      (await readdir(dir)).sort(),
      ['audit.1.jsonl', 'audit.2.jsonl', 'audit.3.jsonl', 'audit.jsonl'],
      `k=${k}: set up with 3 rotated files`,
    );
    let calls = 0;
    const crash = (real: (...a: never[]) => Promise<void>) =>
      (async (...args: never[]) => {
        if (++calls === k) throw Object.assign(new Error('simulated crash'), { code: 'EIO' });
        if (calls > k) throw new Error('nothing runs after the crash');
        return real(...args);
      }) as never;
    const dying = await AppendLog.open(file, { maxBytes, maxFiles: 3, moves: { unlink: crash(fsp.unlink), rename: crash(fsp.rename) } });
    await t.rejects(
      dying.append([entry(n)]),
      /simulated crash/,
      `k=${k}: the append that needed the rotation is refused (never acknowledged)`,
    );
    // Abandoned like a killed process: its handle is dropped, nothing more is written.
    const after = await AppendLog.open(file, { maxBytes, maxFiles: 3 });
    for (let m = n + 1; m < n + 8; m++) await after.append([entry(m)]);
    await after.close();
    const seen = (await entries(file)).filter((x) => x !== n);
    isSuffixRun(
      t,
      seen.filter((x) => x > n),
      n + 7,
      `k=${k}: after the restart`,
    );
    const older = seen.filter((x) => x < n);
    if (older.length > 0) isSuffixRun(t, older, n - 1, `k=${k}: entries from before the crash that are still kept`);
    t.ok((await readdir(dir)).length <= 4, `k=${k}: still at most 3 rotated files beside the active one`);
  }
});

t.test('the service rotates audit.jsonl by AUDIT_MAX_BYTES / AUDIT_MAX_FILES; bad values are refused in one line', async (t) => {
  const dataDir = await tempDataDir();
  const app = await build(t, { dataDir, env: { AUDIT_MAX_BYTES: '1024', AUDIT_MAX_FILES: '2' } });
  for (let i = 0; i < 20; i++) await app.enroll(`rot-${i}`);
  await app.app.close();
  const names = (await readdir(dataDir)).filter((n) => n.startsWith('audit')).sort();
  t.same(names, ['audit.1.jsonl', 'audit.2.jsonl', 'audit.jsonl'], 'two rotated files beside the active one');
  for (const name of names) t.ok((await stat(path.join(dataDir, name))).size <= 1024, `${name} is within AUDIT_MAX_BYTES`);
  const actions = (await Promise.all((await logFilesOldestFirst(path.join(dataDir, 'audit.jsonl'))).map((f) => readFile(f, 'utf8'))))
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { id: string });
  const ids = actions.map((a) => a.id).filter((id) => id.startsWith('rot-'));
  const first = Number(ids[0]!.slice(4));
  t.same(
    ids,
    Array.from({ length: 20 - first }, (_, i) => `rot-${first + i}`),
    'the newest enrollments, in order, each once',
  );

  const base = { DATA_DIR: dataDir };
  t.equal(loadConfig(base).auditMaxBytes, 64 * 1024 * 1024, 'default 64 MiB');
  t.equal(loadConfig(base).auditMaxFiles, 5, 'default 5 rotated files');
  t.equal(loadConfig({ ...base, AUDIT_MAX_BYTES: '0' }).auditMaxBytes, 0, '0 turns rotation off');
  t.throws(() => loadConfig({ ...base, AUDIT_MAX_FILES: '0' }), ConfigError);
  t.throws(() => loadConfig({ ...base, AUDIT_MAX_BYTES: '64MiB' }), /AUDIT_MAX_BYTES/);
});
