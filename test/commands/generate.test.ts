// `npm run generate` is the one command that regenerates every generated file, and the drift check names
// it: run on a copy of the committed files with two of them stale (the client's types, the adapters table of
// docs/hosted-capabilities.md), `--check` fails naming those files and the command and writes nothing;
// the command itself then rewrites them to what is committed.
import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { WITHOUT_COVERAGE } from '../helpers/coverage.js';

t.setTimeout(600_000);

const GENERATED = [
  'openapi/openapi.json',
  'packages/client/src/api-types.ts',
  'packages/client/src/error-codes.ts',
  'docs/hosted-capabilities.md',
  'docs/capabilities-example.dot',
  'docs/capabilities-example.svg',
  'docs/CONTRACT.md',
];

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...WITHOUT_COVERAGE }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('a stale generated file fails the check, which names `npm run generate`; the command rewrites it', async (t) => {
  const built = await run([path.resolve('scripts/build-if-changed.mjs')]);
  t.equal(built.code, 0, built.stderr);
  const root = await mkdtemp(path.join(os.tmpdir(), 'arr-generate-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const file of GENERATED) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await cp(path.resolve(file), path.join(root, file));
  }
  const types = path.join(root, 'packages/client/src/api-types.ts');
  await writeFile(
    types,
    (await readFile(types, 'utf8')).replace('export interface paths {', 'export interface paths {\n    "/stale": never;'),
  );
  const doc = path.join(root, 'docs/hosted-capabilities.md');
  await writeFile(doc, (await readFile(doc, 'utf8')).replace(/^\| `tavily-search` .*\n/m, ''));

  const script = path.resolve('dist/scripts/generate.js');
  const check = await run([script, '--check', '--root', root]);
  t.equal(check.code, 1, 'the check fails');
  t.match(
    check.stderr,
    /packages\/client\/src\/api-types\.ts is out of date with the code; run `npm run generate` and commit the result\./,
    'it names the stale file and the one command',
  );
  t.match(check.stderr, /docs\/hosted-capabilities\.md is out of date[^\n]*`npm run generate`/);
  t.match(check.stdout, /openapi\/openapi\.json is up to date/, 'the others are up to date');
  t.match(await readFile(types, 'utf8'), /"\/stale": never/, '--check writes nothing');

  const generate = await run([script, '--root', root]);
  t.equal(generate.code, 0, generate.stderr);
  for (const file of GENERATED)
    t.equal(await readFile(path.join(root, file), 'utf8'), await readFile(path.resolve(file), 'utf8'), `${file} rewritten as committed`);
});
