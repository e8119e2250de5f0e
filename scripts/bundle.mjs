// The server `npm start` runs: dist/bundle/server.js, bundled by esbuild from what tsc wrote to dist/
// (docs/decisions/start-up-cost.md). Our own modules and typebox (ESM, ~700 small files) are joined into a few files,
// because resolving and reading each module file was most of the start-up's CPU; every other dependency
// stays an ordinary import from node_modules (their own files, workers and assets where they expect them).
// Split at dynamic imports, so the PostgreSQL store and pg load only when DATABASE_URL is set. Source maps
// lead back to src/*.ts through tsc's maps. A build never removes what a server running from dist/bundle
// may still load (replaceBundle). The bench's server is bundled the same way, so the bench
// measures what `npm start` runs. Plain JavaScript; run by scripts/build-if-changed.mjs after tsc.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/** Packages joined into the bundle; everything else in `dependencies` stays external. */
const BUNDLED = new Set(['typebox']);

/** `scan-worker`: the secret scan pool's worker (src/secrets/scan-pool.ts finds it beside the bundle's files). */
const ENTRIES = {
  server: 'dist/src/server.js',
  'bench-server': 'dist/scripts/bench/bench-server.js',
  'scan-worker': 'dist/src/secrets/scan-worker.js',
};

/** Both bundles: ES modules for Node 20, split at shared code (and at dynamic imports) into chunks. */
const SPLIT_ESM = {
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
};

export async function bundle() {
  // Only the entries this build has (a project without the server has nothing to bundle).
  const entryPoints = Object.fromEntries(Object.entries(ENTRIES).filter(([, file]) => existsSync(file)));
  if (Object.keys(entryPoints).length === 0) return;
  const { dependencies = {} } = JSON.parse(readFileSync('package.json', 'utf8'));
  const external = Object.keys(dependencies)
    .filter((name) => !BUNDLED.has(name))
    .flatMap((name) => [name, `${name}/*`]);
  const { outputFiles } = await build({ ...SPLIT_ESM, entryPoints, outdir: OUT, external, sourcemap: true, write: false });
  replaceBundle(outputFiles);
}

const OUT = 'dist/bundle';
const CHUNKS = path.join(OUT, 'chunks');
/** The chunk names of the last few builds, newest first: a running server may still load one of them. */
const BUILDS_FILE = path.join(CHUNKS, '.builds.json');
/** How many builds' chunks stay: a server started before the last KEPT_BUILDS - 1 rebuilds still finds its own. */
const KEPT_BUILDS = 4;

/**
 * Writes a build into dist/bundle without taking anything from a server running from it: chunks (named by
 * their content) are added beside the earlier builds' ones, each file is written to a temporary name and
 * renamed into place (a process starting meanwhile reads a whole file, old or new), the entries last.
 * A running server loaded its entry at start and loads its chunks by their names, which stay for the next
 * KEPT_BUILDS - 1 builds; older builds' chunks are removed.
 */
function replaceBundle(outputFiles) {
  mkdirSync(CHUNKS, { recursive: true });
  const inChunks = (f) => path.dirname(f.path) === path.resolve(CHUNKS);
  const write = (f) => {
    const temp = `${f.path}.${process.pid}.tmp`;
    writeFileSync(temp, f.contents);
    renameSync(temp, f.path);
  };
  for (const f of outputFiles.filter(inChunks)) if (!existsSync(f.path)) write(f);
  for (const f of outputFiles.filter((f) => !inChunks(f))) write(f);
  const thisBuild = outputFiles.filter(inChunks).map((f) => path.basename(f.path));
  // A bundle from before this file was kept counts as one earlier build.
  const earlier = existsSync(BUILDS_FILE)
    ? JSON.parse(readFileSync(BUILDS_FILE, 'utf8'))
    : [readdirSync(CHUNKS).filter((name) => !thisBuild.includes(name))];
  const builds = [thisBuild, ...earlier.filter((names) => names.join() !== thisBuild.join())].slice(0, KEPT_BUILDS);
  const kept = new Set(builds.flat());
  for (const name of readdirSync(CHUNKS)) {
    if (name !== path.basename(BUILDS_FILE) && !kept.has(name)) rmSync(path.join(CHUNKS, name), { force: true });
  }
  const temp = `${BUILDS_FILE}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(builds)}\n`);
  renameSync(temp, BUILDS_FILE);
}

/**
 * typebox as a package of a few files at dist/node_modules/typebox, where Node finds it first for every module
 * under dist/ (the compiled tests, and the servers and commands they start): one bundle per subpath the
 * package exports, sharing chunks. Loading ~700 module files cost each process about 0.4 s of CPU, and about
 * 1 s under tap, whose loader hook sees every file. The code is the installed version's, unchanged; the
 * TypeScript sources and tsx still use node_modules/typebox.
 */
export async function bundleTypebox() {
  const source = 'node_modules/typebox';
  const out = 'dist/node_modules/typebox';
  const pkg = JSON.parse(readFileSync(`${source}/package.json`, 'utf8'));
  /** `.` → `index`, `./compile` → `compile`: the exported subpaths and the files they load. */
  const entryPoints = Object.fromEntries(
    Object.entries(pkg.exports).map(([subpath, target]) => [
      subpath === '.' ? 'index' : subpath.slice(2),
      `${source}/${(typeof target === 'string' ? target : target.import).slice(2)}`,
    ]),
  );
  rmSync(out, { recursive: true, force: true });
  await build({ ...SPLIT_ESM, entryPoints, outdir: out, outExtension: { '.js': '.mjs' } });
  const exports = Object.fromEntries(Object.entries(entryPoints).map(([name]) => [name === 'index' ? '.' : `./${name}`, `./${name}.mjs`]));
  writeFileSync(
    `${out}/package.json`,
    `${JSON.stringify({ name: pkg.name, version: pkg.version, license: pkg.license, type: 'module', exports }, null, 2)}\n`,
  );
  copyFileSync(`${source}/license`, `${out}/license`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  await bundleTypebox();
  await bundle();
}
