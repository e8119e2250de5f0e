// The rules of the profile registry that every store applies atomically with its write (the JSON store
// inside its group-commit mutation; a database store in one statement or transaction): alias uniqueness
// ignoring case, the If-Match and `expectedRevision` checks, the revision count, and the kinds this API
// may change. Pure functions.
import { lookAlikeKey } from '../text/look-alike.js';
import { createHash, randomBytes } from 'node:crypto';
import { AppError } from '../errors.js';
import type { AgentProfile, ProfileView } from '../schemas/profile.js';

export const ACP_COMMAND = 'acp-command';
export const ACP_HARNESS = 'acp-harness';
export const AGENT_TEAM_MANIFEST = 'agent-team-manifest';

/** The fields PATCH may change. */
export interface ProfileChanges {
  alias?: string;
  workingDirPath?: string;
  resourceIds?: string[];
  /** `null` removes it. */
  resourcePins?: Record<string, string> | null;
  /** `null` removes it. */
  customData?: Record<string, unknown> | null;
  /** `null` removes it. */
  metadata?: { cliId?: string } | null;
}

/**
 * Aliases compare ignoring case and look-alike characters (src/text/look-alike.ts); a database keeps this
 * key in a uniquely indexed column (PostgreSQL `profiles.alias_key`, re-keyed at start when the rule changes).
 */
export function aliasKey(alias: string): string {
  return lookAlikeKey(alias);
}

/**
 * Groups of profile IDs (each sorted, two or more) whose aliases share a key: stores written under an
 * earlier alias rule may hold such pairs; they are kept and named rather than refused at start.
 */
export function aliasCollisions(profiles: Iterable<Pick<AgentProfile, 'id' | 'alias'>>): string[][] {
  const byKey = new Map<string, string[]>();
  for (const p of profiles) {
    const key = aliasKey(p.alias);
    byKey.set(key, [...(byKey.get(key) ?? []), p.id]);
  }
  return [...byKey.values()].filter((ids) => ids.length > 1).map((ids) => ids.sort());
}

export function isManifestBacked(profile: Pick<AgentProfile, 'launch'>): boolean {
  return profile.launch.kind === AGENT_TEAM_MANIFEST;
}

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `prf-` + 16 lowercase base32 characters (80 random bits): URL- and file-name-safe, easy to read out. */
export function newProfileId(): string {
  const bytes = randomBytes(16);
  let out = 'prf-';
  for (const b of bytes) out += BASE32[b & 31];
  return out;
}

/** JSON with object keys sorted at every level, so equal records have equal bytes. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The ETag of a stored record: a digest of its content, the integer `revision` included. Every change that
 * changes something also raises `revision`, so the ETag changes exactly when the revision does: If-Match
 * (412) and `expectedRevision` (409) refuse the same changes made meanwhile.
 */
export function profileRevision(profile: AgentProfile): string {
  return createHash('sha256').update(canonicalJson(profile)).digest('base64url').slice(0, 27);
}

export function profileNotFound(id: string): AppError {
  return new AppError('profile_not_found', `No profile with ID ${id}.`, { id });
}

export function notThisKind(profile: AgentProfile, action: string): AppError {
  return new AppError(
    'invalid_profile_kind',
    `Profile ${profile.id} is manifest-backed (${AGENT_TEAM_MANIFEST}); it is managed by its Agent Team manifest and cannot be ${action} here.`,
    { id: profile.id, kind: profile.launch.kind },
  );
}

/** Throws 409 `alias_conflict` when another profile already uses `alias` (ignoring case). */
export function assertAliasFree(profiles: Iterable<AgentProfile>, alias: string, exceptId?: string): void {
  const key = aliasKey(alias);
  for (const p of profiles) {
    if (p.id !== exceptId && aliasKey(p.alias) === key) {
      throw new AppError('alias_conflict', `Alias ${JSON.stringify(alias)} is already used by profile ${p.id} (aliases ignore case).`, {
        field: '/alias',
        id: p.id,
      });
    }
  }
}

/** The integer revision of a stored record; a record written before revisions existed is at 1. */
export function revisionOf(profile: Pick<AgentProfile, 'revision'>): number {
  return typeof profile.revision === 'number' ? profile.revision : 1;
}

