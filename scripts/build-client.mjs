// Builds packages/client (tsc: ES modules and .d.ts in packages/client/dist), staged beside dist/ and moved in file
// by file with a rename: a process importing the client while `npm pack` rebuilds it (the tests do both at once)
// reads the old file or the new one, never half of one. Plain JavaScript; run by the package's prepack/build and
// by scripts/build-if-changed.mjs.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CLIENT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'client');

export function buildClient() {
  const tsc = createRequire(path.join(CLIENT, 'package.json')).resolve('typescript/bin/tsc');
  const staging = mkdtempSync(path.join(CLIENT, '.build-'));
  try {
    execFileSync(process.execPath, [tsc, '-p', path.join(CLIENT, 'tsconfig.json'), '--outDir', staging], { stdio: 'inherit' });
    mkdirSync(path.join(CLIENT, 'dist'), { recursive: true });
    for (const name of readdirSync(staging)) renameSync(path.join(staging, name), path.join(CLIENT, 'dist', name));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) buildClient();
