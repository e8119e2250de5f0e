// Protective limits: per-credential rate limits on write requests (429 `rate_limited` with Retry-After; the
// per-address bound on failed authentications, src/http/refusals.ts, is made with the same plugin), 503
// `overloaded` when the event loop falls behind, and hardened response headers (a strict CSP on the Swagger
// UI pages). Body size and request timeouts are Fastify options set in src/app.ts.
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Swagger UI serves its scripts and styles from /docs/static; nothing inline, nothing third-party. */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

export async function registerLimits(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(helmet, { global: true, contentSecurityPolicy: false, hsts: false });

  // Always registered: the per-address bound on failed authentications (src/http/refusals.ts) is made with
  // its `createRateLimit`; `global` is the per-credential write limit.
  await app.register(rateLimit, {
    global: config.rateLimitWritesPerMinute > 0,
    // After authentication, so the key is the caller's principal, never a token.
    hook: 'preHandler',
    max: config.rateLimitWritesPerMinute,
    timeWindow: 60_000,
    allowList: (request) => READ_METHODS.has(request.method),
    keyGenerator: (request) => (request.principal ? actorOf(request.principal) : `ip:${request.ip}`),
    errorResponseBuilder: (_request, context) =>
      new AppError('rate_limited', `Too many write requests for this credential; retry in ${Math.ceil(context.ttl / 1000)} s.`, {
        retryAfterSeconds: Math.ceil(context.ttl / 1000),
      }),
  });

  if (config.maxEventLoopDelayMs > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      retryAfter: 5,
      pressureHandler: (_request, reply) => {
        reply.header('retry-after', '5');
        throw new AppError('overloaded', 'The registry is overloaded; retry shortly.');
      },
    });
  }
}
