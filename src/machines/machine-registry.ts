// Agentlet machine enrollment: issues a machine token once (stored only as its digest), lists machines,
// revokes a machine (its credential, its canvas tokens and its records: they are withdrawn), and maps a
// presented token to its machine.
import { AppError } from '../errors.js';
import { lookAlikeKey } from '../text/look-alike.js';
import { generateToken, TOKEN_PREFIX, tokenDigest, matchDigest } from '../credentials/tokens.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { Machine, MachineProblem } from '../schemas/machine.js';
import type { RegistryStore } from '../registry/store.js';
import { AuditTrail } from '../audit/audit-trail.js';
import { systemClock, type Clock } from '../clock.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import type { ChannelStatus } from '../channel/machine-channels.js';
import type { Revocations } from '../credentials/revocations.js';

/** The live side of machines (src/channel/machine-channels.ts): their status, and ending a channel. */
export interface MachineLiveness {
  status(machineId: string): ChannelStatus;
  disconnect(machineId: string, why: string): void;
}

/** Told when the problems a machine reports differ from what it reported last (this process's view). */
export type ProblemsListener = (machineId: string, problems: readonly MachineProblem[]) => void;

const NO_CHANNELS: MachineLiveness = { status: () => ({ status: 'disconnected' }), disconnect: () => {} };

/**
 * `now` as an ISO timestamp, or one millisecond after `previous` when the clock has not passed it (a
 * frozen, injected or stepped-back clock): enrollments of one machine get strictly increasing values.
 */
function laterThan(now: Date, previous: string | undefined): string {
  const prev = previous === undefined ? NaN : Date.parse(previous);
  return Number.isNaN(prev) || now.getTime() > prev ? now.toISOString() : new Date(prev + 1).toISOString();
}

export class MachineRegistry {
  /**
   * What each machine last reported it could not publish. Held in this process, like the channel's status: a
   * machine reports again with every publish (`serve` publishes on every connect), so a restart forgets
   * nothing for long (docs/decisions/machine-problems.md).
   */
  readonly #problems = new Map<string, readonly MachineProblem[]>();

  constructor(
    private readonly store: RegistryStore,
    private readonly clock: Clock = systemClock,
    private readonly audit: AuditTrail = new AuditTrail(store, clock),
    private readonly scanner?: SecretScanner,
    private readonly channels: MachineLiveness = NO_CHANNELS,
    /** Told of every credential that stops holding, once stored (open streams re-check theirs). */
    private readonly revocations?: Revocations,
    private readonly onProblems?: ProblemsListener,
  ) {}

  /**
   * Checks a machine's problem report before its reconcile changes anything: the host reports none (400), and
   * no problem may carry a secret (422).
   */
  async checkProblems(provider: string, problems: readonly MachineProblem[]): Promise<void> {
    if (provider === HOST_PROVIDER) {
      throw new AppError('validation_failed', `Only a machine reports problems; the host provider ${HOST_PROVIDER} may not send them.`, {
        field: '/problems',
      });
    }
    await this.scanner?.assertClean(
      problems.flatMap((p, i): [string, string][] => [
        [`/problems/${i}/receipt`, p.receipt],
        [`/problems/${i}/message`, p.message],
      ]),
    );
  }

  /** Records the machine's report (after its reconcile); the listener hears of it only when it changed. */
  reportProblems(machineId: string, problems: readonly MachineProblem[]): void {
    const previous = this.#problems.get(machineId) ?? [];
    if (JSON.stringify(previous) === JSON.stringify(problems)) return;
    if (problems.length === 0) this.#problems.delete(machineId);
    else this.#problems.set(machineId, problems);
    this.onProblems?.(machineId, problems);
  }

