// The resource registry: validates and scans records, applies provider ownership through the store,
// answers catalogue reads, and writes the audit trail. Framework-free.
import { Compile } from 'typebox/compile';
import { canSeeTogether, nameKey, RUNTIME_VARIABLES, unknownVariables } from '../capabilities/rules.js';
import { AppError } from '../errors.js';
import { hasInvisible } from '../text/look-alike.js';
import { recordProblems, reservedIdProblems, type RecordProblem, type ReservedIds } from '../schemas/record-rules.js';
import { HOST_PROVIDER, ProviderId } from '../schemas/common.js';
import { visibleOnMachine } from './visibility.js';
import { discriminatedErrors } from '../schemas/discriminated-errors.js';
import {
  AgentResource,
  AgentResourceV2,
  AnyReconcileEntry,
  ReconcileEntry,
  ReconcileEntryV2,
  type ReconcileResult,
  type ResourceCustomization,
  type ResourcePutBody,
  type StoredResource,
  type ValidateResult,
  type ValidationIssue,
} from '../schemas/resource.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import type { RegistryStore } from './store.js';
import { AuditTrail } from '../audit/audit-trail.js';
import { planPut, type PutOutcome } from './ownership.js';
import { labelOf, textFieldsOf } from './resource-versions.js';
import { unknownPropertiesMessage } from '../schemas/unknown-properties.js';
import { carryOwnerFields } from './ownership.js';
import { assertWithinQuota, hasQuota, NO_USAGE, usageAfterPut, usageOf, type RecordQuota, type RecordUsage } from './record-quota.js';
import { assertDigest, digestOf, type ResourceRevision, type RevisionSummary } from './record-digest.js';
import { IMPORT_MARK, isManageable, manageableResourceIds, type InstallationLookup } from './manageable.js';

/** A candidate as `POST /resources/validate` takes it: a reconcile entry (v1 or v2) whose provider may be omitted. */
const checkCandidate = Compile(AnyReconcileEntry);
const checkProvider = Compile(ProviderId);
const checkV1 = Compile(AgentResource);
const checkV2 = Compile(AgentResourceV2);

/** The longest a candidate's text field may be: its bound in the version the candidate names, else in either. */
function candidateBound(schemaVersion: unknown, key: 'name' | 'description' | 'instructions' | 'sourceContent'): number {
  const bounds = [ReconcileEntry, ReconcileEntryV2].map(
    (branch) => (branch.properties as Record<string, { maxLength?: number } | undefined>)[key]?.maxLength,
  );
  const named = schemaVersion === 2 ? bounds[1] : schemaVersion === 1 ? bounds[0] : undefined;
  return named ?? Math.max(...bounds.map((b) => b ?? 0));
}

export function textFields(record: Pick<AgentResource, 'name' | 'description' | 'instructions'>): [string, string][] {
  return [
    ['/name', record.name],
    ['/description', record.description],
    ['/instructions', record.instructions],
  ];
}

/** A reconcile entry holding at least this much text (UTF-16 code units) is checked on an event-loop turn of its own. */
const LARGE_RECORD_CHARS = 4 * 1024;

function textLengthOf(entry: ReconcileEntry): number {
  return entry.schemaVersion === 2 ? entry.sourceContent.length : entry.description.length + entry.instructions.length;
}

/**
 * Whether `existing` is `record`'s provider's own record exactly as `record` would store it (the owner's
 * fields carried over): writing `record` would leave it `unchanged`.
 */
function heldAsIs(existing: StoredResource | undefined, record: StoredResource): boolean {
  return (
    existing !== undefined && existing.provider === record.provider && planPut(existing, carryOwnerFields(existing, record)) === 'unchanged'
  );
}

export class ResourceRegistry {
  constructor(
    private readonly store: RegistryStore,
    private readonly scanner: SecretScanner,
    private readonly audit: AuditTrail = new AuditTrail(store),
    /** Host configuration: required default IDs, which belong to the host alone. */
    private readonly requiredResourceIds: readonly string[] = [],
    /** The hosted capabilities' IDs (HOSTED_CAPABILITIES_FILE): the host's too, invoked with its credentials. */
    private readonly hostedCapabilityIds: readonly string[] = [],
    /** Each machine's record quota (RECORDS_PER_MACHINE, RECORD_BYTES_PER_MACHINE); none by default. */
    private readonly recordQuota: RecordQuota = { maxRecords: 0, maxBytes: 0 },
  ) {}

