// The reports of `serve`'s receipt checks, kept between publishes: a receipt whose file, entrypoint and
// surroundings are as they were when it was checked is not read and scanned again. Every report still comes
// from `validateReceiptFile` (src/agentlet/receipt.ts), the one check of a receipt; what is kept is only its
// answer, under a key that changes with anything the answer depends on: the receipt file (inode, size,
// modification and change times), each path segment from the resource root to its entrypoint (a folder
// replaced or turned into a link changes them), the machine ID, and the scanner's inputs (the machine's token
// and the allowlist entries kept for its skills). A publish then costs what changed, not what the root holds.
import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import { RECEIPTS_DIR } from './resource-root.js';
import { entrypointProblems, validateReceiptFile, type ReceiptReport } from './receipt.js';

/** How a path is now: its inode, size, mode and times, or `-` when there is nothing there. */
async function signature(file: string): Promise<string> {
  const st = await lstat(file).catch(() => undefined);
  return st ? `${st.ino}:${st.size}:${st.mode}:${st.mtimeMs}:${st.ctimeMs}` : '-';
}

/** The segments from the root to an entrypoint (`skills`, `skills/x`, `skills/x/SKILL.md`); none for an unsafe one. */
function entrypointPaths(realRoot: string, report: ReceiptReport): string[] {
  const entrypoint = report.receipt?.entrypoint;
  if (entrypoint === undefined || path.isAbsolute(entrypoint) || entrypoint.split(/[\\/]/).includes('..')) return [];
  const segments = path.posix.normalize(entrypoint).split('/').filter(Boolean);
  return segments.map((_, i) => path.join(realRoot, ...segments.slice(0, i + 1)));
}

interface Kept {
  key: string;
  report: ReceiptReport;
}

export class ReceiptReportCache {
  readonly #kept = new Map<string, Kept>();

  /**
   * `validateReceiptFile(realRoot, fileName, scanner, machineId)`, answered from the last check when nothing it
   * depends on changed. `scannerKey` names the scanner's inputs (the token and the kept allowlist entries).
   */
  async validate(
    realRoot: string,
    fileName: string,
    scanner: SecretScanner,
    machineId: string,
    scannerKey: string,
  ): Promise<ReceiptReport> {
    const file = path.join(realRoot, RECEIPTS_DIR, fileName);
    const keyOf = async (report: ReceiptReport | undefined) => {
      const parts = [realRoot, machineId, scannerKey, await signature(file)];
      // Only a valid report has an entrypoint, and it names the paths it was checked through.
      if (report) for (const p of entrypointPaths(realRoot, report)) parts.push(await signature(p));
      return createHash('sha256').update(parts.join('\0')).digest('hex');
    };
    const kept = this.#kept.get(fileName);
    if (kept && kept.key === (await keyOf(kept.report))) return kept.report;
    // The key is taken before the check: a change during it leaves a key that no longer matches.
    const before = await signature(file);
    const report = await validateReceiptFile(realRoot, fileName, scanner, machineId);
    this.#kept.delete(fileName);
    if (report.receipt === undefined || before !== (await signature(file))) return report;
    const key = await keyOf(report);
    // The entrypoint is checked once more after its paths were signed: one that changed during the check is not kept.
    const { kind, entrypoint } = report.receipt;
    if ((await entrypointProblems(realRoot, kind, entrypoint)).length === 0) this.#kept.set(fileName, { key, report });
    return report;
  }

  /** Forgets the files not in `names` (receipts removed since). */
  keepOnly(names: readonly string[]): void {
    const keep = new Set(names);
    for (const name of this.#kept.keys()) if (!keep.has(name)) this.#kept.delete(name);
  }
}
