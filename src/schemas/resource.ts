// The AgentResource record (schemaVersion 1 and 2) and the request bodies that carry it. One definition
// validates HTTP bodies, types handlers, serializes responses, feeds OpenAPI and backs the domain validator.
import Type, { type Static, type TSchema } from 'typebox';
import { DIGEST_PATTERN, ProviderId, ResourceId, SafeText, TrimmedText } from './common.js';
import { MachineProblems } from './machine.js';
import { OPTIONAL_TEXT_PATTERN } from '../text/text-rules.js';

/**
 * `oneOf` the given object schemas, told apart by their `schemaVersion` constant (OpenAPI `discriminator`).
 * The validator (src/http/validator.ts) reports only the errors of the branch the body's `schemaVersion` names.
 */
export function BySchemaVersion<T extends TSchema[]>(
  branches: [...T],
  options: { title?: string; description?: string; 'x-examples'?: Record<string, { summary: string; value: unknown }> } = {},
) {
  return Type.Unsafe<Static<T[number]>>({ ...options, oneOf: branches, discriminator: { propertyName: 'schemaVersion' } });
}

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

/** Bounds of record v2, as upstream's `protocol/src/resource.ts` sets them. */
export const V2_BOUNDS = { name: 128, displayName: 128, sourceContent: 100_000, userContent: 20_000 } as const;

const v2Fields = {
  name: TrimmedText(1, V2_BOUNDS.name, 'Source-owned canonical name (the provider writes it).'),
  displayName: TrimmedText(
    1,
    V2_BOUNDS.displayName,
    'Owner-owned presentation name; absent when the owner set none. Show `displayName ?? name`.',
  ),
  sourceContent: TrimmedText(
    1,
    V2_BOUNDS.sourceContent,
    'Source-owned agent-readable guidance (the provider writes it; trimmed). May reference the runtime variables; never a secret value.',
  ),
  userContent: TrimmedText(
    0,
    V2_BOUNDS.userContent,
    "Owner-owned instructions for every agent that selects the resource; `''` means none.",
  ),
};

/** The form of a skill folder's revision, as the Agentlet computes it (src/agentlet/skill-jobs.ts `skillRevision`). */
export const SOURCE_REVISION_PATTERN = '^[a-f0-9]{64}$';
export const SourceRevision = Type.String({
  pattern: SOURCE_REVISION_PATTERN,
  description:
    "SHA-256 (hex) of the skill folder's files: each file's relative path, a NUL, its kept permission bits in octal, a NUL, its length, a NUL and its bytes, in path order.",
});

/** On a record v2: the folder of a machine's imported skill, part of the record's digest. */
const RecordSourceRevision = Type.Optional({
  ...SourceRevision,
  description:
    "Sent by the Agentlet for a skill imported onto its machine: the `sourceRevision` of the skill folder the record was published from (its `SKILL.md`, scripts, references and assets, modes included), sent by the Agentlet and part of the record's `digest`, so a change to any file of the skill is a new digest. Provider-owned: each write of the record sets it or leaves it out.",
});

/** A record's content digest (docs/decisions/record-digest.md). */
export const RecordDigest = Type.String({
  pattern: DIGEST_PATTERN,
  description:
    'Content digest `sha256:<64 hex>` over every byte an agent can read through the record (docs/decisions/record-digest.md): the same content has the same digest, on every store and across restarts. Present in every answer; never written by a client.',
  examples: ['sha256:3f0c1b2ad8e1c3d7a2f9e4b6c8d0a1b3c5e7f9a0b2c4d6e8f0a1b3c5d7e9f0a1'],
});

/** Record v2: the record Huabu uses today. `name` and `sourceContent` are the provider's; `displayName` and `userContent` the owner's. */
export const AgentResourceV2 = Type.Object(
  {
    schemaVersion: Type.Literal(2, { description: 'Record schema version.' }),
    id: ResourceId,
    name: v2Fields.name,
    displayName: Type.Optional(v2Fields.displayName),
    provider: ProviderId,
    sourceContent: v2Fields.sourceContent,
    userContent: v2Fields.userContent,
    sourceRevision: RecordSourceRevision,
    digest: Type.Optional(RecordDigest),
  },
  { additionalProperties: false, title: 'AgentResourceV2' },
);
export type AgentResourceV2 = Static<typeof AgentResourceV2>;

/**
 * A record as stored: a record written as v1 stays a v1 record (with the owner's customization beside it,
 * when there is one: `userContent` only when non-empty); a record written as v2 is a v2 record.
 * Internal: never an HTTP shape (see src/registry/resource-versions.ts for the representations).
 */
