// The workload (agent thread) record, driver schema version 1, and the launch request that realizes it.
import Type, { type Static } from 'typebox';
import { ContextEstimate } from './capability.js';
import { CanvasId, DIGEST_PATTERN, MachineId, ResourceId, SafeText, SLUG_ID_PATTERN } from './common.js';
import { AcpHarnessLaunch, MAX_PROFILE_RESOURCE_IDS, ProfileId, WorkingDirPath } from './profile.js';

export const DRIVER_SCHEMA_VERSION = 1;
export const MAX_ADDITIONAL_PREAMBLE = 16 * 1024;

export const ThreadId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: SLUG_ID_PATTERN,
  description: 'Thread ID within the canvas.',
  examples: ['thread-1'],
});

/** The name of the registry's MCP server in a workload's `mcpServers`. */
export const MCP_SERVER_NAME = 'huabu-registry';

/** An ACP `McpServer` of the HTTP kind; header values are variable references (`$NAME`), never values. */
export const McpServerEntry = Type.Object(
  {
    type: Type.Literal('http'),
    name: Type.String({ description: 'The server name the agent sees.' }),
    url: Type.String({ description: 'The MCP endpoint (`$HUABU_MCP_URL`).' }),
    headers: Type.Array(
      Type.Object(
        {
          name: Type.String(),
          value: Type.String({ description: 'A variable reference such as `Bearer $AGENTLET_TOKEN`: the driver substitutes it.' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, title: 'McpServerEntry' },
);
export type McpServerEntry = Static<typeof McpServerEntry>;

/** One launch pin: a resource ID and the digest of the content the thread was launched with. */
export const ResourcePin = Type.Object(
  {
    id: ResourceId,
    digest: Type.String({ pattern: DIGEST_PATTERN, description: "The record's content digest at realization (`sha256:<64 hex>`)." }),
  },
  { additionalProperties: false, title: 'ResourcePin' },
);
export type ResourcePin = Static<typeof ResourcePin>;

/** A DSSE envelope (https://github.com/secure-systems-lab/dsse): the launch's signed in-toto statement. */
export const LaunchAttestation = Type.Object(
  {
    payloadType: Type.Literal('application/vnd.in-toto+json'),
    payload: Type.String({ description: 'The in-toto Statement v1 (JSON), base64.' }),
    signatures: Type.Array(
      Type.Object(
        {
          keyid: Type.String({ description: 'The `kid` of the signing key in `GET /.well-known/agent-resource-registry/keys`.' }),
          sig: Type.String({ description: "Ed25519 signature over DSSE's pre-authentication encoding, base64." }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  {
    additionalProperties: false,
    title: 'LaunchAttestation',
    description:
      "The registry's signature of the launch: a DSSE envelope of an in-toto Statement v1 whose subjects are `spec.resourcePins` and whose predicate (`launch-v1`) names canvas, thread, profile and its revision, machine and realization time. Made once at realization; absent in workloads realized before attestations existed. Check it before starting the agent: docs/attestation.md.",
  },
);
export type LaunchAttestation = Static<typeof LaunchAttestation>;

export const WorkloadRecord = Type.Object(
  {
    driverSchemaVersion: Type.Literal(DRIVER_SCHEMA_VERSION),
    canvasId: CanvasId,
    threadId: ThreadId,
    realizedAt: Type.String({ format: 'date-time', description: 'When the thread was first realized.' }),
    spec: Type.Object(
      {
        binding: Type.Object({ profileId: ProfileId, alias: Type.String() }, { additionalProperties: false }),
        agentletId: MachineId,
        cwd: Type.String({ description: 'Working directory of the agent on its machine.' }),
        resourceIds: Type.Array(ResourceId, {
          description: 'The effective resources pinned at realization: required defaults first, then the selection.',
        }),
        resourcePins: Type.Optional(
          Type.Array(ResourcePin, {
            description:
              "The content each effective resource had at realization, in `resourceIds` order: the thread's reads that send `X-Huabu-Thread-Id` are served at these revisions (absent in records realized before pins existed: those read current content).",
          }),
        ),
        resourceScope: Type.Object({ canvasId: CanvasId, threadId: ThreadId }, { additionalProperties: false }),
        initialPreamble: Type.Array(Type.String(), {
          description: '[0] the durable bootstrap naming the resources; [1] the optional additional preamble.',
        }),
        env: Type.Object(
          {
            HUABU_RFS_URL: Type.String({ description: "The canvas's RFS base URL." }),
            HUABU_MCP_URL: Type.Optional(
              Type.String({
                description: "The canvas's MCP endpoint, `<HUABU_RFS_URL>/mcp` (absent in records realized before it existed).",
              }),
            ),
            HUABU_THREAD_ID: ThreadId,
          },
          { additionalProperties: false },
        ),
        mcpServers: Type.Optional(
          Type.Array(McpServerEntry, {
            maxItems: 1,
            description:
              "What the driver hands ACP's `session/new` as `mcpServers`, once it has put the variables' values in the header values (absent in records realized before it existed).",
          }),
        ),
        launch: Type.Optional({
          ...AcpHarnessLaunch,
          description:
            'Present when the profile is an `acp-harness` one: the harness (and its options) the Agentlet starts, pinned at realization.',
        }),
      },
      { additionalProperties: false },
    ),
    attestation: Type.Optional(LaunchAttestation),
    contextEstimate: Type.Optional({
      ...ContextEstimate,
      description:
        "The launch's effective resources as the agent meets them (docs/capability-projection.md#context-estimate): the tokens of their names and descriptions, held from the start, and of their bodies, read on use. Absent in workloads realized before estimates existed.",
    }),
  },
  { additionalProperties: false, title: 'Workload' },
);
export type WorkloadRecord = Static<typeof WorkloadRecord>;

/** The launch answer: the workload record and, for a profile that approves content, `pendingUpdates`. */
export const LaunchAnswer = Type.Object(
  {
    ...WorkloadRecord.properties,
    pendingUpdates: Type.Optional(
      Type.Array(
        Type.Object(
          {
            id: ResourceId,
            pinned: Type.String({ pattern: DIGEST_PATTERN, description: 'The approved content the thread is pinned to.' }),
            current: Type.Union([Type.String({ pattern: DIGEST_PATTERN }), Type.Null()], {
              description: "The record's digest now; `null` when it was withdrawn.",
            }),
          },
          { additionalProperties: false },
        ),
        {
          description:
            "Only when the profile has `resourcePins`: each approved resource whose record has changed since the approval (the thread reads the approved content; move the profile's pin, or the thread's, to take the change).",
        },
      ),
    ),
  },
  { additionalProperties: false, title: 'LaunchAnswer' },
);

export const LaunchBody = Type.Object(
  {
    profileId: ProfileId,
    canvasId: CanvasId,
    threadId: ThreadId,
    workingDirPath: Type.Optional(WorkingDirPath),
    resourceIds: Type.Optional(
      Type.Array(ResourceId, {
        maxItems: MAX_PROFILE_RESOURCE_IDS,
        uniqueItems: true,
        description: "Replaces the profile's selection for this thread (`[]`: no optional resources). Required defaults are always added.",
      }),
    ),
    additionalInitialPreamble: Type.Optional(
      SafeText(1, MAX_ADDITIONAL_PREAMBLE, 'Extra text handed to the agent after the bootstrap (scanned for secrets).'),
    ),
  },
  { additionalProperties: false, title: 'Launch' },
);
export type LaunchBody = Static<typeof LaunchBody>;

const PinDigest = (description: string) => Type.String({ maxLength: 256, description, examples: [`sha256:${'9'.repeat(64)}`] });

export const PinMoveBody = Type.Object(
  {
    id: ResourceId,
    from: PinDigest("The thread's pin of `id` now (`sha256:<64 hex>`); another is 409 `pin_conflict`."),
    to: PinDigest("The record's digest now, the content approved (`sha256:<64 hex>`); another is 409 `pin_stale`."),
  },
  { additionalProperties: false, title: 'PinMove' },
);
export type PinMoveBody = Static<typeof PinMoveBody>;

export const WorkloadList = Type.Object(
  { workloads: Type.Array(WorkloadRecord, { description: 'The canvas threads, sorted by threadId.' }) },
  { additionalProperties: false },
);
