// The three process credentials (owner token, Huabu provider token, canvas-token signing secret). Values
// from the environment win; any that are missing are generated once into DATA_DIR/credentials.json
// (mode 0600) and read from there on later starts. Callers log the file's path, never a value.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { MIN_TOKEN_LENGTH } from '../config.js';
import { writeFileDurably } from '../storage/durable-file.js';
import { generateToken, TOKEN_PREFIX } from './tokens.js';

export const CREDENTIALS_FILE = 'credentials.json';

export interface Credentials {
  ownerToken: string;
  huabuProviderToken: string;
  canvasTokenSecret: string;
}

export interface ResolvedCredentials {
  credentials: Credentials;
  /** The file that holds generated values, when any value came from it. */
  file: string | undefined;
  /** True when this call generated values (first start). */
  generated: boolean;
  /** Where each value comes from (never the value): the environment, the file, or generated now. */
  sources: Record<keyof Credentials, 'environment' | 'file' | 'generated'>;
  /**
   * Writes generated values to the file. Already done unless `deferWrite` was asked for; then the caller
   * calls it once the start can no longer fail (after listening), so a failed start generates nothing.
   */
  persist(): Promise<void>;
}

const generators: Record<keyof Credentials, () => string> = {
  ownerToken: () => generateToken(TOKEN_PREFIX.owner),
  huabuProviderToken: () => generateToken(TOKEN_PREFIX.huabu),
  canvasTokenSecret: () => generateToken(TOKEN_PREFIX.canvasSecret),
};

export class CredentialsFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = 'CredentialsFileError';
  }
}

async function readStored(file: string): Promise<Partial<Credentials>> {
  let text: string;
  try {
    const info = await stat(file);
    if ((info.mode & 0o077) !== 0) {
      throw new CredentialsFileError(file, `is readable by group or others (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 on it`);
    }
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(file, 'does not parse as JSON; it was left unchanged');
  }
  const stored: Partial<Credentials> = {};
  for (const key of Object.keys(generators) as (keyof Credentials)[]) {
    const value = (parsed as Record<string, unknown>)?.[key];
    if (value === undefined) continue;
    // The same rule as the environment: a string of at least MIN_TOKEN_LENGTH visible characters.
    if (typeof value !== 'string' || value.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
      throw new CredentialsFileError(
        file,
        `${key} must be a string of at least ${MIN_TOKEN_LENGTH} printable characters without spaces; fix or remove it`,
      );
    }
    stored[key] = value;
  }
  return stored;
}

export async function resolveCredentials(
  dataDir: string,
  fromEnv: Partial<Credentials>,
  options: { deferWrite?: boolean } = {},
): Promise<ResolvedCredentials> {
  const file = path.join(dataDir, CREDENTIALS_FILE);
  const keys = Object.keys(generators) as (keyof Credentials)[];
  const fromEnvironment = { ownerToken: 'environment', huabuProviderToken: 'environment', canvasTokenSecret: 'environment' } as const;
  if (keys.every((k) => fromEnv[k])) {
    return {
      credentials: fromEnv as Credentials,
      file: undefined,
      generated: false,
      sources: fromEnvironment,
      persist: () => Promise.resolve(),
    };
  }

  const stored = await readStored(file);
  const sources = Object.fromEntries(
    keys.map((k) => [k, fromEnv[k] ? 'environment' : stored[k] ? 'file' : 'generated']),
  ) as ResolvedCredentials['sources'];
  const missing = keys.filter((k) => !fromEnv[k] && !stored[k]);
  for (const key of missing) stored[key] = generators[key]();
  let written = missing.length === 0;
  const persist = async () => {
    if (written) return;
    await writeFileDurably(file, JSON.stringify(stored, null, 2) + '\n');
    written = true;
  };
  if (!options.deferWrite) await persist();
  const credentials = Object.fromEntries(keys.map((k) => [k, fromEnv[k] || stored[k]!])) as unknown as Credentials;
  return { credentials, file, generated: missing.length > 0, sources, persist };
}
