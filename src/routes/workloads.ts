// Owner: launch an agent thread (realize it once, pinning its effective resources) and read workloads.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { isAppError } from '../errors.js';
import { protect } from '../http/auth.js';
import { answer, errors } from '../http/openapi.js';
import { WORKLOAD } from './examples.js';
import type { Metrics } from '../metrics.js';
import { CanvasId } from '../schemas/common.js';
import { LaunchBody, ThreadId, WorkloadList, WorkloadRecord } from '../schemas/workload.js';
import { launchAnswer, type WorkloadService } from '../workloads/workload-service.js';
import type { RouteDeps } from './deps.js';

const launchExample = {
  profileId: 'prf-k7m2q9x4b8n3c5vd',
  canvasId: 'canvas-42',
  threadId: 'thread-1',
  resourceIds: ['web-search'],
};

export const workloadRoutes: FastifyPluginCallbackTypebox<RouteDeps & { workloads: WorkloadService; metrics: Metrics }> = (
  app,
  { workloads, metrics },
  done,
) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.post(
    '/launch',
    {
      schema: {
        operationId: 'launch',
        tags: ['workloads'],
        summary: 'Launch an agent thread',
        description:
          "Resolves the thread's resources: `resourceIds` (when given) replaces the profile's selection, and the host's required defaults come first: `effective = dedupe([...required, ...selected])`. Every effective ID must resolve and be eligible for the profile's machine, else 422 and nothing is written. The first successful launch of a canvas/thread realizes it (201) and pins the record durably; a repeat that asks for nothing different returns the stored record (200); one that asks for another profile, directory, resource list or preamble is 409 `workload_already_realized`.",
        body: { ...LaunchBody, examples: [launchExample] },
        response: {
          201: answer(WorkloadRecord, 'Realized: the durable workload record.', WORKLOAD),
          200: answer(WorkloadRecord, 'Already realized with the same request: the stored record.', WORKLOAD),
          ...errors(
            'validation_failed',
            'profile_not_found',
            'invalid_profile_kind',
            'workload_already_realized',
            'secret_detected',
            'unresolved_resource_ids',
            'resource_not_eligible',
            'capability_diagnostics_failed',
            'storage_unavailable',
          ),
        },
      },
    },
    async (request, reply) => {
      try {
        const result = await workloads.launch(request.body, actorOf(request.principal!));
        metrics.launchOutcomes.inc({ outcome: result.realized ? 'realized' : 'repeated' });
        reply.code(result.realized ? 201 : 200);
        return launchAnswer(result);
      } catch (err) {
        metrics.launchOutcomes.inc({ outcome: isAppError(err) ? err.code : 'internal_error' });
        throw err;
      }
    },
  );

  app.get(
    '/workloads',
    {
      schema: {
        operationId: 'listWorkloads',
        tags: ['workloads'],
        summary: "List a canvas's workloads",
        description:
          "The canvas's realized threads: each workload as its first launch snapshotted it (effective resource IDs, bootstrap, environment by variable, the MCP server entry). A canvas with none answers an empty list.",
        querystring: Type.Object({ canvasId: CanvasId }, { additionalProperties: false }),
        response: {
          200: answer(WorkloadList, 'The realized threads of the canvas.', { workloads: [WORKLOAD] }),
          ...errors('validation_failed'),
        },
      },
    },
    async (request) => ({ workloads: [...(await workloads.list(request.query.canvasId))] }),
  );

  app.get(
    '/workloads/:canvasId/:threadId',
    {
      schema: {
        operationId: 'getWorkload',
        tags: ['workloads'],
        summary: 'Read one workload',
        description:
          "One thread's workload as its first launch snapshotted it; 404 `workload_not_found` for a thread never launched on the canvas.",
        params: Type.Object({ canvasId: CanvasId, threadId: ThreadId }),
        response: { 200: answer(WorkloadRecord, 'The workload record.', WORKLOAD), ...errors('validation_failed', 'workload_not_found') },
      },
    },
    async (request) => workloads.get(request.params.canvasId, request.params.threadId),
  );
  done();
};
