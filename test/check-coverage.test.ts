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

t.test('files group by their folder under src/', async (t) => {
  t.equal(areaOf(path.join(root, 'src/app.ts'), root), 'src');
  t.equal(areaOf(path.join(root, 'src/registry/ownership.ts'), root), 'src/registry');
  t.equal(areaOf(path.join(root, 'src/storage/postgres/postgres-store.ts'), root), 'src/storage/postgres');
  t.equal(areaOf(path.join(root, 'scripts/migrate.ts'), root), undefined);
});

t.test('an area under its threshold is reported; one at or above it is not', async (t) => {
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
  t.same(belowThresholds(areas, { 'src/registry': { lines: 85.1, functions: 80 } }), [{ area: 'src/registry', metric: 'lines', pct: 85, min: 85.1 }]);
  t.same(belowThresholds(areas, { 'src/gone': { lines: 1 } }), [{ area: 'src/gone', metric: 'lines', pct: 0, min: 1 }], 'a missing area counts as 0 %');
});
