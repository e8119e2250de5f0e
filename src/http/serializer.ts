// Response serializers compiled on first use (start-up). Fastify compiles every route's
// response schemas with fast-json-stringify while it boots — each build also makes its own Ajv instance for
// the schemas' `oneOf`/`anyOf` branches — which was a fifth of the start-up's CPU. Here the compiler for a
// route and status is the same one Fastify would use (@fastify/fast-json-stringify-compiler, the shared
// schemas and options it is given), built when that response is first sent and kept from then on.
// test/http/serializers.test.ts compiles every route's response schemas, so a broken one still fails the suite
// rather than a first request.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

export type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** `schemaController.compilersFactory.buildSerializer` for Fastify: the default compiler, deferred per route. */
export function lazySerializerFactory(eager: SerializerFactory = SerializerSelector()): SerializerFactory {
  return (externalSchemas, options) => {
    const compile = eager(externalSchemas, options);
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      return (doc) => (serialize ??= compile(route))(doc);
    };
  };
}