/**
 * `imported: true` marks a skill the owner imported onto its machine through the registry (skill
 * management): owner-side, kept across the provider's replaces like the customization, never rendered.
 */
const importedMark = Type.Optional(Type.Literal(true, { description: 'Internal: a skill the owner imported onto its machine.' }));

export const StoredResourceV1 = Type.Object(
  {
    ...AgentResource.properties,
    displayName: Type.Optional(v2Fields.displayName),
    userContent: Type.Optional(TrimmedText(1, V2_BOUNDS.userContent, 'Owner instructions (non-empty).')),
    imported: importedMark,
  },
  { additionalProperties: false },
);
export type StoredResourceV1 = Static<typeof StoredResourceV1>;
/** A record written as v2, as stored: record v2 plus the owner-side import mark. */
export const StoredResourceV2 = Type.Object({ ...AgentResourceV2.properties, imported: importedMark }, { additionalProperties: false });
export type StoredResourceV2 = Static<typeof StoredResourceV2>;
export const StoredResource = Type.Union([StoredResourceV1, StoredResourceV2]);
export type StoredResource = StoredResourceV1 | StoredResourceV2;

/** The two representations a reader may ask for (`?schemaVersion=`). */
export type Representation = 1 | 2;
export const SchemaVersionQuery = Type.Optional(
  Type.Union([Type.Literal(1), Type.Literal(2)], {
    default: 1,
    description:
      'Representation: `1` (the default; v1 records exactly as written, v2 records converted) or `2` (record v2; v1 records converted as upstream does).',
  }),
);
/** The owner's and the agents' reads: their default follows `HUABU_COMPAT`, so the schema names none. */
export const CompatSchemaVersionQuery = Type.Optional(
  Type.Union([Type.Literal(1), Type.Literal(2)], {
    description:
      'Representation: `1` (v1 records exactly as written, v2 records converted) or `2` (record v2; v1 records converted as upstream does). Without it: `1`, or `2` when the service runs with `HUABU_COMPAT=1`.',
  }),
);
/** One record in either representation. */
export const AnyAgentResource = BySchemaVersion([AgentResource, AgentResourceV2], { title: 'AnyAgentResource' });

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
export type ResourcePutBodyV1 = Static<typeof ResourcePutBody>;

const v2BodyFields = {
  name: SafeText(1, V2_BOUNDS.name, 'Source-owned canonical name (trimmed when stored).'),
  sourceContent: SafeText(1, V2_BOUNDS.sourceContent, 'Source-owned agent-readable guidance (trimmed when stored); never a secret value.'),
};

/** Body v2 of `PUT /providers/:provider/resources/:id`: only the provider's fields (the owner's are never taken from a provider). */
export const ResourcePutBodyV2 = Type.Object(
  {
    schemaVersion: Type.Literal(2),
    id: Type.Optional(ResourceId),
    provider: Type.Optional(ProviderId),
    name: v2BodyFields.name,
    sourceContent: v2BodyFields.sourceContent,
    sourceRevision: RecordSourceRevision,
  },
  {
    additionalProperties: false,
    title: 'ResourcePutV2',
    examples: [{ schemaVersion: 2, name: 'Web search', sourceContent: 'Search the public web.\n\nAsk the host through $HUABU_RFS_URL.' }],
  },
);
export type ResourcePutBodyV2 = Static<typeof ResourcePutBodyV2>;
export const AnyResourcePutBody = BySchemaVersion([ResourcePutBody, ResourcePutBodyV2], {
  title: 'AnyResourcePut',
  description: 'Record v1 `{schemaVersion: 1, name, description, instructions}` or v2 `{schemaVersion: 2, name, sourceContent}`.',
  // Named request examples (the OpenAPI media type's `examples`): Swagger UI offers one per version to send.
  'x-examples': {
    'record-v1': {
      summary: 'Record v1',
      value: {
        schemaVersion: 1,
        name: 'PDF grep',
        description: 'Searches text in PDF files.',
        instructions: 'Run $AGENT_RESOURCE_DIR/tools/pdf-grep.sh PATTERN FILE.',
      },
    },
    'record-v2': {
      summary: 'Record v2',
      value: { schemaVersion: 2, name: 'Web search', sourceContent: 'Search the public web.\n\nAsk the host through $HUABU_RFS_URL.' },
    },
  },
});
export type ResourcePutBody = ResourcePutBodyV1 | ResourcePutBodyV2;

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
export type ReconcileEntryV1 = Static<typeof ReconcileEntry>;

