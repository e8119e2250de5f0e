// Scoped invocation of hosted capabilities: grants are minted for realized workloads, and each invocation
// is checked fact by fact in a fixed order (grant valid and not revoked with its canvas, bound to this
// canvas, machine and thread, resource granted, hosted, input valid, sizes, quota), then forwarded to the
// operator's endpoint with its credential (or, for a built-in adapter, sent as the vendor's request and its
// answer reduced to the agent's result), under its deadline and size bound; an answer carrying that
// credential back is refused. Every mint and every invocation, refused ones included, is
// audited (who, which thread, which resource, outcome, duration, bytes; never input or output) and counted.
// Framework-free: the route adapts HTTP to these calls.
import type { AuditTrail } from '../audit/audit-trail.js';
import { AppError, type ErrorCode } from '../errors.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import { LINE_CONTROL_CHARACTER } from '../text/control-characters.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { RegistryStore } from '../registry/store.js';
import type { HostedCapabilities, HostedCapability } from './capabilities-file.js';
import { grantKey, mintGrant, verifyGrant, type GrantClaims } from './grants.js';
import type { OutboundClient, OutboundResult } from './outbound.js';
import { invocationError } from './invocation-errors.js';
import { GrantQuotas } from './quotas.js';

export const DEFAULT_GRANT_TTL_SECONDS = 3600;
/** Upstream's bound on a correlation ID, counted after trimming (as upstream trims it). */
export const MAX_CORRELATION_ID_LENGTH = 200;

/** What the caller presented, besides the grant. */
export interface InvocationCaller {
  /** The canvas and machine of the (already verified) canvas token. */
  tokenCanvasId: string;
  tokenMachineId: string;
  /** The canvas in the URL. */
  canvasId: string;
  /** `X-Huabu-Thread-Id`, when the agent sends it (required: every grant is bound to a thread). */
  threadId: string | undefined;
}

/** What is known about one invocation so far; audited when it ends, whatever the outcome. */
export interface InvocationContext {
  resourceId: string;
  canvasId: string;
  machineId: string;
  profileId?: string;
  threadId?: string;
  grantKey?: string;
  startedAt: number;
  inputBytes: number;
  outputBytes: number;
  /** The agent's correlation ID, trimmed, once it has been checked (bounds, control characters, secrets). */
  correlationId?: string;
}

export interface InvocationOutcomeSink {
  /** One invocation ended: `outcome` is `ok`, `cancelled` or an error code. */
  (resourceLabel: string, outcome: string, durationSeconds: number): void;
}

export interface InvocationServiceOptions {
  store: Pick<RegistryStore, 'getWorkload' | 'getMachine' | 'getResource'>;
  capabilities: HostedCapabilities;
  canvasTokenSecret: string;
  audit: AuditTrail;
  outbound: OutboundClient;
  now: () => Date;
  observe: InvocationOutcomeSink;
  quotas?: GrantQuotas;
  /** True when `canvasId`'s tokens minted at `mintedAtMs` fall under its revocation cut-off (grants die with them). */
  isCanvasRevoked: (canvasId: string, mintedAtMs: number) => Promise<boolean>;
  /** Scans the agent's correlation ID (422 `secret_detected`): it is echoed and audited. */
  scanner: Pick<SecretScanner, 'assertClean'>;
  /** Where a failed call's facts go (the host's log): reason and upstream status, never body or headers. */
  onCallFailed?: (facts: { resourceId: string; reason: string; status?: number }) => void;
}

export interface MintedGrant {
  grant: string;
  expiresAt: string;
  allowedResourceIds: string[];
  policyVersion: string;
}

export class InvocationService {
  readonly #o: InvocationServiceOptions;
  readonly #key: Buffer;
  readonly #quotas: GrantQuotas;

  constructor(options: InvocationServiceOptions) {
    this.#o = options;
    this.#key = grantKey(options.canvasTokenSecret);
    this.#quotas = options.quotas ?? new GrantQuotas(() => options.now().getTime());
  }

  get capabilities(): HostedCapabilities {
    return this.#o.capabilities;
  }

