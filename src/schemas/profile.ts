// The AgentProfile record (schemaVersion 2) and the request bodies that create and change it. One
// definition validates HTTP bodies, types handlers, serializes responses, feeds OpenAPI and backs the
// check of stored records.
import Type, { type Static } from 'typebox';
import { MachineId, ResourceId } from './common.js';
import { LINE_CONTROLS, PRINTABLE_LINE_PATTERN, TRIMMED_LINE_PATTERN, VISIBLE_LINE_PATTERN } from '../text/text-rules.js';

export const PROFILE_SCHEMA_VERSION = 2;
export const MAX_PROFILE_RESOURCE_IDS = 64;
/** `customData` serialized as JSON (UTF-8) may not exceed this many bytes. */
export const MAX_CUSTOM_DATA_BYTES = 16 * 1024;

/**
 * Profile IDs: server-assigned `prf-` + 16 lowercase base32 characters for new profiles; records that came
 * from older registry files keep theirs, so reads accept any URL- and file-name-safe ID.
 */
export const PROFILE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
export const ProfileId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: PROFILE_ID_PATTERN,
  description: 'Profile ID, assigned by the registry (`prf-` + 16 lowercase base32 characters).',
  examples: ['prf-k7m2q9x4b8n3c5vd'],
});

/** Upstream's bound (Huabu `agent-profile.ts`, `trimmedString(255)`). */
export const MAX_ALIAS_LENGTH = 255;
/**
 * Printable: no C0/C1 control characters or DEL; starts and ends with a visible character (upstream refuses
 * surrounding whitespace, and its store would not read such a record back).
 */
export const ALIAS_PATTERN = PRINTABLE_LINE_PATTERN;
export const Alias = Type.String({
  minLength: 1,
  maxLength: MAX_ALIAS_LENGTH,
  pattern: ALIAS_PATTERN,
  description: `Display name the owner calls the agent by; 1..${MAX_ALIAS_LENGTH} printable characters without surrounding whitespace, unique among profiles ignoring case.`,
  examples: ['Reviewer'],
});

/**
 * An absolute POSIX path (`/...`), Windows drive path (`C:\...`) or UNC path (`\\server\share\...`), as
 * upstream accepts them; single line (so no NUL).
 */
export const WORKING_DIR_PATTERN = `^(?:/|[A-Za-z]:[\\\\/]|\\\\\\\\)[^${LINE_CONTROLS}]*$`;
export const WorkingDirPath = Type.String({
  minLength: 1,
  maxLength: 4096,
  pattern: WORKING_DIR_PATTERN,
  description:
    'Absolute working directory of the agent on its machine: POSIX, Windows drive or UNC path (at most 4096 characters, no control characters).',
  examples: ['/home/me/projects/site'],
});

export const ProfileResourceIds = Type.Array(ResourceId, {
  maxItems: MAX_PROFILE_RESOURCE_IDS,
  uniqueItems: true,
  description: `Selected optional resources, in the owner's order: at most ${MAX_PROFILE_RESOURCE_IDS} unique IDs, each known and eligible for the profile's machine (provider \`huabu\` or the profile's \`agentletId\`).`,
  examples: [['web-search']],
});

/** Objects and arrays in `customData` may nest at most this deep (the object itself is level 1). */
/**
 * The owner's approved content per selected resource: ID → record digest (docs/profiles-and-launching.md,
 * "Approved content"). A launch from the profile pins these digests, whatever the records hold by then.
 */
export const ProfileResourcePins = Type.Record(ResourceId, Type.String({ maxLength: 256, examples: [`sha256:${'9'.repeat(64)}`] }), {
  maxProperties: MAX_PROFILE_RESOURCE_IDS,
  description:
    "Optional. The content the owner approved for some of `resourceIds`: ID → record digest (`sha256:<64 hex>`, else 400 `invalid_input`). Each ID must be in `resourceIds` (else 400 `validation_failed`) and each digest a kept revision of that record visible on the profile's machine (else 422 `unknown_pinned_revision`); the profile's write holds those revisions. A launch from the profile pins these digests even after the records changed, and lists the changed ones in `pendingUpdates`.",
  examples: [{ 'pdf-split': `sha256:${'9'.repeat(64)}` }],
});

export const MAX_CUSTOM_DATA_DEPTH = 32;

