// Profile v1 → v2. A v1 record has no `schemaVersion`; it reads as v2 with `resourceIds: []` (whatever
// resourceIds it carried are ignored: v1 selections were never placement-checked). Every other property,
// including a manifest-backed profile's `launch` and `preparation`, is carried unchanged.
import { PROFILE_SCHEMA_VERSION } from '../schemas/profile.js';

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export interface ProfileUpgrade {
  record: JsonObject;
  /** True when the record was v1 and has been rewritten as v2. */
  upgraded: boolean;
}

export function upgradeProfile(record: unknown, where: string): ProfileUpgrade {
  if (!isJsonObject(record)) throw new MigrationError(`${where} is not a JSON object`);
  if (!('schemaVersion' in record)) {
    const { resourceIds: _ignored, ...rest } = record;
    return { record: { schemaVersion: PROFILE_SCHEMA_VERSION, ...rest, resourceIds: [] }, upgraded: true };
  }
  if (record.schemaVersion === PROFILE_SCHEMA_VERSION) return { record, upgraded: false };
  const id = typeof record.id === 'string' ? ` (${record.id})` : '';
  throw new MigrationError(
    `${where}${id} has unknown profile schemaVersion ${JSON.stringify(record.schemaVersion)}; this version of the service reads profiles v1 (no schemaVersion) and v${PROFILE_SCHEMA_VERSION}`,
  );
}
