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

/** Nothing in this service marks an import yet: every record counts as published. */
export const NO_IMPORTS: InstallationLookup = () => undefined;

/**
 * A record is manageable when a machine (never the host) holds it and it is a skill the owner imported
 * there. A later import marks its records through the lookup; that change must move the catalogue's
 * revision, as every catalogue write does, so cached bodies and their ETags follow.
 */
export function isManageable(record: StoredResource, installation: Installation | undefined): boolean {
  return record.provider !== HOST_PROVIDER && installation?.origin === 'imported' && installation.kind === 'skill';
}

/** The manageable IDs among `records`, in their order (the catalogue's: sorted by id). */
export function manageableResourceIds(records: readonly StoredResource[], lookup: InstallationLookup = NO_IMPORTS): string[] {
  return records.filter((r) => isManageable(r, lookup(r))).map((r) => r.id);
}
