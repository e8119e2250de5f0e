// The AgentResource record (schemaVersion 1) and the request bodies that carry it. One definition validates
// HTTP bodies, types handlers, serializes responses, feeds OpenAPI and backs the domain validator.
import Type, { type Static } from 'typebox';
import { ProviderId, ResourceId, SafeText } from './common.js';

const fields = {
  name: SafeText(1, 128, 'Display name.'),
  description: SafeText(1, 512, 'Short catalogue summary.'),
  instructions: SafeText(
    1,
    4000,
    'Natural-language guidance for an agent. May reference `$HUABU_RFS_URL`, `$AGENTLET_TOKEN`, `$AGENT_RESOURCE_DIR`, `$HUABU_THREAD_ID`, `$HUABU_RESOURCE_GRANT`; never a secret value.',
  ),
};

export const AgentResource = Type.Object(
  {
    schemaVersion: Type.Literal(1, { description: 'Record schema version.' }),
    id: ResourceId,
    name: fields.name,
    provider: ProviderId,
    description: fields.description,
    instructions: fields.instructions,
  },
  { additionalProperties: false, title: 'AgentResource' },
);
export type AgentResource = Static<typeof AgentResource>;

/** Body of `PUT /providers/:provider/resources/:id`: `id` and `provider` may be repeated and must match. */
export const ResourcePutBody = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    id: Type.Optional(ResourceId),
    provider: Type.Optional(ProviderId),
    name: fields.name,
    description: fields.description,
    instructions: fields.instructions,
  },
  { additionalProperties: false, title: 'ResourcePut' },
);
export type ResourcePutBody = Static<typeof ResourcePutBody>;

export const MAX_RECONCILE_RESOURCES = 1000;

/** One entry of a provider's complete set: `id` is required here. */
export const ReconcileEntry = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    id: ResourceId,
    provider: Type.Optional(ProviderId),
    name: fields.name,
    description: fields.description,
    instructions: fields.instructions,
  },
  { additionalProperties: false, title: 'ReconcileEntry' },
);
export type ReconcileEntry = Static<typeof ReconcileEntry>;

export const ReconcileBody = Type.Object(
  {
    resources: Type.Array(ReconcileEntry, {
      maxItems: MAX_RECONCILE_RESOURCES,
      description: "The provider's complete set; records left out are withdrawn. Each `id` may appear only once (listing one twice is 400 `validation_failed`).",
    }),
  },
  { additionalProperties: false },
);
export type ReconcileBody = Static<typeof ReconcileBody>;

const IdList = (description: string) => Type.Array(ResourceId, { description });

export const ReconcileResult = Type.Object(
  {
    dryRun: Type.Boolean({ description: 'True when nothing was changed (plan only).' }),
    created: IdList('IDs registered by this request.'),
    replaced: IdList('IDs whose record changed.'),
    withdrawn: IdList('IDs of this provider that were left out and withdrawn.'),
    unchanged: IdList('IDs whose record was already identical.'),
  },
  { additionalProperties: false },
);
export type ReconcileResult = Static<typeof ReconcileResult>;

export const ResourceList = Type.Object(
  { resources: Type.Array(AgentResource, { description: 'Records sorted by id.' }) },
  { additionalProperties: false },
);

export const ValidationIssue = Type.Object(
  {
    code: Type.String({
      description:
        'Stable code: `validation_failed`, `secret_detected`, `resource_conflict`, `duplicate_resource_name` (errors) or `unknown_variable` (warning).',
    }),
    field: Type.String({ description: 'The field concerned (`/name`), or empty for the whole record.' }),
    severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]),
    message: Type.String(),
  },
  { additionalProperties: false },
);
export type ValidationIssue = Static<typeof ValidationIssue>;

export const ValidateResult = Type.Object(
  {
    valid: Type.Boolean({ description: 'True when the record has no error-severity issue.' }),
    issues: Type.Array(ValidationIssue),
  },
  { additionalProperties: false },
);
export type ValidateResult = Static<typeof ValidateResult>;
