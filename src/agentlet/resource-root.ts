// The machine's resource root (`AGENT_RESOURCE_DIR`): where it is, its layout, and creating it safely.
import { mkdir, chmod, lstat, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from './exit-codes.js';

export const RECEIPTS_DIR = 'receipts';
/** The directory each receipt kind's entrypoint must live under. */
export const KIND_DIRS = { skill: 'skills', tool: 'tools', connector: 'connectors' } as const;
export type ReceiptKind = keyof typeof KIND_DIRS;
export const RECEIPT_KINDS = Object.keys(KIND_DIRS) as ReceiptKind[];

/** Owner-only: the receipts decide what this machine publishes, so nobody else may write there. */
export const DIR_MODE = 0o700;

export function defaultResourceRoot(homeDir: string = os.homedir()): string {
  return path.join(homeDir, '.agentlet', 'resources');
}

/**
 * `--resource-dir` wins over `AGENT_RESOURCE_DIR`, which wins over `~/.agentlet/resources`. An override must be
 * absolute: a relative one would silently depend on the working directory, and `sync` withdraws whatever is
 * missing from the root it reads.
 */
export function resolveResourceRoot(flag: string | undefined, envValue: string | undefined, homeDir?: string): string {
  const [value, origin] = flag !== undefined ? [flag, '--resource-dir'] : envValue ? [envValue, 'AGENT_RESOURCE_DIR'] : [undefined, ''];
  if (value === undefined) return defaultResourceRoot(homeDir);
  if (!path.isAbsolute(value)) throw new CliError(`${origin} must be an absolute path (got "${value}")`, EXIT.usage);
  return path.normalize(value);
}

export interface InitResult {
  created: string[];
  tightened: string[];
}

/** Creates the missing directories with mode 0700; tightens existing ones that group or others may write. */
export async function initResourceRoot(root: string): Promise<InitResult> {
  const result: InitResult = { created: [], tightened: [] };
  const dirs = [root, ...[...Object.values(KIND_DIRS), RECEIPTS_DIR].map((d) => path.join(root, d))];
  for (const dir of dirs) {
    const existing = await lstat(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (existing === undefined) {
      await mkdir(dir, { recursive: true, mode: DIR_MODE });
      await chmod(dir, DIR_MODE); // mkdir's mode is filtered by the umask
      result.created.push(dir);
      continue;
    }
    if (dir !== root && existing.isSymbolicLink()) {
      throw new CliError(`${dir} is a symbolic link; the layout directories must be real directories inside the root`, EXIT.usage);
    }
    const target = existing.isSymbolicLink() ? await stat(dir) : existing;
    if (!target.isDirectory()) throw new CliError(`${dir} exists and is not a directory`, EXIT.usage);
    if ((target.mode & 0o022) !== 0) {
      await chmod(dir, DIR_MODE);
      result.tightened.push(dir);
    }
  }
  return result;
}

/**
 * Fails with a hint to run `init` when the root or its receipts directory is missing, and refuses either when it
 * is unsafe. The receipts decide what this machine publishes (and `sync` withdraws what they leave out), so nobody
 * but this user may change them: `receipts/` must be a real directory (judged with lstat, never followed), and
 * neither it nor the root may be writable by group or others. The root itself may be reached through a symbolic
 * link; its target is judged.
 */
export async function assertInitialized(root: string): Promise<void> {
  const receipts = path.join(root, RECEIPTS_DIR);
  for (const [dir, st] of [
    [root, await stat(root).catch(() => undefined)],
    [receipts, await lstat(receipts).catch(() => undefined)],
  ] as const) {
    if (st?.isSymbolicLink()) {
      throw new CliError(
        `${dir} is a symbolic link; ${RECEIPTS_DIR}/ must be a real directory inside the resource root. Remove the link and run \`agentlet-resources init\``,
        EXIT.usage,
      );
    }
    if (!st?.isDirectory()) {
      throw new CliError(
        `${dir} does not exist or is not a directory; run \`agentlet-resources init\` first (resource root: ${root})`,
        EXIT.usage,
      );
    }
    if ((st.mode & 0o022) !== 0) {
      throw new CliError(
        `${dir} is writable by group or others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); refusing to use it. Run \`agentlet-resources init\` to tighten it`,
        EXIT.usage,
      );
    }
  }
}
