// agent-team/registry.json of the JSON store (docs/data-files.md): the profiles inside upstream's registry
// document, which is carried unchanged around them.
import path from 'node:path';
import type { JsonObject } from '../migrations/profile-v1.js';
import { REGISTRY_FILE_VERSION, serializeRegistryDocument } from '../migrations/registry-file.js';
import type { RegistryMigrationReport } from '../migrations/registry-migration.js';
import { profileRevision } from '../profiles/profile-rules.js';
import type { ProfileEntry } from '../registry/store.js';
import type { AgentProfile } from '../schemas/profile.js';
import type { DocumentCodec } from './durable-document.js';
import { sortedValues } from './overlay-map.js';

export const REGISTRY_FILE = path.join('agent-team', 'registry.json');

export interface RegistryState {
  profiles: Map<string, AgentProfile>;
  /** The v4 document around the profiles (Agent Team state and anything unknown), carried unchanged. */
  doc: JsonObject;
}

export const registryCodec: DocumentCodec<RegistryState> = {
  clone: (s) => ({ profiles: new Map(s.profiles), doc: s.doc }),
  serialize: (s) =>
    serializeRegistryDocument({
      ...s.doc,
      schemaVersion: REGISTRY_FILE_VERSION,
      state: { ...(s.doc.state as JsonObject), profiles: sortedValues(s.profiles) },
    }),
};

/** The migration has already checked every record against the current schema. */
export function loadRegistry(migrated: RegistryMigrationReport): RegistryState {
  // Upstream's empty state (its store.ts `emptyState`), so a file written from scratch is one it reads.
  const doc = migrated.doc ?? { schemaVersion: REGISTRY_FILE_VERSION, state: { roots: [], members: [], profiles: [], configs: [] } };
  const profiles = new Map<string, AgentProfile>();
  for (const p of ((doc.state as JsonObject).profiles ?? []) as AgentProfile[]) profiles.set(p.id, Object.freeze(p));
  return { profiles, doc };
}

const revisions = new WeakMap<AgentProfile, string>();

/**
 * Stored records are frozen, so a record's revision is computed once, and only when first read: a walk
 * over every profile that reads none (the alias check at start) costs no hashing.
 */
export function entryOf(profile: AgentProfile): ProfileEntry {
  return {
    profile,
    get revision() {
      let revision = revisions.get(profile);
      if (revision === undefined) {
        revision = profileRevision(profile);
        revisions.set(profile, revision);
      }
      return revision;
    },
  };
}
