// The store port: the interface the domain (registry, profiles, workloads, audit) needs from storage, owned
// here beside it; the adapters under src/storage (JSON files by default, PostgreSQL) implement it. Stores
// apply the ownership rules of src/registry/ownership.ts atomically with their writes and acknowledge a
// change only once it is durable. Reads return committed state only.
import type { ReconcileResult, StoredResource } from '../schemas/resource.js';
import type { CustomizationPatch } from './resource-versions.js';
import type { PutOutcome } from './ownership.js';
import type { ProfileChanges } from '../profiles/profile-rules.js';
import type { AgentProfile } from '../schemas/profile.js';
import type { WorkloadRecord } from '../schemas/workload.js';
import type { ChangeFeed, EventDraft } from './events.js';
import type { RecordUsage } from './record-quota.js';
import type { SearchTerm } from './search.js';

/** Which providers' records a catalogue view holds (every provider's when `providers` is absent). */
export interface ResourceScope {
  providers?: readonly string[];
}

/** A place in a view's order: (tier desc, provider, id); `tier` only in a search. */
export interface PagePosition {
  provider: string;
  id: string;
  tier?: number;
}

/** What `findResources` is asked: a scope, optionally search terms, a position to start after, a count. */
export interface FindRequest extends ResourceScope {
  /** Only records whose texts hold every term (src/registry/search.ts), ordered by tier first. */
  terms?: readonly SearchTerm[];
  after?: PagePosition;
  limit: number;
}

/** A record found, with its tier in a search (0 without one). */
export interface FoundResource {
  record: StoredResource;
  tier: number;
}
import type { ResourceRevision } from './record-digest.js';
import type { PinMove } from '../workloads/pin-move.js';

/**
 * A stored profile and its ETag value (`revision` here: an opaque digest of the record, which changes
 * exactly when the record's integer `revision` does).
 */
export interface ProfileEntry {
  profile: AgentProfile;
  revision: string;
}

export interface MachineRecord {
  machineId: string;
  /** SHA-256 of the machine token, hex. The token itself is never stored. */
  tokenDigest: string;
  enrolledAt: string;
  revokedAt?: string;
}

export interface AuditEntry {
  at: string;
  /** `owner`, `provider:huabu`, `machine:<id>`. */
  actor: string;
  action: string;
  /** The object acted on (resource ID, machine ID, ...). */
  id: string;
  outcome: string;
  /** Structured facts (IDs, durations, byte counts), never a secret, input or output. */
  details?: Record<string, string | number | readonly string[]>;
}

/** The audit entry of a change the store writes together with it: the store adds the outcome it decided. */
export type AuditIntent = Pick<AuditEntry, 'at' | 'actor' | 'action'>;

/** A registration's answer: its outcome and the record as stored (the owner's fields carried). */
export interface Registered {
  outcome: PutOutcome;
  record: StoredResource;
  /**
   * Set when the registration is durable but its audit entry could not be appended after it (JSON store:
   * two files); the caller reports it. A database store writes both in one transaction and never sets it.
   */
  auditError?: unknown;
}