export const CustomData = Type.Record(Type.String(), Type.Unknown(), {
  description: `Free JSON object for the host UI, at most ${MAX_CUSTOM_DATA_BYTES} bytes serialized and ${MAX_CUSTOM_DATA_DEPTH} levels of objects and arrays deep; no control character in any key, none but newline and tab in any string (400 \`validation_failed\` otherwise). Every key and string inside is scanned for secrets.`,
});

export const AcpCommandLaunch = Type.Object(
  {
    kind: Type.Literal('acp-command'),
    command: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: VISIBLE_LINE_PATTERN,
      description: 'The ACP agent command line the Agentlet runs (scanned for secrets; pass credentials through the environment instead).',
      examples: ['claude-code-acp'],
    }),
  },
  { additionalProperties: false, title: 'AcpCommandLaunch', description: 'A profile launched by running an ACP command.' },
);
export type AcpCommandLaunch = Static<typeof AcpCommandLaunch>;

/** Upstream's bound for a harness ID (Huabu `@agenetes/protocol` `harness.ts`): the Agentlet's catalogue names it. */
export const HARNESS_ID_PATTERN = '^[a-z0-9][a-z0-9-]{0,63}$';

export const HarnessLaunchOptions = Type.Object(
  {
    autoApprove: Type.Optional(
      Type.Boolean({ description: 'Start the harness with its own auto-approval of tool calls, when the harness supports it.' }),
    ),
  },
  {
    additionalProperties: false,
    title: 'HarnessLaunchOptions',
    description: 'The launch options a harness catalogue defines; no free command line or environment.',
  },
);

export const AcpHarnessLaunch = Type.Object(
  {
    kind: Type.Literal('acp-harness'),
    harnessId: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: HARNESS_ID_PATTERN,
      description:
        "The harness in the Agentlet's catalogue (1..64 lowercase letters, digits and `-`, starting with a letter or digit; scanned for secrets).",
      examples: ['claude-code'],
    }),
    options: Type.Optional(HarnessLaunchOptions),
  },
  {
    additionalProperties: false,
    title: 'AcpHarnessLaunch',
    description: "A profile launched through a harness the Agentlet knows (upstream's structured launch).",
  },
);
export type AcpHarnessLaunch = Static<typeof AcpHarnessLaunch>;

/** Owned by Agent Team manifests; carried unchanged, so unknown properties are kept. */
export const AgentTeamManifestLaunch = Type.Object(
  {
    kind: Type.Literal('agent-team-manifest'),
    manifestPath: Type.String({ minLength: 1, description: 'Path of the Agent Team manifest that defines this agent.' }),
    harness: Type.String({ minLength: 1, description: 'The harness named by the manifest.' }),
  },
  { additionalProperties: true, title: 'AgentTeamManifestLaunch', description: 'A manifest-backed profile (read-only through this API).' },
);

export const ProfileLaunch = Type.Union([AcpCommandLaunch, AcpHarnessLaunch, AgentTeamManifestLaunch], {
  description:
    '`acp-command` and `acp-harness` profiles are managed here; `agent-team-manifest` profiles come from Agent Team and cannot be created, changed or deleted through this API.',
});
export type ProfileLaunch = Static<typeof ProfileLaunch>;

/**
 * How a stored launch is shown. The serializer picks a union branch by validating it, so the `acp-command`
 * branch carries no length or line rule here: a stored record from another writer (upstream accepts any
 * non-blank command) must still be listed.
 */
const ProfileLaunchView = Type.Union(
  [
    Type.Object(
      { kind: Type.Literal('acp-command'), command: Type.String({ description: 'The ACP agent command line the Agentlet runs.' }) },
      { additionalProperties: false, title: 'AcpCommandLaunchView', description: 'A profile launched by running an ACP command.' },
    ),
    AcpHarnessLaunch,
    AgentTeamManifestLaunch,
  ],
  {
    description:
      '`acp-command` and `acp-harness` profiles are managed here; `agent-team-manifest` profiles come from Agent Team and cannot be created, changed or deleted through this API.',
  },
);

/** What the Huabu UI records about a command profile (upstream `commandMetadataSchema`). */
export const ProfileMetadata = Type.Object(
  {
    cliId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: TRIMMED_LINE_PATTERN,
        description:
          "The Huabu UI's ID of the agent CLI this profile runs (1..255 characters, single line, no control characters, no surrounding whitespace).",
        examples: ['claude-code'],
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'ProfileMetadata',
    description: 'Host UI metadata of an `acp-command` profile, stored and returned as sent.',
  },
);
export type ProfileMetadata = Static<typeof ProfileMetadata>;

export const Preparation = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Agent Team preparation of a manifest-backed profile, carried unchanged.',
});

