// Owner: the drift report of a launched thread, each pin against the record now (docs/profiles-and-launching.md, "Drift").
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { answer, errors } from '../http/openapi.js';
import { DIFF_MAX_BYTES, driftReport, type DriftSource } from '../registry/drift.js';
import { CanvasId, ResourceId } from '../schemas/common.js';
import { RecordDigest } from '../schemas/resource.js';
import { ThreadId } from '../schemas/workload.js';
import type { WorkloadService } from '../workloads/workload-service.js';
import { DRIFT_REPORT } from './examples.js';

export const DriftReport = Type.Object(
  {
    pins: Type.Array(
      Type.Object(
        {
          id: ResourceId,
          pinned: { ...RecordDigest, description: 'The digest the thread reads the record at (its pin).' },
          current: Type.Optional({ ...RecordDigest, description: "The record's digest now; absent once it was withdrawn." }),
          state: Type.Union([Type.Literal('same'), Type.Literal('changed'), Type.Literal('withdrawn')], {
            description: '`same`: the record is still at the pin; `changed`: it moved since; `withdrawn`: it is gone.',
          }),
          diff: Type.Optional(
            Type.String({
              description: `\`changed\` only: a unified diff from what the thread reads (the pinned revision) to the record now, of everything an agent reads of it (its name, provider and whole guidance). At most ${DIFF_MAX_BYTES} bytes.`,
            }),
          ),
          diffTruncated: Type.Optional(
            Type.Literal(true, {
              description:
                'The diff was cut at its bound (or compared only the heads of two very different texts): read both revisions for the rest.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { description: "In the workload's pin order; `[]` for a workload realized before pins existed." },
    ),
  },
  { additionalProperties: false, title: 'DriftReport' },
);

export const driftRoutes: FastifyPluginCallbackTypebox<{ workloads: WorkloadService; source: DriftSource }> = (
  app,
  { workloads, source },
  done,
) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.get(
    '/workloads/:canvasId/:threadId/drift',
    {
      schema: {
        operationId: 'getWorkloadDrift',
        tags: ['workloads'],
        summary: "Compare a thread's pins with the records now",
        description:
          'Each resource the thread was launched with, its pin against the record now: `same`, `changed` (with a unified diff of what an agent reads, bounded) or `withdrawn`. A change is also announced as a `workload.drifted` event. 404 `workload_not_found` for a thread never launched on the canvas; a workload realized before pins existed answers `{pins: []}`.',
        params: Type.Object({ canvasId: CanvasId, threadId: ThreadId }),
        response: {
          200: answer(DriftReport, 'The pins, in order.', DRIFT_REPORT),
          ...errors('validation_failed', 'workload_not_found'),
        },
      },
    },
    async (request) => driftReport(source, await workloads.get(request.params.canvasId, request.params.threadId)),
  );
  done();
};
