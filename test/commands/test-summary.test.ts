// `npm test`'s own arguments and its last lines: `npm test -- --help` prints the usage and runs nothing, and
// the run ends with the failing tests by name (file › subtest › assertion) and one line `N passed, N failed,
// N skipped`, read from the TAP tap saves per test file (scripts/test-summary.mjs).
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';

const ROOT = process.cwd();

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'arr-test-summary-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('npm test -- --help prints the usage and runs nothing', async (t) => {
  // From an empty folder: a run that started would build, remove dist/test and call tap there.
  const dir = await tempDir(t);
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'test.mjs'), '--help'], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
    timeout: 60_000,
  });
  t.equal(run.status, 0, `exit 0 (${run.stderr})`);
  t.match(run.stdout, /^Usage: npm test \[-- tap options\]/, 'the usage');
  t.match(run.stdout, /N passed, N failed, N skipped/, 'it says how the run ends');
  t.same(await readdir(dir), [], 'nothing built, nothing written');
});

// TAP as tap writes it to .tap/test-results: a passing file with a skipped subtest; a failing one with a
// failing assertion inside a subtest and a subtest that timed out without a failing point of its own.
const PASSING = `TAP version 14
# Subtest: reads the catalogue
    ok 1 - answers 200
    ok 2 - lists pdf-tools
    1..2
ok 1 - reads the catalogue # time=12ms

ok 2 - on PostgreSQL # SKIP DATABASE_URL is not set
1..2
`;
const FAILING = `TAP version 14
# Subtest: another local user can neither reach the channel
    not ok 1 - timed out after 60000 ms waiting for the other user to be at it
      ---
      at:
        fileName: test/helpers/wait.ts
      ...
    ok 2 - the channel is closed to the other user
    1..2
not ok 1 - another local user can neither reach the channel # time=61000ms

# Subtest: a stop that hangs
    1..0
not ok 2 - a stop that hangs # time=30000ms
  ---
  expired: TAP
  ...

ok 3 - a backup is taken
1..3
`;

t.test('the summary: the failing tests by name, then N passed, N failed, N skipped', async (t) => {
  const results = await tempDir(t);
  await mkdir(path.join(results, 'dist', 'test', 'backup'), { recursive: true });
  await writeFile(path.join(results, 'dist', 'test', 'backup', 'channel.test.js.tap'), FAILING);
  await writeFile(path.join(results, 'dist', 'test', 'registry.test.js.tap'), PASSING);
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'test-summary.mjs'), results], { encoding: 'utf8' });
  t.equal(run.status, 1, 'a failure: exit 1');
  t.same(run.stdout.trimEnd().split('\n'), [
    'not ok: dist/test/backup/channel.test.js › another local user can neither reach the channel › timed out after 60000 ms waiting for the other user to be at it',
    'not ok: dist/test/backup/channel.test.js › a stop that hangs',
    '4 passed, 2 failed, 1 skipped',
  ]);

  await rm(path.join(results, 'dist', 'test', 'backup'), { recursive: true });
  const green = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'test-summary.mjs'), results], { encoding: 'utf8' });
  t.equal(green.status, 0);
  t.equal(green.stdout, '2 passed, 0 failed, 1 skipped\n', 'all passed: one line');
});

t.test('a test file that stopped before its first test (it printed no TAP) is a failure by name', async (t) => {
  const results = await tempDir(t);
  await mkdir(path.join(results, 'dist', 'test'), { recursive: true });
  await writeFile(path.join(results, 'dist', 'test', 'registry.test.js.tap'), PASSING);
  await writeFile(path.join(results, 'dist', 'test', 'crashed.test.js.tap'), '');
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'test-summary.mjs'), results], { encoding: 'utf8' });
  t.equal(run.status, 1, 'a failure: exit 1');
  t.same(run.stdout.trimEnd().split('\n'), [
    'not ok: dist/test/crashed.test.js › (the file printed no test: it stopped before its first, see its output above)',
    '2 passed, 1 failed, 1 skipped',
  ]);
});
