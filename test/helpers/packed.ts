// The published packages as a user gets them: `npm pack` of packages/<name> (its prepack builds it) and
// `npm install --offline` of the tarball into a new empty folder (offline works: neither package has dependencies).
import { execFile } from 'node:child_process';
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
  tarball: string;
  files: string[];
}

/** `npm pack` of packages/<name> (its prepack builds it) into `into`. */
export async function pack(name: string, into: string): Promise<Packed> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', into], {
    cwd: path.join(ROOT, 'packages', name),
    env: NPM_ENV,
    maxBuffer: 16 * 1024 * 1024,
  });
  // Lifecycle output may precede the JSON report.
  const [report] = JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1 || stdout.indexOf('['))) as {
    filename: string;
    files: { path: string }[];
  }[];
  return { tarball: path.join(into, report!.filename), files: report!.files.map((f) => f.path).sort() };
}

/** Installs `tarball` into a new empty folder, offline; returns the folder. */
export async function installInEmptyFolder(t: TestContext, tarball: string): Promise<string> {
  const dir = await tempDir(t, 'installed-');
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: dir, env: NPM_ENV });
  return dir;
}

/** packages/agentlet packed and installed into an empty folder: the path of its `agentlet-resources` executable. */
export async function installedAgentlet(t: TestContext): Promise<string> {
  const { tarball } = await pack('agentlet', await tempDir(t, 'packs-'));
  const dir = await installInEmptyFolder(t, tarball);
  return path.join(dir, 'node_modules', '.bin', 'agentlet-resources');
}
