// A server started with `npm start` keeps serving while its checkout is built again (`npm run build`, or
// the next `npm start` after a pull): the code it loads on first use (the secret rules on the first
// scan) is still where it was, so its next requests answer as before, not 500 `ERR_MODULE_NOT_FOUND`.
// Run on a copy of the compiled project, changed the way a pull changes it.
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CANARY, DATA_ROOT, tempDataDir } from '../helpers/build.js';
import { startServer } from '../crash/server-process.js';

t.setTimeout(300_000);
const ROOT = process.cwd();

if (!existsSync(path.join(ROOT, 'dist', 'src', 'server.js'))) {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-changed.mjs'), '--force'], { cwd: ROOT, stdio: 'inherit' });
}

/** The compiled project (dist/src, the bundle script, package.json, node_modules) in a folder of its own. */
function copyOfProject(): string {
  const dir = mkdtempSync(path.join(DATA_ROOT, 'project-'));
  cpSync(path.join(ROOT, 'dist', 'src'), path.join(dir, 'dist', 'src'), { recursive: true });
  cpSync(path.join(ROOT, 'scripts', 'bundle.mjs'), path.join(dir, 'scripts', 'bundle.mjs'));
  cpSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

const bundle = (dir: string) =>
  execFileSync(process.execPath, ['--input-type=module', '-e', "(await import('./scripts/bundle.mjs')).bundle()"], { cwd: dir });

t.test('rebuilding under a running server: its next requests that load code on first use still answer', async (t) => {
  const dir = copyOfProject();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  bundle(dir);
  const server = await startServer(
    {
      DATA_DIR: await tempDataDir(),
      OWNER_TOKEN: CANARY.owner,
      HUABU_PROVIDER_TOKEN: CANARY.huabu,
      CANVAS_TOKEN_SECRET: CANARY.secret,
      SEED_HUABU_RESOURCES: 'false',
      MAX_EVENT_LOOP_DELAY_MS: '0',
    },
    90_000,
    path.join(dir, 'dist', 'bundle', 'server.js'),
  );
  t.teardown(() => server.kill());
  const chunks = () => readdirSync(path.join(dir, 'dist', 'bundle', 'chunks')).filter((f) => f.endsWith('.js'));
  const before = chunks();

  // A pull changes the secret rules' module; the build writes a new bundle with a chunk of a new name.
  appendFileSync(path.join(dir, 'dist', 'src', 'secrets', 'gitleaks-engine.js'), '\nexport const pulledLater = true;\n');
  bundle(dir);
  t.not(chunks().join(), before.join(), 'the rebuild wrote a chunk the running server has never seen');
  // What one such change adds: the chunks that hold the rules' module (the server's and the scan worker's).
  const added = chunks().length - before.length;

  const put = await fetch(`${server.origin}/api/acp/providers/huabu/resources/web-search`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${CANARY.huabu}`, 'content-type': 'application/json' },
    body: JSON.stringify({ schemaVersion: 2, name: 'Web search', sourceContent: 'Search the public web.' }),
  });
  t.equal(put.status, 201, 'the first scan after the rebuild loads the rules the server started with');
  const svg = await fetch(`${server.origin}/api/acp/capabilities?format=svg`, { headers: { authorization: `Bearer ${CANARY.owner}` } });
  t.equal(svg.status, 200, 'the capability graph renders');

  // Rebuilds keep only a few builds' chunks: a build that drops nothing would fill the disk.
  for (let i = 0; i < 6; i++) {
    appendFileSync(path.join(dir, 'dist', 'src', 'secrets', 'gitleaks-engine.js'), `\nexport const pulledAgain${i} = true;\n`);
    bundle(dir);
  }
  // Seven builds in all, four kept (the newest and the three before it).
  t.ok(
    added > 0 && chunks().length <= before.length + 3 * added,
    `old builds' chunks are removed (${chunks().length} chunk files, ${before.length} at first, ${added} more a build)`,
  );
});
