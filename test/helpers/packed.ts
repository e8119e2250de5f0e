// The published packages as a user gets them: `npm pack` of packages/<name> (its prepack builds it) and
// `npm install --offline` of the tarball into a new empty folder with an empty npm cache. A package's
// dependencies come as tarballs packed from the workspace's node_modules and installed beside it, so the
// install needs neither the network nor a warm cache, and npm still checks that each declared range is met.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir, type TestContext } from './agentlet.js';
import { WITHOUT_COVERAGE } from './coverage.js';

const run = promisify(execFile);
const ROOT = process.cwd();
const NPM_ENV = {
  ...process.env,
  ...WITHOUT_COVERAGE,
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
};

export interface Packed {
  /** The package's folder under packages/. */
  name: string;
  tarball: string;
  files: string[];
}

interface PackReport {
  filename: string;
  files: { path: string }[];
}

async function npmPack(cwd: string, into: string, args: string[]): Promise<PackReport[]> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', into, ...args], {
    cwd,
    env: NPM_ENV,
    maxBuffer: 16 * 1024 * 1024,
  });
  // Lifecycle output may precede the JSON report.
  return JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1 || stdout.indexOf('['))) as PackReport[];
}

/** `npm pack` of packages/<name> (its prepack builds it) into `into`. */
export async function pack(name: string, into: string): Promise<Packed> {
  const [report] = await npmPack(path.join(ROOT, 'packages', name), into, []);
  return { name, tarball: path.join(into, report!.filename), files: report!.files.map((f) => f.path).sort() };
}

async function dependenciesOf(dir: string): Promise<string[]> {
  const manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  return Object.keys(manifest.dependencies ?? {});
}

/** Where Node would find `name` from the package in `from`: its own node_modules, then the workspace's. */
function installedFolder(name: string, from: string): string {
  for (const dir of [path.join(from, 'node_modules', name), path.join(ROOT, 'node_modules', name)]) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
  }
  throw new Error(`${name} (a dependency of ${from}) is not in node_modules: run npm ci`);
}

/** The runtime dependencies of packages/<name>, transitively, packed from node_modules into `into` (scripts not run). */
async function packDependencies(name: string, into: string): Promise<string[]> {
  const folders = new Set<string>();
  const queue = [path.join(ROOT, 'packages', name)];
  for (let from = queue.shift(); from !== undefined; from = queue.shift()) {
    for (const dependency of await dependenciesOf(from)) {
      const folder = installedFolder(dependency, from);
      if (!folders.has(folder)) {
        folders.add(folder);
        queue.push(folder);
      }
    }
  }
  if (folders.size === 0) return [];
  const reports = await npmPack(into, into, ['--ignore-scripts', ...folders]);
  return reports.map((report) => path.join(into, report.filename));
}

/**
 * Installs the packed package into a new empty folder, offline, from an empty npm cache, its dependencies
 * from tarballs of the workspace's copies; returns the folder.
 */
export async function installInEmptyFolder(t: TestContext, packed: Packed): Promise<string> {
  const dir = await tempDir(t, 'installed-');
  const cache = await tempDir(t, 'npm-cache-');
  const dependencies = await packDependencies(packed.name, path.dirname(packed.tarball));
  const env = { ...NPM_ENV, npm_config_cache: cache };
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', packed.tarball, ...dependencies], { cwd: dir, env });
  // Every declared dependency is met by what was installed: nothing missing, no range unmet.
  await run('npm', ['ls', '--all'], { cwd: dir, env });
  return dir;
}

/** packages/agentlet packed and installed into an empty folder: the path of its `agentlet-resources` executable. */
export async function installedAgentlet(t: TestContext): Promise<string> {
  const dir = await installInEmptyFolder(t, await pack('agentlet', await tempDir(t, 'packs-')));
  return path.join(dir, 'node_modules', '.bin', 'agentlet-resources');
}