/** Throws 409 `profile_conflict` when the caller's `expectedRevision` is not the current one. Absent: unconditional. */
export function assertExpectedRevision(current: AgentProfile, expected: number | undefined): void {
  if (expected === undefined) return;
  const revision = revisionOf(current);
  if (expected !== revision) {
    throw new AppError(
      'profile_conflict',
      `Profile ${current.id} is at revision ${revision}, not ${expected}: it changed meanwhile. Read it again and reapply your change.`,
      { id: current.id, revision, expectedRevision: expected },
    );
  }
}

/** Throws 412 when the caller's If-Match revisions do not include the current one. Absent: unconditional. */
export function assertRevision(current: AgentProfile, expected: readonly string[] | undefined): void {
  if (expected === undefined) return;
  if (!expected.includes(profileRevision(current))) {
    throw new AppError(
      'precondition_failed',
      `Profile ${current.id} changed since the ETag you sent was issued; read it again and reapply your change.`,
      { id: current.id },
    );
  }
}

/**
 * 400 `validation_failed` unless every ID of the profile's `resourcePins` is one of its `resourceIds`: an
 * approval applies to a selected resource (a change that drops an ID from the selection drops its pin too).
 */
export function assertPinsSelected(profile: Pick<AgentProfile, 'resourceIds' | 'resourcePins'>): void {
  const selected = new Set(profile.resourceIds);
  const strays = Object.keys(profile.resourcePins ?? {}).filter((id) => !selected.has(id));
  if (strays.length > 0) {
    throw new AppError('validation_failed', `resourcePins names resources the profile does not select: ${strays.join(', ')}.`, {
      field: '/resourcePins',
      ids: strays,
    });
  }
}

export function planCreate(profiles: Iterable<AgentProfile>, record: AgentProfile, exists: (id: string) => boolean): void {
  if (exists(record.id)) throw new AppError('internal_error', `Profile ID ${record.id} was assigned twice.`);
  assertPinsSelected(record);
  assertAliasFree(profiles, record.alias);
}

/** The updated record, or the current one when nothing changes. Checks run in the order a client expects. */
export function planUpdate(
  profiles: Iterable<AgentProfile>,
  current: AgentProfile | undefined,
  id: string,
  changes: ProfileChanges,
  expected: readonly string[] | undefined,
  expectedRevision?: number,
): { next: AgentProfile; changed: boolean } {
  if (!current) throw profileNotFound(id);
  assertRevision(current, expected);
  assertExpectedRevision(current, expectedRevision);
  if (isManifestBacked(current)) throw notThisKind(current, 'changed');
  if (changes.alias !== undefined && changes.alias !== current.alias) assertAliasFree(profiles, changes.alias, id);
  const next: AgentProfile = { ...current };
  if (changes.alias !== undefined) next.alias = changes.alias;
  if (changes.workingDirPath !== undefined) next.workingDirPath = changes.workingDirPath;
  if (changes.resourceIds !== undefined) next.resourceIds = [...changes.resourceIds];
  if (changes.resourcePins === null) delete next.resourcePins;
  else if (changes.resourcePins !== undefined) next.resourcePins = { ...changes.resourcePins };
  assertPinsSelected(next);
  if (changes.customData === null) delete next.customData;
  else if (changes.customData !== undefined) next.customData = changes.customData;
  if (changes.metadata === null) delete next.metadata;
  else if (changes.metadata !== undefined) next.metadata = changes.metadata;
  const changed = canonicalJson(next) !== canonicalJson(current);
  if (!changed) return { next: current, changed };
  next.revision = revisionOf(current) + 1;
  return { next, changed };
}

export function planDelete(current: AgentProfile | undefined, id: string, expected: readonly string[] | undefined): void {
  if (!current) throw profileNotFound(id);
  assertRevision(current, expected);
  if (isManifestBacked(current)) throw notThisKind(current, 'deleted');
}

/**
 * How a record is shown: with its revision (1 for a record written before revisions existed), and
 * manifest-backed profiles with no resources (they cannot select any in this phase).
 */
export function profileView(profile: AgentProfile): ProfileView {
  const hidden = isManifestBacked(profile) && profile.resourceIds.length > 0;
  if (!hidden && typeof profile.revision === 'number') return profile as ProfileView;
  return { ...profile, revision: revisionOf(profile), ...(hidden ? { resourceIds: [] } : {}) };
}
