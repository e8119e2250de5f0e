// The server's layering: no import cycle in src/ (type-only imports count: each is a declaration in the wrong
// place), the domain folders stay free of the HTTP framework and its adapters, and only the configuration
// module reads the process environment.
import t from 'tap';
import { readFileSync } from 'node:fs';
import ts from 'typescript';
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

/** Where `file` reads the process environment: `process.env`, `process['env']`, or `env` imported from `node:process`. */
function environmentReads(file: string): number[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const lines: number[] = [];
  const at = (node: ts.Node) => lines.push(source.getLineAndCharacterOfPosition(node.getStart()).line + 1);
  const visit = (node: ts.Node) => {
    if (
      ts.isPropertyAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'process' &&
      node.name.text === 'env'
    )
      at(node);
    else if (
      ts.isElementAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'process' &&
      ts.isStringLiteral(node.argumentExpression) &&
      node.argumentExpression.text === 'env'
    )
      at(node);
    else if (
      ts.isImportDeclaration(node) &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      /^(node:)?process$/.test(node.moduleSpecifier.text) &&
      node.importClause?.namedBindings &&
      ts.isNamedImports(node.importClause.namedBindings) &&
      node.importClause.namedBindings.elements.some((e) => (e.propertyName ?? e.name).text === 'env')
    )
      at(node);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return lines;
}

// The service's settings are read and checked in one place (docs/configuration.md); the Agentlet's
// executable hands its own environment to its commands.
const READS_ENVIRONMENT = new Set(['src/config.ts', 'src/agentlet/cli.ts']);

t.test('only src/config.ts (and the Agentlet executable) reads the process environment', (t) => {
  const found = [...graph.keys()].flatMap((file) =>
    READS_ENVIRONMENT.has(file) ? [] : environmentReads(file).map((line) => `${file}:${line}`),
  );
  t.ok(environmentReads('src/agentlet/cli.ts').length > 0, 'the check sees a read (the Agentlet executable passes process.env on)');
  t.same(found, []);
  t.end();
});
