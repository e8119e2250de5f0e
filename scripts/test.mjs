// `npm test`: the gate. One compile (typecheck, and the tests emitted to dist/test) and the bundles first;
// then the static checks (lint and format, the OpenAPI document and the client's types up to date, the
// OpenAPI lint) run beside the test files, which leave a core idle much of the time; then the coverage
// report and gate, and the leak scan over what the tests wrote. The checks' output is printed after the
// tests, and any failure fails the run. Extra arguments go to tap (e.g. `npm test -- --bail`).
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

const node = process.execPath;
const tap = 'node_modules/.bin/tap';

/** Runs a step in the foreground; true when it succeeded. */
function step(command, args) {
  return spawnSync(command, args, { stdio: 'inherit' }).status === 0;
}

/** Runs a step with its output kept, for printing once the tests are done. */
function quiet(name, command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', (err) => resolve({ name, ok: false, output: `${output}${err.message}\n` }));
    child.once('close', (code) => resolve({ name, ok: code === 0, output }));
  });
}

rmSync('dist/test', { recursive: true, force: true });
if (!step(node, ['scripts/build-if-changed.mjs', '--force', '--with-tests'])) process.exit(1);

const checks = (async () => {
  const results = [];
  for (const [name, command, args] of [
    ['lint', 'npm', ['run', '--silent', 'lint']],
    ['openapi:check', node, ['dist/scripts/export-openapi.js', '--check']],
    ['openapi:types:check', 'npm', ['run', '--silent', 'openapi:types:check']],
    ['openapi:lint', 'npm', ['run', '--silent', 'openapi:lint']],
  ])
    results.push(await quiet(name, command, args));
  return results;
})();

rmSync('.tap/canary', { recursive: true, force: true });
const tested =
  step(tap, ['--node-arg=--enable-source-maps', ...process.argv.slice(2), 'dist/test/**/*.test.js']) &&
  step(node, ['dist/scripts/coverage-report.js']) &&
  step(node, ['dist/scripts/check-coverage.js']) &&
  step(tap, ['--disable-coverage', 'test/canary/scan.ts']);

let checked = true;
for (const { name, ok, output } of await checks) {
  console.log(`--- ${name}: ${ok ? 'passed' : 'FAILED'}`);
  if (output.trim() !== '') process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  checked &&= ok;
}
if (!tested) console.log('--- the tests FAILED (above)');
process.exit(tested && checked ? 0 : 1);
