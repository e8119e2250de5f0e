// RFS: an agent reads the safe catalogue for its canvas with its canvas token: the host's records and
// those of the token's machine. A token for another canvas is 403 and reveals nothing.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { AppError } from '../errors.js';
import { protect } from '../http/auth.js';
import { errors } from '../http/openapi.js';
import { visibleOnMachine } from '../registry/resource-registry.js';
import { CanvasId, ResourceId } from '../schemas/common.js';
import { represent } from '../registry/resource-versions.js';
import { AnyAgentResource, AnyResourceList, SchemaVersionQuery } from '../schemas/resource.js';
import { CATALOGUE_HEADERS, NotModified, sendView } from './catalogue.js';
import type { RouteDeps } from './deps.js';

export const rfsRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { registry, catalogue }) => {
  protect(app, [app.requireCanvas], ['canvasToken']);
  app.addHook('onRequest', async (request) => {
    const principal = request.principal;
    const { canvasId } = request.params as { canvasId?: string };
    if (principal?.kind !== 'canvas' || principal.canvasId !== canvasId) {
      throw new AppError('forbidden', 'This token is not valid for this canvas.');
    }
  });

  app.get(
    '/resources',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'listRfsResources',
        summary: "Read the agent's catalogue",
        description:
          "The host's records and those of the token's machine, sorted by id, in the representation `schemaVersion` asks for (1, the default, or 2). Each representation has its own `ETag`; answers `If-None-Match` with 304. Sent compressed (`br` or `gzip`) when `Accept-Encoding` asks for it, from a copy compressed once per change of the catalogue, with its own `ETag` per coding.",
        params: Type.Object({ canvasId: CanvasId }),
        querystring: Type.Object({ schemaVersion: SchemaVersionQuery }, { additionalProperties: false }),
        response: { 200: { ...AnyResourceList, description: 'The records this agent may read about.', headers: CATALOGUE_HEADERS }, 304: NotModified, ...errors('validation_failed') },
      },
    },
    (request, reply) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const representation = request.query.schemaVersion ?? 1;
      return sendView(reply, request.headers, { catalogue, revision: registry.revision(), key: `machine:${machineId}`, representation }, () =>
        registry.listVisibleOnMachine(machineId),
      );
    },
  );

  app.get(
    '/resources/:id',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'getRfsResource',
        summary: 'Read one record',
        description: 'One record in the representation `schemaVersion` asks for (1, the default, or 2).',
        params: Type.Object({ canvasId: CanvasId, id: ResourceId }),
        querystring: Type.Object({ schemaVersion: SchemaVersionQuery }, { additionalProperties: false }),
        response: { 200: { ...AnyAgentResource, description: 'The record.' }, ...errors('validation_failed', 'resource_not_found') },
      },
    },
    async (request) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const { id } = request.params;
      const record = await registry.get(id).catch(() => undefined);
      if (!record || !visibleOnMachine(record.provider, machineId)) {
        throw new AppError('resource_not_found', `No resource with ID ${id} for this agent.`, { id });
      }
      return represent(record, request.query.schemaVersion ?? 1);
    },
  );
};
