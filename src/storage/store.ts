// The storage interface every backend implements (JSON files by default; a database later). Stores apply
// the ownership rules of src/registry/ownership.ts atomically with their writes and acknowledge a change
// only once it is durable. Reads return committed state only.
import type { AgentResource, ReconcileResult } from '../schemas/resource.js';
import type { PutOutcome } from '../registry/ownership.js';

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
}

export interface RegistryStore {
  /** Sorted by id. */
  listResources(): Promise<readonly AgentResource[]>;
  getResource(id: string): Promise<AgentResource | undefined>;
  /** Opaque; changes whenever the set of resources changes. */
  resourcesRevision(): Promise<string>;
  putResource(record: AgentResource): Promise<PutOutcome>;
  withdrawResource(provider: string, id: string): Promise<void>;
  reconcileResources(provider: string, records: readonly AgentResource[], dryRun: boolean): Promise<ReconcileResult>;

  listMachines(): Promise<readonly MachineRecord[]>;
  getMachine(machineId: string): Promise<MachineRecord | undefined>;
  findMachineByTokenDigest(digest: string): Promise<MachineRecord | undefined>;
  /** Enrolls a new machine or re-enrolls a revoked one; 409 `machine_exists` while one is active. */
  enrollMachine(record: MachineRecord): Promise<void>;
  revokeMachine(machineId: string, revokedAt: string): Promise<void>;

  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  close(): Promise<void>;
}