export interface RegistryStore {
  /**
   * The change log (src/registry/events.ts, docs/events.md): every privileged change below that changes
   * something appends exactly one event per object changed, in the same durable write (JSON files) or
   * transaction (PostgreSQL) as the change: `putResource`/`registerResource` (created, replaced),
   * `reconcileResources*` (created, replaced, withdrawn), `withdrawResource`, `customizeResource`,
   * `enrollMachine`, `rotateMachineToken`, `revokeMachine`, `createProfile`, `updateProfile` (when it
   * changes something), `deleteProfile`, and `realizeWorkload` (when it creates the record). A refusal or
   * an unchanged answer writes none. Events are published only once their change is durable, in commit order.
   */
  readonly events: ChangeFeed;
  /**
   * Appends events that announce no stored change (a machine's channel opened or closed, the outcome of a
   * job sent to it): durable when this resolves, published in commit order with every other event.
   */
  recordEvents(drafts: readonly EventDraft[]): Promise<void>;
  /**
   * Resources are stored in the version they were written in (src/registry/resource-versions.ts converts).
   * A provider's put or reconcile never carries the owner's fields: the store keeps the customization of
   * the record it replaces, atomically with the write (ownership.ts `carryOwnerFields`).
   */
  /** Sorted by id. */
  listResources(): Promise<readonly StoredResource[]>;
  getResource(id: string): Promise<StoredResource | undefined>;
  /**
   * At most `limit` records of the scope's providers, after `after`, in (provider, id) order — or, with
   * `terms`, the records matching every term (src/registry/search.ts) in (tier desc, provider, id) order.
   * The scope applies before the search. Costs what the page costs, not what the catalogue holds, without
   * terms; with them, what the matches cost.
   */
  findResources(request: FindRequest): Promise<readonly FoundResource[]>;
  /** Opaque; changes whenever the set of resources changes. */
  resourcesRevision(): string;
  putResource(record: StoredResource): Promise<PutOutcome>;
  /**
   * `putResource` together with its audit entry `{...audit, id, outcome}`, answered with the record as
   * stored (no read-back needed). A database store writes the record and the entry in one transaction: a
   * committed registration always has its entry, and an entry that cannot be written fails the
   * registration. The JSON store makes the resources document durable, then appends the entry (as
   * `appendAudit`); an append failing then is `auditError`. A refusal (409, ...) throws and writes no
   * entry: the caller audits it.
   */
  registerResource(record: StoredResource, audit: AuditIntent): Promise<Registered>;
  /**
   * `reconcileResources` (never a dry run) together with its audit entries, one `{...audit, id, outcome}`
   * per record created, replaced and withdrawn (src/audit/audit-trail.ts `reconcileEntries`), written as
   * `registerResource` writes its entry: in the reconcile's transaction on a database store, appended after
   * the durable change by the JSON store (`auditError` when that fails).
   */
  reconcileResourcesAudited(
    provider: string,
    records: readonly StoredResource[],
    audit: AuditIntent,
  ): Promise<{ result: ReconcileResult; auditError?: unknown }>;
  withdrawResource(provider: string, id: string): Promise<void>;
  reconcileResources(provider: string, records: readonly StoredResource[], dryRun: boolean): Promise<ReconcileResult>;
  /** The owner's customization, applied atomically; 404 `resource_not_found` when there is no such record. */
  customizeResource(id: string, patch: CustomizationPatch): Promise<StoredResource>;

  /**
   * Revisions (src/registry/record-digest.ts, docs/decisions/record-digest.md): every write above that
   * changes a record's digest keeps the new content as an immutable revision (and the previous one, if it
   * was stored before revisions were kept), in the same durable write or transaction; retention drops the
   * oldest beyond REVISIONS_KEPT per ID except the current one and every one held by `holdRevisions`.
   * Withdrawal keeps them. `listRevisions` answers newest first (the current content first while its ID is
   * held), `[]` for an ID never seen.
   */
  listRevisions(id: string): Promise<readonly ResourceRevision[]>;
  getRevision(id: string, digest: string): Promise<ResourceRevision | undefined>;
  /**
   * Holds the given revisions for `holder` (`workload:<canvasId>/<threadId>`, `profile:<id>`): retention
   * never drops them. Holds are only added or moved (never released); a launch's are written by
   * `realizeWorkload`.
   */
  holdRevisions(holder: string, holds: readonly { id: string; digest: string }[]): Promise<void>;

  listMachines(): Promise<readonly MachineRecord[]>;
  getMachine(machineId: string): Promise<MachineRecord | undefined>;
  findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined>;
  /** Enrolls a new machine or re-enrolls a revoked one; 409 `machine_exists` while one is active. */
  enrollMachine(record: MachineRecord): Promise<void>;
  revokeMachine(machineId: string, revokedAt: string): Promise<void>;
  /**
   * Replaces an active machine's token digest (rotation); `enrolledAt`, `revokedAt` and its records stay.
   * 404 `machine_not_found` when the machine is unknown or revoked.
   */
  rotateMachineToken(machineId: string, tokenDigest: string): Promise<void>;

  /**
   * Canvas-token revocation: every canvas token of `canvasId` minted at or before `revokedBefore` (ISO
   * time) is refused from now on. A later revocation of the same canvas moves the cut-off forward.
   */
  revokeCanvasTokens(canvasId: string, revokedBefore: string): Promise<void>;
  /** The latest cut-off recorded for `canvasId`, if any. */
  canvasTokensRevokedBefore(canvasId: string): Promise<string | undefined>;

