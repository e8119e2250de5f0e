// The references a user looks things up in are complete: every error code the service can answer is in
// docs/errors.md with its status, every setting the service reads is in docs/configuration.md, and
// docs/CONTRACT.md names every route the running app serves (and no other) and every change event type; and
// the pages kept short stay short.
import t from 'tap';
import { readdir, readFile, stat } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../src/errors.js';
import { Env } from '../../src/config.js';
import { CHANGE_EVENT_TYPES } from '../../src/registry/events.js';
import { build } from '../helpers/build.js';

t.test('docs/errors.md lists every error code with its status', async (t) => {
  const doc = await readFile('docs/errors.md', 'utf8');
  const missing = Object.entries(ERROR_CODES).filter(
    ([code, status]) => !new RegExp(`^\\|\\s*${status}\\s*\\|\\s*\`${code}\``, 'm').test(doc),
  );
  t.same(missing, [], 'each code in a table row beginning with its status');
});

t.test('docs/configuration.md names every setting', async (t) => {
  const doc = await readFile('docs/configuration.md', 'utf8');
  const missing = Object.keys(Env.properties).filter((name) => !new RegExp(`\`${name}[=\`]`).test(doc));
  t.same(missing, [], 'each environment variable the service reads');
});

/**
 * Every `METHOD /path` the app serves, read from Fastify's route tree (`printRoutes`), so a route counts
 * whether or not it is in the OpenAPI document. Path parameters are written `:` (their names differ between
 * routes that share a tree node: `:machineId|:provider`). HEAD is left out: every GET answers it.
 */
function servedRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([^)]*)\))?$/u.exec(line);
    if (!match) continue;
    const depth = [...match[1]!].length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    const methods = (match[3] ?? '').split(',').map((m) => m.trim());
    for (const method of methods) if (/^[A-Z]+$/.test(method) && method !== 'HEAD') routes.push(`${method} ${stack.join('')}`);
  }
  return [...new Set(routes.map(normalizeRoute))].sort();
}

function normalizeRoute(route: string): string {
  return route.replace(/:[A-Za-z]+(\|:[A-Za-z]+)*/g, ':');
}

t.test('docs/CONTRACT.md has a row for every route the app serves, and none it does not', async (t) => {
  const h = await build(t);
  await h.app.ready();
  // The Swagger UI's own pages and assets under /docs/ are one entry, `GET /docs`.
  const served = servedRoutes(h.app).filter((route) => !route.startsWith('GET /docs/'));
  t.ok(
    served.includes('GET /healthz') && served.includes('DELETE /api/acp/machines/:'),
    `the route tree is read (${served.length} routes)`,
  );
  const doc = await readFile('docs/CONTRACT.md', 'utf8');
  const rows = [...doc.matchAll(/^\|\s*`((?:GET|POST|PUT|PATCH|DELETE) \/\S*)`\s*\|/gm)].map((m) => normalizeRoute(m[1]!));
  t.same(
    served.filter((route) => !rows.includes(route)),
    [],
    'every served route has a row beginning with `METHOD /path`',
  );
  t.same(
    rows.filter((route) => !served.includes(route)),
    [],
    'every documented route is served',
  );
});

t.test('docs/CONTRACT.md and docs/events.md name every change event type', async (t) => {
  for (const file of ['docs/CONTRACT.md', 'docs/events.md']) {
    const doc = await readFile(file, 'utf8');
    const rows = doc.split('\n').filter((line) => line.startsWith('|'));
    t.same(
      CHANGE_EVENT_TYPES.filter((type) => !rows.some((row) => row.includes(`\`${type}\``))),
      [],
      `${file}: each type in a table row`,
    );
  }
});

t.test('pages stay short enough to read: BENCHMARKS.md holds the current figures, a decision record one decision', async (t) => {
  t.ok((await stat('BENCHMARKS.md')).size <= 24 * 1024, 'BENCHMARKS.md is at most 24 KiB (earlier figures are in git)');
  const records = (await readdir('docs/decisions')).filter((f) => f.endsWith('.md'));
  t.ok(records.length > 50, `${records.length} decision records`);
  const long: string[] = [];
  for (const file of records) {
    const { size } = await stat(`docs/decisions/${file}`);
    if (size > 8 * 1024) long.push(`${file}: ${size} bytes`);
  }
  t.same(long, [], 'each decision record is at most 8 KiB');
});
