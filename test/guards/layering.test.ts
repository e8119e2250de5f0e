// The server's layering: no import cycle in src/ (type-only imports count: each is a declaration in the wrong
// place), and the domain folders stay free of the HTTP framework and its adapters.
import t from 'tap';
import { cyclesOf, graphOf } from '../helpers/import-graph.js';

const graph = graphOf('src');

t.test('src/ has no import cycle, type-only imports included', (t) => {
  t.ok(graph.size > 100, `the graph holds the sources (${graph.size} files)`);
  t.ok(graph.get('src/app.ts')!.local.includes('src/routes/providers.ts'), 'the graph follows imports');
  t.same(cyclesOf(graph), []);
  t.end();
});

t.test('a cycle through a type-only import is one', (t) => {
  const made = new Map([
    ['a.ts', { local: ['b.ts'], packages: [] }],
    ['b.ts', { local: ['c.ts'], packages: [] }],
    ['c.ts', { local: ['a.ts'], packages: [] }],
    ['d.ts', { local: ['a.ts'], packages: [] }],
  ]);
  t.same(cyclesOf(made), [['a.ts', 'b.ts', 'c.ts']]);
  t.end();
});

const DOMAIN = /^src\/(registry|profiles|workloads|capabilities|migrations|machines|credentials|secrets|audit|text|invocation|channel)\//;
const ADAPTERS = /^src\/(http|routes)\/|^src\/(app|server)\.ts$/;

t.test('the framework-free core (docs/layout.md) imports no Fastify, HTTP adapter or route', (t) => {
  const domain = [...graph].filter(([file]) => DOMAIN.test(file));
  t.ok(domain.length > 10, `${domain.length} domain files`);
  const found: string[] = [];
  for (const [file, { local, packages }] of domain) {
    for (const dep of local) if (ADAPTERS.test(dep)) found.push(`${file} → ${dep}`);
    for (const dep of packages) if (/fastify/.test(dep)) found.push(`${file} → ${dep}`);
  }
  t.same(found, []);
  t.end();
});
