// `npm run test:stress -- [--runs N] [--busy N] [--syncers N] [--bail] [files...]`: runs test files several
// times in a row while synthetic load competes with them: busy loops (one per core by default) and processes
// that write and fdatasync a file in a loop. A race that a loaded machine exposes (a timer that fires
// late, a write that takes a while to reach the disk, a child process that starts slowly) shows here before
// it shows on a slow CI run. With no file named it runs every test file of `npm test`. Every run is
// bounded by tap's own per-file timeout; the load stops with the script (and on Ctrl-C).
import { spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const HELP = `Usage: npm run test:stress -- [options] [test files...]

Runs the named test files (default: every test/**/*.test.ts) several times in a row under synthetic load.

Options:
  --runs N      runs of the files, one after another (default 5)
  --busy N      busy-loop processes beside the tests (default: one per core)
  --syncers N   processes writing and fdatasyncing a file in a loop (default 1)
  --bail        stop at the first failed run
  -h, --help    this text

Each run is a tap run of the files (coverage off, tap's per-file timeout). Exit code 0 when every run passed.`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '5' },
    busy: { type: 'string', default: String(availableParallelism()) },
    syncers: { type: 'string', default: '1' },
    bail: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const count = (name) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0 || n > 64) {
    console.error(`--${name} must be a whole number from 0 to 64 (got ${values[name]})`);
    process.exit(2);
  }
  return n;
};
const runs = Math.max(1, count('runs'));
const busy = count('busy');
const syncers = count('syncers');
const files = positionals.length > 0 ? positionals : ['test/**/*.test.ts'];

const load = [];
const scratch = mkdtempSync(path.join(tmpdir(), 'arr-stress-'));
function stopLoad() {
  for (const child of load) child.kill('SIGKILL');
  load.length = 0;
  rmSync(scratch, { recursive: true, force: true });
}
process.once('exit', stopLoad);
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

// A busy loop: a whole core's worth of competition for the tests' event loops.
for (let i = 0; i < busy; i++) load.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
// Synced writes: competition for the disk's flushes, which the stores' fdatasyncs wait on.
const syncer = `
const fs = require('node:fs');
const fd = fs.openSync(process.argv[1], 'w');
const block = Buffer.alloc(64 * 1024, 7);
for (let i = 0; ; i++) { fs.writeSync(fd, block, 0, block.length, (i % 64) * block.length); fs.fdatasyncSync(fd); }
`;
for (let i = 0; i < syncers; i++) load.push(spawn(process.execPath, ['-e', syncer, path.join(scratch, `sync-${i}`)], { stdio: 'ignore' }));
// Checks that the scratch folder takes a synced write at all (a read-only tmpdir would make the syncers
// die silently and the run quieter than it claims).
const probe = openSync(path.join(scratch, 'probe'), 'w');
writeSync(probe, 'x');
fdatasyncSync(probe);
closeSync(probe);

function tapRun() {
  return new Promise((resolve) => {
    const child = spawn('node_modules/.bin/tap', ['--disable-coverage', ...files], { stdio: 'inherit' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

console.log(`test:stress: ${runs} run(s) of ${files.join(' ')} beside ${busy} busy loop(s) and ${syncers} syncer(s)`);
const results = [];
for (let run = 1; run <= runs; run++) {
  const started = Date.now();
  const ok = await tapRun();
  results.push(ok);
  console.log(`test:stress: run ${run}/${runs} ${ok ? 'passed' : 'FAILED'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (!ok && values.bail) break;
}
stopLoad();
const failed = results.filter((ok) => !ok).length;
console.log(`test:stress: ${results.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
