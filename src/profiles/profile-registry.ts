// The profile registry: validates and scans profile writes, checks placement against the catalogue, applies
// them through the store (which enforces alias uniqueness and If-Match atomically), answers reads, and
// writes the audit trail. Framework-free.
import { assertNoErrors, selectionConflicts, type SelectionProfile } from '../capabilities/diagnostics.js';
import { AppError } from '../errors.js';
import { findControlCharacter } from '../text/control-characters.js';
import { hasInvisible } from '../text/look-alike.js';
import { AuditTrail } from '../audit/audit-trail.js';
import {
  MAX_CUSTOM_DATA_BYTES,
  MAX_CUSTOM_DATA_DEPTH,
  PROFILE_SCHEMA_VERSION,
  type AgentProfile,
  type ProfileCreateBody,
  type ProfileListAgentlet,
  type ProfilePatchBody,
  type ProfileView,
} from '../schemas/profile.js';
import { stringLeaves, type SecretScanner } from '../secrets/secret-scanner.js';
import { uncodedTag } from '../registry/catalogue-cache.js';
import type { ProfileEntry, RegistryStore } from '../registry/store.js';
import { assertDigest, digestOf, profileHolder } from '../registry/record-digest.js';
import { visibleOnMachine } from '../registry/visibility.js';
import type { ChannelStatus } from '../channel/machine-channels.js';
import { assertPlacement } from './placement.js';
import { selectableProfileIds } from './selectable.js';
import {
  ACP_COMMAND,
  ACP_HARNESS,
  assertExpectedRevision,
  assertRevision,
  isManifestBacked,
  newProfileId,
  notThisKind,
  assertPinsSelected,
  profileNotFound,
  profileView,
  type ProfileChanges,
} from './profile-rules.js';

/** A profile as the API shows it, with its ETag (a quoted digest of the record). */
export interface ProfileRead {
  profile: ProfileView;
  etag: string;
}

/** The profile list as the API shows it. */
export interface ProfileListing {
  profiles: ProfileView[];
  selectableProfileIds: string[];
  /** The default machine; absent when there is none. */
  agentlet?: ProfileListAgentlet;
}

/** The launch a create stores: the body's, with no property but the kind's own. */
function launchOf(launch: ProfileCreateBody['launch']): AgentProfile['launch'] {
  if (launch.kind === ACP_COMMAND) return { kind: ACP_COMMAND, command: launch.command };
  if (launch.kind === ACP_HARNESS) {
    return { kind: ACP_HARNESS, harnessId: launch.harnessId, ...(launch.options === undefined ? {} : { options: { ...launch.options } }) };
  }
  throw new AppError(
    'invalid_profile_kind',
    `Only ${ACP_COMMAND} and ${ACP_HARNESS} profiles can be created here; ${launch.kind} profiles come from Agent Team manifests.`,
    { field: '/launch/kind', kind: launch.kind },
  );
}

/**
 * The revisions an `If-Match` header accepts (RFC 9110 strong comparison): `undefined` when the change is
 * unconditional (no header, or `*`, which any existing profile matches). Weak tags never match. The ETag of
 * a compressed read (`"<revision>-br"`, `"<revision>-gz"`) names its revision as `"<revision>"` does.
 */
export function parseIfMatch(header: string | undefined): string[] | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const tags = header
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  // An If-Match that names nothing is a client bug (an empty variable), not "no condition": 400.
  if (tags.length === 0) {
    throw new AppError('validation_failed', 'If-Match is empty; send an ETag, `*`, or no If-Match header.', { field: 'headers/if-match' });
  }
  const opaque = tags
    .filter((t) => !t.startsWith('W/'))
    .map((t) => (t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t));
  // Each tag as sent and without a coding suffix: a revision that itself ends in `-br` still matches.
  return [...new Set(opaque.flatMap((tag) => [tag, uncodedTag(tag)]))];
}

function read(entry: ProfileEntry): ProfileRead {
  return { profile: profileView(entry.profile), etag: `"${entry.revision}"` };
}

/**
 * Refuses customData nested deeper than MAX_CUSTOM_DATA_DEPTH (objects and arrays), counted without
 * recursion, before anything recursive (serializing, scanning) touches it: 5,000 levels overflowed the stack.
 */
