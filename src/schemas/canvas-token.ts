// Canvas-token minting: a short-lived bearer token for one canvas on one Agentlet machine.
import Type from 'typebox';
import { CanvasId, MachineId } from './common.js';

export const MIN_CANVAS_TTL_SECONDS = 60;
export const MAX_CANVAS_TTL_SECONDS = 7 * 24 * 3600;
export const DEFAULT_CANVAS_TTL_SECONDS = 3600;

export const CanvasTokenBody = Type.Object(
  {
    canvasId: CanvasId,
    agentletId: MachineId,
    ttlSeconds: Type.Optional(
      Type.Integer({
        minimum: MIN_CANVAS_TTL_SECONDS,
        maximum: MAX_CANVAS_TTL_SECONDS,
        description: `Lifetime in seconds (default ${DEFAULT_CANVAS_TTL_SECONDS}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const CanvasTokenResult = Type.Object(
  {
    token: Type.String({ description: "The canvas token: the agent's `$AGENTLET_TOKEN`. Shown only in this response." }),
    expiresAt: Type.String({ format: 'date-time' }),
    rfsUrl: Type.String({ description: "The agent's `$HUABU_RFS_URL`: `<PUBLIC_BASE_URL>/api/rfs/<canvasId>`." }),
  },
  { additionalProperties: false },
);

export const CanvasRevokeBody = Type.Object({ canvasId: CanvasId }, { additionalProperties: false });

export const CanvasRevokeResult = Type.Object(
  {
    canvasId: CanvasId,
    revokedBefore: Type.String({
      format: 'date-time',
      description:
        'Canvas tokens of this canvas minted at or before this time are refused from now on; tokens minted later are not affected.',
    }),
  },
  { additionalProperties: false },
);
