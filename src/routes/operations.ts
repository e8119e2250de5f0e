// Operations routes (no credential): liveness and readiness.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { AppError } from '../errors.js';
import { errors } from '../http/openapi.js';

export const operationsRoutes: FastifyPluginAsyncTypebox<{ isReady: () => boolean }> = async (app, { isReady }) => {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        security: [],
        operationId: 'getHealth',
        summary: 'Liveness',
        description: 'Answers 200 while the process runs.',
        response: { 200: Type.Object({ status: Type.Literal('ok') }, { description: 'The process is running.' }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        security: [],
        operationId: 'getReadiness',
        summary: 'Readiness',
        description: 'Answers 200 once the store is loaded and migrated, and 503 `not_ready` before that or while shutting down.',
        response: { 200: Type.Object({ status: Type.Literal('ready') }, { description: 'Ready for traffic.' }), ...errors('not_ready') },
      },
    },
    async () => {
      if (!isReady()) throw new AppError('not_ready', 'The registry is not ready.');
      return { status: 'ready' as const };
    },
  );
};
