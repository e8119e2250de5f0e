// Response serializers are compiled when a response is first sent, not while the server boots (start-up
// time), and every route's response schemas still compile: a broken schema fails here, not on a
// user's first request.
import t from 'tap';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { lazySerializerFactory, type SerializerFactory } from '../../src/http/serializer.js';
import { build } from '../helpers/build.js';

type Route = Parameters<ReturnType<SerializerFactory>>[0];

/** The default (eager) compiler, counting what it compiles; and every route/status Fastify asked for. */
function watched() {
  const compiled: string[] = [];
  const asked: Route[] = [];
  const eager = SerializerSelector();
  const counting: SerializerFactory = (external, options) => {
    const compile = eager(external, options);
    return (route) => {
      compiled.push(`${route.method} ${route.url} ${route.httpStatus}`);
      return compile(route);
    };
  };
  const lazy = lazySerializerFactory(counting);
  const factory: SerializerFactory = (external, options) => {
    const compile = lazy(external, options);
    return (route) => {
      asked.push(route);
      return compile(route);
    };
  };
  return { factory, compiled, asked, eager };
}

t.test('nothing is compiled while the app boots; a response is compiled once, when first sent', async (t) => {
  const w = watched();
  const { app, owner, huabu } = await build(t, { serializerFactory: w.factory });
  await app.ready();
  t.ok(w.asked.length > 40, `Fastify handed over the routes' response schemas (${w.asked.length})`);
  t.same(w.compiled, [], 'no serializer compiled at boot');

  const put = await app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources/web-search',
    headers: huabu,
    payload: { schemaVersion: 1, name: 'Web search', description: 'Searches the web.', instructions: 'Ask the host.' },
  });
  t.equal(put.statusCode, 201);
  t.same(
    put.json(),
    {
      schemaVersion: 1,
      id: 'web-search',
      name: 'Web search',
      provider: 'huabu',
      description: 'Searches the web.',
      instructions: 'Ask the host.',
    },
    'serialized by the schema, field for field',
  );
  const one = '/api/acp/resources/web-search';
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ url: one, headers: owner });
    t.equal(res.statusCode, 200);
    t.equal(res.json().id, 'web-search');
  }
  const forOne = w.compiled.filter((c) => c === `GET ${one.replace('web-search', ':id')} 200`);
  t.equal(forOne.length, 1, 'GET one resource 200: compiled once for three responses');
});

t.test("every route's response schema compiles", async (t) => {
  const w = watched();
  const { app } = await build(t, { serializerFactory: w.factory });
  await app.ready();
  const failures: string[] = [];
  for (const route of w.asked) {
    try {
      // The compiler the lazy one defers to, with the schemas Fastify passed: as a first request would.
      w.eager(undefined, undefined)(route);
    } catch (err) {
      failures.push(`${route.method} ${route.url} ${route.httpStatus}: ${(err as Error).message}`);
    }
  }
  t.same(failures, [], `${w.asked.length} response schemas compile`);
});
