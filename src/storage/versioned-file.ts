// Reads the versioned `{schemaVersion, state}` JSON files of DATA_DIR, refusing (never rewriting) a file
// that does not parse or carries another version.
import { readFile } from 'node:fs/promises';
import { StoreFileError } from './store-file-error.js';

/** Reads a versioned `{schemaVersion, state}` file; `undefined` when it does not exist yet. */
export async function readVersionedFile(file: string, version: number): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new StoreFileError(file, 'does not parse as JSON');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new StoreFileError(file, 'is not a JSON object');
  const { schemaVersion, state } = doc as { schemaVersion?: unknown; state?: unknown };
  if (typeof schemaVersion !== 'number') throw new StoreFileError(file, 'has no numeric schemaVersion');
  if (schemaVersion > version) {
    throw new StoreFileError(file, `has schemaVersion ${schemaVersion}, newer than this version of the service understands (${version})`);
  }
  if (schemaVersion !== version) throw new StoreFileError(file, `has unknown schemaVersion ${schemaVersion} (expected ${version})`);
  if (state === null || typeof state !== 'object' || Array.isArray(state)) throw new StoreFileError(file, 'has no state object');
  return state as Record<string, unknown>;
}