  /**
   * Profiles, with the rules of src/profiles/profile-rules.ts applied atomically with each write: alias
   * unique ignoring case (409 `alias_conflict`), `expectedRevisions` (from If-Match; absent means
   * unconditional) compared with the current ETag in the same step as the write (412
   * `precondition_failed`), `expectedRevision` (the body's; absent means unconditional) compared with the
   * record's integer `revision` in that step too (409 `profile_conflict`), the integer `revision` raised by
   * one with every change that changes something, and manifest-backed profiles never changed (409
   * `invalid_profile_kind`).
   * Records are returned exactly as stored; how they are shown is the profile registry's business.
   */
  /** Sorted by id. */
  listProfiles(): Promise<readonly ProfileEntry[]>;
  getProfile(id: string): Promise<ProfileEntry | undefined>;
  createProfile(profile: AgentProfile): Promise<ProfileEntry>;
  updateProfile(
    id: string,
    changes: ProfileChanges,
    expectedRevisions?: readonly string[],
    expectedRevision?: number,
  ): Promise<ProfileEntry & { changed: boolean }>;
  deleteProfile(id: string, expectedRevisions?: readonly string[]): Promise<void>;
  /**
   * The Agent Team state kept beside the profiles (`members`, `configs` of the registry file), exactly as
   * stored (`undefined` when absent); read to tell which manifest-backed profiles are selectable.
   */
  getTeamState(): Promise<{ members: unknown; configs: unknown }>;

  /**
   * Workloads (agent threads), one durable document per canvas. `realizeWorkload` writes the record only
   * when the thread has none yet, atomically with that check, so concurrent first launches of one thread
   * produce exactly one record: `created: false` returns the record that was there first.
   */
  listWorkloads(canvasId: string): Promise<readonly WorkloadRecord[]>;
  getWorkload(canvasId: string, threadId: string): Promise<WorkloadRecord | undefined>;
  /**
   * With `audit`, a realization that creates the record writes its entry `{...audit, id:
   * "<canvasId>/<threadId>", outcome: "realized"}` (audit-trail.ts `realizedEntry`) with it, durable by the
   * same commit: PostgreSQL in the insert's statement; the JSON store in the journal line, which the audit
   * log takes after it (appended on its own, recovered from the journal at start if a crash came first). A
   * repeat writes no entry (the caller audits it). A realization that creates the record holds its
   * `spec.resourcePins` for its thread (`holdRevisions` with `workload:<canvasId>/<threadId>`), durable
   * before it answers: PostgreSQL in the same statement; the JSON store beside the journal line, and held
   * again from the journal's records before a compaction drops them. A repeat holds nothing.
   */
  realizeWorkload(record: WorkloadRecord, audit?: AuditIntent): Promise<{ workload: WorkloadRecord; created: boolean }>;
  /**
   * Moves one pin of a stored workload (src/workloads/pin-move.ts): a compare-and-set. Atomically with the
   * write it checks `checkPinMove` against the workload and the record's digest now (404
   * `workload_not_found`, 409 `pin_conflict`, 409 `pin_stale`: nothing written), then stores `next(current)`
   * (the workload with the pin moved, its attestation signed again), holds the new revision for the
   * workload (`workload:<canvasId>/<threadId>`, moved from the old one), writes the audit entry
   * `{...audit, id: "<canvasId>/<threadId>", outcome: "repinned", details: {resourceId, from, to}}` and the
   * event `workload.repinned`: PostgreSQL in one transaction; the JSON store in one workloads journal line
   * (record, entry, event), after holding the new revision (a crash between keeps too much, never too
   * little). Of two moves from the same `from`, exactly one wins; the other is 409 `pin_conflict`.
   */
  movePin(move: PinMove, next: (current: WorkloadRecord) => WorkloadRecord, audit: AuditIntent): Promise<WorkloadRecord>;

  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  /**
   * Whether the store can serve requests now (readiness). A store that lives in this process (JSON files)
   * is ready once open; a database-backed store asks its database.
   */
  isAvailable(): Promise<boolean>;
  close(): Promise<void>;

  /**
   * What `provider` holds now: its record count and their bytes as src/registry/record-quota.ts
   * `recordBytes` counts them (committed state). The registry checks the record quota against it.
   */
  recordUsage(provider: string): Promise<RecordUsage>;
}
