// Owner: the capability snapshot as JSON, Graphviz DOT or SVG, narrowed by `?kind=`, with the snapshot
// digest as ETag (per coding: `"<digest>"`, `"<digest>-br"`, `"<digest>-gz"`; 304 on If-None-Match). A body's
// compressed copies are built once per snapshot digest and shared by later reads.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { clientGone } from '../http/expensive-work.js';
import { errors } from '../http/openapi.js';
import { sendEncoded } from '../http/compression.js';
import { CachedBody } from '../registry/catalogue-cache.js';
import { CapabilityQuery, CapabilitySnapshot } from '../schemas/capability.js';
import { MACHINE_ID, PROFILE } from './examples.js';
import { NotModified } from './catalogue.js';
import type { RouteDeps } from './deps.js';

/** The snapshot of the examples' world (src/routes/examples.ts): the host, one machine, its skill, one profile. */
const CAPABILITIES: CapabilitySnapshot = {
  digest: 'c0ffee5d41402abc4b2a76b9719d911017c592b8c3e0f1a2d4c6e8f0a1b3c5d7',
  components: [
    {
      id: `agent:${PROFILE.id}`,
      kind: 'agent',
      name: PROFILE.alias,
      description: `acp-harness agent on ${MACHINE_ID}, in ${PROFILE.workingDirPath}.`,
      tags: ['launch:acp-harness', `machine:${MACHINE_ID}`],
      aliases: [PROFILE.alias],
    },
    { id: `provider:${MACHINE_ID}`, kind: 'provider', name: MACHINE_ID, description: 'Agentlet machine.', tags: ['machine'], aliases: [] },
    { id: 'provider:huabu', kind: 'provider', name: 'huabu', description: 'The host application.', tags: ['host'], aliases: [] },
    {
      id: 'resource:pdf-grep',
      kind: 'resource',
      name: 'PDF grep',
      description: 'Searches text in PDF files.',
      tags: [`provider:${MACHINE_ID}`],
      aliases: [],
    },
    {
      id: 'resource:web-search',
      kind: 'resource',
      name: 'Web search',
      description: 'Searches the public web and answers titles, links and snippets.',
      tags: ['provider:huabu', 'required'],
      aliases: [],
    },
  ],
  edges: [
    { kind: 'placed-on', from: `agent:${PROFILE.id}`, to: `provider:${MACHINE_ID}` },
    { kind: 'selects', from: `agent:${PROFILE.id}`, to: 'resource:pdf-grep' },
    { kind: 'selects', from: `agent:${PROFILE.id}`, to: 'resource:web-search' },
    { kind: 'publishes', from: `provider:${MACHINE_ID}`, to: 'resource:pdf-grep' },
    { kind: 'publishes', from: 'provider:huabu', to: 'resource:web-search' },
    { kind: 'requires', from: 'provider:huabu', to: 'resource:web-search' },
  ],
  aliases: [{ alias: PROFILE.alias, component: `agent:${PROFILE.id}` }],
  diagnostics: [],
};

export const CONTENT_TYPES = {
  json: 'application/json; charset=utf-8',
  dot: 'text/vnd.graphviz; charset=utf-8',
  svg: 'image/svg+xml; charset=utf-8',
} as const;

export const capabilityRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (app, { capabilities, expensive }, done) => {
  protect(app, [app.requireOwner], ['ownerToken']);
  // The bodies sent at the current digest, per `?kind=` and format, with their compressed copies.
  const sent = new Map<string, CachedBody>();
  let sentDigest: string | undefined;
  const cachedBody = (key: string, digest: string, body: string): CachedBody => {
    if (digest !== sentDigest) {
      sentDigest = digest;
      sent.clear();
    }
    let cached = sent.get(key);
    if (cached?.body !== body) {
      cached = new CachedBody(body, `"${digest}"`);
      sent.set(key, cached);
    }
    return cached;
  };

  app.get(
    '/capabilities',
    {
      schema: {
        tags: ['capabilities'],
        operationId: 'getCapabilities',
        summary: 'Read the capability snapshot',
        description:
          'One read-only snapshot over everything the registry knows: components (`resource:<id>`, `agent:<profileId>`, `provider:huabu`, `provider:<machineId>`), edges (`publishes`, `selects`, `placed-on`, `requires`), alias bindings and diagnostics, sorted so equal states give equal bytes. `?format=dot` answers the Graphviz source (one cluster per kind), `?format=svg` the graph rendered (at most 800 components: narrow a larger registry with `?kind=` or read the DOT; else 413 `payload_too_large`). `?kind=` narrows the view: components of that kind, edges with either end of that kind, aliases bound to a kept component, and diagnostics naming at least one ID of that kind. The `ETag` is the digest of the whole snapshot, with `-br` or `-gz` when the body is sent compressed (`Accept-Encoding`, bodies of 1 KiB and more); `If-None-Match` with the ETag of the coding this request would get answers 304.',
        querystring: CapabilityQuery,
        response: {
          200: {
            description: 'The snapshot, in the format asked for.',
            headers: {
              etag: Type.String({
                description:
                  'The snapshot digest, quoted, one per coding: `"<digest>"` as it is, `"<digest>-br"` and `"<digest>-gz"` compressed. `If-None-Match` answers 304 only with the ETag of the coding this request would get.',
              }),
              vary: Type.Literal('Accept-Encoding', { description: "Always sent: the body's coding follows `Accept-Encoding`." }),
            },
            content: {
              'application/json': { schema: CapabilitySnapshot, example: CAPABILITIES },
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
      reply.header('cache-control', 'private, no-cache');
      const cached = cachedBody(`${request.query.kind ?? '*'}:${format}`, digest, body);
      return sendEncoded(reply, request.headers, cached, { type: CONTENT_TYPES[format] });
    },
  );
  done();
};
