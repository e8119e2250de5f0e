// Owner or Huabu: mint a canvas token for an agent (its $AGENTLET_TOKEN) and tell it its $HUABU_RFS_URL.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { mintCanvasToken } from '../credentials/tokens.js';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { FAKE_TOKEN, MACHINE_ID, CANVAS_ID, RFS_URL, AT, EXPIRES_AT } from './examples.js';
import {
  CanvasRevokeBody,
  CanvasRevokeResult,
  CanvasTokenBody,
  CanvasTokenResult,
  DEFAULT_CANVAS_TTL_SECONDS,
} from '../schemas/canvas-token.js';
import type { RouteDeps } from './deps.js';

export function rfsUrl(publicBaseUrl: string, canvasId: string): string {
  return `${publicBaseUrl}/api/rfs/${encodeURIComponent(canvasId)}`;
}

export const canvasTokenRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (
  app,
  { machines, credentials, config, scanner, audit, now },
  done,
) => {
  protect(app, [app.requireOwner, app.requireHuabu], ['ownerToken', 'providerToken']);

  app.post(
    '/canvas-tokens',
    {
      schema: {
        tags: ['canvas tokens'],
        operationId: 'mintCanvasToken',
        summary: 'Mint a canvas token',
        description:
          "A token bound to one canvas and one enrolled Agentlet machine, expiring after `ttlSeconds`. It reads `$HUABU_RFS_URL/resources`: the host records and that machine's. Owner token or the Huabu provider token.",
        body: sent(CanvasTokenBody, { canvasId: CANVAS_ID, agentletId: MACHINE_ID, ttlSeconds: 3600 }),
        response: {
          201: answer(CanvasTokenResult, 'Minted.', { token: FAKE_TOKEN.canvas, expiresAt: EXPIRES_AT, rfsUrl: RFS_URL }),
          ...errors('validation_failed', 'machine_not_found', 'secret_detected'),
        },
      },
    },
    async (request, reply) => {
      const { canvasId, agentletId, ttlSeconds = DEFAULT_CANVAS_TTL_SECONDS } = request.body;
      await scanner.assertClean([['/canvasId', canvasId]]);
      const enrolledAt = await machines.activeEnrollment(agentletId);
      if (enrolledAt === undefined) {
        throw new AppError('machine_not_found', `No enrolled machine ${agentletId}.`, { machineId: agentletId });
      }
      const mintedAtMs = now().getTime();
      const exp = Math.floor(mintedAtMs / 1000) + ttlSeconds;
      const token = mintCanvasToken({ canvasId, agentletId, enrolledAt, exp, mintedAtMs }, credentials.canvasTokenSecret);
      await audit.record([
        { actor: actorOf(request.principal!), action: 'canvas-token.mint', id: `${canvasId}@${agentletId}`, outcome: 'minted' },
      ]);
      reply.header('cache-control', 'no-store');
      return reply.code(201).send({ token, expiresAt: new Date(exp * 1000).toISOString(), rfsUrl: rfsUrl(config.publicBaseUrl, canvasId) });
    },
  );

  app.post(
    '/canvas-tokens/revoke',
    {
      schema: {
        tags: ['canvas tokens'],
        operationId: 'revokeCanvasTokens',
        summary: "Revoke a canvas's tokens",
        description:
          'Every canvas token of this canvas minted until now is refused from now on (401), whichever machine it was minted for; tokens minted afterwards work. Audited. Owner token or the Huabu provider token.',
        body: sent(CanvasRevokeBody, { canvasId: CANVAS_ID }),
        response: {
          200: answer(CanvasRevokeResult, 'Revoked.', { canvasId: CANVAS_ID, revokedBefore: AT }),
          ...errors('validation_failed'),
        },
      },
    },
    async (request) => machines.revokeCanvasTokens(request.body.canvasId, actorOf(request.principal!)),
  );
  done();
};
