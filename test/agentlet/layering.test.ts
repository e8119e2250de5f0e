// The Agentlet client is framework-free: nothing it imports, directly or through shared modules, reaches
// Fastify, the HTTP adapters or the server's process code.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';

function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);
}

/** Every local module `entry` reaches through static imports, and the packages they import. */
function walk(entry: string): { local: string[]; packages: Set<string> } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [path.resolve(entry)];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of importsOf(file)) {
      if (spec.startsWith('.')) queue.push(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  return { local: [...seen].map((f) => path.relative(process.cwd(), f)).sort(), packages };
}

// `serve` is loaded by the CLI on demand; it may log with pino, and reaches nothing of the server either.
t.test('src/agentlet/serve.ts reaches no Fastify module, HTTP adapter or store', (t) => {
  const { local, packages } = walk('src/agentlet/serve.ts');
  t.ok(local.includes('src/agentlet/channel-client.ts') && local.includes('src/agentlet/jobs.ts'), 'the walk follows imports');
  t.same(
    local.filter((f) => /^src\/(http|routes|app|server|registry|channel|storage\/(?!durable-file))/.test(f)),
    [],
    'no HTTP adapter, route, app, channel service or store module',
  );
  t.same(
    [...packages].filter((p) => /fastify/.test(p)),
    [],
    `packages: ${[...packages].sort().join(', ')}`,
  );
  t.end();
});

t.test('src/agentlet/cli.ts reaches no Fastify module', (t) => {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [path.resolve('src/agentlet/cli.ts')];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of importsOf(file)) {
      if (spec.startsWith('.')) queue.push(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'));
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
    }
  }
  const local = [...seen].map((f) => path.relative(process.cwd(), f)).sort();
  t.ok(local.includes('src/agentlet/registry-client.ts') && local.includes('src/schemas/resource.ts'), 'the walk follows imports');
  t.same(
    local.filter((f) => /^src\/(http|routes|app|server|registry|storage\/(?!durable-file))/.test(f)),
    [],
    'no HTTP adapter, route, app or store module',
  );
  t.same(
    [...packages].filter((p) => /fastify|pino/.test(p)),
    [],
    `packages: ${[...packages].sort().join(', ')}`,
  );
  t.end();
});

// The typed client is published with no dependencies: its sources import only each other and Node's built-ins.
t.test('packages/client imports no package, and the CLI reaches the registry through it', (t) => {
  const { local, packages } = walk('packages/client/src/index.ts');
  t.ok(local.includes('packages/client/src/client.ts'), 'the walk follows imports');
  t.same(
    [...packages].filter((p) => !p.startsWith('node:')),
    [],
    'no package imported',
  );
  t.ok(
    walk('src/agentlet/registry-client.ts').packages.has('@agent-resource-registry/client'),
    'registry-client.ts imports the client by name',
  );
  t.end();
});
