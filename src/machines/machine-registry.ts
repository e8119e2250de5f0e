// Agentlet machine enrollment: issues a machine token once (stored only as its digest), lists machines,
// revokes credentials (the machine's records stay), and maps a presented token to its machine.
import { AppError } from '../errors.js';
import { generateToken, TOKEN_PREFIX, tokenDigest, matchDigest } from '../credentials/tokens.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { Machine } from '../schemas/machine.js';
import type { RegistryStore } from '../storage/store.js';
import { AuditTrail } from '../audit/audit-trail.js';
import { systemClock, type Clock } from '../clock.js';

export class MachineRegistry {
  constructor(
    private readonly store: RegistryStore,
    private readonly clock: Clock = systemClock,
    private readonly audit: AuditTrail = new AuditTrail(store, clock),
  ) {}

  async enroll(machineId: string, actor: string): Promise<{ machineId: string; token: string }> {
    if (machineId.toLowerCase() === HOST_PROVIDER) {
      throw new AppError('validation_failed', `${machineId} is reserved for the host provider.`, { field: '/machineId' });
    }
    const token = generateToken(TOKEN_PREFIX.machine);
    const at = this.clock.now().toISOString();
    await this.store
      .enrollMachine({ machineId, tokenDigest: tokenDigest(token).toString('hex'), enrolledAt: at })
      .catch((err: unknown) => this.audit.failure(actor, 'machine.enroll', machineId, err));
    await this.audit.record([{ actor, action: 'machine.enroll', id: machineId, outcome: 'enrolled' }]);
    return { machineId, token };
  }

  async list(): Promise<Machine[]> {
    return (await this.store.listMachines()).map(({ machineId, enrolledAt, revokedAt }) =>
      revokedAt ? { machineId, enrolledAt, revokedAt } : { machineId, enrolledAt },
    );
  }

  async revoke(machineId: string, actor: string): Promise<void> {
    await this.store
      .revokeMachine(machineId, this.clock.now().toISOString())
      .catch((err: unknown) => this.audit.failure(actor, 'machine.revoke', machineId, err));
    await this.audit.record([{ actor, action: 'machine.revoke', id: machineId, outcome: 'revoked' }]);
  }

  /**
   * A new token for an active machine; the old one is refused from the moment this returns. The enrollment
   * is kept: `enrolledAt`, the machine's records and the canvas tokens minted for it stay valid.
   */
  async rotate(machineId: string, actor: string): Promise<{ machineId: string; token: string }> {
    const token = generateToken(TOKEN_PREFIX.machine);
    await this.store
      .rotateMachineToken(machineId, tokenDigest(token).toString('hex'))
      .catch((err: unknown) => this.audit.failure(actor, 'machine.rotate', machineId, err));
    await this.audit.record([{ actor, action: 'machine.rotate', id: machineId, outcome: 'rotated' }]);
    return { machineId, token };
  }

  /** Every canvas token of `canvasId` minted up to now is refused from now on; later ones are not. */
  async revokeCanvasTokens(canvasId: string, actor: string): Promise<{ canvasId: string; revokedBefore: string }> {
    const revokedBefore = this.clock.now().toISOString();
    await this.store
      .revokeCanvasTokens(canvasId, revokedBefore)
      .catch((err: unknown) => this.audit.failure(actor, 'canvas-tokens.revoke', canvasId, err));
    await this.audit.record([{ actor, action: 'canvas-tokens.revoke', id: canvasId, outcome: 'revoked' }]);
    return { canvasId, revokedBefore };
  }

  /** True when a canvas token of `canvasId` minted at `mintedAtMs` falls under a revocation. */
  async isCanvasTokenRevoked(canvasId: string, mintedAtMs: number): Promise<boolean> {
    const cutOff = await this.store.canvasTokensRevokedBefore(canvasId);
    return cutOff !== undefined && mintedAtMs <= Date.parse(cutOff);
  }

  /** True while `machineId` is enrolled and not revoked. */
  async isActive(machineId: string): Promise<boolean> {
    const machine = await this.store.getMachine(machineId);
    return machine !== undefined && !machine.revokedAt;
  }

  /** The active machine a presented token belongs to, if any. */
  async authenticate(token: string): Promise<string | undefined> {
    if (!token.startsWith(TOKEN_PREFIX.machine)) return undefined;
    const presented = tokenDigest(token);
    const machine = await this.store.findMachineByTokenDigest(presented.toString('hex'));
    // The index lookup finds the candidate; the constant-time comparison decides.
    if (!machine || machine.revokedAt) return undefined;
    return matchDigest(presented, [Buffer.from(machine.tokenDigest, 'hex')]) === 0 ? machine.machineId : undefined;
  }
}
