// Launch: resolve which resources an agent thread gets, check them, and pin them durably into the
// workload record at the first realization of (canvasId, threadId). Framework-free.
import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import type { ProfileRegistry } from '../profiles/profile-registry.js';
import { assertPlacement } from '../profiles/placement.js';
import type { AcpHarnessLaunch, AgentProfile } from '../schemas/profile.js';
import { DRIVER_SCHEMA_VERSION, type LaunchBody, type WorkloadRecord } from '../schemas/workload.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import type { AuditIntent, RegistryStore } from '../registry/store.js';
import { systemClock, type Clock } from '../clock.js';
import type { AuditTrail } from '../audit/audit-trail.js';
import { bootstrapPreamble, mcpServerEntry } from './bootstrap.js';
import { ACP_COMMAND, ACP_HARNESS } from '../profiles/profile-rules.js';
import { assertDigest, digestOf } from '../registry/record-digest.js';
import type { StoredResource } from '../schemas/resource.js';
import { contextEstimate } from '../capabilities/context-estimate.js';
import { visibleOnMachine } from '../registry/visibility.js';
import { launchStatement, repinnedStatement, signStatement, statementOf, type AttestedResource, type Signer } from './attestation.js';
import { checkPinMove, movedPins, PIN_MOVE_ACTION, type PinMove } from './pin-move.js';

export interface LaunchResult {
  workload: WorkloadRecord;
  /** True when this launch realized the thread (201); false when it returned the stored record (200). */
  realized: boolean;
  /**
   * Only for a profile with `resourcePins`: each of the workload's pins the profile approved whose record
   * has other content now (`current` null: withdrawn).
   */
  pendingUpdates?: PendingUpdate[];
}

export interface PendingUpdate {
  id: string;
  pinned: string;
  current: string | null;
}

/**
 * The body of the launch answer, built here and nowhere else: the workload record (its `spec.resourcePins`
 * included) and, for a profile that approves content (`resourcePins`), `pendingUpdates`: the approved
 * records that changed since. A field every launch answer carries beside the record is added here.
 */
export function launchAnswer(result: LaunchResult): WorkloadRecord & { pendingUpdates?: PendingUpdate[] } {
  return result.pendingUpdates === undefined ? result.workload : { ...result.workload, pendingUpdates: result.pendingUpdates };
}

/**
 * A last check on the effective set before anything is written (the capability diagnostics). Throws to
 * refuse the launch.
 */
export type LaunchPreflight = (profile: AgentProfile, effectiveResourceIds: readonly string[]) => Promise<void>;

export interface WorkloadServiceOptions {
  store: RegistryStore;
  profiles: ProfileRegistry;
  scanner: SecretScanner;
  /** Host configuration: the resources every thread gets, first. */
  requiredResourceIds: readonly string[];
  /** `$HUABU_RFS_URL` of a canvas. */
  rfsUrl: (canvasId: string) => string;
  clock?: Clock;
  preflight?: LaunchPreflight;
  audit?: AuditTrail;
  /** The registry's signing key: each realization's attestation is signed with it (docs/attestation.md). */
  signer?: Signer;
}

/**
 * A pin as the attestation names it: the pinned record's provider and, for a record v2, an imported skill's
 * folder revision and its source content's SHA-256 (what a machine recomputes from its files).
 */
function attestedResource(pin: { id: string; digest: string }, record: StoredResource): AttestedResource {
  if (record.schemaVersion === 1) return { ...pin, provider: record.provider };
  return {
    ...pin,
    provider: record.provider,
    ...(record.sourceRevision !== undefined ? { sourceRevision: record.sourceRevision } : {}),
    sourceContentSha256: createHash('sha256').update(record.sourceContent, 'utf8').digest('hex'),
  };
}

/** `dedupe([...required, ...selected])`, first occurrence wins, order otherwise kept. */
export function effectiveResourceIds(required: readonly string[], selected: readonly string[]): string[] {
  return [...new Set([...required, ...selected])];
}

