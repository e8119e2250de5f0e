// Requests in flight, so a graceful close can wait for them: a handler keeps running after its client
// hung up (a load generator ending its run, a killed CLI), and its store write and audit line must land
// before the store and the audit file close. A request is tracked from onRequest until its handler settles
// (or, if it never reaches one, until its response ends); once the drain is over, a handler that starts
// anyway (its request was still in the hooks and its client gone) is refused without running, so nothing
// touches the closed store. Install before any route: it wraps handlers in onRoute.
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

export interface InFlight {
  /** Resolves once no request is in flight (ones that start meanwhile are waited for too); then refuses handlers. */
  drain(): Promise<void>;
}

const kTracked = Symbol('in-flight');

export function trackRequests(app: FastifyInstance): InFlight {
  const inHooks = new Set<object>();
  const handlers = new Set<Promise<void>>();
  let idle: (() => void) | undefined;
  let drained = false;
  const settle = () => {
    if (inHooks.size === 0 && handlers.size === 0) idle?.();
  };
  const leaveHooks = (token: object) => {
    if (inHooks.delete(token)) settle();
  };

  app.addHook('onRequest', (request, reply, done) => {
    const token = {};
    (request as unknown as Record<symbol, object>)[kTracked] = token;
    inHooks.add(token);
    // A request that never reaches its handler (refused in a hook, or its client gone) ends with its response.
    reply.raw.once('close', () => leaveHooks(token));
    reply.raw.once('finish', () => leaveHooks(token));
    done();
  });

  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const token = (request as unknown as Record<symbol, object | undefined>)[kTracked];
      if (drained) {
        if (token) leaveHooks(token);
        throw new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.');
      }
      const result: unknown = handler.call(this, request, reply);
      if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function') {
        const running = Promise.resolve(result).then(
          () => undefined,
          () => undefined,
        );
        handlers.add(running);
        void running.then(() => {
          handlers.delete(running);
          settle();
        });
      }
      // Moved from the hooks to the handler in one step, so a drain never sees the request in neither.
      if (token) leaveHooks(token);
      return result;
    };
  });

  return {
    async drain() {
      if (inHooks.size > 0 || handlers.size > 0) await new Promise<void>((resolve) => (idle = resolve));
      idle = undefined;
      drained = true;
    },
  };
}