/**
 * The profile's revision: 1 at create, +1 with every change that changes something. A stored record written
 * before revisions existed has none and reads as 1.
 */
export const ProfileRevision = Type.Integer({
  minimum: 0,
  description:
    "The profile's revision: 1 when created, one more with every change that changes something (a change that changes nothing keeps it). Send it back as `expectedRevision` in a PATCH to refuse a change made meanwhile (409 `profile_conflict`).",
  examples: [3],
});

const profileProperties = {
  schemaVersion: Type.Literal(PROFILE_SCHEMA_VERSION, { description: 'Record schema version.' }),
  id: ProfileId,
  revision: ProfileRevision,
  alias: Alias,
  agentletId: MachineId,
  workingDirPath: WorkingDirPath,
  resourceIds: ProfileResourceIds,
  resourcePins: Type.Optional(ProfileResourcePins),
  customData: Type.Optional(CustomData),
  metadata: Type.Optional(ProfileMetadata),
  launch: ProfileLaunchView,
  preparation: Type.Optional(Preparation),
};

/** The record as the API shows it. Manifest-backed profiles always show `resourceIds: []`. */
export const AgentProfile = Type.Object(profileProperties, { additionalProperties: false, title: 'AgentProfile' });
/**
 * A profile record. `revision` is optional here because a stored record written before revisions existed
 * has none (it reads as 1); every answer carries it (`profileView`).
 */
export type AgentProfile = Omit<Static<typeof AgentProfile>, 'revision'> & { revision?: number };
/** A profile as every answer shows it: with its `revision`. */
export type ProfileView = Static<typeof AgentProfile>;

const NON_BLANK = '\\S';
const TRIMMED = '^\\S(?:[\\s\\S]*\\S)?$';
/**
 * The record as stored, checked with upstream's store rules (Huabu agent-team `store.ts` `parseProfile`) and
 * no stricter, so a record upstream's store accepts never stops the start: non-blank strings, an alias
 * without surrounding whitespace, a bounded resource ID list, a JSON object for `customData`, and
 * `metadata.cliId` a string. Any property another writer (Agent Team) put there is carried unchanged.
 * Writes through the API are held to the stricter request schemas.
 */
export const StoredAgentProfile = Type.Object(
  {
    schemaVersion: Type.Literal(PROFILE_SCHEMA_VERSION),
    id: Type.String({ pattern: NON_BLANK }),
    alias: Type.String({ pattern: TRIMMED }),
    agentletId: Type.String({ pattern: NON_BLANK }),
    workingDirPath: Type.String({ pattern: NON_BLANK }),
    revision: Type.Optional(Type.Integer({ minimum: 0 })),
    resourceIds: ProfileResourceIds,
    resourcePins: Type.Optional(Type.Record(Type.String(), Type.String())),
    customData: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    metadata: Type.Optional(Type.Object({ cliId: Type.Optional(Type.String()) }, { additionalProperties: true })),
    launch: Type.Union([
      Type.Object({ kind: Type.Literal('acp-command'), command: Type.String({ pattern: NON_BLANK }) }, { additionalProperties: true }),
      Type.Object({ kind: Type.Literal('acp-harness'), harnessId: Type.String({ pattern: NON_BLANK }) }, { additionalProperties: true }),
      Type.Object(
        {
          kind: Type.Literal('agent-team-manifest'),
          manifestPath: Type.String({ pattern: NON_BLANK }),
          harness: Type.String({ pattern: NON_BLANK }),
        },
        { additionalProperties: true },
      ),
    ]),
    preparation: Type.Optional(Preparation),
  },
  { additionalProperties: true },
);

export const ProfileCreateBody = Type.Object(
  {
    alias: Alias,
    agentletId: Type.Optional({
      ...MachineId,
      description:
        "The machine the agent runs on. Left out: `DEFAULT_AGENTLET_ID` (the Huabu server's own machine) when the service has one, else the one enrolled machine when exactly one is enrolled; otherwise 400.",
    }),
    workingDirPath: WorkingDirPath,
    launch: ProfileLaunch,
    resourceIds: Type.Optional(ProfileResourceIds),
    resourcePins: Type.Optional(ProfileResourcePins),
    customData: Type.Optional(CustomData),
    metadata: Type.Optional(ProfileMetadata),
  },
  {
    additionalProperties: false,
    title: 'ProfileCreate',
    description:
      'The registry assigns `id`, `schemaVersion` and `revision` (1); sending `id` or `schemaVersion` is 400. `acp-command` and `acp-harness` profiles can be created here: an `agent-team-manifest` launch is 409 `invalid_profile_kind`. `agentletId` defaults to `DEFAULT_AGENTLET_ID` when the service has one, else to the one enrolled machine.',
  },
);
export type ProfileCreateBody = Static<typeof ProfileCreateBody>;