  /** The quota-checked writes in progress, by provider: one after another, so two at the limit never both pass. */
  readonly #quotaTurns = new Map<string, Promise<unknown>>();

  /**
   * Runs `write` once the provider's earlier quota-checked writes have settled, handing it what the provider
   * holds now; a provider without a quota writes at once. Every path that creates or grows a machine's
   * records comes through here (register, reconcile), so the check and the write are one step per machine.
   */
  async #withinQuota<T>(provider: string, write: (usage: RecordUsage) => Promise<T>): Promise<T> {
    if (!hasQuota(provider, this.recordQuota)) return write(NO_USAGE);
    const previous = this.#quotaTurns.get(provider) ?? Promise.resolve();
    const turn = previous.then(async () => write(await this.store.recordUsage(provider)));
    const settled = turn.catch(() => undefined);
    this.#quotaTurns.set(provider, settled);
    void settled.then(() => {
      if (this.#quotaTurns.get(provider) === settled) this.#quotaTurns.delete(provider);
    });
    return turn;
  }

  /**
   * 409 `record_quota_exceeded` when `provider` has no room for one more record (its count is at the bound,
   * or its bytes are: any record adds some). Reads only; the write that follows is checked again.
   */
  async assertRoomForRecord(provider: string): Promise<void> {
    if (!hasQuota(provider, this.recordQuota)) return;
    const usage = await this.store.recordUsage(provider);
    assertWithinQuota(provider, usage, { ...usage, count: usage.count + 1, bytes: usage.bytes + 1 }, this.recordQuota);
  }

