// The examples of the served OpenAPI document, which Swagger UI at /docs shows under each operation: every
// JSON answer has an example of its own that its schema accepts; every error example is the envelope as
// sent (its code one the response documents, its statusCode the response's status); no query parameter
// carries an example (Swagger UI would fill it in as the value); and the document's metadata is the project's.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { build } from '../helpers/build.js';
import { ERROR_CODES } from '../../src/errors.js';

interface Media {
  schema?: Record<string, unknown>;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
interface Operation {
  operationId: string;
  parameters?: { in: string; name: string; example?: unknown; examples?: unknown; schema?: Record<string, unknown> }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content?: Record<string, Media> }>;
}
interface Document {
  info: { title: string; version: string; license?: { name: string; identifier?: string; url?: string } };
  paths: Record<string, Record<string, Operation>>;
}

function examplesOf(media: Media): [string, unknown][] {
  if (media.examples) return Object.entries(media.examples).map(([name, e]) => [name, e.value]);
  return media.example === undefined ? [] : [['example', media.example]];
}

/** A schema that says nothing of the body (`{}`, or only words): there is nothing an example could show. */
function open(schema: Record<string, unknown> | undefined): boolean {
  return schema === undefined || Object.keys(schema).every((k) => k === 'description' || k === 'title');
}

const h = await build(t);
const doc = (await h.app.inject({ url: '/openapi.json' })).json<Document>();
const operations = Object.entries(doc.paths).flatMap(([p, ops]) =>
  Object.entries(ops).map(([m, op]) => ({ route: `${m.toUpperCase()} ${p}`, op })),
);

t.test('the metadata is the project’s: MIT, the package’s name and version', (t) => {
  const pkg = JSON.parse(readFileSync(path.resolve('package.json'), 'utf8')) as { version: string; license: string };
  t.equal(pkg.license, 'MIT');
  t.same(doc.info.license, { name: 'MIT', identifier: 'MIT' });
  t.equal(doc.info.version, pkg.version, 'the version is package.json’s');
  t.equal(doc.info.title, 'Agent Resource Registry');
  t.end();
});

t.test('every JSON success answer has an example of its own that its schema accepts', (t) => {
  let checked = 0;
  for (const { route, op } of operations)
    for (const [status, response] of Object.entries(op.responses)) {
      if (Number(status) >= 300) continue;
      const media = response.content?.['application/json'];
      if (!media || open(media.schema)) continue;
      const examples = examplesOf(media);
      t.ok(examples.length > 0, `${route} ${status} has an example`);
      const check = Compile(media.schema!);
      for (const [name, value] of examples) {
        checked++;
        t.ok(check.Check(value), `${route} ${status} example ${name} fits its schema`, { errors: [...check.Errors(value)].slice(0, 5) });
      }
    }
  t.ok(checked >= 35, `${checked} success examples checked`);
  t.end();
});

t.test('every error answer has one example per documented code: that code, at that status, fitting the schema', (t) => {
  let checked = 0;
  for (const { route, op } of operations)
    for (const [status, response] of Object.entries(op.responses)) {
      if (Number(status) < 400) continue;
      const media = response.content?.['application/json'];
      if (!media) continue;
      const examples = examplesOf(media);
      t.ok(examples.length > 0, `${route} ${status} has an example`);
      const check = Compile(media.schema!);
      for (const [name, value] of examples)
        t.ok(check.Check(value), `${route} ${status} example ${name} fits its schema`, { errors: [...check.Errors(value)].slice(0, 5) });
      // This service's envelope (the MCP transport's own refusals are JSON-RPC errors, checked above alone).
      if (!JSON.stringify(media.schema).includes('"statusCode"')) continue;
      const documented = [...response.description.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!).filter((c) => Object.hasOwn(ERROR_CODES, c));
      t.ok(documented.length > 0, `${route} ${status} documents its codes`);
      const envelopes = examples
        .map(([, v]) => v as { statusCode?: number; code: keyof typeof ERROR_CODES })
        .filter((v) => v.statusCode !== undefined);
      t.same(envelopes.map((v) => v.code).sort(), [...documented].sort(), `${route} ${status}: one example per documented code`);
      for (const body of envelopes) {
        checked++;
        t.equal(body.statusCode, Number(status), `${route} ${status} ${body.code}: statusCode is the response's status`);
        t.equal(ERROR_CODES[body.code], Number(status), `${route} ${status} ${body.code} is sent with this status`);
      }
    }
  t.ok(checked >= 200, `${checked} error examples checked`);
  t.end();
});

t.test('request body examples fit their schemas', (t) => {
  for (const { route, op } of operations)
    for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
      if (open(media.schema)) continue;
      const check = Compile(media.schema!);
      for (const [name, value] of examplesOf(media))
        t.ok(check.Check(value), `${route} ${type} body example ${name} fits its schema`, { errors: [...check.Errors(value)].slice(0, 5) });
    }
  t.end();
});

t.test('no query parameter carries an example Swagger UI would fill in as its value', (t) => {
  const withExample = operations.flatMap(({ route, op }) =>
    (op.parameters ?? [])
      .filter(
        (p) =>
          p.in === 'query' &&
          (p.example !== undefined || p.examples !== undefined || p.schema?.example !== undefined || p.schema?.examples !== undefined),
      )
      .map((p) => `${route} ?${p.name}`),
  );
  t.same(withExample, []);
  const catalogue = doc.paths['/api/acp/resources']!.get!.parameters!.find((p) => p.name === 'provider');
  t.ok(catalogue, 'the catalogue still documents ?provider=');
  t.end();
});
