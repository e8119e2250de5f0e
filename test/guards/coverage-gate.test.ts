// The per-area coverage gate of `npm test` (scripts/check-coverage.ts): an area under its threshold fails.
import t from 'tap';
import path from 'node:path';
import { areaOf, areaTotals, belowThresholds, flattenedFiles } from '../../scripts/check-coverage.js';
import { dropEmptySourcesContent, restoreSourceMaps } from '../../scripts/coverage-report.js';

const root = '/repo';
const figures = (covered: number, total: number) => ({
  lines: { total, covered },
  statements: { total, covered },
  functions: { total, covered },
  branches: { total, covered },
});

t.test('files group by their folder under src/', (t) => {
  t.equal(areaOf(path.join(root, 'src/app.ts'), root), 'src');
  t.equal(areaOf(path.join(root, 'src/registry/ownership.ts'), root), 'src/registry');
  t.equal(areaOf(path.join(root, 'src/storage/postgres/postgres-store.ts'), root), 'src/storage/postgres');
  t.equal(areaOf(path.join(root, 'scripts/migrate.ts'), root), undefined);
  t.end();
});

t.test('an area under its threshold is reported; one at or above it is not', (t) => {
  const areas = areaTotals(
    {
      total: figures(0, 0),
      [path.join(root, 'src/registry/a.ts')]: figures(9, 10),
      [path.join(root, 'src/registry/b.ts')]: figures(8, 10),
      [path.join(root, 'src/http/auth.ts')]: figures(10, 10),
      [path.join(root, 'test/x.ts')]: figures(0, 10),
    },
    root,
  );
  t.same(areas.get('src/registry')!.lines, { total: 20, covered: 17 });
  t.same(belowThresholds(areas, { 'src/registry': { lines: 85 }, 'src/http': { branches: 100 } }), []);
  t.same(belowThresholds(areas, { 'src/registry': { lines: 85.1, functions: 80 } }), [
    { area: 'src/registry', metric: 'lines', pct: 85, min: 85.1 },
  ]);
  t.same(
    belowThresholds(areas, { 'src/gone': { lines: 1 } }),
    [{ area: 'src/gone', metric: 'lines', pct: 0, min: 1 }],
    'a missing area counts as 0 %',
  );
  t.end();
});

t.test('the command fails a low area, unless COVERAGE_THRESHOLDS=skip (the Node 24 run)', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { mkdtemp, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  // dist/ is built before tap runs (npm test's build step), as for test/commands/help-and-build.test.ts.
  const dir = await mkdtemp(path.join(tmpdir(), 'coverage-'));
  const summary = path.join(dir, 'summary.json');
  const thresholds = path.join(dir, 'thresholds.json');
  await writeFile(summary, JSON.stringify({ total: figures(1, 2), [path.join(process.cwd(), 'src/app.ts')]: figures(1, 2) }));
  await writeFile(thresholds, JSON.stringify({ src: { lines: 90 } }));
  const run = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['dist/scripts/check-coverage.js', summary, thresholds], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
  const gated = run({ COVERAGE_THRESHOLDS: '' });
  t.equal(gated.status, 1, 'an area under its threshold fails');
  t.match(gated.stderr, /coverage of src lines is 50%, under its threshold 90%/);
  const skipped = run({ COVERAGE_THRESHOLDS: 'skip' });
  t.equal(skipped.status, 0, 'skipped on request');
  t.match(skipped.stdout, /not checked \(COVERAGE_THRESHOLDS=skip\)/);
});

t.test('a report that counts a longer source file as one line is refused: its source maps were lost', (t) => {
  const lines: Record<string, number> = { [path.join(root, 'src/app.ts')]: 40, [path.join(root, 'src/one.ts')]: 1 };
  const summary = {
    total: figures(3, 3),
    [path.join(root, 'src/app.ts')]: figures(1, 1),
    [path.join(root, 'src/one.ts')]: figures(1, 1),
    [path.join(root, 'test/x.ts')]: figures(1, 1),
  };
  t.same(
    flattenedFiles(summary, root, (file) => lines[file]!),
    ['src/app.ts'],
    'a one-line file and files outside src/ pass',
  );
  t.same(
    flattenedFiles({ ...summary, [path.join(root, 'src/app.ts')]: figures(30, 40) }, root, (file) => lines[file]!),
    [],
  );
  t.end();
});

t.test("tsx's maps without their sources' text are made to read the sources from disk; other maps are kept", async (t) => {
  const { mkdtemp, readFile, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const map = (sourcesContent: unknown[]) => ({
    data: { version: 3, sources: ['file:///repo/src/a.ts'], mappings: 'AAAA', sourcesContent },
  });
  const coverage = () => ({
    result: [],
    'source-map-cache': {
      'file:///repo/src/a.ts': map([null]),
      'file:///repo/src/b.ts': map(['export const b = 1;\n']),
      'file:///repo/src/c.ts': map([null, 'c']),
      'file:///repo/src/d.ts': { data: null },
    },
  });
  const one = coverage();
  t.equal(dropEmptySourcesContent(one), 1);
  t.notOk('sourcesContent' in one['source-map-cache']['file:///repo/src/a.ts'].data, 'all null: dropped');
  t.same(one['source-map-cache']['file:///repo/src/b.ts'].data.sourcesContent, ['export const b = 1;\n'], 'a real text stays');
  t.same(one['source-map-cache']['file:///repo/src/c.ts'].data.sourcesContent, [null, 'c'], 'a partly filled list stays');

  const dir = await mkdtemp(path.join(tmpdir(), 'coverage-maps-'));
  await writeFile(path.join(dir, 'with.json'), JSON.stringify(coverage()));
  const untouched = JSON.stringify({ result: [] });
  await writeFile(path.join(dir, 'without.json'), untouched);
  t.equal(restoreSourceMaps(dir), 1, 'one map fixed across the directory');
  const written = JSON.parse(await readFile(path.join(dir, 'with.json'), 'utf8'));
  t.notOk('sourcesContent' in written['source-map-cache']['file:///repo/src/a.ts'].data, 'the file on disk is rewritten');
  t.equal(await readFile(path.join(dir, 'without.json'), 'utf8'), untouched, 'a file with nothing to fix is left as it was');
  t.equal(restoreSourceMaps(dir), 0, 'running it again changes nothing');
});

t.test('a coverage file cut short (its process killed while writing it) is removed and named; the rest are fixed', async (t) => {
  const { mkdtemp, readdir, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const dir = await mkdtemp(path.join(tmpdir(), 'coverage-cut-'));
  const whole = JSON.stringify({
    result: [],
    'source-map-cache': { 'file:///repo/src/a.ts': { data: { version: 3, sources: ['a'], mappings: 'AAAA', sourcesContent: [null] } } },
  });
  await writeFile(path.join(dir, 'whole.json'), whole);
  await writeFile(path.join(dir, 'cut.json'), whole.slice(0, Math.floor(whole.length / 2)));
  const named: string[] = [];
  t.equal(
    restoreSourceMaps(dir, (name) => named.push(name)),
    1,
    'the whole file is still fixed',
  );
  t.same(named, ['cut.json'], 'the cut file is named');
  t.same((await readdir(dir)).sort(), ['whole.json'], 'and removed, so the report reads only whole files');
});
