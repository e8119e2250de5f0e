// `npm run test:quick`: the inner loop. Every in-process suite under tap without coverage; left out are the
// suites that start real server processes, PostgreSQL, Chromium or the build (crash, backup, bundle, the
// operator commands, start-up refusals, the Agentlet daemon, npm pack of the packages), the long randomized ones (fuzz, model) and
// the canary scan. `npm test` runs them all. Extra arguments go to tap (e.g. `-- --bail`).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
  .sort();
const result = spawnSync('npx', ['tap', '--disable-coverage', ...process.argv.slice(2), ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
