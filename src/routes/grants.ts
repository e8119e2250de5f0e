// Owner or Huabu: mint a resource grant for a realized thread (the agent's $HUABU_RESOURCE_GRANT), at
// spawn or resume. The grant is returned once and never stored.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { FAKE_TOKEN, CANVAS_ID, THREAD_ID, EXPIRES_AT } from './examples.js';
import { DEFAULT_GRANT_TTL_SECONDS, type InvocationService } from '../invocation/invocation-service.js';
import { GrantBody, GrantResult } from '../schemas/invocation.js';

export const grantRoutes: FastifyPluginCallbackTypebox<{ invocations: InvocationService }> = (app, { invocations }, done) => {
  protect(app, [app.requireOwner, app.requireHuabu], ['ownerToken', 'providerToken']);

  app.post(
    '/grants',
    {
      schema: {
        tags: ['grants'],
        operationId: 'mintResourceGrant',
        summary: 'Mint a resource grant',
        description:
          "An opaque token binding the thread's machine (and its enrollment), profile, canvas, thread, the hosted capabilities among its effective resources, an expiry and the capabilities policy version. The agent sends it as `X-Huabu-Resource-Grant` with its canvas token to `POST $HUABU_RFS_URL/resources/<id>/invoke`. Owner token or the Huabu provider token; never written into the workload.",
        body: sent(GrantBody, { canvasId: CANVAS_ID, threadId: THREAD_ID, ttlSeconds: 3600 }),
        response: {
          201: answer(GrantResult, 'Minted.', {
            grant: FAKE_TOKEN.grant,
            expiresAt: EXPIRES_AT,
            allowedResourceIds: ['web-search'],
            policyVersion: 'b3f1c2d4e5a6',
          }),
          ...errors('validation_failed', 'workload_not_found', 'machine_not_found'),
        },
      },
    },
    async (request, reply) => {
      const { canvasId, threadId, ttlSeconds = DEFAULT_GRANT_TTL_SECONDS } = request.body;
      const minted = await invocations.mint(canvasId, threadId, ttlSeconds, actorOf(request.principal!));
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(minted);
    },
  );
  done();
};
