// Every script answers --help (exit 0, usage on stdout) instead of "unknown argument", and `npm start`'s
// build step builds only when a source changed.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { WITHOUT_COVERAGE } from '../helpers/coverage.js';

t.setTimeout(300_000);

const ROOT = process.cwd();

t.test('--help on every script: exit 0 and a usage line', (t) => {
  const scripts: [string, RegExp][] = [
    [
      'dist/scripts/migrate.js',
      /usage: npm run migrate -- --data-dir DIR \[--dry-run\][\s\S]*DATABASE_URL=postgres:\/\/\.\.\. npm run migrate/,
    ],
    ['dist/scripts/import-json.js', /usage: DATABASE_URL=postgres:\/\/\.\.\. npm run import -- --data-dir DIR/],
    ['dist/scripts/backup.js', /usage: npm run backup -- --to DIR \[--data-dir DIR\] \[--with-credentials\][\s\S]*pg_dump/],
    ['dist/src/agentlet/cli.js', /agentlet-resources/],
    ['dist/src/server.js', /Usage: npm start/],
    ['scripts/build-if-changed.mjs', /usage: node scripts\/build-if-changed\.mjs/],
    ['dist/scripts/generate.js', /Usage: npm run generate/],
  ];
  for (const [script, usage] of scripts) {
    const run = spawnSync(process.execPath, [script, '--help'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
      timeout: 60_000,
    });
    t.equal(run.status, 0, `${script} --help exits 0`);
    t.match(run.stdout, usage, `${script} prints its usage`);
    t.notMatch(run.stdout + run.stderr, /unknown argument/);
  }
  t.end();
});

t.test('build-if-changed builds on the first run and after a source changes, not otherwise', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'arr-build-'));
  t.teardown(() => execFileSync('rm', ['-rf', dir]));
  await mkdir(path.join(dir, 'src'));
  await writeFile(
    path.join(dir, 'tsconfig.json'),
    // `types: []`: the one-line source needs no @types package, and tsc would read every installed one.
    JSON.stringify({
      compilerOptions: { outDir: 'dist', rootDir: '.', module: 'nodenext', target: 'es2022', types: [] },
      include: ['src'],
    }),
  );
  await writeFile(path.join(dir, 'src', 'a.ts'), 'export const a: number = 1;\n');
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  const run = () =>
    spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build-if-changed.mjs')], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, ...WITHOUT_COVERAGE },
    });

  const first = run();
  t.equal(first.status, 0, first.stderr);
  t.match(first.stderr, /built in/);
  t.ok(existsSync(path.join(dir, 'dist', 'src', 'a.js')));
  const second = run();
  t.equal(second.status, 0);
  t.equal(second.stderr, '', 'nothing changed: no build');
  const later = new Date(Date.now() + 2000);
  await utimes(path.join(dir, 'src', 'a.ts'), later, later);
  const third = run();
  t.match(third.stderr, /built in/, 'a newer source: built again');
  await writeFile(path.join(dir, 'src', 'a.ts'), 'export const a: number = "broken";\n');
  await utimes(path.join(dir, 'src', 'a.ts'), new Date(Date.now() + 4000), new Date(Date.now() + 4000));
  t.not(run().status, 0, 'a failing build fails the start (and writes no stamp, so the next start retries)');
});
