// The AgentProfile record (schemaVersion 2) and the request bodies that create and change it. One
// definition validates HTTP bodies, types handlers, serializes responses, feeds OpenAPI and backs the
// check of stored records.
import Type, { type Static } from 'typebox';
import { MachineId, ResourceId } from './common.js';

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

/** Printable: no C0/C1 control characters or DEL, and at least one visible character. */
export const ALIAS_PATTERN = '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F-\\u009F]*$';
export const Alias = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: ALIAS_PATTERN,
  description: 'Display name the owner calls the agent by; 1..64 printable characters, unique among profiles ignoring case.',
  examples: ['Reviewer'],
});

/** An absolute POSIX path (`/...`) or Windows drive path (`C:\...`), single line (so no NUL). */
export const WORKING_DIR_PATTERN = '^(?:/|[A-Za-z]:[\\\\/])[^\\u0000-\\u001F\\u007F]*$';
export const WorkingDirPath = Type.String({
  minLength: 1,
  maxLength: 4096,
  pattern: WORKING_DIR_PATTERN,
  description: 'Absolute working directory of the agent on its machine (at most 4096 characters, no control characters).',
  examples: ['/home/me/projects/site'],
});

export const ProfileResourceIds = Type.Array(ResourceId, {
  maxItems: MAX_PROFILE_RESOURCE_IDS,
  uniqueItems: true,
  description: `Selected optional resources, in the owner's order: at most ${MAX_PROFILE_RESOURCE_IDS} unique IDs, each known and eligible for the profile's machine (provider \`huabu\` or the profile's \`agentletId\`).`,
  examples: [['web-search']],
});

/** Objects and arrays in `customData` may nest at most this deep (the object itself is level 1). */
export const MAX_CUSTOM_DATA_DEPTH = 32;

export const CustomData = Type.Record(Type.String(), Type.Unknown(), {
  description: `Free JSON object for the host UI, at most ${MAX_CUSTOM_DATA_BYTES} bytes serialized and ${MAX_CUSTOM_DATA_DEPTH} levels of objects and arrays deep (400 \`validation_failed\` beyond). Every key and string inside is scanned for secrets.`,
});

export const AcpCommandLaunch = Type.Object(
  {
    kind: Type.Literal('acp-command'),
    command: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F]*$',
      description: 'The ACP agent command line the Agentlet runs (scanned for secrets; pass credentials through the environment instead).',
      examples: ['claude-code-acp'],
    }),
  },
  { additionalProperties: false, title: 'AcpCommandLaunch', description: 'A profile launched by running an ACP command.' },
);
export type AcpCommandLaunch = Static<typeof AcpCommandLaunch>;

/** Owned by Agent Team manifests; carried unchanged, so unknown properties are kept. */
export const AgentTeamManifestLaunch = Type.Object(
  {
    kind: Type.Literal('agent-team-manifest'),
    manifestPath: Type.String({ minLength: 1, description: 'Path of the Agent Team manifest that defines this agent.' }),
    harness: Type.String({ minLength: 1, description: 'The harness named by the manifest.' }),
  },
  { additionalProperties: true, title: 'AgentTeamManifestLaunch', description: 'A manifest-backed profile (read-only through this API).' },
);

export const ProfileLaunch = Type.Union([AcpCommandLaunch, AgentTeamManifestLaunch], {
  description: '`acp-command` profiles are managed here; `agent-team-manifest` profiles come from Agent Team and cannot be created, changed or deleted through this API.',
});
export type ProfileLaunch = Static<typeof ProfileLaunch>;

export const Preparation = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Agent Team preparation of a manifest-backed profile, carried unchanged.',
});

const profileProperties = {
  schemaVersion: Type.Literal(PROFILE_SCHEMA_VERSION, { description: 'Record schema version.' }),
  id: ProfileId,
  alias: Alias,
  agentletId: MachineId,
  workingDirPath: WorkingDirPath,
  resourceIds: ProfileResourceIds,
  customData: Type.Optional(CustomData),
  launch: ProfileLaunch,
  preparation: Type.Optional(Preparation),
};

/** The record as the API shows it. Manifest-backed profiles always show `resourceIds: []`. */
export const AgentProfile = Type.Object(profileProperties, { additionalProperties: false, title: 'AgentProfile' });
export type AgentProfile = Static<typeof AgentProfile>;

/**
 * The record as stored: the same fields, plus any property another writer (Agent Team) put there, which
 * is carried unchanged.
 */
export const StoredAgentProfile = Type.Object(profileProperties, { additionalProperties: true });

export const ProfileCreateBody = Type.Object(
  {
    alias: Alias,
    agentletId: MachineId,
    workingDirPath: WorkingDirPath,
    launch: ProfileLaunch,
    resourceIds: Type.Optional(ProfileResourceIds),
    customData: Type.Optional(CustomData),
  },
  {
    additionalProperties: false,
    title: 'ProfileCreate',
    description:
      'The registry assigns `id` and `schemaVersion`; sending either is 400. Only `acp-command` profiles can be created here: an `agent-team-manifest` launch is 409 `invalid_profile_kind`.',
  },
);
export type ProfileCreateBody = Static<typeof ProfileCreateBody>;

export const ProfilePatchBody = Type.Object(
  {
    alias: Type.Optional(Alias),
    workingDirPath: Type.Optional(WorkingDirPath),
    resourceIds: Type.Optional(ProfileResourceIds),
    customData: Type.Optional(CustomData),
  },
  {
    additionalProperties: false,
    title: 'ProfilePatch',
    description:
      'Fields left out stay as they are. `resourceIds` replaces the whole list (`[]` selects nothing); `customData` replaces the whole object.',
  },
);
export type ProfilePatchBody = Static<typeof ProfilePatchBody>;

export const ProfileList = Type.Object(
  { profiles: Type.Array(AgentProfile, { description: 'Profiles sorted by id.' }) },
  { additionalProperties: false },
);

export const ProfileParams = Type.Object({ id: ProfileId });

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: 'The `ETag` from GET (or `*`). When it is no longer current the change is refused with 412; without it the change is unconditional.' }),
  ),
});