/** The harness launch as pinned in a workload: kind, harness and options, nothing else a store carried. */
function harnessLaunch(launch: AcpHarnessLaunch): AcpHarnessLaunch {
  const autoApprove = launch.options?.autoApprove;
  return {
    kind: ACP_HARNESS,
    harnessId: launch.harnessId,
    ...(launch.options === undefined ? {} : { options: autoApprove === undefined ? {} : { autoApprove } }),
  };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i]);

export class WorkloadService {
  readonly #o: WorkloadServiceOptions;
  readonly #clock: Clock;

  constructor(options: WorkloadServiceOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
  }

  /** Launches (see #launch) and audits the outcome: `realized`, `repeated` or the refusal's code. */
  async launch(request: LaunchBody, actor = 'owner'): Promise<LaunchResult> {
    const id = `${request.canvasId}/${request.threadId}`;
    const action = 'workload.launch';
    const audit = this.#o.audit;
    let result: LaunchResult;
    try {
      result = await this.#launch(request, audit?.intent(actor, action));
    } catch (err) {
      if (audit) await audit.failure(actor, action, id, err);
      throw err;
    }
    // A realization's entry is written by the store with the record (one durable write for both).
    if (!result.realized) await audit?.record([{ actor, action, id, outcome: 'repeated' }]);
    return result;
  }

