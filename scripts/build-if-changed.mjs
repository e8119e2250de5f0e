// `npm start` / `npm run migrate` / `npm run import` build first, but only when a source is newer than the
// build (a full tsc run takes 10-15 s). Plain JavaScript so it runs before anything is compiled. Without
// src/ (the production image holds only dist/) there is nothing to build.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const STAMP = 'dist/.build-stamp';
const INPUTS = [
  'src',
  'scripts',
  'tsconfig.json',
  'package.json',
  'package-lock.json',
  'packages/client/src',
  'packages/client/package.json',
  'packages/client/tsconfig.json',
  'packages/agentlet/package.json',
];

function newest(p) {
  if (!existsSync(p)) return 0;
  const info = statSync(p);
  if (!info.isDirectory()) return info.mtimeMs;
  let max = info.mtimeMs; // a deleted file changes its directory's mtime
  for (const entry of readdirSync(p)) max = Math.max(max, newest(path.join(p, entry)));
  return max;
}

if (process.argv.includes('--help')) {
  console.log(
    'usage: node scripts/build-if-changed.mjs [--force] [--with-tests]\nBuilds (tsc for packages/client and the root, then the server and CLI bundles) when a file under src/, scripts/ or packages/*/src (or tsconfig.json, package*.json) is newer than the last build (always with --force, as `npm run build` does). --with-tests compiles test/ too (tsconfig.test.json), as `npm test` does.',
  );
} else if (existsSync('src')) {
  // --force (`npm run build`): always build, and leave the stamp for the next start.
  const built = existsSync(STAMP) && !process.argv.includes('--force') ? statSync(STAMP).mtimeMs : 0;
  if (Math.max(...INPUTS.map(newest)) >= built) {
    const started = Date.now();
    const tsc = path.join('node_modules', 'typescript', 'bin', 'tsc');
    // The typed client first: the compiled CLI in dist/ imports it by its package name (packages/client/dist).
    if (existsSync('packages/client')) (await import('./build-client.mjs')).buildClient();
    // --with-tests (`npm test`): the one compile also typechecks and emits the tests (tsconfig.test.json).
    const project = process.argv.includes('--with-tests') ? 'tsconfig.test.json' : 'tsconfig.json';
    execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
    // Then the bundle `npm start` runs (scripts/bundle.mjs), and the published CLI (scripts/bundle-agentlet.mjs).
    const { bundle, bundleTypebox } = await import('./bundle.mjs');
    await bundleTypebox();
    await bundle();
    if (existsSync('packages/agentlet')) await (await import('./bundle-agentlet.mjs')).bundleAgentlet();
    // The stamp is written only after a build that succeeded; its mtime is the build's start.
    const { writeFileSync, utimesSync } = await import('node:fs');
    writeFileSync(STAMP, '');
    utimesSync(STAMP, new Date(started), new Date(started));
    console.error(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}
