// `npm test`: the gate. One build first: tsc typechecks and compiles src, scripts and the tests to dist/, then
// the bundles. The static checks (lint and format, the client's types and the OpenAPI lint, then, once the
// build is there, the OpenAPI document against the routes) run beside the build and the test files, which
// leave a core idle much of the time. After the tests: the coverage report and gate, and the leak scan over
// what the tests wrote. The checks' output is printed at the end, and any failure fails the run. Extra
// arguments go to tap (e.g. `npm test -- --bail`).
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';

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
    ['openapi:types:check', 'npm', ['run', '--silent', 'openapi:types:check']],
    ['openapi:lint', 'npm', ['run', '--silent', 'openapi:lint']],
  ])
    results.push(await quiet(name, command, args));
  await build;
  results.push(await quiet('openapi:check', node, ['dist/scripts/export-openapi.js', '--check']));
  return results;
})();

rmSync('dist/test', { recursive: true, force: true });
if (!(await step(node, ['scripts/build-if-changed.mjs', '--force', '--with-tests']))) process.exit(1);
built();

rmSync('.tap/canary', { recursive: true, force: true });
const tested =
  (await step(tap, ['--node-arg=--enable-source-maps', ...process.argv.slice(2), 'dist/test/**/*.test.js'])) &&
  (await step(node, ['dist/scripts/coverage-report.js'])) &&
  (await step(node, ['dist/scripts/check-coverage.js'])) &&
  (await step(tap, ['--disable-coverage', 'test/canary/scan.ts']));

let checked = true;
for (const { name, ok, output } of await checks) {
  console.log(`--- ${name}: ${ok ? 'passed' : 'FAILED'}`);
  if (output.trim() !== '') process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  checked &&= ok;
}
if (!tested) console.log('--- the tests FAILED (above)');
process.exit(tested && checked ? 0 : 1);
