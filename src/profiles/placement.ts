// Placement: which resources a profile may select. Every ID must resolve to a record, and every record must
// be eligible for the profile's machine (the host's, or that machine's own: the same rule that decides what
// an agent on the machine may read, `visibleOnMachine`). Pure; the caller supplies the lookup.
import { AppError } from '../errors.js';
import { visibleOnMachine } from '../registry/visibility.js';
import type { AgentResource } from '../schemas/resource.js';

/** Throws 422 `unresolved_resource_ids` or `resource_not_eligible`, listing every offending ID in order. */
export function assertPlacement(
  resourceIds: readonly string[],
  agentletId: string,
  lookup: (id: string) => Pick<AgentResource, 'provider'> | undefined,
): void {
  const unresolved: string[] = [];
  const ineligible: { id: string; provider: string }[] = [];
  for (const id of resourceIds) {
    const record = lookup(id);
    if (!record) unresolved.push(id);
    else if (!visibleOnMachine(record.provider, agentletId)) ineligible.push({ id, provider: record.provider });
  }
  if (unresolved.length > 0) {
    throw new AppError(
      'unresolved_resource_ids',
      `No resource with ID ${unresolved.join(', ')}; a profile can select only registered resources.`,
      { field: '/resourceIds', ids: unresolved },
    );
  }
  if (ineligible.length > 0) {
    const ids = ineligible.map((r) => r.id);
    throw new AppError(
      'resource_not_eligible',
      `Resource ${ids.join(', ')} belongs to another machine; a profile on ${agentletId} can select only resources of huabu or of ${agentletId}.`,
      { field: '/resourceIds', ids, providers: ineligible },
    );
  }
}