  /** Mints a grant for a realized workload on an active machine. Audited; never stored. */
  async mint(canvasId: string, threadId: string, ttlSeconds: number, actor: string): Promise<MintedGrant> {
    const { store, capabilities, audit } = this.#o;
    const id = `${canvasId}/${threadId}`;
    const workload = await store.getWorkload(canvasId, threadId);
    if (!workload) {
      return audit.failure(
        actor,
        'grant.mint',
        id,
        new AppError('workload_not_found', `Thread ${threadId} of canvas ${canvasId} has not been launched.`, { canvasId, threadId }),
      );
    }
    const machineId = workload.spec.agentletId;
    const machine = await store.getMachine(machineId);
    if (!machine || machine.revokedAt) {
      return audit.failure(
        actor,
        'grant.mint',
        id,
        new AppError('machine_not_found', `The thread's machine ${machineId} is not enrolled.`, { machineId }),
      );
    }
    const hosted = new Set(capabilities.ids);
    const allowedResourceIds = workload.spec.resourceIds.filter((rid) => hosted.has(rid));
    const nowMs = this.#o.now().getTime();
    const exp = Math.floor(nowMs / 1000) + ttlSeconds;
    const claims: GrantClaims = {
      machineId,
      enrolledAt: machine.enrolledAt,
      profileId: workload.spec.binding.profileId,
      canvasId,
      threadId,
      allowedResourceIds,
      exp,
      policyVersion: capabilities.policyVersion,
      mintedAtMs: nowMs,
    };
    const grant = mintGrant(claims, this.#key);
    const expiresAt = new Date(exp * 1000).toISOString();
    await audit.record([
      {
        actor,
        action: 'grant.mint',
        id,
        outcome: 'minted',
        details: {
          machine: machineId,
          profile: claims.profileId,
          canvas: canvasId,
          thread: threadId,
          resources: allowedResourceIds,
          expiresAt,
          policyVersion: claims.policyVersion,
        },
      },
    ]);
    return { grant, expiresAt, allowedResourceIds, policyVersion: claims.policyVersion };
  }

  /** A fresh context for an invocation of `resourceId` by a verified canvas token. */
  begin(resourceId: string, caller: Pick<InvocationCaller, 'tokenCanvasId' | 'tokenMachineId'>): InvocationContext {
    return {
      resourceId,
      canvasId: caller.tokenCanvasId,
      machineId: caller.tokenMachineId,
      startedAt: performance.now(),
      inputBytes: 0,
      outputBytes: 0,
    };
  }

  /**
   * The grant checks, in the contract's order, up to "hosted": 403 `forbidden` (reason `grant_invalid`,
   * `grant_expired`, `scope_mismatch` for another canvas or machine, `thread_required`, `thread_mismatch`,
   * `resource_not_granted`), then 404 `resource_not_found` (reason `not_hosted`).
   */
  async authorize(ctx: InvocationContext, grant: string | undefined, caller: InvocationCaller): Promise<HostedCapability> {
    const claims = await this.#grantFor(ctx, grant, caller);
    if (!claims.allowedResourceIds.includes(ctx.resourceId)) {
      throw invocationError('resource_not_granted', `The resource grant does not cover ${ctx.resourceId}.`, { id: ctx.resourceId });
    }
    const capability = await this.#hosted(ctx.resourceId);
    if (!capability) throw invocationError('not_hosted', `${ctx.resourceId} is not a hosted capability here.`, { id: ctx.resourceId });
    return capability;
  }

  /**
   * The hosted capabilities `grant` lets this caller invoke, by the same checks as `authorize` (so an MCP
   * client's tool list is what its invocations would be admitted to); `[]` for a grant that is refused.
   */
  async granted(grant: string | undefined, caller: InvocationCaller): Promise<HostedCapability[]> {
    const ctx = this.begin('', caller);
    const claims = await this.#grantFor(ctx, grant, caller).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'forbidden') return undefined;
      throw err;
    });
    if (!claims) return [];
    const hosted = await Promise.all(claims.allowedResourceIds.map((id) => this.#hosted(id)));
    return hosted.filter((c): c is HostedCapability => c !== undefined);
  }

  /** The capability of `id` when it is hosted here: configured, and its record the host's. */
  async #hosted(id: string): Promise<HostedCapability | undefined> {
    const capability = this.#o.capabilities.get(id);
    const record = capability ? await this.#o.store.getResource(id) : undefined;
    return capability && record && record.provider === HOST_PROVIDER ? capability : undefined;
  }

