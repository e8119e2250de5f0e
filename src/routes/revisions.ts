// The owner's view of a record's history: its kept revisions, and one of them in either representation
// (docs/decisions/record-digest.md).
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { answer, errors } from '../http/openapi.js';
import { AT, PDF_GREP_V1, PDF_GREP_V2 } from './examples.js';
import { represent } from '../registry/resource-versions.js';
import { ResourceId } from '../schemas/common.js';
import { AnyAgentResource, CompatSchemaVersionQuery, RecordDigest } from '../schemas/resource.js';
import { defaultRepresentation } from './catalogue.js';
import type { RouteDeps } from './deps.js';

export const RevisionList = Type.Object(
  {
    id: ResourceId,
    current: Type.Union([RecordDigest, Type.Null()], { description: "The record's digest now; `null` once it was withdrawn." }),
    revisions: Type.Array(
      Type.Object(
        {
          digest: RecordDigest,
          provider: Type.String({ description: 'The provider that held the record then.' }),
          createdAt: Type.String({ format: 'date-time', description: 'When this content became the record’s (last).' }),
        },
        { additionalProperties: false },
      ),
      { description: 'Newest first; the current content is the first while the record exists.' },
    ),
  },
  { additionalProperties: false, title: 'RevisionList' },
);

export const revisionRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { registry, config }) => {
  const byDefault = defaultRepresentation(config);
  await app.register((scope, _options, done) => {
    const owner = scope.withTypeProvider<TypeBoxTypeProvider>();
    protect(owner, [owner.requireOwner], ['ownerToken']);

    owner.get(
      '/resources/:id/revisions',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'listResourceRevisions',
          summary: "List a record's kept revisions",
          description:
            'The revisions the registry keeps of the record, newest first: each write that changed its digest kept one. Kept: the last 20 per ID, every one a stored workload or profile pins, and the current one; a withdrawn record keeps them (`current` is then `null`).',
          params: Type.Object({ id: ResourceId }),
          response: {
            200: answer(RevisionList, 'The revisions.', {
              id: PDF_GREP_V2.id,
              current: `sha256:${'3'.repeat(64)}`,
              revisions: [
                { digest: `sha256:${'3'.repeat(64)}`, provider: PDF_GREP_V2.provider, createdAt: AT },
                { digest: `sha256:${'9'.repeat(64)}`, provider: PDF_GREP_V2.provider, createdAt: '2026-03-13T17:02:11.000Z' },
              ],
            }),
            ...errors('validation_failed', 'resource_not_found'),
          },
        },
      },
      async (request) => registry.revisionsOf(request.params.id),
    );

    owner.get(
      '/resources/:id/revisions/:digest',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'getResourceRevision',
          summary: 'Read one kept revision',
          description:
            'The record as that revision held it, in the representation `schemaVersion` asks for (as the catalogue: 1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`); record v2 carries its `digest`. 400 `invalid_input` for a digest that is not `sha256:<64 hex>`; 404 `revision_not_found` when no such revision is kept.',
          params: Type.Object({ id: ResourceId, digest: Type.String({ maxLength: 256, description: '`sha256:<64 hex>`' }) }),
          querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery }, { additionalProperties: false }),
          response: {
            200: answer(AnyAgentResource, 'The revision.', PDF_GREP_V1, { ...PDF_GREP_V2, digest: `sha256:${'9'.repeat(64)}` }),
            ...errors('validation_failed', 'invalid_input', 'revision_not_found'),
          },
        },
      },
      async (request, reply) => {
        const revision = await registry.revisionOf(request.params.id, request.params.digest);
        reply.header('x-resource-digest', revision.digest);
        return represent(revision.record, request.query.schemaVersion ?? byDefault);
      },
    );
    done();
  });
};
