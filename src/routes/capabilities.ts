// Owner: the capability snapshot as JSON, Graphviz DOT or SVG, narrowed by `?kind=`, with the snapshot
// digest as ETag (304 on If-None-Match).
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { clientGone } from '../http/expensive-work.js';
import { errors } from '../http/openapi.js';
import { etagMatches } from '../registry/catalogue-cache.js';
import { CapabilityQuery, CapabilitySnapshot } from '../schemas/capability.js';
import { NotModified } from './catalogue.js';
import type { RouteDeps } from './deps.js';

export const CONTENT_TYPES = {
  json: 'application/json; charset=utf-8',
  dot: 'text/vnd.graphviz; charset=utf-8',
  svg: 'image/svg+xml; charset=utf-8',
} as const;

export const capabilityRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (app, { capabilities, expensive }, done) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.get(
    '/capabilities',
    {
      schema: {
        tags: ['capabilities'],
        operationId: 'getCapabilities',
        summary: 'Read the capability snapshot',
        description:
          'One read-only snapshot over everything the registry knows: components (`resource:<id>`, `agent:<profileId>`, `provider:huabu`, `provider:<machineId>`), edges (`publishes`, `selects`, `placed-on`, `requires`), alias bindings and diagnostics, sorted so equal states give equal bytes. `?format=dot` answers the Graphviz source (one cluster per kind), `?format=svg` the graph rendered (at most 800 components: narrow a larger registry with `?kind=` or read the DOT; else 413 `payload_too_large`). `?kind=` narrows the view: components of that kind, edges with either end of that kind, aliases bound to a kept component, and diagnostics naming at least one ID of that kind. The `ETag` is the digest of the whole snapshot; `If-None-Match` with it answers 304.',
        querystring: CapabilityQuery,
        response: {
          200: {
            description: 'The snapshot, in the format asked for.',
            headers: { etag: Type.String({ description: 'The snapshot digest, quoted.' }) },
            content: {
              'application/json': { schema: CapabilitySnapshot },
              'text/vnd.graphviz': { schema: Type.String({ description: 'A Graphviz `digraph`.' }) },
              'image/svg+xml': { schema: Type.String({ description: 'The graph rendered as SVG.' }) },
            },
          },
          304: NotModified,
          ...errors('validation_failed', 'payload_too_large', 'rate_limited'),
        },
      },
    },
    async (request, reply) => {
      const format = request.query.format ?? 'json';
      const { digest, body } =
        format === 'svg'
          ? await expensive.run(request, () => capabilities.render(request.query.kind, format, clientGone(reply)))
          : await capabilities.render(request.query.kind, format);
      const etag = `"${digest}"`;
      reply.header('etag', etag).header('cache-control', 'private, no-cache');
      if (etagMatches(request.headers['if-none-match'], etag)) return reply.code(304).send(null);
      return reply.type(CONTENT_TYPES[format]).send(body);
    },
  );
  done();
};
