// The two published packages as a user gets them: `npm pack` of packages/agentlet and packages/client (their
// prepack builds them), `npm install --offline` of the tarball into an empty folder from an empty npm cache (the
// client's one dependency from a tarball of the workspace's copy), and the installed package used there: the
// CLI's --help and a real sync against a registry on a loopback socket; the client imported from JavaScript and
// type-checked from TypeScript.
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { canaryLogFile } from '../helpers/build.js';
import { WITHOUT_COVERAGE } from '../helpers/coverage.js';
import { catalogue, installFile, receiptJson, startRegistry, tempDir, tokenFile, writeReceipt } from '../helpers/agentlet.js';
import { installInEmptyFolder, pack } from '../helpers/packed.js';

const run = promisify(execFile);
const ROOT = process.cwd();
const rootVersion = (JSON.parse(await readFile('package.json', 'utf8')) as { version: string }).version;

t.test('packages/agentlet packs, installs alone and runs without the server dependencies', async (t) => {
  const packs = await tempDir(t, 'packs-');
  const packed = await pack('agentlet', packs);
  const { files } = packed;
  t.same(
    files,
    ['LICENSE', 'README.md', 'dist/THIRD-PARTY-LICENSES.txt', 'dist/cli.js', 'package.json'],
    'the bundle, its notices, README and LICENSE',
  );

  const dir = await installInEmptyFolder(t, packed);
  const installed = path.join(dir, 'node_modules', '@agent-resource-registry', 'agentlet');
  const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
  t.equal(manifest.dependencies, undefined, 'no dependencies');
  t.match(manifest, { license: 'MIT', version: rootVersion, bin: { 'agentlet-resources': 'dist/cli.js' } });
  t.notOk(existsSync(path.join(dir, 'node_modules', 'fastify')), 'no fastify');
  t.notOk(existsSync(path.join(dir, 'node_modules', 'pg')), 'no pg');
  t.same(
    (await readdir(path.join(dir, 'node_modules'))).filter((name) => !name.startsWith('.')),
    ['@agent-resource-registry'],
    'nothing but the package',
  );
  t.match(await readFile(path.join(installed, 'dist', 'cli.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/, 'an executable script');

  const bin = path.join(dir, 'node_modules', '.bin', 'agentlet-resources');
  const help = await run(bin, ['--help'], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir() } });
  t.match(help.stdout, /^Usage: agentlet-resources <command> \[options\]/, '--help: usage text, exit 0');

  // One real command of the installed CLI: a machine publishes a receipt to a real registry.
  const reg = await startRegistry(t);
  const token = await reg.h.enroll('packed-7f3a');
  const root = path.join(dir, 'resources');
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), AGENT_RESOURCE_DIR: root };
  await run(bin, ['init'], { cwd: dir, env });
  await installFile(root, 'skills/packed-skill/SKILL.md', '# packed-skill\n');
  await writeReceipt(root, receiptJson('packed-skill'));
  const remote = ['--registry', reg.url, '--machine-id', 'packed-7f3a', '--token-file', await tokenFile(dir, token)];
  const sync = await run(bin, ['sync', ...remote], { cwd: dir, env });
  await writeFile(canaryLogFile(), `$ agentlet-resources sync (installed from npm pack)\n${sync.stdout}${sync.stderr}`, { flag: 'a' });
  t.match(sync.stdout, /^created: +packed-skill$/m, sync.stdout);
  t.notOk(sync.stdout.includes(token) || sync.stderr.includes(token), 'no token in the output');
  t.same(
    (await catalogue({ reg } as Parameters<typeof catalogue>[0])).resources.map((r) => [r.id, r.provider]),
    [['packed-skill', 'packed-7f3a']],
    'the record is in the catalogue',
  );
});

t.test('packages/client packs, installs alone, imports from JavaScript and type-checks from TypeScript', async (t) => {
  const packs = await tempDir(t, 'packs-');
  const packed = await pack('client', packs);
  const { files } = packed;
  for (const file of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/client.js',
    'dist/api-types.d.ts',
    'README.md',
    'LICENSE',
    'package.json',
  ]) {
    t.ok(files.includes(file), `ships ${file}`);
  }
  t.same(
    files.filter((f) => f.startsWith('src/')),
    [],
    'no sources',
  );

  const dir = await installInEmptyFolder(t, packed);
  const manifest = JSON.parse(await readFile(path.join(dir, 'node_modules', '@agent-resource-registry', 'client', 'package.json'), 'utf8'));
  t.same(manifest.dependencies, { 'openapi-fetch': '0.17.0' }, 'one dependency, pinned');
  t.match(manifest, { license: 'MIT', version: rootVersion });

  const { stdout } = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('@agent-resource-registry/client'); console.log(Object.keys(m).sort().join(' '))",
    ],
    { cwd: dir },
  );
  t.match(stdout, /\bERROR_CODES\b.*\bRegistryClient\b.*\bRegistryError\b/, 'the package exports resolve');

  // A consumer's TypeScript, checked against the shipped .d.ts (no skipLibCheck): the error code is a union.
  await writeFile(
    path.join(dir, 'consumer.ts'),
    [
      "import { RegistryClient, RegistryError, type ErrorCode, type ProviderResourceList } from '@agent-resource-registry/client';",
      "const client = new RegistryClient({ baseUrl: 'http://127.0.0.1:8787', token: 't' });",
      "export const list: Promise<ProviderResourceList> = client.listProviderResources('m');",
      "export const known: ErrorCode = 'resource_conflict';",
      '// @ts-expect-error not one of the registry codes',
      "export const unknown: ErrorCode = 'teapot';",
      "export const isConflict = (err: unknown) => err instanceof RegistryError && err.code === 'resource_conflict';",
      '',
    ].join('\n'),
  );
  // The README's example, as a consumer pastes it (its tokens declared): every call in it type-checks.
  const readme = await readFile(path.join(ROOT, 'packages', 'client', 'README.md'), 'utf8');
  const example = /```ts\n([\s\S]*?)```/.exec(readme)![1]!;
  t.match(
    example,
    /owner\.api\.GET[\s\S]*machine\.api\.PUT[\s\S]*agent\.api\.GET/,
    'the README shows an owner, a provider and an agent call',
  );
  await writeFile(
    path.join(dir, 'readme.ts'),
    `declare const ownerToken: string;\ndeclare const agentToken: string;\n${example}\nexport {};\n`,
  );
  await writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        lib: ['ES2023', 'DOM'],
        types: [],
      },
      files: ['consumer.ts', 'readme.ts'],
    }),
  );
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  const tsc = await run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
    cwd: dir,
    env: { ...process.env, ...WITHOUT_COVERAGE },
  }).then(
    () => ({ code: 0, out: '' }),
    (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
  );
  t.same(tsc, { code: 0, out: '' }, "the consumer and the README's example type-check");
});