export const ReconcileEntryV2 = Type.Object(
  {
    schemaVersion: Type.Literal(2),
    id: ResourceId,
    provider: Type.Optional(ProviderId),
    name: v2BodyFields.name,
    sourceContent: v2BodyFields.sourceContent,
    sourceRevision: RecordSourceRevision,
  },
  { additionalProperties: false, title: 'ReconcileEntryV2' },
);
export type ReconcileEntryV2 = Static<typeof ReconcileEntryV2>;
export type ReconcileEntry = ReconcileEntryV1 | ReconcileEntryV2;
export const AnyReconcileEntry = BySchemaVersion([ReconcileEntry, ReconcileEntryV2], { title: 'AnyReconcileEntry' });

export const ReconcileBody = Type.Object(
  {
    resources: Type.Array(AnyReconcileEntry, {
      maxItems: MAX_RECONCILE_RESOURCES,
      description:
        "The provider's complete set; records left out are withdrawn. Each `id` may appear only once (listing one twice is 400 `validation_failed`).",
    }),
    problems: Type.Optional({
      ...MachineProblems,
      description:
        'A machine only: the receipts it could not publish (left out of `resources`), shown in `GET /api/acp/machines` until a later reconcile reports otherwise; absent means none. The host provider may not send it (400).',
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
export const ResourceListV2 = Type.Object(
  { resources: Type.Array(AgentResourceV2, { description: 'Records sorted by id, as record v2.' }) },
  { additionalProperties: false, title: 'ResourceListV2' },
);
/** A catalogue body in the representation asked for (`?schemaVersion=1|2`). */
export const AnyResourceList = Type.Unsafe({
  anyOf: [ResourceList, ResourceListV2],
  description: 'Records sorted by id, all in the representation asked for (anyOf: an empty list is both).',
});

/** The owner's catalogue as record v2: the records, and the IDs of those the owner may manage (upstream's settings page reads both). */
export const OwnerResourceListV2 = Type.Object(
  {
    resources: ResourceListV2.properties.resources,
    manageableResourceIds: Type.Array(ResourceId, {
      description:
        'IDs among `resources` the owner may import again, refresh from their source or delete: skills the owner imported onto a machine. `[]` when none. Only in the whole catalogue as record v2; the v1 list and the list of one provider are `{resources}` alone.',
    }),
  },
  { additionalProperties: false, title: 'OwnerResourceListV2' },
);
/** The owner's catalogue body in the representation asked for. */
export const AnyOwnerResourceList = Type.Unsafe({
  anyOf: [ResourceList, ResourceListV2, OwnerResourceListV2],
  description: 'Records sorted by id, all in the representation asked for; the whole catalogue as record v2 with `manageableResourceIds`.',
});

/** The owner's `PATCH /resources/:id` answer: upstream's mutation envelope. */
export const ResourceMutationResult = Type.Object(
  { resource: AgentResourceV2 },
  { additionalProperties: false, title: 'ResourceMutationResult' },
);

/** Body of the owner's `PATCH /resources/:id`: only the owner's fields. */
export const ResourceCustomization = Type.Object(
  {
    displayName: Type.Optional(
      Type.Union([
        SafeText(1, V2_BOUNDS.displayName, 'Presentation name (trimmed when stored).'),
        Type.Null({ description: 'Clears it.' }),
      ]),
    ),
    userContent: Type.Optional(
      Type.String({
        maxLength: V2_BOUNDS.userContent,
        pattern: OPTIONAL_TEXT_PATTERN,
        description: "Owner instructions for every agent that selects the resource (trimmed when stored); `''` clears them.",
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1, title: 'ResourceCustomization' },
);
export type ResourceCustomization = Static<typeof ResourceCustomization>;

export const ValidationIssue = Type.Object(
  {
    code: Type.String({
      description:
        'Stable code: `validation_failed`, `forbidden` (an ID that belongs to the host alone), `secret_detected`, `resource_conflict`, `duplicate_resource_name` (errors) or `unknown_variable` (warning). An error is exactly what the write would refuse.',
    }),
    field: Type.String({ description: 'The field concerned (`/name`), or empty for the whole record.' }),
    severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]),
    message: Type.String(),
    line: Type.Optional(
      Type.Integer({ minimum: 1, description: '`secret_detected`: the 1-based line of the field where the finding starts.' }),
    ),
    rule: Type.Optional(Type.String({ description: '`secret_detected`: the rule that matched.' })),
    fingerprint: Type.Optional(
      Type.String({
        description:
          '`secret_detected`: `<rule>:<SHA-256 hex of the matched text>`, what `POST /api/acp/secret-allowlist` takes when the finding is no secret.',
      }),
    ),
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
