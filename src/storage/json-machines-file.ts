// machines.json of the JSON store (docs/data-files.md): the enrolled machines and the canvas-token
// revocations, as one versioned document.
import type { MachineRecord } from '../registry/store.js';
import type { DocumentCodec } from './durable-document.js';
import { sortedValues } from './overlay-map.js';
import { StoreFileError } from './store-file-error.js';
import { readVersionedFile } from './versioned-file.js';

export const MACHINES_FILE = 'machines.json';
const MACHINES_FILE_VERSION = 1;

export interface MachinesState {
  machines: Map<string, MachineRecord>;
  /** canvasId → ISO cut-off: canvas tokens of that canvas minted at or before it are refused. */
  canvasRevocations: Map<string, string>;
}

export const machinesCodec: DocumentCodec<MachinesState> = {
  clone: (s) => ({ machines: new Map(s.machines), canvasRevocations: new Map(s.canvasRevocations) }),
  serialize: (s) =>
    JSON.stringify(
      {
        schemaVersion: MACHINES_FILE_VERSION,
        state: {
          machines: sortedValues(s.machines),
          // Written only once used, so a DATA_DIR that never revoked a canvas keeps its exact v1 bytes.
          ...(s.canvasRevocations.size > 0
            ? {
                canvasRevocations: [...s.canvasRevocations.keys()]
                  .sort()
                  .map((canvasId) => ({ canvasId, revokedBefore: s.canvasRevocations.get(canvasId)! })),
              }
            : {}),
        },
      },
      null,
      2,
    ) + '\n',
};

function recordList(file: string, state: Record<string, unknown> | undefined, key: string): unknown[] {
  if (!state) return [];
  const list = state[key];
  if (!Array.isArray(list)) throw new StoreFileError(file, `state.${key} is not an array`);
  return list;
}

function isMachineRecord(v: unknown): v is MachineRecord {
  const m = v as MachineRecord;
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof m.machineId === 'string' &&
    typeof m.tokenDigest === 'string' &&
    /^[0-9a-f]{64}$/.test(m.tokenDigest) &&
    typeof m.enrolledAt === 'string' &&
    (m.revokedAt === undefined || typeof m.revokedAt === 'string')
  );
}

export async function loadMachines(file: string): Promise<MachinesState> {
  const machines = new Map<string, MachineRecord>();
  const state = await readVersionedFile(file, MACHINES_FILE_VERSION);
  for (const entry of recordList(file, state, 'machines')) {
    if (!isMachineRecord(entry)) throw new StoreFileError(file, 'holds an invalid machine record');
    machines.set(entry.machineId, Object.freeze(entry));
  }
  const canvasRevocations = new Map<string, string>();
  const revocations = state && 'canvasRevocations' in state ? recordList(file, state, 'canvasRevocations') : [];
  for (const entry of revocations as { canvasId?: unknown; revokedBefore?: unknown }[]) {
    if (typeof entry?.canvasId !== 'string' || typeof entry.revokedBefore !== 'string') {
      throw new StoreFileError(file, 'holds an invalid canvas-token revocation');
    }
    canvasRevocations.set(entry.canvasId, entry.revokedBefore);
  }
  return { machines, canvasRevocations };
}

/** The active machines by token digest. */
export function indexByDigest(machines: Map<string, MachineRecord>): Map<string, MachineRecord> {
  const index = new Map<string, MachineRecord>();
  for (const m of machines.values()) if (!m.revokedAt) index.set(m.tokenDigest, m);
  return index;
}
