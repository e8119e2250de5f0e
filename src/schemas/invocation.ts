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
    grant: Type.String({ description: "The opaque grant (`arr_grant_...`): the agent's `$HUABU_RESOURCE_GRANT`. Shown only in this response; never stored." }),
    expiresAt: Type.String({ format: 'date-time' }),
    allowedResourceIds: Type.Array(ResourceId, { description: "The hosted capabilities among the thread's effective resources." }),
    policyVersion: Type.String({ description: 'Digest of the capabilities file the grant was minted under; a changed file invalidates the grant.' }),
  },
  { additionalProperties: false },
);

export const InvokeBody = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    input: Type.Unknown({ description: "The capability's input, checked against the operator's input schema." }),
  },
  { additionalProperties: false },
);

export const InvokeResult = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    resourceId: ResourceId,
    output: Type.Unknown({ description: "The endpoint's JSON answer (bounded by the capability's maxOutputBytes)." }),
  },
  { additionalProperties: false },
);
