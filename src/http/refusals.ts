// Refused requests at the door: a bound on failed authentications per client address, checked before the
// token is looked at (429 `rate_limited` with Retry-After once an address has used it up), and the audit
// of refused writes (a 401 or 403 on a write route; anonymous ones summarized per address).
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isIPv6 } from 'node:net';
import { AnonymousRefusals } from '../audit/anonymous-refusals.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const AUTH_FAILURE_WINDOW_MS = 60_000;
const AUDITED = Symbol('refusal audited by its route');

/** The caller's address as it is counted: an IPv6 address by its /64 (one host usually holds the whole prefix). */
export function clientAddress(request: FastifyRequest): string {
  const key = normalizeIP(request.ip);
  return isIPv6(key) ? `${key}/64` : key;
}

/** A route that audits its own refusals (with the object's ID) says so, and gets no second line here. */
export function markRefusalAudited(request: FastifyRequest): void {
  (request as FastifyRequest & { [AUDITED]?: boolean })[AUDITED] = true;
}

function needsCredential(request: FastifyRequest): boolean {
  const security = (request.routeOptions.schema as { security?: unknown[] } | undefined)?.security;
  return Array.isArray(security) && security.length > 0;
}

function limited(ttlInSeconds: number): AppError {
  const retryAfterSeconds = Math.max(1, ttlInSeconds);
  return new AppError('rate_limited', `Too many failed authentications from this address; retry in ${retryAfterSeconds} s.`, {
    retryAfterSeconds,
  });
}

export interface Refusals {
  /**
   * Called once per request whose credential was refused (401, no principal): counts it against the
   * address and answers the error to send instead (429) when the address is past its bound.
   */
  onAuthFailure(request: FastifyRequest): Promise<AppError | undefined>;
  /** Writes the pending summaries (at close, before the store closes). */
  close(): Promise<void>;
}

/**
 * Registers the hooks on `app` (before any route). Needs @fastify/rate-limit registered (src/http/limits.ts);
 * `authFailuresPerMinute` 0 turns the per-address bound off (the audit summary stays).
 */
export function registerRefusals(app: FastifyInstance, audit: AuditTrail, authFailuresPerMinute: number, now: () => Date): Refusals {
  const summaries = new AnonymousRefusals(audit, { now });
  const failures =
    authFailuresPerMinute > 0
      ? app.createRateLimit({
          max: authFailuresPerMinute,
          timeWindow: AUTH_FAILURE_WINDOW_MS,
          keyGenerator: clientAddress,
          allowList: () => false,
        })
      : undefined;

  // When the last refused credential was counted (Date.now(), the clock the rate-limit store's windows run
  // on). A window opens at an address's first failure and lasts AUTH_FAILURE_WINDOW_MS, so once that long has
  // passed since the last failure anywhere, no address can be past its bound and the lookup is skipped.
  let lastFailureAt = -Infinity;
  if (failures) {
    // Before authentication: an address that used up its failures is not authenticated at all.
    app.addHook('onRequest', (request, _reply, done) => {
      if (Date.now() - lastFailureAt > AUTH_FAILURE_WINDOW_MS || !needsCredential(request)) return done();
      failures(request, { increment: false }).then(
        (state) => done(!state.isAllowed && state.remaining === 0 ? limited(state.ttlInSeconds) : undefined),
        done,
      );
    });
  }

  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    if (READ_METHODS.has(request.method) || (status !== 401 && status !== 403 && status !== 429)) return done();
    auditRefusal(request, status).then(() => done(), done);
  });

  async function auditRefusal(request: FastifyRequest, status: number): Promise<void> {
    const route = request.routeOptions.url;
    if (route === undefined || (request as FastifyRequest & { [AUDITED]?: boolean })[AUDITED]) return;
    const action = `${request.method} ${route}`;
    if (!request.principal) {
      // 429 here: refused before authentication (the write limit runs after it, with a principal).
      if (status === 401 || status === 429)
        await summaries.note(clientAddress(request), action, status === 401 ? 'unauthorized' : 'rate_limited');
      return;
    }
    if (status === 429) return;
    await audit.record([{ actor: actorOf(request.principal), action, id: '-', outcome: status === 401 ? 'unauthorized' : 'forbidden' }]);
  }

  return {
    async onAuthFailure(request) {
      if (!failures) return undefined;
      lastFailureAt = Date.now();
      // The count a failure sees may include concurrent ones (the store hands back its live counter): a
      // burst is cut a little early, never late.
      const state = await failures(request);
      return !state.isAllowed && state.isExceeded ? limited(state.ttlInSeconds) : undefined;
    },
    close: () => summaries.close(),
  };
}