  /** A machine may not hold a required default ID or a hosted capability's (not even before the host registers it): 403. */
  #assertNotReserved(provider: string, ids: readonly string[]): void {
    const [problem] = this.reservedProblems(provider, ids);
    if (problem) throw new AppError(problem.code, problem.message, problem.details);
  }

  /** The host's reserved IDs among `ids`, as every write by `provider` is refused them (record-rules.ts). */
  reservedProblems(provider: string, ids: readonly string[]): RecordProblem[] {
    return reservedIdProblems(provider, ids, this.#reserved);
  }

  get #reserved(): ReservedIds {
    return { required: this.requiredResourceIds, hosted: this.hostedCapabilityIds };
  }

  /** How each record was installed, for the owner's management (src/registry/manageable.ts). */
  readonly #installations: InstallationLookup = IMPORT_MARK;

  /** The IDs among `records` the owner may import again, refresh or delete (`manageableResourceIds`). */
  manageableIds(records: readonly StoredResource[]): string[] {
    return manageableResourceIds(records, this.#installations);
  }

  /** Whether the owner may refresh or delete `record` through skill management. */
  isManageable(record: StoredResource): boolean {
    return isManageable(record, this.#installations(record));
  }

  /**
   * Marks the machine's record `id` as a skill the owner imported and applies the owner's fields given,
   * in one store write (which moves the catalogue's revision). The caller audits it.
   */
  async markImported(id: string, owner: { displayName?: string; userContent?: string }): Promise<StoredResource> {
    const patch = {
      ...(owner.displayName !== undefined ? { displayName: owner.displayName.trim() } : {}),
      ...(owner.userContent !== undefined ? { userContent: owner.userContent.trim() } : {}),
      imported: true,
    };
    if (patch.displayName !== undefined && hasInvisible(patch.displayName)) {
      throw new AppError('validation_failed', 'The display name holds an invisible or bidirectional-control character.', {
        field: '/displayName',
      });
    }
    return this.store.customizeResource(id, patch);
  }

  list(): Promise<readonly StoredResource[]> {
    return this.store.listResources();
  }

  async listByProvider(provider: string): Promise<StoredResource[]> {
    return (await this.store.listResources()).filter((r) => r.provider === provider);
  }

  /** The records an agent on `machineId` may read about: the host's and that machine's own. */
  async listVisibleOnMachine(machineId: string): Promise<StoredResource[]> {
    return (await this.store.listResources()).filter((r) => visibleOnMachine(r.provider, machineId));
  }

  /** One record an agent on `machineId` may read (404 `resource_not_found` for any other, revealing nothing). */
  async getVisibleOnMachine(id: string, machineId: string): Promise<StoredResource> {
    const record = await this.store.getResource(id).catch(() => undefined);
    if (!record || !visibleOnMachine(record.provider, machineId)) {
      throw new AppError('resource_not_found', `No resource with ID ${id} for this agent.`, { id });
    }
    return record;
  }

  async get(id: string): Promise<StoredResource> {
    const record = await this.store.getResource(id);
    if (!record) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
    return record;
  }

  revision(): string {
    return this.store.resourcesRevision();
  }

  /**
   * The kept revisions of `id`, newest first, and its current digest (`null` once withdrawn). 404
   * `resource_not_found` when the registry holds neither a record nor a revision of that ID.
   */
  async revisionsOf(id: string): Promise<{ id: string; current: string | null; revisions: RevisionSummary[] }> {
    const [record, kept] = await Promise.all([this.store.getResource(id), this.store.listRevisions(id)]);
    if (!record && kept.length === 0) throw new AppError('resource_not_found', `No resource with ID ${id}.`, { id });
    return {
      id,
      current: record ? digestOf(record) : null,
      revisions: kept.map((r) => ({ digest: r.digest, provider: r.provider, createdAt: r.createdAt })),
    };
  }

  /** One kept revision of `id`: 400 `invalid_input` for a malformed digest, 404 `revision_not_found` for one not kept. */
  async revisionOf(id: string, digest: string): Promise<ResourceRevision> {
    assertDigest(digest);
    const revision = await this.store.getRevision(id, digest);
    if (!revision) throw new AppError('revision_not_found', `No revision ${digest} of resource ${id} is kept.`, { id, digest });
    return revision;
  }

  /**
   * Whether `provider` already holds `id` exactly as `body` would register it (a registration would answer
   * `unchanged`). Reads only: nothing is scanned, stored or audited. False for an ID held by another
   * provider or not held at all.
   */
  async holdsUnchanged(provider: string, id: string, body: ResourcePutBody): Promise<boolean> {
    const existing = await this.store.getResource(id);
    if (!existing || existing.provider !== provider) return false;
    return heldAsIs(existing, this.#toRecord(provider, { ...body, id }, ''));
  }

  /** Create an unused ID or replace the provider's own record, in the version of the body; the owner's customization is kept. */
  async register(
    provider: string,
    id: string,
    body: ResourcePutBody,
    actor: string,
    /** The audit action (a local receipt registers as `receipt.record`); `extraTexts` are scanned with the record. */
    options: { action?: string; extraTexts?: [string, string][] } = {},
  ): Promise<{ outcome: PutOutcome; record: StoredResource }> {
    const action = options.action ?? 'resource.register';
    if (body.id !== undefined && body.id !== id) {
      throw new AppError('validation_failed', `Body id ${body.id} does not match the path ID ${id}.`, { field: '/id' });
    }
    const record = this.#toRecord(provider, { ...body, id }, '');
    await this.scanner
      .assertClean([...textFieldsOf(record), ...(options.extraTexts ?? [])], { route: action })
      .catch((err: unknown) => this.audit.failure(actor, action, id, err));
    this.#assertNotReserved(provider, [id]);
    // The registration and its audit entry in one store call (one transaction on PostgreSQL); a refusal is
    // audited here, as every refused change is.
    const stored = await this.#withinQuota(provider, async (usage) => {
      if (hasQuota(provider, this.recordQuota)) {
        const existing = await this.store.getResource(id);
        // Another provider's ID is the store's 409 below; the quota counts only the provider's own records.
        if (existing === undefined || existing.provider === provider) {
          assertWithinQuota(provider, usage, usageAfterPut(usage, existing, record), this.recordQuota);
        }
      }
      return this.store.registerResource(record, this.audit.intent(actor, action));
    }).catch((err: unknown) => this.audit.failure(actor, action, id, err));
    if ('auditError' in stored) this.audit.appendFailed(stored.auditError);
    // The answer is this request's record (never a concurrent writer's that landed after it) with the owner's
    // customization as the store carried it at this write (found by the crash test's response check).
    return { outcome: stored.outcome, record: carryOwnerFields(stored.record, record) };
  }

  /** The owner's customization of any record (`displayName` null clears it, `userContent` '' clears it). */
  async customize(id: string, body: ResourceCustomization, actor: string): Promise<StoredResource> {
    const patch = {
      ...(body.displayName !== undefined ? { displayName: body.displayName === null ? null : body.displayName.trim() } : {}),
      ...(body.userContent !== undefined ? { userContent: body.userContent.trim() } : {}),
    };
    const texts: [string, string][] = [];
    if (typeof patch.displayName === 'string') {
      if (hasInvisible(patch.displayName)) {
        throw new AppError('validation_failed', 'The display name holds an invisible or bidirectional-control character.', {
          field: '/displayName',
        });
      }
      texts.push(['/displayName', patch.displayName]);
    }
    if (patch.userContent) texts.push(['/userContent', patch.userContent]);
    await this.scanner.assertClean(texts, { route: 'resource.customize' });
    const record = await this.store
      .customizeResource(id, patch)
      .catch((err: unknown) => this.audit.failure(actor, 'resource.customize', id, err));
    await this.audit.record([{ actor, action: 'resource.customize', id, outcome: 'customized' }]);
    return record;
  }

  async withdraw(provider: string, id: string, actor: string, action = 'resource.withdraw'): Promise<void> {
    await this.store.withdrawResource(provider, id).catch((err: unknown) => this.audit.failure(actor, action, id, err));
    await this.audit.record([{ actor, action, id, outcome: 'withdrawn' }]);
  }

  /** Replace the provider's whole set atomically; any conflict changes nothing. */
  async reconcile(provider: string, entries: readonly ReconcileEntry[], dryRun: boolean, actor: string): Promise<ReconcileResult> {
    const seen = new Set<string>();
    const duplicates = new Set<string>();
    for (const entry of entries) (seen.has(entry.id) ? duplicates : seen).add(entry.id);
    if (duplicates.size > 0) {
      throw new AppError('validation_failed', `The set lists ${[...duplicates].join(', ')} more than once.`, {
        ids: [...duplicates].sort(),
      });
    }
    const records: StoredResource[] = [];
    for (const [i, entry] of entries.entries()) {
      // A large record's checks get an event-loop turn of their own, as its scan does: reads are answered
      // between the skills of a set (a machine's reconnect sends them all at once).
      if (textLengthOf(entry) >= LARGE_RECORD_CHARS) await new Promise((resolve) => setImmediate(resolve));
      records.push(this.#toRecord(provider, entry, `/resources/${i}`));
    }
    // What the provider already holds exactly as listed was scanned when it was stored and is not read again
    // (docs/decisions/reconcile-of-unchanged-records.md): a machine re-sends its whole set on every connect.
    const held = await Promise.all(records.map((r) => this.store.getResource(r.id)));
    const fields = records.flatMap((r, i) => (heldAsIs(held[i], r) ? [] : textFieldsOf(r, `/resources/${i}`)));
    await this.scanner
      .assertClean(fields, { route: 'resource.reconcile' })
      .catch((err: unknown) => this.audit.failure(actor, 'resource.reconcile', `provider:${provider}`, err));
    this.#assertNotReserved(
      provider,
      records.map((r) => r.id),
    );
    const refused = (err: unknown) => this.audit.failure(actor, 'resource.reconcile', `provider:${provider}`, err);
    // The set replaces the provider's whole set: what it holds afterwards is exactly the set.
    const checkQuota = (usage: RecordUsage) => assertWithinQuota(provider, usage, usageOf(records, usage.pinnedBytes), this.recordQuota);
    if (dryRun) {
      return this.#withinQuota(provider, async (usage) => {
        checkQuota(usage);
        return this.store.reconcileResources(provider, records, true);
      }).catch(refused);
    }
    // The change and its entries in one store call (one transaction on PostgreSQL), as for a registration.
    const done = await this.#withinQuota(provider, (usage) => {
      checkQuota(usage);
      return this.store.reconcileResourcesAudited(provider, records, this.audit.intent(actor, 'resource.reconcile'));
    }).catch(refused);
    if ('auditError' in done) this.audit.appendFailed(done.auditError);
    return done.result;
  }

  /**
   * Dry-run check of a candidate record: schema rules, secrets, and ownership against the catalogue.
   * `callerProvider` is set when a provider asks (the record would be theirs).
   */
  async validate(candidate: unknown, callerProvider: string | undefined): Promise<ValidateResult> {
    const issues: ValidationIssue[] = [];
    const body = (candidate ?? {}) as Record<string, unknown>;
    for (const e of discriminatedErrors(AnyReconcileEntry, candidate, [...checkCandidate.Errors(candidate)])) {
      if (e.keyword === 'boolean') continue; // repeated by the `additionalProperties` entry
      const extra =
        e.keyword === 'additionalProperties' ? (e.params as { additionalProperties?: string[] }).additionalProperties : undefined;
      // Only names of our own record fields are echoed (an unknown one could be a pasted token).
      const message = extra ? unknownPropertiesMessage(extra) : e.message;
      issues.push({ code: 'validation_failed', field: e.instancePath, severity: 'error', message });
    }
    const provider = callerProvider ?? (typeof body.provider === 'string' ? body.provider : undefined);
    // The rules every write applies beyond the schema (record-rules.ts), as that provider's write would.
    if (provider !== undefined) {
      const ruled = [...recordProblems(provider, body), ...(typeof body.id === 'string' ? this.reservedProblems(provider, [body.id]) : [])];
      for (const p of ruled) issues.push({ code: p.code, field: p.field, severity: 'error', message: p.message });
    }
    // The body is any JSON, so a field may be far longer than the schema allows (that is reported above):
    // each is scanned up to its schema bound, as a stored one would be, and no further.
    const texts = (['name', 'description', 'instructions', 'sourceContent'] as const).flatMap((k): [string, string][] =>
      typeof body[k] === 'string' ? [[`/${k}`, body[k].slice(0, candidateBound(body.schemaVersion, k))]] : [],
    );
    for (const finding of await this.scanner.scan(texts, { route: 'resource.validate' })) {
      issues.push({
        code: 'secret_detected',
        field: finding.field,
        severity: 'error',
        message: `looks like a secret: line ${finding.line}, rule ${finding.rule}, fingerprint ${finding.fingerprint} (route resource.validate)`,
        line: finding.line,
        rule: finding.rule,
        fingerprint: finding.fingerprint,
      });
    }
    if (typeof body.id === 'string') {
      const held = await this.store.getResource(body.id);
      if (held && provider !== undefined && held.provider !== provider) {
        issues.push({
          code: 'resource_conflict',
          field: '/id',
          severity: 'error',
          message: `ID ${body.id} is held by provider ${held.provider}`,
        });
      }
    }
    for (const key of ['instructions', 'sourceContent'] as const) {
      if (typeof body[key] !== 'string') continue;
      for (const name of unknownVariables(body[key])) {
        issues.push({
          code: 'unknown_variable',
          field: `/${key}`,
          severity: 'warning',
          message: `$${name} is not a runtime variable (${RUNTIME_VARIABLES.map((v) => `$${v}`).join(', ')}); an agent will not find it set`,
        });
      }
    }
    if (typeof body.name === 'string' && body.name.trim() !== '') {
      // With no provider known (the owner did not name one), only the host's records clash for sure.
      const key = nameKey(body.name);
      const clashes = (await this.store.listResources()).filter(
        (r) =>
          r.id !== body.id &&
          nameKey(labelOf(r)) === key &&
          (provider === undefined ? r.provider === HOST_PROVIDER : canSeeTogether(provider, r.provider)),
      );
      if (clashes.length > 0) {
        issues.push({
          code: 'duplicate_resource_name',
          field: '/name',
          severity: 'error',
          message: `an agent could see this record together with ${clashes.map((r) => `${r.id} (${r.provider})`).join(', ')}, which share its name ignoring case and surrounding space`,
        });
      }
    }
    return { valid: !issues.some((i) => i.severity === 'error'), issues };
  }

  #toRecord(provider: string, body: (ResourcePutBody | ReconcileEntry) & { id: string }, at: string): StoredResource {
    const [problem] = recordProblems(provider, body, at);
    if (problem) throw new AppError(problem.code, problem.message, { field: problem.field });
    if (body.schemaVersion === 2) {
      // Upstream trims the provider's text; whitespace-only never reaches here (the body schema wants a visible character).
      const record = {
        schemaVersion: 2 as const,
        id: body.id,
        name: body.name.trim(),
        provider,
        sourceContent: body.sourceContent.trim(),
        userContent: '',
        ...(body.sourceRevision === undefined ? {} : { sourceRevision: body.sourceRevision }),
      };
      if (!checkProvider.Check(provider) || !checkV2.Check(record)) {
        throw new AppError('validation_failed', 'The record does not satisfy the AgentResource v2 schema.', { field: at || '/' });
      }
      return record;
    }
    const record: AgentResource = {
      schemaVersion: 1,
      id: body.id,
      name: body.name,
      provider,
      description: body.description,
      instructions: body.instructions,
    };
    if (!checkProvider.Check(provider) || !checkV1.Check(record)) {
      throw new AppError('validation_failed', 'The record does not satisfy the AgentResource schema.', { field: at || '/' });
    }
    return record;
  }
}
