// The audit trail of privileged changes and refusals: who (actor), did what (action), to which object
// (id), with what outcome; never a secret. An entry that cannot be appended after its change is durable is
// reported through `onError`, not turned into a failed request. Registrations and reconciles hand their
// entry to the store with the change (`intent`): a database store writes both in one transaction, so
// there an entry that cannot be written fails its change instead. Every string an entry carries is cut to
// AUDIT_FIELD_MAX_CHARS and stripped of control characters here, whichever store writes it: a field can hold
// what a caller put in a URL, and the log is read on terminals and inserted into PostgreSQL.
import { systemClock, type Clock } from '../clock.js';
import { AppError } from '../errors.js';
import type { ReconcileResult } from '../schemas/resource.js';
import type { AuditEntry, AuditIntent, RegistryStore } from '../registry/store.js';
import { UNSAFE_FOR_LOGS } from '../text/text-rules.js';

/** The longest string an audit field keeps; a longer one is cut and ends with `…[+N]` (N characters cut). */
export const AUDIT_FIELD_MAX_CHARS = 512;

/** A string as an audit field holds it: cut, each unsafe character replaced by U+FFFD (visible, never silent). */
export function auditText(value: string): string {
  let text = value;
  if (text.length > AUDIT_FIELD_MAX_CHARS) {
    // The marker's length is bounded by the digits of the whole length, so the result stays within the bound.
    const keep = AUDIT_FIELD_MAX_CHARS - (4 + String(text.length).length);
    text = `${text.slice(0, keep)}…[+${text.length - keep}]`;
  }
  return text.replace(UNSAFE_FOR_LOGS, '\ufffd');
}

function cleanEntry(entry: AuditEntry): AuditEntry {
  const { at, actor, action, id, outcome, details } = entry;
  const clean: AuditEntry = { at, actor: auditText(actor), action: auditText(action), id: auditText(id), outcome: auditText(outcome) };
  if (details !== undefined) {
    clean.details = Object.fromEntries(
      Object.entries(details).map(([key, value]) => [
        key,
        typeof value === 'string' ? auditText(value) : Array.isArray(value) ? value.map(auditText) : value,
      ]),
    );
  }
  return clean;
}

/** The entries of a reconcile: one per record created, replaced and withdrawn, in that order. */
export function reconcileEntries(result: ReconcileResult, audit: AuditIntent): AuditEntry[] {
  const { at, actor, action } = audit;
  return [
    ...result.created.map((id) => ({ at, actor, action, id, outcome: 'created' })),
    ...result.replaced.map((id) => ({ at, actor, action, id, outcome: 'replaced' })),
    ...result.withdrawn.map((id) => ({ at, actor, action, id, outcome: 'withdrawn' })),
  ];
}

/** The entry of a launch that realized its thread, as the store writes it with the realization. */
export function realizedEntry(record: { canvasId: string; threadId: string }, audit: AuditIntent): AuditEntry {
  const { at, actor, action } = audit;
  return { at, actor, action, id: auditText(`${record.canvasId}/${record.threadId}`), outcome: 'realized' };
}

/** The entry a pin move writes with its change (both stores): the resource and both digests, nothing else. */
export function repinnedEntry(
  move: { canvasId: string; threadId: string; id: string; from: string; to: string },
  audit: AuditIntent,
): AuditEntry {
  const { at, actor, action } = audit;
  return {
    at,
    actor,
    action,
    id: auditText(`${move.canvasId}/${move.threadId}`),
    outcome: 'repinned',
    details: { resourceId: move.id, from: move.from, to: move.to },
  };
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
    await this.store.appendAudit(entries.map((e) => cleanEntry({ at, ...e }))).catch((err: unknown) => this.onError(err));
  }

  /** The entry of a change the store writes together with it (`RegistryStore.registerResource`), stamped now. */
  intent(actor: string, action: string): AuditIntent {
    return { at: this.clock.now().toISOString(), actor: auditText(actor), action: auditText(action) };
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
