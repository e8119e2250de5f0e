// `npm test`: the gate. One build first: tsc typechecks and compiles src, scripts and the tests to dist/, then
// the bundles. The static checks (lint and format and the OpenAPI lint, then, once the build is there, every
// generated file against the code that generates it: `npm run generate -- --check`) run beside the build and the test files, which
// leave a core idle much of the time. After the tests: the coverage report and gate, and the leak scan over
// what the tests wrote. A check's output is printed at the end when it failed; the run ends with the failing
// tests and steps by name and one line `N passed, N failed, N skipped` (scripts/test-summary.mjs), and any
// failure fails it. Extra arguments go to tap (e.g. `npm test -- --bail`); `--help` prints this and runs nothing.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { summarize, summaryLines } from './test-summary.mjs';

const HELP = `Usage: npm test [-- tap options]

The gate: builds once (tsc, then the bundles), runs every test file compiled (dist/test/**/*.test.js) under
tap with coverage, two at a time, then the coverage report and per-area gate (scripts/coverage-thresholds.json)
and the scan for leaked tokens. Lint and format, the OpenAPI lint and the drift check of every generated file
(the OpenAPI document, the client's types; \`npm run generate\` regenerates them) run beside it; a check's
output is printed when it failed.

It ends with the failing tests and steps by name and one line: N passed, N failed, N skipped.
Exit code 0 when everything passed.

Arguments after -- go to tap, e.g.  npm test -- --bail
One file while you work:            npx tap --disable-coverage test/<area>/<file>.test.ts
More: docs/TESTING.md`;

if (process.argv.slice(2).some((arg) => arg === '--help' || arg === '-h')) {
  console.log(HELP);
  process.exit(0);
}

const node = process.execPath;
const tap = 'node_modules/.bin/tap';

/** Runs a step in the foreground (asynchronously, so the checks beside it go on); true when it succeeded. */
function step(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', () => resolve(false));
    child.once('close', (code) => resolve(code === 0));
  });
}

const running = new Set();
process.once('exit', () => {
  for (const child of running) child.kill();
});

/** Runs a step with its output kept, for printing once the tests are done. */
function quiet(name, command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    child.once('exit', () => running.delete(child));
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', (err) => resolve({ name, ok: false, output: `${output}${err.message}\n` }));
    child.once('close', (code) => resolve({ name, ok: code === 0, output }));
  });
}

let built;
const build = new Promise((resolve) => (built = resolve));
const checks = (async () => {
  const results = [];
  for (const [name, command, args] of [
    ['lint', 'npm', ['run', '--silent', 'lint']],
    ['openapi:lint', 'npm', ['run', '--silent', 'openapi:lint']],
  ])
    results.push(await quiet(name, command, args));
  await build;
  results.push(await quiet('generate:check', node, ['dist/scripts/generate.js', '--check']));
  return results;
})();

rmSync('dist/test', { recursive: true, force: true });
if (!(await step(node, ['scripts/build-if-changed.mjs', '--force', '--with-tests']))) process.exit(1);
built();

rmSync('.tap/canary', { recursive: true, force: true });
const RESULTS = path.join('.tap', 'test-results');
rmSync(RESULTS, { recursive: true, force: true });
const failedSteps = [];
const after = [
  ['the coverage report', node, ['dist/scripts/coverage-report.js']],
  ['the coverage gate', node, ['dist/scripts/check-coverage.js']],
  ['the leak scan', tap, ['--disable-coverage', 'test/canary/scan.ts']],
];
if (!(await step(tap, ['--node-arg=--enable-source-maps', ...process.argv.slice(2), 'dist/test/**/*.test.js']))) {
  failedSteps.push('the test files (tap)');
}
// Run even when a test failed: the leak scan matters most then, and the gate names what lost coverage.
for (const [name, command, args] of after) if (!(await step(command, args))) failedSteps.push(name);

for (const { name, ok, output } of await checks) {
  console.log(`--- ${name}: ${ok ? 'passed' : 'FAILED'}`);
  if (!ok && output.trim() !== '') process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  if (!ok) failedSteps.push(name);
}
const summary = summarize(RESULTS);
console.log('--- summary');
console.log(summaryLines(summary, failedSteps).join('\n'));
process.exit(summary.failed === 0 && failedSteps.length === 0 ? 0 : 1);
