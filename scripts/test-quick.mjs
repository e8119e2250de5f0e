// `npm run test:quick`: the inner loop. tsc typechecks and compiles src, scripts and the tests (as `npm test`'s
// build does, without the bundles), then every in-process suite runs compiled, under tap without coverage.
// Left out are the suites that start real server processes, PostgreSQL, Chromium or the build (crash, backup,
// bundle, the operator commands, start-up refusals, the Agentlet daemon, npm pack of the packages), the long
// randomized ones (fuzz, model) and the canary scan. `npm test` runs them all. Extra arguments go to tap
// (e.g. `-- --bail`).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const SLOW = [
  /^test\/(crash|postgres|e2e|canary|slow|fixtures)\//,
  /^test\/(backup[^/]*|scripts-cli|startup-[^/]*|readme|bundle|packages|fuzz|model|storage|workload-compaction|hardening-scanner-linear|skills-e2e|shutdown|data-dir-lock)\.test\.ts$/,
  /^test\/agentlet\/serve\.test\.ts$/,
];

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(file);
    return entry.name.endsWith('.test.ts') ? [file] : [];
  });
}

const files = testFiles('test')
  .filter((file) => !SLOW.some((pattern) => pattern.test(file)))
  .sort()
  .map((file) => `dist/${file.replace(/\.ts$/, '.js')}`);

rmSync('dist/test', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.test.json'], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// typebox in a few files, as a build leaves it (scripts/bundle.mjs), when no build has yet.
if (!existsSync('dist/node_modules/typebox/package.json')) await (await import('./bundle.mjs')).bundleTypebox();
const result = spawnSync('node_modules/.bin/tap', ['--disable-coverage', ...process.argv.slice(2), ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
