// The ownership rules of the catalogue, as pure functions over the current records. Every store applies
// them atomically with its write (the JSON store inside its group-commit mutation; a database store in
// one transaction), so the rule lives here once.
import { AppError } from '../errors.js';
import type { ReconcileResult, StoredResource } from '../schemas/resource.js';
import { ownerFieldsOf, sameStored, withOwnerFields } from './resource-versions.js';

export type PutOutcome = 'created' | 'replaced' | 'unchanged';

/** Every field equal, the owner's customization included. */
export function sameRecord(a: StoredResource, b: StoredResource): boolean {
  return sameStored(a, b);
}

/**
 * A provider's write never carries the owner's fields: the record to store keeps the customization of the
 * record it replaces (as upstream's `replaceProviderResources` does), in whichever version it is written.
 */
export function carryOwnerFields(existing: StoredResource | undefined, incoming: StoredResource): StoredResource {
  if (!existing || existing.provider !== incoming.provider) return incoming;
  return withOwnerFields(incoming, ownerFieldsOf(existing));
}

export function conflictError(conflicts: { id: string; provider: string }[]): AppError {
  const ids = conflicts.map((c) => c.id);
  return new AppError(
    'resource_conflict',
    `Resource ID${ids.length > 1 ? 's' : ''} ${ids.join(', ')} ${ids.length > 1 ? 'are' : 'is'} held by another provider; nothing was changed.`,
    { ids, conflicts },
  );
}

/** A provider may create an unused ID or replace its own; another provider's ID is a conflict. */
export function planPut(existing: StoredResource | undefined, record: StoredResource): PutOutcome {
  // `record` already carries the owner's fields (carryOwnerFields).
  if (!existing) return 'created';
  if (existing.provider !== record.provider) throw conflictError([{ id: existing.id, provider: existing.provider }]);
  return sameRecord(existing, record) ? 'unchanged' : 'replaced';
}

/** Withdrawal removes only the caller's own record. */
export function planWithdraw(existing: StoredResource | undefined, provider: string, id: string): void {
  if (!existing) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
  if (existing.provider !== provider) throw conflictError([{ id, provider: existing.provider }]);
}

/**
 * The whole-set reconcile of one provider: every listed record is created, replaced or unchanged; the
 * provider's records left out are withdrawn. Any conflict rejects the whole set.
 */
export function planReconcile(
  lookup: (id: string) => StoredResource | undefined,
  ownedIds: Iterable<string>,
  provider: string,
  records: readonly StoredResource[],
): Omit<ReconcileResult, 'dryRun'> {
  // `records` already carry the owner's fields (carryOwnerFields).
  const conflicts: { id: string; provider: string }[] = [];
  const plan = { created: [] as string[], replaced: [] as string[], withdrawn: [] as string[], unchanged: [] as string[] };
  const listed = new Set<string>();
  for (const record of records) {
    listed.add(record.id);
    const existing = lookup(record.id);
    if (existing && existing.provider !== provider) {
      conflicts.push({ id: record.id, provider: existing.provider });
      continue;
    }
    if (!existing) plan.created.push(record.id);
    else if (sameRecord(existing, record)) plan.unchanged.push(record.id);
    else plan.replaced.push(record.id);
  }
  if (conflicts.length > 0) throw conflictError(conflicts);
  for (const id of ownedIds) if (!listed.has(id)) plan.withdrawn.push(id);
  for (const list of Object.values(plan)) list.sort();
  return plan;
}
