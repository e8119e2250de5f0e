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
import { LaunchAnswer, LaunchBody, PinMoveBody, ThreadId, WorkloadList, WorkloadRecord } from '../schemas/workload.js';
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
  { workloads, metrics, threads },
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
          "Resolves the thread's resources: `resourceIds` (when given) replaces the profile's selection, and the host's required defaults come first: `effective = dedupe([...required, ...selected])`. Every effective ID must resolve and be eligible for the profile's machine, else 422 and nothing is written. The first successful launch of a canvas/thread realizes it (201) and pins the record durably; a repeat that asks for nothing different returns the stored record (200); one that asks for another profile, directory, resource list or preamble is 409 `workload_already_realized`. A profile with `resourcePins` pins the content it approved for those IDs even when the records changed since (the thread reads that content; a revision no longer kept is 422 `unknown_pinned_revision`), and its answers carry `pendingUpdates`: the approved records whose content is another now.",
        body: { ...LaunchBody, examples: [launchExample] },
        response: {
          201: answer(LaunchAnswer, 'Realized: the durable workload record.', WORKLOAD),
          200: answer(LaunchAnswer, 'Already realized with the same request: the stored record.', WORKLOAD),
          ...errors(
            'validation_failed',
            'profile_not_found',
            'invalid_profile_kind',
            'workload_already_realized',
            'secret_detected',
            'unresolved_resource_ids',
            'resource_not_eligible',
            'capability_diagnostics_failed',
            'unknown_pinned_revision',
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

  app.post(
    '/workloads/:canvasId/:threadId/pins',
    {
      schema: {
        operationId: 'moveWorkloadPin',
        tags: ['workloads'],
        summary: "Move one of a thread's pins (approve a record's content now)",
        description:
          "Moves the thread's pin of `id` from `from` (its pin now, else 409 `pin_conflict`; also for an ID the thread does not pin) to `to` (the record's digest now, else 409 `pin_stale`; also for a withdrawn record). A compare-and-set: of two moves from the same `from`, one wins and the other is 409 `pin_conflict`; a refusal writes nothing. The move, its audit entry and the event `workload.repinned` are stored together; the thread's RFS and MCP reads serve the new pin from then on. A workload with an attestation gets a new one over its new pins, signed at the move (`repinnedAt` in its predicate). Answers the workload record. Malformed digests are 400 `invalid_input`; an unknown thread 404 `workload_not_found`.",
        params: Type.Object({ canvasId: CanvasId, threadId: ThreadId }),
        body: { ...PinMoveBody, examples: [{ id: 'web-search', from: `sha256:${'9'.repeat(64)}`, to: `sha256:${'3'.repeat(64)}` }] },
        response: {
          200: answer(WorkloadRecord, 'Moved: the workload record with its new pin.', WORKLOAD),
          ...errors('validation_failed', 'invalid_input', 'workload_not_found', 'pin_conflict', 'pin_stale', 'storage_unavailable'),
        },
      },
    },
    async (request) => {
      const { canvasId, threadId } = request.params;
      const moved = await workloads.movePin({ canvasId, threadId, ...request.body }, actorOf(request.principal!));
      threads.forget(canvasId, threadId);
      return moved;
    },
  );
  done();
};
