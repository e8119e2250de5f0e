// Which resources an agent on a machine may see: the host's, and its own machine's. Pure; one rule for the
// catalogue, the change feed, profile placement and the capability projection.
import { HOST_PROVIDER } from '../schemas/common.js';

/** True when a resource of `provider` may be shown to (and selected for) an agent on `machineId`. */
export function visibleOnMachine(provider: string, machineId: string): boolean {
  return provider === HOST_PROVIDER || provider === machineId;
}

/** The providers whose records an agent on `machineId` may see (the rule above, as a list for queries). */
export function providersVisibleOnMachine(machineId: string): string[] {
  return [HOST_PROVIDER, machineId];
}