  /** The grant's claims once it is valid and bound to this caller (403 `forbidden` with the reason otherwise). */
  async #grantFor(ctx: InvocationContext, grant: string | undefined, caller: InvocationCaller): Promise<GrantClaims> {
    const { store, capabilities } = this.#o;
    if (grant === undefined || grant === '')
      throw invocationError('grant_invalid', 'A resource grant is required in X-Huabu-Resource-Grant.', { cause: 'missing' });
    const check = verifyGrant(grant, this.#key, Math.floor(this.#o.now().getTime() / 1000));
    if (!check.ok) {
      if (check.reason === 'expired') throw invocationError('grant_expired', 'The resource grant has expired; ask the host for a new one.');
      throw invocationError('grant_invalid', 'The resource grant is not valid.', { cause: 'malformed' });
    }
    const claims = check.claims;
    ctx.profileId = claims.profileId;
    ctx.threadId = claims.threadId;
    ctx.grantKey = check.id;
    if (claims.policyVersion !== capabilities.policyVersion) {
      throw invocationError(
        'grant_invalid',
        'The resource grant was minted under an earlier capabilities policy; ask the host for a new one.',
        { cause: 'policy_changed' },
      );
    }
    const machine = await store.getMachine(claims.machineId);
    if (!machine || machine.revokedAt || machine.enrolledAt !== claims.enrolledAt) {
      throw invocationError('grant_invalid', "The resource grant's machine enrollment has been revoked.", { cause: 'machine_revoked' });
    }
    if (await this.#o.isCanvasRevoked(claims.canvasId, claims.mintedAtMs ?? 0)) {
      throw invocationError('grant_invalid', "The canvas's tokens and grants have been revoked; ask the host for a new grant.", {
        cause: 'canvas_revoked',
      });
    }
    if (claims.canvasId !== caller.canvasId || caller.tokenCanvasId !== caller.canvasId || claims.machineId !== caller.tokenMachineId) {
      throw invocationError('scope_mismatch', 'The resource grant or token is not valid for this canvas and machine.');
    }
    // Two threads of one canvas on one machine share the canvas token: only the header tells them apart.
    if (caller.threadId === undefined) {
      throw invocationError('thread_required', 'The resource grant is bound to a thread: send X-Huabu-Thread-Id: $HUABU_THREAD_ID.');
    }
    if (caller.threadId !== claims.threadId) {
      throw invocationError('thread_mismatch', 'The resource grant belongs to another thread.');
    }
    return claims;
  }

  /**
   * The agent's correlation ID: trimmed, then 1..200 characters without control characters (400
   * `invalid_input`), and free of secrets (422 `secret_detected`); kept for the answer and the audit.
   */
  async acceptCorrelationId(ctx: InvocationContext, raw: string | undefined): Promise<void> {
    if (raw === undefined) return;
    const id = raw.trim();
    const field = 'body/correlationId';
    if (id.length === 0 || id.length > MAX_CORRELATION_ID_LENGTH || LINE_CONTROL_CHARACTER.test(id)) {
      const message = LINE_CONTROL_CHARACTER.test(id)
        ? 'must not hold control characters'
        : `must be 1 to ${MAX_CORRELATION_ID_LENGTH} characters once trimmed`;
      throw invocationError('validation_failed', `${field} ${message}`, { issues: [{ field, message }] });
    }
    await this.#o.scanner.assertClean([['/correlationId', id]]);
    ctx.correlationId = id;
  }

