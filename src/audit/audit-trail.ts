// The audit trail of privileged changes and refusals: who (actor), did what (action), to which object
// (id), with what outcome; never a secret. An entry that cannot be appended after its change is durable is
// reported through `onError`, not turned into a failed request. Registrations and reconciles hand their
// entry to the store with the change (`intent`): a database store writes both in one transaction, so
// there an entry that cannot be written fails its change instead.
import { systemClock, type Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { ReconcileResult } from '../schemas/resource.js';
import type { AuditEntry, AuditIntent, RegistryStore } from '../registry/store.js';

/** The entries of a reconcile: one per record created, replaced and withdrawn, in that order. */
export function reconcileEntries(result: ReconcileResult, audit: AuditIntent): AuditEntry[] {
  const { at, actor, action } = audit;
  return [
    ...result.created.map((id) => ({ at, actor, action, id, outcome: 'created' })),
    ...result.replaced.map((id) => ({ at, actor, action, id, outcome: 'replaced' })),
    ...result.withdrawn.map((id) => ({ at, actor, action, id, outcome: 'withdrawn' })),
  ];
}

export class AuditTrail {
  constructor(
    private readonly store: Pick<RegistryStore, 'appendAudit'>,
    private readonly clock: Clock = systemClock,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {}

  async record(entries: Omit<AuditEntry, 'at'>[]): Promise<void> {
    if (entries.length === 0) return;
    const at = this.clock.now().toISOString();
    await this.store.appendAudit(entries.map((e) => ({ at, ...e }))).catch((err: unknown) => this.onError(err));
  }

  /** The entry of a change the store writes together with it (`RegistryStore.registerResource`), stamped now. */
  intent(actor: string, action: string): AuditIntent {
    return { at: this.clock.now().toISOString(), actor, action };
  }

  /** An entry the store could not append after its change was durable: reported as `record` reports it. */
  appendFailed(err: unknown): void {
    this.onError(err);
  }

  /** Records a refused or failed change (its error code is the outcome), then rethrows the error. */
  async failure(actor: string, action: string, id: string, err: unknown): Promise<never> {
    await this.record([{ actor, action, id, outcome: err instanceof AppError ? err.code : 'internal_error' }]);
    throw err;
  }
}
