// `npm run test:quick`: the inner loop. tsc typechecks and compiles src, scripts and the tests (as `npm test`'s
// build does, without the bundles), then every in-process suite runs compiled, under tap without coverage, in
// two processes (one per core) that each import half of the suites: a process per suite file costs about 2 s
// of CPU before its first test, most of such a suite's time. `npm test` keeps a process per file. Left out are
// the suites that start real server processes, PostgreSQL, Chromium or the build (crash, backup, bundle, the
// operator commands, start-up refusals, the Agentlet daemon, npm pack of the packages, the skill collections,
// the MCP Inspector's CLI),
// the long randomized ones (fuzz, model) and the canary scan. Extra arguments go to tap (e.g. `-- --bail`).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const SLOW = [
  /^test\/(crash|postgres|e2e|canary|slow|fixtures|backup|lifecycle)\//,
  /^test\/(commands\/help-and-build|commands\/generate|docs\/readme|docs\/mcp|packages\/pack-and-install|http\/fuzz|domain\/model|storage\/durability|storage\/data-dir-lock|launch\/workload-compaction|secrets\/scanner-linear-time|skills\/end-to-end|skills\/collections|mcp\/inspector-cli)\.test\.ts$/,
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
  .sort();

rmSync('dist/test', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.test.json'], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// The compiled CLI imports the typed client by its package name (packages/client/dist): built every time (2 s),
// so a fresh clone and a changed client both run.
(await import('./build-client.mjs')).buildClient();
// typebox in a few files, as a build leaves it (scripts/bundle.mjs), when no build has yet.
if (!existsSync('dist/node_modules/typebox/package.json')) await (await import('./bundle.mjs')).bundleTypebox();

// dist/quick/group-N.test.js imports every other suite from N, in order.
const GROUPS = 2;
rmSync('dist/quick', { recursive: true, force: true });
mkdirSync('dist/quick', { recursive: true });
const groups = Array.from({ length: GROUPS }, (_, n) => {
  const group = `dist/quick/group-${n + 1}.test.js`;
  const imports = files.filter((_, i) => i % GROUPS === n).map((file) => `await import('../${file.replace(/\.ts$/, '.js')}');`);
  writeFileSync(group, `${imports.join('\n')}\n`);
  return group;
});
const result = spawnSync('node_modules/.bin/tap', ['--disable-coverage', ...process.argv.slice(2), ...groups], { stdio: 'inherit' });
process.exit(result.status ?? 1);
