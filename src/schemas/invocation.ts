// Grants and hosted-capability invocation as the API shows them. Leaf module.
import Type from 'typebox';
import { CanvasId, ResourceId } from './common.js';
import { ThreadId } from './workload.js';

export const MIN_GRANT_TTL_SECONDS = 60;
export const MAX_GRANT_TTL_SECONDS = 24 * 3600;

export const GrantBody = Type.Object(
  {
    canvasId: CanvasId,
    threadId: ThreadId,
    ttlSeconds: Type.Optional(
      Type.Integer({ minimum: MIN_GRANT_TTL_SECONDS, maximum: MAX_GRANT_TTL_SECONDS, description: 'Lifetime in seconds (default 3600).' }),
    ),
  },
  { additionalProperties: false },
);

export const GrantResult = Type.Object(
  {
    grant: Type.String({
      description: "The opaque grant (`arr_grant_...`): the agent's `$HUABU_RESOURCE_GRANT`. Shown only in this response; never stored.",
    }),
    expiresAt: Type.String({ format: 'date-time' }),
    allowedResourceIds: Type.Array(ResourceId, { description: "The hosted capabilities among the thread's effective resources." }),
    policyVersion: Type.String({
      description: 'Digest of the capabilities file the grant was minted under; a changed file invalidates the grant.',
    }),
  },
  { additionalProperties: false },
);

/** Room the request body may take for a correlation ID with surrounding space (it is trimmed, then bounded). */
export const CORRELATION_ID_RAW_MAX_LENGTH = 1000;

export const CorrelationId = Type.String({
  maxLength: CORRELATION_ID_RAW_MAX_LENGTH,
  description:
    "The agent's own label for this call, echoed in the answer and written to the audit line. Trimmed, then 1..200 characters without control characters (400 `invalid_input` otherwise); scanned for secrets (422 `secret_detected`).",
  examples: ['search-1'],
});

export const InvokeBody = Type.Object(
  {
    schemaVersion: Type.Literal(1, { description: 'The invocation envelope version; any other is 400 `unsupported_version`.' }),
    correlationId: Type.Optional(CorrelationId),
    input: Type.Unknown({ description: "The capability's input, checked against the operator's input schema." }),
  },
  {
    additionalProperties: false,
    examples: [{ schemaVersion: 1, correlationId: 'search-1', input: { query: 'lichen growth rates', maxResults: 3 } }],
  },
);

export const InvokeResult = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    resourceId: ResourceId,
    result: Type.Unknown({ description: "The endpoint's JSON answer (bounded by the capability's maxOutputBytes)." }),
    correlationId: Type.Optional(Type.String({ description: "The request's `correlationId`, trimmed; absent when the request had none." })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        schemaVersion: 1,
        resourceId: 'web-search',
        result: { results: [{ title: 'A result', url: 'https://example.org/' }] },
        correlationId: 'search-1',
      },
    ],
  },
);