function assertCustomDataDepth(customData: Record<string, unknown>): void {
  const stack: [unknown, number][] = [[customData, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (depth > MAX_CUSTOM_DATA_DEPTH) {
      throw new AppError('validation_failed', `customData is nested more than ${MAX_CUSTOM_DATA_DEPTH} levels deep.`, {
        field: '/customData',
        limit: MAX_CUSTOM_DATA_DEPTH,
      });
    }
    for (const child of Object.values(value as object)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
}

/**
 * Refuses a control character in any key of customData, and any but newline and tab in any string: a
 * stored string must read back as text on every store (PostgreSQL's text holds no NUL, and its JSON
 * operators fail on the whole record). The message names neither key nor value (either could be a secret).
 */
function assertNoControlCharacters(customData: Record<string, unknown>): void {
  const where = findControlCharacter(customData);
  if (where !== undefined) {
    throw new AppError(
      'validation_failed',
      `customData holds a control character in a ${where} (keys may hold none; strings only newline and tab).`,
      {
        field: '/customData',
      },
    );
  }
}

/** Aliases may not hold invisible or bidi-control characters (they would make look-alikes). */
function assertVisibleAlias(alias: string | undefined): void {
  if (alias !== undefined && hasInvisible(alias)) {
    throw new AppError('validation_failed', 'The alias holds an invisible or bidirectional-control character.', { field: '/alias' });
  }
}

function assertCustomDataSize(customData: Record<string, unknown> | undefined): void {
  if (customData === undefined) return;
  assertCustomDataDepth(customData);
  assertNoControlCharacters(customData);
  const bytes = Buffer.byteLength(JSON.stringify(customData), 'utf8');
  if (bytes > MAX_CUSTOM_DATA_BYTES) {
    throw new AppError('validation_failed', `customData is ${bytes} bytes serialized; at most ${MAX_CUSTOM_DATA_BYTES} are allowed.`, {
      field: '/customData',
      bytes,
      limit: MAX_CUSTOM_DATA_BYTES,
    });
  }
}

/** Every text field of a write, by JSON pointer: alias, path, command, metadata, and every key and string of customData. */
function textFields(fields: {
  alias?: string;
  workingDirPath?: string;
  command?: string;
  harnessId?: string;
  customData?: Record<string, unknown> | null;
  metadata?: { cliId?: string } | null;
}): [string, string][] {
  const out: [string, string][] = [];
  if (fields.alias !== undefined) out.push(['/alias', fields.alias]);
  if (fields.workingDirPath !== undefined) out.push(['/workingDirPath', fields.workingDirPath]);
  if (fields.command !== undefined) out.push(['/launch/command', fields.command]);
  if (fields.harnessId !== undefined) out.push(['/launch/harnessId', fields.harnessId]);
  if (fields.metadata) out.push(...stringLeaves(fields.metadata, '/metadata'));
  if (fields.customData) out.push(...stringLeaves(fields.customData, '/customData'));
  return out;
}

export class ProfileRegistry {
  constructor(
    private readonly store: RegistryStore,
    private readonly scanner: SecretScanner,
    private readonly audit: AuditTrail = new AuditTrail(store),
    private readonly options: {
      requiredResourceIds?: readonly string[];
      defaultAgentletId?: string;
      /** Whether a machine holds its channel now (src/channel/machine-channels.ts); without it, none does. */
      channelStatus?: (machineId: string) => ChannelStatus;
    } = {},
  ) {}

  async list(): Promise<ProfileView[]> {
    return (await this.store.listProfiles()).map((e) => profileView(e.profile));
  }

  /**
   * The profiles, with upstream's meaning the IDs of those a new agent can be started from, and the
   * default machine with what the registry knows of it.
   */
  async listWithSelectable(): Promise<ProfileListing> {
    const [entries, team, agentlet] = await Promise.all([this.store.listProfiles(), this.store.getTeamState(), this.defaultAgentlet()]);
    const profiles = entries.map((e) => profileView(e.profile));
    return { profiles, selectableProfileIds: selectableProfileIds(profiles, team), ...(agentlet ? { agentlet } : {}) };
  }

  /**
   * The machine a profile created without `agentletId` lands on: `DEFAULT_AGENTLET_ID`, else the one
   * machine enrolled (and not revoked) when exactly one is; `undefined` otherwise.
   */
  async defaultMachineId(): Promise<string | undefined> {
    if (this.options.defaultAgentletId !== undefined) return this.options.defaultAgentletId;
    const active = (await this.store.listMachines()).filter((m) => !m.revokedAt);
    return active.length === 1 ? active[0]?.machineId : undefined;
  }

  /**
   * The default machine and its status: `connected` while it holds its channel (`online`, as upstream's UI
   * reads it, with `connectedAt`), `disconnected` when enrolled but not connected, else `revoked` or
   * `unknown`; `lastError` says why it is not online.
   */
  async defaultAgentlet(): Promise<ProfileListAgentlet | undefined> {
    const id = await this.defaultMachineId();
    if (id === undefined) return undefined;
    const machine = await this.store.getMachine(id);
    if (machine && !machine.revokedAt) {
      const live = this.options.channelStatus?.(id) ?? { status: 'disconnected' };
      if (live.status === 'connected')
        return { id, status: 'connected', online: true, ...(live.since === undefined ? {} : { connectedAt: live.since }) };
      return {
        id,
        status: 'disconnected',
        online: false,
        lastError: `Machine ${id} is enrolled but not connected: run \`agentlet-resources serve\` on it.`,
      };
    }
    if (machine)
      return { id, status: 'revoked', online: false, lastError: `The enrollment of machine ${id} was revoked; enroll it again to use it.` };
    return { id, status: 'unknown', online: false, lastError: `Machine ${id} is not enrolled in this registry.` };
  }

  async get(id: string): Promise<ProfileRead> {
    const entry = await this.store.getProfile(id);
    if (!entry) throw profileNotFound(id);
    return read(entry);
  }

  /**
   * Creates an `acp-command` or `acp-harness` profile; the registry assigns `id`, `schemaVersion` and
   * `revision` (1).
   */
  async create(body: ProfileCreateBody, actor: string): Promise<ProfileRead> {
    const launch = launchOf(body.launch);
    // The Huabu UI leaves the machine out: the Huabu server's own machine, when the service knows it, else
    // the only machine there is to choose.
    const agentletId = body.agentletId ?? (await this.defaultMachineId());
    if (agentletId === undefined) {
      throw new AppError(
        'validation_failed',
        'agentletId is required: this service has no DEFAULT_AGENTLET_ID, and not exactly one machine is enrolled to use instead.',
        { field: '/agentletId' },
      );
    }
    const resourceIds = body.resourceIds ?? [];
    assertVisibleAlias(body.alias);
    assertCustomDataSize(body.customData);
    await this.#assertPlacement(resourceIds, agentletId);
    const id = newProfileId();
    await this.#assertNoConflicts({ id, alias: body.alias, agentletId }, resourceIds);
    if (body.resourcePins !== undefined) await this.#checkPins(body.resourcePins, resourceIds, agentletId);
    await this.scanner.assertClean([
      ['/agentletId', agentletId],
      ...textFields({
        ...body,
        ...(launch.kind === ACP_COMMAND ? { command: launch.command } : {}),
        ...(launch.kind === ACP_HARNESS ? { harnessId: launch.harnessId } : {}),
      }),
    ]);
    const profile: AgentProfile = {
      schemaVersion: PROFILE_SCHEMA_VERSION,
      id,
      revision: 1,
      alias: body.alias,
      agentletId,
      workingDirPath: body.workingDirPath,
      resourceIds: [...resourceIds],
      ...(body.resourcePins !== undefined ? { resourcePins: { ...body.resourcePins } } : {}),
      ...(body.customData !== undefined ? { customData: body.customData } : {}),
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      launch,
    };
    // Held before the profile that names them is written: a crash between keeps too much, never too little.
    await this.#holdPins(id, body.resourcePins);
    const entry = await this.store
      .createProfile(profile)
      .catch((err: unknown) => this.audit.failure(actor, 'profile.create', profile.id, err));
    await this.audit.record([{ actor, action: 'profile.create', id: profile.id, outcome: 'created' }]);
    return read(entry);
  }

  /**
   * Changes alias, workingDirPath, resourceIds (the whole list) and customData (the whole object).
   * `ifMatch` is the request's If-Match header and `body.expectedRevision` the revision the caller saw;
   * the store compares both atomically with the write.
   */
  async update(id: string, body: ProfilePatchBody, ifMatch: string | undefined, actor: string): Promise<ProfileRead> {
    const expected = parseIfMatch(ifMatch);
    const current = await this.store.getProfile(id);
    if (!current) throw profileNotFound(id);
    // Fail early on a stale ETag or revision or the wrong kind; the store checks them again inside the write.
    assertRevision(current.profile, expected);
    assertExpectedRevision(current.profile, body.expectedRevision);
    if (isManifestBacked(current.profile)) throw notThisKind(current.profile, 'changed');
    assertVisibleAlias(body.alias);
    assertCustomDataSize(body.customData ?? undefined);
    // agentletId cannot change, so placement checked against this read still holds at the write.
    if (body.resourceIds !== undefined) {
      await this.#assertPlacement(body.resourceIds, current.profile.agentletId);
      await this.#assertNoConflicts({ ...current.profile, alias: body.alias ?? current.profile.alias }, body.resourceIds);
    }
    if (body.resourcePins) {
      await this.#checkPins(body.resourcePins, body.resourceIds ?? current.profile.resourceIds, current.profile.agentletId);
    }
    await this.scanner.assertClean(textFields(body));
    const changes: ProfileChanges = {};
    if (body.resourcePins !== undefined) changes.resourcePins = body.resourcePins;
    if (body.alias !== undefined) changes.alias = body.alias;
    if (body.workingDirPath !== undefined) changes.workingDirPath = body.workingDirPath;
    if (body.resourceIds !== undefined) changes.resourceIds = body.resourceIds;
    if (body.customData !== undefined) changes.customData = body.customData;
    if (body.metadata !== undefined) changes.metadata = body.metadata;
    await this.#holdPins(id, body.resourcePins ?? undefined);
    const entry = await this.store
      .updateProfile(id, changes, expected, body.expectedRevision)
      .catch((err: unknown) => this.audit.failure(actor, 'profile.update', id, err));
    await this.audit.record([{ actor, action: 'profile.update', id, outcome: entry.changed ? 'updated' : 'unchanged' }]);
    return read(entry);
  }

  async delete(id: string, ifMatch: string | undefined, actor: string): Promise<void> {
    await this.store.deleteProfile(id, parseIfMatch(ifMatch)).catch((err: unknown) => this.audit.failure(actor, 'profile.delete', id, err));
    await this.audit.record([{ actor, action: 'profile.delete', id, outcome: 'deleted' }]);
  }

  /**
   * Each pin's digest well formed (400 `invalid_input`), its ID selected (400 `validation_failed`, also
   * checked by the store with the write), and a kept revision of that record the machine may read (422
   * `unknown_pinned_revision`).
   */
  async #checkPins(pins: Record<string, string>, resourceIds: readonly string[], agentletId: string): Promise<void> {
    for (const [rid, digest] of Object.entries(pins)) assertDigest(digest, `/resourcePins/${rid}`);
    assertPinsSelected({ resourceIds: [...resourceIds], resourcePins: pins });
    for (const [rid, digest] of Object.entries(pins)) {
      const current = await this.store.getResource(rid);
      const content = current && digestOf(current) === digest ? current : (await this.store.getRevision(rid, digest))?.record;
      if (!content || !visibleOnMachine(content.provider, agentletId)) {
        throw new AppError(
          'unknown_pinned_revision',
          `Resource ${rid} has no kept revision ${digest} this profile's machine may read; nothing was written.`,
          { field: `/resourcePins/${rid}`, id: rid, digest },
        );
      }
    }
  }

  /** Holds the profile's approved revisions (`profile:<id>`): retention keeps them while the profile names them. */
  async #holdPins(profileId: string, pins: Record<string, string> | undefined): Promise<void> {
    if (pins === undefined) return;
    await this.store.holdRevisions(
      profileHolder(profileId),
      Object.entries(pins).map(([id, digest]) => ({ id, digest })),
    );
  }

  async #assertPlacement(resourceIds: readonly string[], agentletId: string): Promise<void> {
    if (resourceIds.length === 0) return;
    const records = await Promise.all(resourceIds.map(async (rid) => [rid, await this.store.getResource(rid)] as const));
    const found = new Map(records);
    assertPlacement(resourceIds, agentletId, (rid) => found.get(rid));
  }

  /**
   * 422 `capability_diagnostics_failed` when the selection would put two same-named resources in front
   * of the agent (see `selectionConflicts`). Runs after placement, so every ID resolves and is eligible.
   */
  async #assertNoConflicts(profile: SelectionProfile, resourceIds: readonly string[]): Promise<void> {
    if (resourceIds.length === 0) return;
    const conflicts = selectionConflicts(
      { resources: await this.store.listResources(), requiredResourceIds: this.options.requiredResourceIds ?? [] },
      profile,
      resourceIds,
    );
    assertNoErrors(conflicts, 'The selection holds resources an agent could not tell apart', { field: '/resourceIds' });
  }
}
