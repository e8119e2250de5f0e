// The workload (agent thread) record, driver schema version 1, and the launch request that realizes it.
import Type, { type Static } from 'typebox';
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
  },
  { additionalProperties: false, title: 'Workload' },
);
export type WorkloadRecord = Static<typeof WorkloadRecord>;

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

export const WorkloadList = Type.Object(
  { workloads: Type.Array(WorkloadRecord, { description: 'The canvas threads, sorted by threadId.' }) },
  { additionalProperties: false },
);
