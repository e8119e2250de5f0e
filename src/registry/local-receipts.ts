// Local receipts: an agent records (or removes) what it installed on its own machine, and the machine's
// catalogue follows. The canvas token's machine is the provider; the host's IDs and other machines' IDs are
// refused; every text is scanned for secrets; every change and every refusal is audited. Framework-free.
import type { AuditTrail } from '../audit/audit-trail.js';
import { AppError } from '../errors.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { AgentResourceV2 } from '../schemas/resource.js';
import type { LocalReceiptBody } from '../schemas/rfs.js';
import type { ResourceRegistry } from './resource-registry.js';
import { answerV2 } from './resource-versions.js';

export const RECORD_ACTION = 'receipt.record';
export const REMOVE_ACTION = 'receipt.remove';

export class LocalReceipts {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * 403 for an ID of the host: reserved (the rule every write applies, src/schemas/record-rules.ts), or held
   * by the host now. Audited.
   */
  async #assertNotHost(machineId: string, id: string, actor: string, action: string): Promise<void> {
    const held = await this.registry.get(id).catch(() => undefined);
    if (this.registry.reservedProblems(machineId, [id]).length > 0 || held?.provider === HOST_PROVIDER) {
      await this.audit.failure(
        actor,
        action,
        id,
        new AppError('forbidden', `${id} is an ID of the host; an agent cannot record or remove it.`, { id }),
      );
    }
  }

  /**
   * Registers (or replaces) the machine's record for `receipt` as record v2: `name` and `sourceContent`.
   * `kind`, `entrypoint` and `source` stay on the machine; they are scanned, never stored. Another machine's
   * ID is 409 `resource_conflict`.
   */
  async record(machineId: string, receipt: LocalReceiptBody, actor: string): Promise<AgentResourceV2> {
    await this.#assertNotHost(machineId, receipt.id, actor, RECORD_ACTION);
    const extraTexts: [string, string][] = [['/entrypoint', receipt.entrypoint]];
    if (receipt.source !== undefined) extraTexts.push(['/source', receipt.source]);
    const { record } = await this.registry.register(
      machineId,
      receipt.id,
      { schemaVersion: 2, name: receipt.name, sourceContent: receipt.sourceContent },
      actor,
      { action: RECORD_ACTION, extraTexts },
    );
    return answerV2(record);
  }

  /** Withdraws the machine's record `id`: true when it did, false when no record has that ID. */
  async remove(machineId: string, id: string, actor: string): Promise<boolean> {
    await this.#assertNotHost(machineId, id, actor, REMOVE_ACTION);
    try {
      await this.registry.withdraw(machineId, id, actor, REMOVE_ACTION);
      return true;
    } catch (err) {
      if (err instanceof AppError && err.code === 'resource_not_found') return false;
      throw err;
    }
  }
}
