// The published `agentlet-resources`: packages/agentlet/dist/cli.js, one esbuild bundle of src/agentlet/cli.ts with
// every runtime dependency joined in (yaml, typebox, undici, pino, the typed client), so the package installs with
// no dependencies and never pulls the server's (fastify, pg). The licences of what it joins in are written beside
// it (dist/THIRD-PARTY-LICENSES.txt). Plain JavaScript; run by `npm pack` (prepack) of packages/agentlet and by
// scripts/build-if-changed.mjs, whose tests run this bundle. docs/decisions/packages.md says why.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIR = path.join(ROOT, 'packages', 'agentlet', 'dist');

// esbuild keeps the entry's `#!/usr/bin/env node` line first. An ES module bundle holding CommonJS packages needs
// `require` (for Node's built-ins) and the CommonJS globals.
const BANNER = [
  "import { createRequire as __arrCreateRequire } from 'node:module';",
  "import { fileURLToPath as __arrFileURLToPath } from 'node:url';",
  "import { dirname as __arrDirname } from 'node:path';",
  'const require = __arrCreateRequire(import.meta.url);',
  'const __filename = __arrFileURLToPath(import.meta.url);',
  'const __dirname = __arrDirname(__filename);',
].join('\n');

/** The package a bundled file belongs to (`node_modules/<name>` or `node_modules/@scope/name`), or undefined. */
function packageOf(file) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file.split(path.sep).join('/'));
  return match ? match[1] : undefined;
}

function licenceText(dir) {
  const file = readdirSync(dir).find((name) => /^(licen[cs]e|copying)(\.|$)/i.test(name));
  return file ? readFileSync(path.join(dir, file), 'utf8').trim() : undefined;
}

// The output is the same on every build, and each file replaces the last one by a rename: a CLI started while
// `npm pack` rebuilds it (the tests do both at once) reads the old file or the new one, never half of one.
export async function bundleAgentlet() {
  mkdirSync(OUT_DIR, { recursive: true });
  // Beside dist/, at its depth, so the source map's relative paths hold after the move.
  const staging = mkdtempSync(path.join(path.dirname(OUT_DIR), '.build-'));
  try {
    await write(staging);
    for (const name of readdirSync(staging)) renameSync(path.join(staging, name), path.join(OUT_DIR, name));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

async function write(dir) {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/agentlet/cli.ts'],
    outfile: path.join(dir, 'cli.js'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // The client package's TypeScript sources (tsconfig.json `paths`), so the bundle does not wait for its tsc build.
    tsconfig: 'tsconfig.json',
    banner: { js: BANNER },
    legalComments: 'none',
    // A map back to src/agentlet/*.ts for stack traces from a checkout (node --enable-source-maps); it is not in
    // the package (`files`), whose users have no src/.
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
  });
  const names = new Set(Object.keys(result.metafile.inputs).map(packageOf).filter(Boolean));
  const notices = [...names].sort().map((name) => {
    const dir = path.join(ROOT, 'node_modules', name);
    const { version = '', license = 'see the package' } = existsSync(path.join(dir, 'package.json'))
      ? JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
      : {};
    return `${name} ${version} (${license})\n\n${licenceText(dir) ?? `licence: ${license}`}\n`;
  });
  writeFileSync(
    path.join(dir, 'THIRD-PARTY-LICENSES.txt'),
    `dist/cli.js includes these packages; their licences follow.\n\n${notices.join('\n' + '-'.repeat(72) + '\n\n')}`,
  );
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await bundleAgentlet();
