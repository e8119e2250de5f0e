// The per-area coverage gate of `npm test` (scripts/check-coverage.ts): an area under its threshold fails.
import t from 'tap';
import path from 'node:path';
import { areaOf, areaTotals, belowThresholds } from '../scripts/check-coverage.js';

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
  // dist/ is built before tap runs (npm test's openapi:check step), as for test/scripts-cli.test.ts.
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
