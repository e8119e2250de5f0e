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

/** Set on a response while its request is in the hooks (tracked, not yet in its handler). */
const kInHooks = Symbol('in the hooks');
type Tracked = { [kInHooks]?: boolean };

export function trackRequests(app: FastifyInstance): InFlight {
  // A count and a flag on each response, not a set of tokens: this runs for every request.
  let inHooks = 0;
  const handlers = new Set<Promise<void>>();
  let idle: (() => void) | undefined;
  let drained = false;
  const settle = () => {
    if (inHooks === 0 && handlers.size === 0) idle?.();
  };
  const leaveHooks = (response: Tracked) => {
    if (!response[kInHooks]) return;
    response[kInHooks] = false;
    inHooks--;
    settle();
  };
  // One listener shared by every response: 'close' ends every response, sent or cut off.
  function onClose(this: Tracked) {
    leaveHooks(this);
  }

  app.addHook('onRequest', (_request, reply, done) => {
    (reply.raw as Tracked)[kInHooks] = true;
    inHooks++;
    // A request that never reaches its handler (refused in a hook, or its client gone) ends with its response.
    reply.raw.on('close', onClose);
    done();
  });

  app.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      const response = reply.raw as Tracked;
      if (drained) {
        leaveHooks(response);
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
      leaveHooks(response);
      return result;
    };
  });

  return {
    async drain() {
      if (inHooks > 0 || handlers.size > 0) await new Promise<void>((resolve) => (idle = resolve));
      idle = undefined;
      drained = true;
    },
  };
}
