// Which records the owner may manage from the settings page (import again, refresh from source, delete):
// the `manageableResourceIds` of the owner's catalogue. Upstream's UI shows those actions only for skills the
// owner imported onto a machine; everything else (the host's records, what a machine's Agentlet published,
// what an agent recorded with a local receipt) is only customized there. Framework-free; the one place
// the rule lives.
import { HOST_PROVIDER } from '../schemas/common.js';
import type { StoredResource } from '../schemas/resource.js';

/** How a record came to be in the catalogue, as far as the owner's management is concerned. */
export type Installation =
  /** The owner imported a skill onto the machine (its receipt names the source revision it was copied from). */
  | { origin: 'imported'; kind: 'skill' }
  /** Anything else: a provider's own publication, an agent's local receipt. */
  | { origin: 'published' };

/** Tells how each record was installed; `undefined` means nothing is known beyond the record itself. */
export type InstallationLookup = (record: StoredResource) => Installation | undefined;

/**
 * The stored import mark: the owner's import through skill management sets `imported` on the record
 * (src/registry/skill-management.ts), in the same store write as the owner's fields, so it moves the
 * catalogue's revision (and its ETags) and survives a restart in either store. Every import is a skill.
 */
export const IMPORT_MARK: InstallationLookup = (record) => (record.imported ? { origin: 'imported', kind: 'skill' } : undefined);

/** A record is manageable when a machine (never the host) holds it and it is a skill the owner imported there. */
export function isManageable(record: StoredResource, installation: Installation | undefined): boolean {
  return record.provider !== HOST_PROVIDER && installation?.origin === 'imported' && installation.kind === 'skill';
}

/** The manageable IDs among `records`, in their order (the catalogue's: sorted by id). */
export function manageableResourceIds(records: readonly StoredResource[], lookup: InstallationLookup = IMPORT_MARK): string[] {
  return records.filter((r) => isManageable(r, lookup(r))).map((r) => r.id);
}
