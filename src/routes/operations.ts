// Operations routes (no credential): liveness and readiness.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { AppError } from '../errors.js';
import { answer, errors } from '../http/openapi.js';
import type { Metrics } from '../metrics.js';

export const operationsRoutes: FastifyPluginCallbackTypebox<{ isReady: () => boolean | Promise<boolean>; metrics: Metrics }> = (
  app,
  { isReady, metrics },
  done,
) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        security: [],
        operationId: 'getHealth',
        summary: 'Liveness',
        description: 'Answers 200 while the process runs.',
        response: { 200: answer(Type.Object({ status: Type.Literal('ok') }), 'The process is running.', { status: 'ok' }) },
      },
    },
    () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        security: [],
        operationId: 'getReadiness',
        summary: 'Readiness',
        description:
          'Answers 200 once the store is loaded and migrated, and 503 `not_ready` before that, while shutting down, or (PostgreSQL store) while the database does not answer.',
        response: {
          200: answer(Type.Object({ status: Type.Literal('ready') }), 'Ready for traffic.', { status: 'ready' }),
          ...errors('not_ready'),
        },
      },
    },
    async () => {
      if (!(await isReady())) throw new AppError('not_ready', 'The registry is not ready.');
      return { status: 'ready' as const };
    },
  );
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        security: [],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text format: `http_request_duration_seconds` (by method, route pattern, status), `registry_store_batch_operations` and `registry_store_write_duration_seconds` (group-commit batches and durable-write latency, by file), `registry_catalogue_cache_rebuilds_total`, `registry_catalogue_compressions_total` (by view and encoding), `registry_launch_outcomes_total`, and process vitals. Labels never carry IDs or tokens.',
        response: {
          200: { description: 'Metrics in Prometheus text format 0.0.4.', content: { 'text/plain': { schema: Type.String() } } },
        },
      },
    },
    async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  done();
};
