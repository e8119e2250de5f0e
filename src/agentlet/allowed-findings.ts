// The owner's secret allowlist entries each imported skill came with, kept in the resource root
// (`.allowed-findings.json`, by skill ID), so that the machine's own check of its receipts before it publishes
// lets through exactly what the owner allowed for that skill (a finding in its SKILL.md, which its record
// carries). Written at import and refresh, cleared at removal. An entry limited to a route matches only that
// route's scan; the receipts' check names none, so only entries for every route apply there.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { SecretScanner, type AllowedFinding } from '../secrets/secret-scanner.js';
import { writeFileDurably } from '../storage/durable-file.js';
import { JobError } from './job-error.js';

export const ALLOWED_FINDINGS_FILE = '.allowed-findings.json';

type Kept = Record<string, AllowedFinding[]>;

async function readKept(root: string): Promise<Kept> {
  const text = await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '{}';
    throw err;
  });
  const value = JSON.parse(text) as unknown;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${ALLOWED_FINDINGS_FILE} is not a JSON object`);
  return value as Kept;
}

/** Every entry kept for the root's skills. */
export async function readAllowedFindings(root: string): Promise<AllowedFinding[]> {
  return Object.values(await readKept(root)).flat();
}

/** The entries kept for skill `id` (none when it has none). */
export async function allowedFindingsOf(root: string, id: string): Promise<AllowedFinding[]> {
  return (await readKept(root))[id] ?? [];
}

/** Keeps `entries` as skill `id`'s (none: forgets the skill's). */
export async function keepAllowedFindings(root: string, id: string, entries: readonly AllowedFinding[]): Promise<void> {
  const kept = await readKept(root);
  if (entries.length === 0 && !(id in kept)) return;
  if (entries.length === 0) delete kept[id];
  else kept[id] = [...entries];
  await writeFileDurably(path.join(root, ALLOWED_FINDINGS_FILE), `${JSON.stringify(kept, null, 2)}\n`);
}

/** The machine's scanner: its own token is a secret, and the entries kept for its skills apply. */
export function machineScanner(root: string, token: string): SecretScanner {
  return new SecretScanner([token], { allowlist: () => readAllowedFindings(root) });
}

/** The job's `secretAllowlist`: the owner's entries that apply to an import (an entry that is not one is refused). */
export function jobAllowlist(body: Record<string, unknown>): AllowedFinding[] {
  const list = body.secretAllowlist;
  if (list === undefined) return [];
  const valid = (e: unknown): e is AllowedFinding =>
    e !== null &&
    typeof e === 'object' &&
    typeof (e as AllowedFinding).fingerprint === 'string' &&
    ['undefined', 'string'].includes(typeof (e as AllowedFinding).file) &&
    ['undefined', 'string'].includes(typeof (e as AllowedFinding).route);
  if (!Array.isArray(list) || !list.every(valid))
    throw new JobError('invalid_payload', 'secretAllowlist must be a list of {fingerprint, file?, route?}');
  return list.map(({ fingerprint, file, route }) => ({
    fingerprint,
    ...(file === undefined ? {} : { file }),
    ...(route === undefined ? {} : { route }),
  }));
}
