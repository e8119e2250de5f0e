// Shared TypeBox building blocks: identifiers, safe text, and the error body. Leaf module: imports nothing
// from the app, so domain code, routes and scripts can all use the same rules.
import Type, { type Static } from 'typebox';
import { SAFE_TEXT_PATTERN, SINGLE_LINE_PATTERN, TRIMMED_TEXT_PATTERN } from '../text/text-rules.js';

export { SAFE_TEXT_PATTERN, SINGLE_LINE_PATTERN, TRIMMED_TEXT_PATTERN };

export const RESOURCE_ID_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$';
/** Machine IDs, canvas IDs and thread IDs: they appear in URLs and file names. */
export const SLUG_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
export const HOST_PROVIDER = 'huabu';
/** A record's content digest: `sha256:` and 64 lowercase hex digits (src/registry/record-digest.ts). */
export const DIGEST_PATTERN = '^sha256:[0-9a-f]{64}$';

export const SafeText = (minLength: number, maxLength: number, description: string) =>
  Type.String({ minLength, maxLength, pattern: SAFE_TEXT_PATTERN, description });

export const TrimmedText = (minLength: number, maxLength: number, description: string) =>
  Type.String({ minLength, maxLength, pattern: TRIMMED_TEXT_PATTERN, description });

export const ResourceId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RESOURCE_ID_PATTERN,
  description: 'Kebab-case resource ID, globally unique and stable (e.g. `web-search`).',
  examples: ['web-search'],
});

export const MachineId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: SLUG_ID_PATTERN,
  description: 'Exact Agentlet machine ID (never `huabu`).',
  examples: ['agentlet-7f3a'],
});

export const ProviderId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: SLUG_ID_PATTERN,
  description: 'Provider: `huabu` (the host) or one exact Agentlet machine ID.',
  examples: ['huabu'],
});

export const CanvasId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: SLUG_ID_PATTERN,
  description: 'Canvas ID.',
  examples: ['canvas-42'],
});

export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer({ description: 'HTTP status, repeated.' }),
    code: Type.String({ description: 'Stable snake_case error code.' }),
    error: Type.String({ description: 'HTTP reason phrase.' }),
    message: Type.String({ description: 'Human-readable explanation; never contains a secret.' }),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Structured facts (IDs, fields, diagnostics).' })),
  },
  { $id: 'ErrorBody', title: 'Error', additionalProperties: false },
);
export type ErrorBody = Static<typeof ErrorBody>;
