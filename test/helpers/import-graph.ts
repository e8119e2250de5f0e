// The import graph of the project's TypeScript sources, as TypeScript's parser reads them (`import`,
// `import type`, `export … from`, and dynamic `import('…')` unless left out): for the layering tests.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * Every module specifier `file` imports or re-exports, type-only imports included; with `dynamic`, the
 * `import('…')` calls too (a module loaded on demand).
 */
export function importsOf(file: string, dynamic = true): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
      specs.push(node.moduleSpecifier.text);
    else if (
      dynamic &&
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    )
      specs.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs;
}

/** The package a bare specifier names (`@scope/name` or `name`). */
export function packageOf(spec: string): string {
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
}

/** The local file a relative specifier names, relative to the working directory (`.js` read as its `.ts`). */
function resolveLocal(from: string, spec: string): string {
  return path.relative(process.cwd(), path.resolve(path.dirname(from), spec)).replace(/\.js$/, '.ts');
}

/** Every local module `entry` reaches through its imports (with `dynamic`, those loaded on demand too), and the packages they import. */
export function walk(entry: string, { dynamic = true } = {}): { local: string[]; packages: Set<string> } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [path.relative(process.cwd(), path.resolve(entry))];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of importsOf(file, dynamic)) {
      if (spec.startsWith('.')) queue.push(resolveLocal(file, spec));
      else packages.add(packageOf(spec));
    }
  }
  return { local: [...seen].sort(), packages };
}

/** Every `.ts` file under `dir` mapped to what it imports: local files (relative paths) and packages. */
export function graphOf(dir: string): Map<string, { local: string[]; packages: string[] }> {
  const graph = new Map<string, { local: string[]; packages: string[] }>();
  const visit = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) visit(full);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
        const specs = importsOf(full);
        graph.set(full, {
          local: specs.filter((s) => s.startsWith('.')).map((s) => resolveLocal(full, s)),
          packages: specs.filter((s) => !s.startsWith('.')).map(packageOf),
        });
      }
    }
  };
  visit(dir);
  return graph;
}

/** The import cycles of a graph: each strongly connected set of two or more files (or a file importing itself). */
export function cyclesOf(graph: Map<string, { local: string[] }>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)!.local) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const members: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      members.push(w);
    } while (w !== v);
    if (members.length > 1 || graph.get(v)!.local.includes(v)) cycles.push(members.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return cycles;
}