  async enroll(machineId: string, actor: string): Promise<{ machineId: string; token: string }> {
    // `huabu`, `Huabu`, `huabu.`, `hu-abu`, `huаbu` (Cyrillic а): anything that reads as the host is reserved.
    if (lookAlikeKey(machineId.replace(/[._-]/g, '')) === lookAlikeKey(HOST_PROVIDER)) {
      throw new AppError('validation_failed', `${machineId} is reserved for the host provider.`, { field: '/machineId' });
    }
    await this.scanner?.assertClean([['/machineId', machineId]]);
    const token = generateToken(TOKEN_PREFIX.machine);
    const at = laterThan(this.clock.now(), (await this.store.getMachine(machineId))?.enrolledAt);
    await this.store
      .enrollMachine({ machineId, tokenDigest: tokenDigest(token).toString('hex'), enrolledAt: at })
      .catch((err: unknown) => this.audit.failure(actor, 'machine.enroll', machineId, err));
    await this.audit.record([{ actor, action: 'machine.enroll', id: machineId, outcome: 'enrolled' }]);
    return { machineId, token };
  }

  async list(): Promise<Machine[]> {
    return (await this.store.listMachines()).map(({ machineId, enrolledAt, revokedAt }) => {
      const { status, since } = this.channels.status(machineId);
      const problems = this.#problems.get(machineId);
      return {
        machineId,
        enrolledAt,
        ...(revokedAt ? { revokedAt } : {}),
        status,
        ...(since === undefined ? {} : { statusSince: since }),
        ...(problems === undefined ? {} : { problems: [...problems] }),
      };
    });
  }

  /**
   * Revokes the machine's credential (and so every canvas token of this enrollment), then withdraws all
   * its records, each audited: its IDs are free again. The credential goes first so the machine cannot
   * register anything in between.
   */
  async revoke(machineId: string, actor: string): Promise<void> {
    const action = 'machine.revoke';
    await this.store
      .revokeMachine(machineId, this.clock.now().toISOString())
      .catch((err: unknown) => this.audit.failure(actor, action, machineId, err));
    this.channels.disconnect(machineId, 'its enrollment was revoked');
    this.#problems.delete(machineId);
    this.revocations?.publish({ kind: 'machine', machineId });
    await this.audit.record([{ actor, action, id: machineId, outcome: 'revoked' }]);
    const { withdrawn } = await this.store.reconcileResources(machineId, [], false);
    await this.audit.record(withdrawn.map((id) => ({ actor, action, id, outcome: 'withdrawn' })));
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
    // The channel was opened with the old token: the machine reconnects with the new one.
    this.channels.disconnect(machineId, 'its token was rotated');
    this.revocations?.publish({ kind: 'machine', machineId });
    await this.audit.record([{ actor, action: 'machine.rotate', id: machineId, outcome: 'rotated' }]);
    return { machineId, token };
  }

  /** Every canvas token of `canvasId` minted up to now is refused from now on; later ones are not. */
  async revokeCanvasTokens(canvasId: string, actor: string): Promise<{ canvasId: string; revokedBefore: string }> {
    const revokedBefore = this.clock.now().toISOString();
    await this.store
      .revokeCanvasTokens(canvasId, revokedBefore)
      .catch((err: unknown) => this.audit.failure(actor, 'canvas-tokens.revoke', canvasId, err));
    this.revocations?.publish({ kind: 'canvas', canvasId });
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
    return (await this.activeEnrollment(machineId)) !== undefined;
  }

  /**
   * The identity of the machine's current enrollment: its `enrolledAt` as stored, while the machine is
   * active; undefined when it is unknown or revoked. Canvas tokens (and hosted-invocation grants) carry it
   * as a claim and are valid only while this returns the same value, so a token minted before a revoke
   * never works for a later enrollment (`enroll` makes every re-enrollment's value strictly later).
   */
  async activeEnrollment(machineId: string): Promise<string | undefined> {
    const machine = await this.store.getMachine(machineId);
    return machine && !machine.revokedAt ? machine.enrolledAt : undefined;
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
