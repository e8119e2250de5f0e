// Owner catalogue: the whole catalogue (cached, pre-serialized, with ETag), one record, and the dry-run
// validator (owner or provider).
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { errors } from '../http/openapi.js';
import { etagMatches, type CachedBody } from '../registry/catalogue-cache.js';
import { ProviderId, ResourceId } from '../schemas/common.js';
import { AgentResource, ResourceList, ValidateResult } from '../schemas/resource.js';
import type { RouteDeps } from './deps.js';

/** Sends a cached catalogue body, or 304 when the client already holds it. */
export function sendCatalogue(reply: FastifyReply, ifNoneMatch: string | undefined, cached: CachedBody): FastifyReply {
  reply.header('etag', cached.etag).header('cache-control', 'private, no-cache');
  if (etagMatches(ifNoneMatch, cached.etag)) return reply.code(304).send();
  return reply.type('application/json; charset=utf-8').send(cached.body);
}

export const NotModified = Type.Null({ description: 'Not modified: the `If-None-Match` ETag is current; no body.' });

export const catalogueRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { registry, catalogue }) => {
  await app.register(async (scope) => {
    const owner = scope.withTypeProvider<TypeBoxTypeProvider>();
    protect(owner, [owner.requireOwner], ['ownerToken']);

    owner.get(
      '/resources',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'listResources',
        summary: 'Read the whole catalogue',
          description: 'All records sorted by id, optionally of one provider. Sends an `ETag`; answers `If-None-Match` with 304.',
          querystring: Type.Object({ provider: Type.Optional(ProviderId) }, { additionalProperties: false }),
          response: { 200: { ...ResourceList, description: 'The catalogue.' }, 304: NotModified, ...errors('validation_failed') },
        },
      },
      async (request, reply) => {
        const { provider } = request.query;
        const cached = await catalogue.get(await registry.revision(), provider === undefined ? 'all' : `provider:${provider}`, () =>
          provider === undefined ? registry.list() : registry.listByProvider(provider),
        );
        return sendCatalogue(reply, request.headers['if-none-match'], cached);
      },
    );

    owner.get(
      '/resources/:id',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'getResource',
        summary: 'Read one record',
          params: Type.Object({ id: ResourceId }),
          response: { 200: { ...AgentResource, description: 'The record.' }, ...errors('validation_failed', 'resource_not_found') },
        },
      },
      async (request) => registry.get(request.params.id),
    );
  });

  await app.register(async (scope) => {
    const checker = scope.withTypeProvider<TypeBoxTypeProvider>();
    protect(checker, [checker.requireOwner, checker.requireProvider], ['ownerToken', 'providerToken']);
    checker.post(
      '/resources/validate',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'validateResource',
        summary: 'Check a candidate record without storing it',
          description:
            'Reports every problem of a candidate record: schema rules, secrets, ownership (when the ID is taken), a name an agent could see twice (`duplicate_resource_name`: another ID with the same name ignoring case and surrounding space, of the host, or of the same machine, or any provider when the candidate is the host\'s) and `$VARIABLE`s outside the runtime set (`unknown_variable`, a warning). A provider checks a record as its own; the owner may name the `provider`. Nothing is stored.',
          body: Type.Unknown({ description: 'A candidate AgentResource: `{schemaVersion: 1, id, name, description, instructions, provider?}`.' }),
          response: { 200: { ...ValidateResult, description: 'The issues found (empty when valid).' }, ...errors('validation_failed') },
        },
      },
      async (request) => {
        const principal = request.principal!;
        return registry.validate(request.body, principal.kind === 'provider' ? principal.provider : undefined);
      },
    );
  });
};
