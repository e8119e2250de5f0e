// The skill folders of the resource root (`<root>/skills/<name>/`) and the receipts that name them: which
// folders no receipt names (orphans, left by a receipt deleted by hand or an interrupted removal), which the
// owner may therefore clear, and what a scan says about the root. Reads only; never follows a link out.
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { RESOURCE_ID_PATTERN } from '../schemas/common.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import { TEMP_SUFFIX } from '../storage/durable-file.js';
import { MAX_RECEIPT_BYTES, publishableSet, validateResourceRoot, type ReceiptProblemCode } from './receipt.js';
import { KIND_DIRS, RECEIPTS_DIR } from './resource-root.js';

const ID = new RegExp(RESOURCE_ID_PATTERN);

/** A diagnostic about the resource root, in the scan answer's shape. */
export interface RootDiagnostic {
  path: string;
  code: 'skill_orphaned' | ReceiptProblemCode;
  message: string;
}

/** The `skills/` folder a receipt's entrypoint lies in (as written, and as resolved), if any. */
async function claimedFolders(realRoot: string, entrypoint: unknown): Promise<string[]> {
  if (typeof entrypoint !== 'string' || path.isAbsolute(entrypoint) || entrypoint.split(/[\\/]/).includes('..')) return [];
  const found: string[] = [];
  const [kindDir, name] = path.posix.normalize(entrypoint.replaceAll('\\', '/')).split('/');
  if (kindDir === KIND_DIRS.skill && name) found.push(name);
  const real = await realpath(path.join(realRoot, entrypoint)).catch(() => undefined);
  if (real !== undefined) {
    const [realKind, realName] = path.relative(realRoot, real).split(path.sep);
    if (realKind === KIND_DIRS.skill && realName) found.push(realName);
  }
  return found;
}

/**
 * The names under `skills/` some receipt claims: every receipt's file name (`<name>.json`), and the folder
 * its entrypoint lies in. A receipt that cannot be read claims its file name only.
 */
export async function claimedSkillFolders(root: string): Promise<Set<string>> {
  const realRoot = await realpath(root);
  const claimed = new Set<string>();
  const names = (await readdir(path.join(realRoot, RECEIPTS_DIR))).filter((n) => !n.startsWith('.') && !n.endsWith(TEMP_SUFFIX));
  for (const name of names) {
    if (name.endsWith('.json')) claimed.add(name.slice(0, -'.json'.length));
    const file = path.join(realRoot, RECEIPTS_DIR, name);
    const st = await lstat(file).catch(() => undefined);
    if (!st?.isFile() || st.size > MAX_RECEIPT_BYTES) continue;
    let value: unknown;
    try {
      value = JSON.parse(await readFile(file, 'utf8'));
    } catch {
      continue;
    }
    if (value !== null && typeof value === 'object') {
      for (const folder of await claimedFolders(realRoot, (value as { entrypoint?: unknown }).entrypoint)) claimed.add(folder);
    }
  }
  return claimed;
}

/** True when `skills/<name>` exists (as anything: a folder, a file, a link) and no receipt claims it. */
export async function isOrphan(root: string, name: string): Promise<boolean> {
  if (!(await lstat(path.join(root, KIND_DIRS.skill, name)).catch(() => undefined))) return false;
  return !(await claimedSkillFolders(root)).has(name);
}

/**
 * What a scan says about the machine's own resource root: each receipt that cannot be published (the same
 * problems `serve` reports to the registry) and each folder in `skills/` that no receipt names, with how to
 * clear it.
 */
export async function rootDiagnostics(root: string, scanner: SecretScanner, machineId: string, max: number): Promise<RootDiagnostic[]> {
  const { reports } = await validateResourceRoot(root, scanner, machineId);
  const diagnostics: RootDiagnostic[] = (await publishableSet(reports, scanner)).problems.map((p) => ({
    path: path.join(root, p.receipt),
    code: p.code,
    message: `not published: ${p.message}`,
  }));
  const skills = path.join(root, KIND_DIRS.skill);
  const names = (await readdir(skills).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
  const claimed = names.length > 0 ? await claimedSkillFolders(root) : new Set<string>();
  for (const name of names) {
    if (claimed.has(name)) continue;
    diagnostics.push({
      path: path.join(skills, name),
      code: 'skill_orphaned',
      message: ID.test(name)
        ? `no receipt names this folder, so nothing publishes it; clear it with DELETE /api/acp/resources/${name} (with ?agentletId=${machineId})`
        : 'no receipt names this folder, so nothing publishes it; its name is no resource ID, so remove it by hand',
    });
  }
  return diagnostics.slice(0, max);
}
