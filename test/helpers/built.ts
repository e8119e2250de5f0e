// What the tests that run compiled code need from the build. Most Agentlet tests call the CLI's main() in the
// test's process, from source; only what runs the compiled server, the CLI executable or a packed package needs
// `npm run build` (which `npm test` runs first). Those subtests skip, saying why, when the build is missing or
// older than a source; in CI (CI=true) a stale build fails instead, so a broken build step cannot skip them.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = process.cwd();
const CLIENT = path.join(ROOT, 'packages', 'client');

/** The .ts files under `dir` whose compiled file (`out(file)`) is missing or older. */
function staleUnder(dir: string, out: (ts: string) => string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return staleUnder(full, out);
    if (!entry.name.endsWith('.ts')) return [];
    const js = out(full);
    return !existsSync(js) || statSync(js).mtimeMs < statSync(full).mtimeMs ? [path.relative(ROOT, full)] : [];
  });
}

/** packages/client/src files newer than packages/client/dist (what the CLI imports by its package name). */
function staleClient(): string[] {
  const src = path.join(CLIENT, 'src');
  return staleUnder(src, (ts) => path.join(CLIENT, 'dist', path.relative(src, ts).replace(/\.ts$/, '.js')));
}

/**
 * Builds packages/client when its dist/ is missing or older than its sources (scripts/build-client.mjs: 2 s,
 * and a reader never sees half a file). The CLI's source imports the client by its package name, so an
 * in-process run of the CLI needs this, and nothing else of the build.
 */
export async function clientBuilt(): Promise<void> {
  if (staleClient().length === 0) return;
  const { buildClient } = (await import(path.join(ROOT, 'scripts', 'build-client.mjs'))) as { buildClient(): void };
  buildClient();
}

/**
 * Why the build cannot serve a test that runs compiled code: false when dist/src and packages/client/dist are at
 * least as new as every source, else a skip reason naming the first stale sources. With CI=true it throws.
 */
export function needsBuild(): string | false {
  const stale = [
    ...staleUnder(path.join(ROOT, 'src'), (ts) => path.join(ROOT, 'dist', path.relative(ROOT, ts)).replace(/\.ts$/, '.js')),
    ...staleClient(),
  ];
  if (stale.length === 0) return false;
  const reason = `needs \`npm run build\`: the build is older than ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}`;
  if (process.env.CI === 'true') throw new Error(reason);
  return reason;
}

/** Builds what `npm run build` builds when a source is newer than the last build (scripts/build-if-changed.mjs). */
export function ensureBuilt(): void {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-changed.mjs')], { cwd: ROOT, stdio: 'inherit' });
}
