// RFS: an agent invokes a hosted capability with its canvas token and its resource grant, in upstream
// Huabu's shapes: `{schemaVersion: 1, correlationId?, input}` in, `{schemaVersion: 1, resourceId, result,
// correlationId?}` out, and upstream's error codes with our finer reason in `details.reason`
// (src/invocation/invocation-errors.ts, applied to every error of this route by the one error handler).
// The checks run before the body is read, in the contract's order (canvas token 401, grant and its scope
// 403, hosted 404), then the body's shape, the correlation ID and the input (400), quota (429), and the
// call (504, 502). A hang-up aborts the outbound request. Every invocation, refused or not, is audited once,
// with the code the agent gets and its reason: a success only once its answer has been serialized.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { renderError } from '../http/error-handler.js';
import { markRefusalAudited } from '../http/refusals.js';
import { answer, errors } from '../http/openapi.js';
import type { HostedCapability } from '../invocation/capabilities-file.js';
import { GRANT_HEADER } from '../invocation/grants.js';
import { asInvocationAnswer, INVOCATION_ANSWER_CODES, invocationError } from '../invocation/invocation-errors.js';
import type { InvocationContext, InvocationService } from '../invocation/invocation-service.js';
import { CanvasId, ResourceId } from '../schemas/common.js';
import { InvokeBody, InvokeResult } from '../schemas/invocation.js';

export const THREAD_HEADER = 'x-huabu-thread-id';
/** Room for the `{schemaVersion, correlationId, input}` envelope around the largest input (a correlation ID of 1,000 characters, each escaped). */
const ENVELOPE_BYTES = 8 * 1024;

interface InvocationState {
  ctx: InvocationContext;
  capability?: HostedCapability;
  finished: boolean;
  /** The call succeeded; `ok` is audited once the answer is serialized (a failure there is audited as such). */
  answered?: boolean;
}

