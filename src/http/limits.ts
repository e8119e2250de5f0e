// Protective limits: per-credential rate limits on write requests (429 `rate_limited` with Retry-After; the
// per-address bound on failed authentications, src/http/refusals.ts, is made with the same plugin), a bound
// on the change events one machine's writes may add per minute (src/registry/event-budget.ts), 503
// `overloaded` when the event loop falls behind, and hardened response headers (a strict CSP on the Swagger
// UI pages). Body size and request timeouts are Fastify options set in src/app.ts.
import helmet from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';
import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';
import type { EventBudget } from '../registry/event-budget.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A write that adds no change event of its machine's (a job's answer, a hosted invocation): a machine
     * past its events per minute may still send it.
     */
    writesNoEvents?: boolean;
  }
}

/** Swagger UI serves its scripts and styles from /docs/static; nothing inline, nothing third-party. */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/**
 * The hardened headers helmet sets with our options (its defaults without CSP, which only Swagger UI's pages
 * carry, and without HSTS, since TLS ends in front of the service), computed once. None of them depends on
 * the request, and running helmet's middleware chain for every answer cost more than the rest of a 304.
 */
export function hardenedHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  // helmet 8 throws a bad option at once rather than passing it to `next`.
  helmet({ contentSecurityPolicy: false, strictTransportSecurity: false })(
    {} as IncomingMessage,
    response as unknown as ServerResponse,
    () => undefined,
  );
  return headers;
}

export async function registerLimits(app: FastifyInstance, config: Config, eventBudget?: EventBudget): Promise<void> {
  const hardened = hardenedHeaders();
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(hardened);
    done();
  });

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

  // A machine whose activity wrote its minute's share of change events writes nothing more until the minute
  // is over (its agents' canvas tokens neither): no one machine can push the others' events out of retention.
  if (eventBudget && eventBudget.perMinute > 0) {
    app.addHook('preHandler', (request, _reply, done) => {
      const p = request.principal;
      const machine = p?.kind === 'provider' ? p.provider : p?.kind === 'canvas' ? p.agentletId : undefined;
      const exempt = machine === undefined || READ_METHODS.has(request.method) || request.routeOptions.config?.writesNoEvents === true;
      const retryAfterSeconds = exempt ? 0 : eventBudget.retryAfterSeconds(machine);
      if (retryAfterSeconds > 0) {
        throw new AppError(
          'rate_limited',
          `Machine ${machine} has written ${eventBudget.perMinute} change events this minute; retry in ${retryAfterSeconds} s.`,
          { retryAfterSeconds, reason: 'events_per_minute', limit: eventBudget.perMinute },
        );
      }
      done();
    });
  }

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
