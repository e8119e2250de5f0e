// The Agentlet client is framework-free: nothing it imports, directly or through shared modules, reaches
// Fastify, the HTTP adapters or the server's process code.
import t from 'tap';
import { walk } from '../helpers/import-graph.js';

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

// The CLI loads `serve` (and with it pino) on demand: its static imports reach neither.
t.test('src/agentlet/cli.ts reaches no Fastify module', (t) => {
  const { local, packages } = walk('src/agentlet/cli.ts', { dynamic: false });
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

// The typed client is published with one dependency, openapi-fetch: its sources import only each other,
// that package and Node's built-ins.
t.test('packages/client imports only openapi-fetch, and the CLI reaches the registry through it', (t) => {
  const { local, packages } = walk('packages/client/src/index.ts');
  t.ok(local.includes('packages/client/src/client.ts'), 'the walk follows imports');
  t.same(
    [...packages].filter((p) => !p.startsWith('node:')),
    ['openapi-fetch'],
    'openapi-fetch alone',
  );
  t.ok(
    walk('src/agentlet/registry-client.ts').packages.has('@agent-resource-registry/client'),
    'registry-client.ts imports the client by name',
  );
  t.end();
});
