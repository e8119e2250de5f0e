// docs/CONTRACT.md's route tables are generated from the route schemas (scripts/contract-routes.ts, run by
// `npm run generate`): the committed page must be what the code generates now, and a route's words change
// in one place, its schema.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from '../helpers/build.js';
import { BEGIN, END, routeTables, withRouteTables } from '../../scripts/contract-routes.js';

const CONTRACT = path.resolve('docs/CONTRACT.md');

const h = await build(t);
await h.app.ready();
const doc = h.app.swagger() as Parameters<typeof routeTables>[0];

t.test('docs/CONTRACT.md holds the route tables the route schemas generate', (t) => {
  const committed = readFileSync(CONTRACT, 'utf8');
  const fresh = withRouteTables(committed, doc);
  if (committed !== fresh)
    t.fail("docs/CONTRACT.md's route tables are out of date with the route schemas; run `npm run generate` and commit the result");
  else t.pass('up to date');
  t.end();
});

t.test('every operation has a row, under its tag, with its summary, caller and codes', (t) => {
  const tables = routeTables(doc);
  let rows = 0;
  for (const [urlPath, operations] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(operations)) {
      rows++;
      const route = `\`${method.toUpperCase()} ${urlPath.replace(/\{([^}]+)\}/g, ':$1')}\``;
      const row = tables.split('\n').find((line) => line.startsWith(`| ${route} |`));
      t.ok(row, `${route} has a row`);
      if (op.summary) t.ok(row?.includes(op.summary.replace(/\|/g, '\\|')), `${route} shows its summary`);
    }
  t.ok(rows > 40, `${rows} operations`);
  const catalogue = tables.split('\n').find((line) => line.startsWith('| `GET /api/acp/resources/:id` |'))!;
  t.match(catalogue, /\| owner \|/, 'the caller comes from the security schemes');
  t.match(catalogue, /404 `resource_not_found`/, 'the codes come from the responses');
  t.notMatch(catalogue, /unauthorized/, 'the refusals every protected route answers are said once, not per row');
  t.end();
});

t.test("a route's summary changes the page in one place: its schema", (t) => {
  const changed = structuredClone(doc);
  changed.paths['/healthz']!.get!.summary = 'Is the process alive?';
  const page = withRouteTables(`intro\n${BEGIN}\nan old generated table\n${END}\noutro\n`, changed);
  t.match(page, /\| `GET \/healthz` \| anyone \| \*\*Is the process alive\?\*\*/);
  t.notMatch(page, /an old generated table/, 'the generated part is replaced whole'); // (`pin_stale` is a code the tables name)
  t.match(page, /^intro\n/, 'the hand-written part before stays');
  t.match(page, /outro\n$/, 'and after');
  t.throws(() => withRouteTables('no markers', doc), /must hold the markers/);
  t.end();
});
