// The registry's launch-signing keys (Ed25519): generated once into SIGNING_KEYS_FILE (default
// DATA_DIR/signing-keys.json, mode 0600) like the other credentials, and rotated by adding a new key in front
// (`npm run signing-keys -- rotate`): the first key signs, every key stays published for verification until
// an operator removes it. Callers log the file's path and the key IDs, never a private key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, hkdfSync, type KeyObject } from 'node:crypto';
import path from 'node:path';
import { readFile, stat } from 'node:fs/promises';
import { writeFileDurably } from '../storage/durable-file.js';
import { publicJwkOf, type PublicJwk, type Signer } from '../workloads/attestation.js';

export const SIGNING_KEYS_FILE = 'signing-keys.json';
const FILE_VERSION = 1;
/** Keys kept in the file at most: rotation past it is refused, so no key is dropped without an operator. */
export const MAX_SIGNING_KEYS = 16;

interface StoredKey {
  kid: string;
  createdAt: string;
  /** PKCS #8 DER, base64. */
  privateKey: string;
}

export interface SigningKey extends Signer {
  createdAt: string;
  publicJwk: PublicJwk;
}

export interface SigningKeys {
  /** The key that signs (the newest). */
  active: SigningKey;
  /** Every kept key, newest first: the JWKS route publishes them all. */
  keys: readonly SigningKey[];
  file: string;
  generated: boolean;
  /** Writes a generated key to the file (already done unless `deferWrite`). */
  persist(): Promise<void>;
}

export class SigningKeysFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = 'SigningKeysFileError';
  }
}

function newKey(createdAt: string): { stored: StoredKey; key: SigningKey } {
  const { privateKey } = generateKeyPairSync('ed25519');
  return keyOf({ kid: '', createdAt, privateKey: (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64') });
}

/** PKCS #8 DER of an Ed25519 private key: this fixed prefix, then the 32-byte seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The key a secret derives (HKDF-SHA-256 of the secret into an Ed25519 seed). */
export function derivedKey(secret: string): { stored: StoredKey; key: SigningKey } {
  const seed = Buffer.from(hkdfSync('sha256', secret, 'agent-resource-registry', 'launch-signing-key/1', 32));
  return keyOf({
    kid: '',
    createdAt: '1970-01-01T00:00:00.000Z',
    privateKey: Buffer.concat([ED25519_PKCS8_PREFIX, seed]).toString('base64'),
  });
}

function keyOf(stored: StoredKey): { stored: StoredKey; key: SigningKey } {
  const privateKey: KeyObject = createPrivateKey({ key: Buffer.from(stored.privateKey, 'base64'), format: 'der', type: 'pkcs8' });
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 key');
  const publicJwk = publicJwkOf(createPublicKey(privateKey));
  return { stored: { ...stored, kid: publicJwk.kid }, key: { kid: publicJwk.kid, createdAt: stored.createdAt, privateKey, publicJwk } };
}

async function readStored(file: string): Promise<StoredKey[] | undefined> {
  let text: string;
  try {
    const info = await stat(file);
    if ((info.mode & 0o077) !== 0) {
      throw new SigningKeysFileError(file, `is readable by group or others (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 on it`);
    }
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SigningKeysFileError(file, 'does not parse as JSON; it was left unchanged');
  }
  const keys = (parsed as { keys?: unknown })?.keys;
  if ((parsed as { schemaVersion?: unknown })?.schemaVersion !== FILE_VERSION || !Array.isArray(keys) || keys.length === 0) {
    throw new SigningKeysFileError(
      file,
      `must be {"schemaVersion": ${FILE_VERSION}, "keys": [...]} with at least one key; it was left unchanged`,
    );
  }
  return keys.map((k: unknown, i) => {
    const entry = k as Partial<StoredKey>;
    if (typeof entry?.privateKey !== 'string' || typeof entry.createdAt !== 'string') {
      throw new SigningKeysFileError(file, `keys[${i}] must have createdAt and privateKey (PKCS #8, base64)`);
    }
    return { kid: String(entry.kid ?? ''), createdAt: entry.createdAt, privateKey: entry.privateKey };
  });
}

function loaded(file: string, stored: StoredKey[]): SigningKey[] {
  return stored.map((s, i) => {
    try {
      return keyOf(s).key;
    } catch {
      throw new SigningKeysFileError(file, `keys[${i}] is not an Ed25519 private key (PKCS #8 DER, base64)`);
    }
  });
}

const serialize = (stored: readonly StoredKey[]) => JSON.stringify({ schemaVersion: FILE_VERSION, keys: stored }, null, 2) + '\n';

/** The keys in `file`, generating the first one when the file does not exist. */
export async function resolveSigningKeys(
  file: string,
  now: () => Date,
  options: { deferWrite?: boolean; derivedFrom?: string } = {},
): Promise<SigningKeys> {
  const stored = await readStored(file);
  if (stored) {
    const keys = loaded(file, stored);
    return { active: keys[0]!, keys, file, generated: false, persist: () => Promise.resolve() };
  }
  // A PostgreSQL replica without a data directory (every credential from its environment) writes no file:
  // its key comes from the canvas-token secret, so the replicas that share the secret share the key.
  if (options.derivedFrom !== undefined && !(await stat(path.dirname(file)).catch(() => undefined))) {
    const { key } = derivedKey(options.derivedFrom);
    return { active: key, keys: [key], file, generated: false, persist: () => Promise.resolve() };
  }
  const first = newKey(now().toISOString());
  let written = false;
  const persist = async () => {
    if (written) return;
    await writeFileDurably(file, serialize([first.stored]));
    written = true;
  };
  if (!options.deferWrite) await persist();
  return { active: first.key, keys: [first.key], file, generated: true, persist };
}

/** The keys in `file`, newest first; undefined when there is no file. */
export async function readSigningKeys(file: string): Promise<SigningKey[] | undefined> {
  const stored = await readStored(file);
  return stored && loaded(file, stored);
}

/** Adds a new signing key in front of the kept ones (the file is created when missing); answers the kept keys. */
export async function rotateSigningKeys(file: string, now: () => Date): Promise<SigningKey[]> {
  const stored = (await readStored(file)) ?? [];
  const kept = loaded(file, stored);
  if (stored.length >= MAX_SIGNING_KEYS) {
    throw new SigningKeysFileError(file, `already keeps ${MAX_SIGNING_KEYS} keys; remove the oldest (the last entries) first`);
  }
  const next = newKey(now().toISOString());
  await writeFileDurably(file, serialize([next.stored, ...stored.map((s, i) => ({ ...s, kid: kept[i]!.kid }))]));
  return [next.key, ...kept];
}