  async #launch(request: LaunchBody, audit: AuditIntent | undefined): Promise<LaunchResult> {
    const { store } = this.#o;
    // Every field that may be stored or echoed is scanned first, IDs and the directory override included.
    await this.#o.scanner.assertClean([
      ['/canvasId', request.canvasId],
      ['/threadId', request.threadId],
      ...(request.workingDirPath === undefined ? [] : [['/workingDirPath', request.workingDirPath] as [string, string]]),
    ]);
    const stored = await store.getWorkload(request.canvasId, request.threadId);
    if (stored) return this.#withPending({ workload: this.#repeat(stored, request), realized: false });

    const { profile } = await this.#o.profiles.get(request.profileId);
    const { launch } = profile;
    if (launch.kind !== ACP_COMMAND && launch.kind !== ACP_HARNESS) {
      throw new AppError('invalid_profile_kind', `Profile ${profile.id} is backed by an Agent Team manifest and cannot be launched here.`, {
        profileId: profile.id,
        kind: profile.launch.kind,
      });
    }
    const selected = request.resourceIds ?? profile.resourceIds;
    const effective = effectiveResourceIds(this.#o.requiredResourceIds, selected);
    const records = new Map(await Promise.all(effective.map(async (id) => [id, await store.getResource(id)] as const)));
    assertPlacement(effective, profile.agentletId, (id) => records.get(id));
    await this.#o.preflight?.(profile, effective);
    if (request.additionalInitialPreamble !== undefined) {
      await this.#o.scanner.assertClean([['/additionalInitialPreamble', request.additionalInitialPreamble]]);
    }

    // The content each resource has now, pinned, or the content the profile approved (a quarantine: the
    // record may have changed since): the store holds these revisions with the record.
    const approved = profile.resourcePins ?? {};
    const resourcePins = effective.map((id) => ({ id, digest: approved[id] ?? digestOf(records.get(id)!) }));
    const contents = await this.#approvedContents(resourcePins, records, profile.agentletId);

    const rfsUrl = this.#o.rfsUrl(request.canvasId);
    const mcpUrl = `${rfsUrl}/mcp`;
    const record: WorkloadRecord = {
      driverSchemaVersion: DRIVER_SCHEMA_VERSION,
      canvasId: request.canvasId,
      threadId: request.threadId,
      realizedAt: this.#clock.now().toISOString(),
      spec: {
        binding: { profileId: profile.id, alias: profile.alias },
        agentletId: profile.agentletId,
        cwd: request.workingDirPath ?? profile.workingDirPath,
        resourceIds: effective,
        resourcePins,
        resourceScope: { canvasId: request.canvasId, threadId: request.threadId },
        initialPreamble: [
          bootstrapPreamble(effective),
          ...(request.additionalInitialPreamble === undefined ? [] : [request.additionalInitialPreamble]),
        ],
        env: { HUABU_RFS_URL: rfsUrl, HUABU_MCP_URL: mcpUrl, HUABU_THREAD_ID: request.threadId },
        mcpServers: [mcpServerEntry(mcpUrl)],
        // A harness profile's driver needs to know which harness to start; a command profile's record
        // stays as it always was.
        ...(launch.kind === ACP_HARNESS ? { launch: harnessLaunch(launch) } : {}),
      },
    };
    record.contextEstimate = contextEstimate(effective.map((id) => contents.get(id)!));
    if (this.#o.signer) {
      const pinned = resourcePins.map((pin) => attestedResource(pin, contents.get(pin.id)!));
      record.attestation = signStatement(
        launchStatement({
          canvasId: record.canvasId,
          threadId: record.threadId,
          profileId: profile.id,
          profileRevision: profile.revision ?? 1,
          machineId: profile.agentletId,
          realizedAt: record.realizedAt,
          resources: pinned,
        }),
        this.#o.signer,
      );
    }
    const outcome = await store.realizeWorkload(record, audit);
    // Another launch of the same thread may have realized it first: then this one is a repeat.
    return this.#withPending(
      outcome.created
        ? { workload: outcome.workload, realized: true }
        : { workload: this.#repeat(outcome.workload, request), realized: false },
      profile,
    );
  }

  /**
   * The content each pin names: the record itself when the pin is its digest now, else the kept revision
   * the profile approved (422 `unknown_pinned_revision` when it is no longer kept or not the machine's).
   */
  async #approvedContents(
    pins: readonly { id: string; digest: string }[],
    records: ReadonlyMap<string, StoredResource | undefined>,
    machineId: string,
  ): Promise<Map<string, StoredResource>> {
    const contents = new Map<string, StoredResource>();
    for (const { id, digest } of pins) {
      const current = records.get(id)!;
      if (digestOf(current) === digest) {
        contents.set(id, current);
        continue;
      }
      const revision = (await this.#o.store.getRevision(id, digest))?.record;
      if (!revision || !visibleOnMachine(revision.provider, machineId)) {
        throw new AppError(
          'unknown_pinned_revision',
          `Resource ${id} has no kept revision ${digest} the profile approved; nothing was written.`,
          {
            id,
            digest,
          },
        );
      }
      contents.set(id, revision);
    }
    return contents;
  }

  /** `result` with `pendingUpdates` when the workload's profile approves content (`resourcePins`). */
  async #withPending(result: LaunchResult, launchedFrom?: AgentProfile): Promise<LaunchResult> {
    const { workload } = result;
    const profile = launchedFrom ?? (await this.#o.store.getProfile(workload.spec.binding.profileId))?.profile;
    const approved = profile?.resourcePins;
    if (approved === undefined) return result;
    const pendingUpdates: PendingUpdate[] = [];
    for (const pin of workload.spec.resourcePins ?? []) {
      if (approved[pin.id] === undefined) continue;
      const record = await this.#o.store.getResource(pin.id);
      const current = record ? digestOf(record) : null;
      if (current !== pin.digest) pendingUpdates.push({ id: pin.id, pinned: pin.digest, current });
    }
    return { ...result, pendingUpdates };
  }

  /** The stored record when the request asks for nothing different; 409 otherwise. */
  #repeat(stored: WorkloadRecord, request: LaunchBody): WorkloadRecord {
    const differs: string[] = [];
    if (request.profileId !== stored.spec.binding.profileId) differs.push('profileId');
    if (request.workingDirPath !== undefined && request.workingDirPath !== stored.spec.cwd) differs.push('workingDirPath');
    if (
      request.resourceIds !== undefined &&
      !sameList(effectiveResourceIds(this.#o.requiredResourceIds, request.resourceIds), stored.spec.resourceIds)
    ) {
      differs.push('resourceIds');
    }
    if (request.additionalInitialPreamble !== undefined && request.additionalInitialPreamble !== stored.spec.initialPreamble[1]) {
      differs.push('additionalInitialPreamble');
    }
    if (differs.length > 0) {
      throw new AppError(
        'workload_already_realized',
        `Thread ${stored.threadId} of canvas ${stored.canvasId} is already realized; it cannot change its ${differs.join(', ')}.`,
        {
          differs,
          profileId: stored.spec.binding.profileId,
          workingDirPath: stored.spec.cwd,
          resourceIds: stored.spec.resourceIds,
          realizedAt: stored.realizedAt,
        },
      );
    }
    return stored;
  }

  /**
   * Moves one pin of a workload to the record's content now (src/workloads/pin-move.ts), audited (a refusal
   * too) and announced by the store with the change. A workload with an attestation gets a new one over its
   * new pins, signed now (`repinnedAt`); its context estimate is counted again over the pinned contents.
   */
  async movePin(move: PinMove, actor = 'owner'): Promise<WorkloadRecord> {
    const audit = this.#o.audit;
    const id = `${move.canvasId}/${move.threadId}`;
    try {
      assertDigest(move.from, '/from');
      assertDigest(move.to, '/to');
      const { store } = this.#o;
      const workload = await this.get(move.canvasId, move.threadId);
      const record = await store.getResource(move.id);
      checkPinMove(workload, move, record && digestOf(record));
      const pins = movedPins(workload, move);
      const contents = await this.#pinnedContents(pins, record!);
      const intent = audit?.intent(actor, PIN_MOVE_ACTION) ?? { at: this.#clock.now().toISOString(), actor, action: PIN_MOVE_ACTION };
      return await store.movePin(
        move,
        (current) => {
          const { attestation, ...rest } = current;
          const next: WorkloadRecord = { ...rest, spec: { ...current.spec, resourcePins: movedPins(current, move) } };
          // Counted over the pins as read before the move; another pin moved meanwhile keeps the count it had.
          if (
            contents &&
            sameList(
              movedPins(current, move).map((p) => p.digest),
              pins.map((p) => p.digest),
            )
          ) {
            next.contextEstimate = contextEstimate(contents);
          }
          if (attestation && this.#o.signer) {
            const statement = repinnedStatement(
              statementOf(attestation),
              attestedResource({ id: move.id, digest: move.to }, record!),
              intent.at,
            );
            next.attestation = signStatement(statement, this.#o.signer);
          }
          return next;
        },
        intent,
      );
    } catch (err) {
      if (audit) await audit.failure(actor, PIN_MOVE_ACTION, id, err);
      throw err;
    }
  }

  /** The content each pin names (the kept revision; `current` for its own digest); undefined when one is no longer kept. */
  async #pinnedContents(pins: readonly { id: string; digest: string }[], current: StoredResource): Promise<StoredResource[] | undefined> {
    const contents: StoredResource[] = [];
    for (const pin of pins) {
      const content =
        pin.id === current.id && digestOf(current) === pin.digest ? current : (await this.#o.store.getRevision(pin.id, pin.digest))?.record;
      if (!content) return undefined;
      contents.push(content);
    }
    return contents;
  }

  async get(canvasId: string, threadId: string): Promise<WorkloadRecord> {
    const record = await this.#o.store.getWorkload(canvasId, threadId);
    if (!record)
      throw new AppError('workload_not_found', `No workload for thread ${threadId} of canvas ${canvasId}.`, { canvasId, threadId });
    return record;
  }

  list(canvasId: string): Promise<readonly WorkloadRecord[]> {
    return this.#o.store.listWorkloads(canvasId);
  }
}