  /**
   * Input valid (400 `invalid_input`), size (400 `invalid_input`, reason `payload_too_large`), quota (429
   * `quota_exceeded` with `retryAfterSeconds`), then the call: 504 `timeout`, 502 `provider_failure` (with
   * only a cause), or the endpoint's JSON answer. A hang-up (`signal`) aborts the outbound request; the
   * result is then `cancelled`.
   */
  async invoke(
    ctx: InvocationContext,
    capability: HostedCapability,
    input: unknown,
    signal: AbortSignal,
  ): Promise<{ output: unknown } | { cancelled: true }> {
    const issues = capability.checkInput(input);
    if (issues.length > 0) throw invocationError('validation_failed', `${issues[0]!.field} ${issues[0]!.message}`, { issues });
    const body = JSON.stringify(input);
    ctx.inputBytes = Buffer.byteLength(body);
    if (ctx.inputBytes > capability.maxInputBytes) {
      throw invocationError(
        'payload_too_large',
        `The input is ${ctx.inputBytes} bytes; ${capability.id} takes at most ${capability.maxInputBytes}.`,
        {
          inputBytes: ctx.inputBytes,
          maxInputBytes: capability.maxInputBytes,
        },
      );
    }
    const inFlightPerGrant = this.#o.capabilities.maxInFlightPerGrant;
    const slot = this.#quotas.acquire(ctx.grantKey!, capability.id, { ...capability.perGrant, inFlightPerGrant });
    if (!slot.ok) {
      const what = {
        concurrency: `${capability.perGrant.concurrency} invocations in flight of ${capability.id}`,
        in_flight: `${inFlightPerGrant} invocations in flight`,
        rate: `${capability.perGrant.perMinute} invocations a minute of ${capability.id}`,
      }[slot.reason];
      throw invocationError('rate_limited', `This grant may have at most ${what}; retry in ${slot.retryAfterSeconds} s.`, {
        cause: slot.reason,
        retryAfterSeconds: slot.retryAfterSeconds,
      });
    }
    try {
      // A built-in adapter sends the vendor's request; a generic endpoint receives the input as it came.
      const sent = capability.adapter ? capability.adapter.request(input) : { url: capability.endpoint, body };
      let result: OutboundResult = await this.#o.outbound.call({
        endpoint: sent.url,
        method: capability.method,
        headers: this.#o.capabilities.outboundHeaders(capability.id),
        body: sent.body,
        timeoutMs: capability.timeoutMs,
        maxOutputBytes: capability.maxOutputBytes,
        signal,
      });
      // An endpoint that echoes its request (headers included) would hand the agent the credential.
      if (result.ok && this.#o.capabilities.answerCarriesCredential(capability.id, JSON.stringify(result.output)))
        result = { ok: false, reason: 'credential_echoed' };
      if (result.ok && capability.adapter) {
        const shaped = capability.adapter.result(result.output, input);
        result = shaped.ok ? { ...result, output: shaped.result } : { ok: false, reason: 'unexpected_answer' };
      }
      if (result.ok) {
        ctx.outputBytes = result.outputBytes;
        return { output: result.output };
      }
      if (result.reason === 'cancelled') return { cancelled: true };
      this.#o.onCallFailed?.({ resourceId: capability.id, reason: result.reason, ...(result.status ? { status: result.status } : {}) });
      if (result.reason === 'timeout') {
        throw invocationError('invocation_timeout', `${capability.id} did not answer within ${capability.timeoutMs} ms.`, {
          timeoutMs: capability.timeoutMs,
        });
      }
      throw invocationError('invocation_failed', `${capability.id} failed; the host has the details in its logs.`, {
        cause: result.reason,
        ...(result.reason === 'output_too_large' ? { maxOutputBytes: capability.maxOutputBytes } : {}),
      });
    } finally {
      slot.release();
    }
  }

  /**
   * Audits and counts the end of an invocation: `outcome` is `ok` or the code the agent got, `reason` its
   * finer reason. Never throws.
   */
  async finish(ctx: InvocationContext, outcome: 'ok' | ErrorCode, actor: string, reason?: string): Promise<void> {
    const durationMs = performance.now() - ctx.startedAt;
    const label = this.#o.capabilities.get(ctx.resourceId) ? ctx.resourceId : '__not_hosted__';
    this.#o.observe(label, outcome, durationMs / 1000);
    await this.#o.audit.record([
      {
        actor,
        action: 'resource.invoke',
        id: ctx.resourceId,
        outcome,
        details: {
          ...(ctx.machineId ? { machine: ctx.machineId } : {}),
          canvas: ctx.canvasId,
          ...(ctx.profileId ? { profile: ctx.profileId } : {}),
          ...(ctx.threadId ? { thread: ctx.threadId } : {}),
          resource: ctx.resourceId,
          ...(ctx.correlationId === undefined ? {} : { correlationId: ctx.correlationId }),
          ...(reason === undefined ? {} : { reason }),
          durationMs: Math.round(durationMs * 100) / 100,
          inputBytes: ctx.inputBytes,
          outputBytes: ctx.outputBytes,
        },
      },
    ]);
  }
}
