// `npm start` runs dist/bundle/server.js: the compiled server joined with typebox by esbuild
// (scripts/bundle.mjs; for start-up time). The other suites start dist/src/server.js (whose
// coverage maps back to src/ line for line); this one proves the bundle is the same service: it starts,
// serves the same OpenAPI document, validates and serializes both record versions, scans a long text in its
// secret scan worker, answers errors in our
// envelope, stops cleanly on SIGTERM, and opens the PostgreSQL store, whose code it loads only then.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { sansDigest } from '../helpers/digest.js';
import { ensureBuilt } from '../helpers/built.js';
import { BUNDLE_ENTRY, startServer } from '../crash/server-process.js';
import { DATABASE_URL, freshDatabase } from '../helpers/postgres.js';

t.setTimeout(300_000);
// tap runs from the project's root; `npm test` runs this file compiled, under dist/test.
const ROOT = process.cwd();

/** The bare specifiers a bundle file imports statically (`import … from "x"` at top level). */
function staticImports(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^import\s[^;]*?from\s*"([^"]+)";?$/gm)].map((m) => m[1]!);
}

const env = (extra: Record<string, string>) => ({
  OWNER_TOKEN: CANARY.owner,
  HUABU_PROVIDER_TOKEN: CANARY.huabu,
  CANVAS_TOKEN_SECRET: CANARY.secret,
  SEED_HUABU_RESOURCES: 'false',
  // What is under test is the bundle, not the overload guard: on a busy machine an event-loop delay over the
  // default bound would answer 503 (test/http/limits.test.ts tests the guard).
  MAX_EVENT_LOOP_DELAY_MS: '0',
  ...extra,
});

async function call(origin: string, method: string, url: string, token?: string, body?: unknown) {
  const res = await fetch(origin + url, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

ensureBuilt();

t.test('the bundle holds our code and typebox; pg and the PostgreSQL store are not loaded with the JSON store', (t) => {
  const entryImports = staticImports(BUNDLE_ENTRY);
  const chunks = entryImports.filter((s) => s.startsWith('./chunks/')).map((s) => path.join(path.dirname(BUNDLE_ENTRY), s));
  const bare = [...entryImports, ...chunks.flatMap(staticImports)].filter((s) => !s.startsWith('.') && !s.startsWith('node:'));
  t.ok(bare.includes('fastify'), 'other dependencies stay imports from node_modules');
  t.notOk(
    bare.some((s) => s === 'typebox' || s.startsWith('typebox/')),
    'typebox is inside the bundle',
  );
  t.notOk(bare.includes('pg'), 'pg is not imported at start');
  t.notOk(bare.includes('cli-progress'), 'cli-progress (bars of `npm run migrate` and `npm run import`) is not imported at start');
  t.notOk(bare.includes('re2js'), 're2js and the secret rules are loaded by the first scan, not at start');
  t.ok(
    readdirSync(path.join(path.dirname(BUNDLE_ENTRY), 'chunks')).some((f) => f.startsWith('postgres-store-') && f.endsWith('.js')),
    'the PostgreSQL store is a chunk of its own',
  );
  t.end();
});

t.test('the bundled server serves the service: OpenAPI, both record versions, errors, SIGTERM', async (t) => {
  const server = await startServer(env({ DATA_DIR: await tempDataDir() }), 90_000, BUNDLE_ENTRY);
  t.teardown(() => server.kill());
  const docs = await call(server.origin, 'GET', '/docs/json');
  t.same(docs.body, JSON.parse(readFileSync(path.join(ROOT, 'openapi', 'openapi.json'), 'utf8')), 'the committed OpenAPI document');

  const v1 = { schemaVersion: 1, name: 'PDF grep', description: 'Searches PDFs.', instructions: 'Run $AGENT_RESOURCE_DIR/pdf-grep.sh.' };
  const v2 = { schemaVersion: 2, name: 'Web search', sourceContent: 'Search the public web.' };
  t.equal((await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/pdf-grep', CANARY.huabu, v1)).status, 201);
  t.equal((await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/web-search', CANARY.huabu, v2)).status, 201);
  t.same((await call(server.origin, 'GET', '/api/acp/resources/pdf-grep', CANARY.owner)).body, {
    ...v1,
    id: 'pdf-grep',
    provider: 'huabu',
  });
  t.same(sansDigest((await call(server.origin, 'GET', '/api/acp/resources/web-search?schemaVersion=2', CANARY.owner)).body), {
    ...v2,
    id: 'web-search',
    provider: 'huabu',
    userContent: '',
  });

  // A real skill longer than what is scanned inline: the bundle's secret scan worker (dist/bundle/scan-worker.js) scans it.
  const skill = readFileSync(
    path.join(ROOT, 'test', 'fixtures', 'skill-collections', 'anthropics-skills', 'mcp-builder', 'SKILL.md'),
    'utf8',
  );
  t.ok(skill.length > 4096, 'a skill scanned in a worker thread');
  const long = { schemaVersion: 2, name: 'PDF', sourceContent: skill };
  t.equal((await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/pdf', CANARY.huabu, long)).status, 201, 'clean: stored');
  const leaky = { ...long, sourceContent: `${skill}\nexport GITHUB_TOKEN=${'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}\n` };
  const refused = await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/pdf-leaky', CANARY.huabu, leaky);
  t.match(refused, { status: 422, body: { code: 'secret_detected' } }, 'a secret in it: refused');

  const bad = await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/bad', CANARY.huabu, {
    schemaVersion: 2,
    name: 'x',
    sourceContent: '   ',
  });
  t.equal(bad.status, 400);
  t.match(bad.body, { statusCode: 400, code: 'validation_failed' });
  const unauth = await call(server.origin, 'GET', '/api/acp/resources');
  t.match(unauth, { status: 401, body: { code: 'unauthorized' } });

  process.kill(server.pid, 'SIGTERM');
  let alive = true;
  for (let i = 0; i < 200 && alive; i++) {
    await sleep(50);
    try {
      process.kill(server.pid, 0);
    } catch {
      alive = false;
    }
  }
  t.notOk(alive, 'exits on SIGTERM');
  t.match(readFileSync(server.logFile, 'utf8'), /Server listening at/);
});

t.test('the bundled server on PostgreSQL', { skip: DATABASE_URL ? false : 'DATABASE_URL is not set' }, async (t) => {
  const url = await freshDatabase(t, DATABASE_URL!);
  const server = await startServer(env({ DATA_DIR: await tempDataDir(), DATABASE_URL: url }), 90_000, BUNDLE_ENTRY);
  t.teardown(() => server.kill());
  const put = await call(server.origin, 'PUT', '/api/acp/providers/huabu/resources/pdf-grep', CANARY.huabu, {
    schemaVersion: 1,
    name: 'PDF grep',
    description: 'Searches PDFs.',
    instructions: 'Run it.',
  });
  t.equal(put.status, 201);
  const ready = await call(server.origin, 'GET', '/readyz');
  t.equal(ready.status, 200);
  t.equal((await call(server.origin, 'GET', '/api/acp/resources/pdf-grep', CANARY.owner)).body.name, 'PDF grep');
});