export const ProfilePatchBody = Type.Object(
  {
    alias: Type.Optional(Alias),
    workingDirPath: Type.Optional(WorkingDirPath),
    resourceIds: Type.Optional(ProfileResourceIds),
    resourcePins: Type.Optional(
      Type.Union([ProfileResourcePins, Type.Null()], {
        description: 'Replaces the whole map; `null` removes it (launches then pin the records as they are).',
      }),
    ),
    customData: Type.Optional(Type.Union([CustomData, Type.Null()], { description: 'Replaces the whole object; `null` removes it.' })),
    metadata: Type.Optional(Type.Union([ProfileMetadata, Type.Null()], { description: 'Replaces the whole object; `null` removes it.' })),
    expectedRevision: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "The `revision` the change was made against (upstream's optimistic check). When the profile's revision is another one, the change is refused with 409 `profile_conflict` and nothing is written.",
        examples: [3],
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'ProfilePatch',
    description:
      'Fields left out stay as they are. `resourceIds` replaces the whole list (`[]` selects nothing); `customData` and `metadata` replace the whole object, and `null` removes it. `expectedRevision` changes nothing itself: it is the condition of the change.',
  },
);
export type ProfilePatchBody = Static<typeof ProfilePatchBody>;

/**
 * What the registry knows of the default machine: `connected` (it holds its channel), `disconnected`
 * (enrolled, no channel), `revoked` (its enrollment was revoked), `unknown` (never enrolled here).
 */
export const AGENTLET_STATUSES = ['connected', 'disconnected', 'revoked', 'unknown'] as const;
export type AgentletStatus = (typeof AGENTLET_STATUSES)[number];

export const ProfileListAgentlet = Type.Object(
  {
    id: { ...MachineId, description: 'The default machine: `DEFAULT_AGENTLET_ID`, else the one enrolled machine.' },
    status: Type.Union([Type.Literal('connected'), Type.Literal('disconnected'), Type.Literal('revoked'), Type.Literal('unknown')], {
      description:
        '`connected`: the machine holds its channel (`agentlet-resources serve` runs on it); `disconnected`: it is enrolled but holds no channel; `revoked`: its enrollment was revoked; `unknown`: it was never enrolled here.',
    }),
    online: Type.Boolean({
      description: "Upstream's flag, which the Huabu UI reads to show its offline banner: true only while the machine is `connected`.",
    }),
    connectedAt: Type.Optional(
      Type.String({ format: 'date-time', description: "When the machine's channel opened (upstream's field), while it is `connected`." }),
    ),
    lastError: Type.Optional(
      Type.String({ description: 'Why the machine cannot be used, when `online` is false (the Huabu UI shows it).' }),
    ),
  },
  {
    additionalProperties: false,
    title: 'ProfileListAgentlet',
    description: 'The default machine: the one a profile created without `agentletId` lands on. Absent when there is none.',
  },
);
export type ProfileListAgentlet = Static<typeof ProfileListAgentlet>;

export const ProfileList = Type.Object(
  {
    profiles: Type.Array(AgentProfile, { description: 'Profiles sorted by id.' }),
    agentlet: Type.Optional(ProfileListAgentlet),
    selectableProfileIds: Type.Array(ProfileId, {
      description:
        "IDs of the profiles a new agent can be started from, in the order of `profiles` (upstream's `listSelectableProfileIds`): every `acp-command` profile, and a manifest-backed one only when its preparation is `ready`, its Agent Team member is `active`, and every required environment field of the member has a value.",
    }),
  },
  { additionalProperties: false },
);

export const ProfileParams = Type.Object({ id: ProfileId });

/** The delete answer with `HUABU_COMPAT=1` (upstream's). */
export const ProfileDeleted = Type.Object(
  { deleted: Type.Literal(true, { description: 'Always true: a profile that does not exist is 404.' }) },
  { additionalProperties: false, title: 'ProfileDeleted' },
);

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description:
        'The `ETag` from GET (or `*`), in whichever coding it was read (`"<revision>"`, `"<revision>-br"`, `"<revision>-gz"`). When it is no longer current the change is refused with 412; without it the change is unconditional.',
    }),
  ),
});