const STATE = Symbol('invocation');
type WithState = FastifyRequest & { [STATE]?: InvocationState };

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export const invokeRoutes: FastifyPluginCallbackTypebox<{ invocations: InvocationService }> = (app, { invocations }, done) => {
  protect(app, [app.requireCanvas], ['canvasToken']);
  // Both credentials are required together: one security requirement naming both schemes.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, security: [{ canvasToken: [], resourceGrant: [] }] };
  });

  const ids = invocations.capabilities.ids;
  const largest = Math.max(0, ...ids.map((id) => invocations.capabilities.get(id)!.maxInputBytes));

  async function finish(request: FastifyRequest, outcome: Parameters<InvocationService['finish']>[1], reason?: string): Promise<void> {
    // Refused before the canvas token was accepted: audited with the other refused writes (anonymous ones
    // summarized per client address, src/http/refusals.ts), never with what the URL says.
    const state = (request as WithState)[STATE];
    if (!state || state.finished) return;
    state.finished = true;
    markRefusalAudited(request);
    await invocations.finish(state.ctx, outcome, actorOf(request.principal!), reason);
  }

  // Refusals and failures of this route (thrown by a check, by Fastify's body parsing or validation, or
  // by the call) are audited here, with the code and reason the agent gets.
  app.addHook('onError', async (request, _reply, err) => {
    const answer = renderError(err, request);
    const reason = answer.details?.reason;
    await finish(request, answer.code, typeof reason === 'string' ? reason : undefined);
  });

  // Runs after serialization and before the answer is written, so an answered invocation is always audited.
  app.addHook('onSend', async (request, reply, payload) => {
    const state = (request as WithState)[STATE];
    if (state?.answered && reply.statusCode === 200) await finish(request, 'ok');
    return payload;
  });

  app.post(
    '/resources/:id/invoke',
    {
      bodyLimit: largest + ENVELOPE_BYTES,
      config: { errorAnswers: asInvocationAnswer, writesNoEvents: true },
      onRequest: async (request) => {
        const principal = request.principal;
        if (principal?.kind !== 'canvas') return;
        const { canvasId, id } = request.params;
        const ctx = invocations.begin(id, { tokenCanvasId: principal.canvasId, tokenMachineId: principal.agentletId });
        const state: InvocationState = { ctx, finished: false };
        (request as WithState)[STATE] = state;
        state.capability = await invocations.authorize(ctx, header(request, GRANT_HEADER), {
          tokenCanvasId: principal.canvasId,
          tokenMachineId: principal.agentletId,
          canvasId,
          threadId: header(request, THREAD_HEADER),
        });
      },
      schema: {
        tags: ['rfs'],
        operationId: 'invokeHostedResource',
        summary: 'Invoke a hosted capability',
        description:
          "Forwards `input` to the operator's endpoint for this hosted capability (with its credential, which the agent never sees) and answers its JSON as `result`, with the request's `correlationId` (trimmed) when it had one. Needs the canvas token (`Authorization: Bearer $AGENTLET_TOKEN`), the thread's grant (`X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT`) and the calling thread (`X-Huabu-Thread-Id: $HUABU_THREAD_ID`). Errors use upstream Huabu's codes, with this service's finer reason in `details.reason`. Checks in order: canvas token 401 `unauthorized`; grant 403 `forbidden` (reason `grant_invalid` — missing, malformed, minted under another policy, its machine or canvas revoked: `details.cause` — or `grant_expired`); bound to this canvas, machine and thread 403 `forbidden` (reason `scope_mismatch`, `thread_required` without the thread header, `thread_mismatch` for another thread); resource granted 403 `forbidden` (reason `resource_not_granted`); hosted 404 `resource_not_found` (reason `not_hosted`); envelope version 400 `unsupported_version`; body, correlation ID and input 400 `invalid_input` (reason `validation_failed`, or `payload_too_large` over the capability's input bound); a secret in the correlation ID 422 `secret_detected`; per-grant concurrency and rate 429 `quota_exceeded` (reason `rate_limited`, with `Retry-After`); deadline 504 `timeout` (reason `invocation_timeout`); endpoint failure 502 `provider_failure` (reason `invocation_failed`; no upstream body or headers; also an answer nested too deep or carrying the capability's own credential); the service's storage 503 `unavailable`. A hang-up aborts the outbound request and is audited as `cancelled` (499).",
        params: Type.Object({ canvasId: CanvasId, id: ResourceId }),
        headers: Type.Object({
          'x-huabu-resource-grant': Type.Optional(Type.String({ description: 'The resource grant (`$HUABU_RESOURCE_GRANT`).' })),
          'x-huabu-thread-id': Type.String({
            description: "The calling thread (`$HUABU_THREAD_ID`); it must be the grant's thread (403 otherwise, checked with the grant).",
          }),
        }),
        body: InvokeBody,
        response: {
          200: answer(InvokeResult, "The endpoint's answer.", {
            schemaVersion: 1,
            resourceId: 'web-search',
            result: {
              results: [
                { title: 'Lichen growth rates', url: 'https://example.org/lichens', snippet: 'Crustose lichens grow 0.5 to 2 mm a year.' },
              ],
            },
            correlationId: 'search-1',
          }),
          ...errors(...INVOCATION_ANSWER_CODES),
        },
      },
    },
    async (request, reply) => {
      const state = (request as WithState)[STATE]!;
      const aborted = new AbortController();
      // The response's socket closing before the answer is written means the agent hung up.
      const onClose = () => {
        if (!reply.raw.writableFinished) aborted.abort();
      };
      reply.raw.once('close', onClose);
      try {
        await invocations.acceptCorrelationId(state.ctx, request.body.correlationId);
        const outcome = await invocations.invoke(state.ctx, state.capability!, request.body.input, aborted.signal);
        if ('cancelled' in outcome) throw invocationError('client_disconnected', 'The agent hung up; the call was aborted.');
        state.answered = true;
        const { resourceId, correlationId } = state.ctx;
        reply.code(200);
        return {
          schemaVersion: 1 as const,
          resourceId,
          result: outcome.output,
          ...(correlationId === undefined ? {} : { correlationId }),
        };
      } finally {
        reply.raw.removeListener('close', onClose);
      }
    },
  );
  done();
};
