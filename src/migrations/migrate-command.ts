// `npm run migrate -- --data-dir DIR [--dry-run]`: runs the registry-file migration the service runs at
// start, while holding the DATA_DIR lock (so never beside a running service), and prints what it changed
// or, with --dry-run, what it would change. Like the service's start, it first removes the temp files an
// interrupted run (a kill mid-write) left beside the registry file. Returns the process exit code.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { parseCommandArgs } from '../command-args.js';
import { DataDirLockedError, lockDataDir } from '../storage/data-dir-lock.js';
import { assertNotIncompleteBackup, DataDirError, openResources, REGISTRY_FILE, RESOURCES_FILE } from '../storage/json-file-store.js';
import { journalPathFor, readJournal } from '../storage/journal.js';
import { describeResourcesReport, inspectResourcesFile } from './resources-file.js';
import { nodeFileSystem, sweepTempFiles } from '../storage/durable-file.js';
import { StoreFileError } from '../storage/store-file-error.js';
import { silentProgress, type Progress } from '../progress.js';
import { REGISTRY_FILE_VERSION } from './registry-file.js';
import { migrateRegistryFile, type RegistryMigrationReport } from './registry-migration.js';

export const MIGRATE_USAGE = 'usage: npm run migrate -- --data-dir DIR [--dry-run]';

export function parseMigrateArgs(argv: readonly string[]): { dataDir: string; dryRun: boolean } | { error: string } {
  const parsed = parseCommandArgs(argv, { 'data-dir': { type: 'string' }, 'dry-run': { type: 'boolean' } });
  if ('error' in parsed) return parsed;
  const dataDir = parsed.values['data-dir'];
  if (!dataDir) return { error: '--data-dir DIR is required' };
  return { dataDir: path.resolve(dataDir), dryRun: parsed.values['dry-run'] === true };
}

export function describeReport(report: RegistryMigrationReport, dryRun: boolean): string[] {
  if (!report.exists) return [`${report.file}: no registry file; nothing to migrate`];
  if (!report.changed) return [`${report.file}: already at v${REGISTRY_FILE_VERSION} with v2 profiles; nothing to do`];
  const lines = [`${report.file}: registry file v${report.from} → v${REGISTRY_FILE_VERSION}${dryRun ? ' (dry run: nothing written)' : ''}`];
  for (const step of report.steps) lines.push(`  step ${step}`);
  if (report.upgradedProfileIds.length > 0) {
    lines.push(`  profiles v1 → v2 (resourceIds reset to []): ${report.upgradedProfileIds.join(', ')}`);
  }
  lines.push(`  ${dryRun ? 'would back up' : 'backed up'} the original bytes to ${report.backupFile}`);
  if (report.setupLogFiles.length > 0) {
    lines.push(
      `  ${dryRun ? 'would move' : 'moved'} ${report.setupLogFiles.length} embedded setup log(s) to: ${report.setupLogFiles.join(', ')}`,
    );
  }
  return lines;
}

export async function runMigrate(
  argv: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void,
  progress: Progress = silentProgress,
): Promise<number> {
  const args = parseMigrateArgs(argv);
  if ('error' in args) {
    err(`${args.error}\n${MIGRATE_USAGE}`);
    return 2;
  }
  if (
    !(await stat(args.dataDir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  ) {
    err(`${args.dataDir} is not a directory`);
    return 2;
  }
  // A half-written backup is not a DATA_DIR: migrating it would dress it up as one (the start refuses it too).
  try {
    await assertNotIncompleteBackup(args.dataDir);
  } catch (e) {
    if (e instanceof DataDirError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  let lock;
  try {
    lock = await lockDataDir(args.dataDir);
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      err(`${e.message} The migration runs at its start anyway.`);
      return 1;
    }
    if (e instanceof DataDirError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  try {
    const file = path.join(args.dataDir, REGISTRY_FILE);
    // Safe: the lock guarantees no other process is writing them.
    const swept = args.dryRun ? [] : await sweepTempFiles(path.dirname(file));
    if (swept.length > 0) out(`removed ${swept.length} temp file(s) left by an interrupted write: ${swept.join(', ')}`);
    const report = await migrateRegistryFile(file, { dryRun: args.dryRun, progress });
    for (const line of describeReport(report, args.dryRun)) out(line);
    // resources.json: a start folds its journal in, which makes a v1 file v2 (after a backup) when the
    // journal holds v2 records or customizations; the command does the same.
    const resourcesFile = path.join(args.dataDir, RESOURCES_FILE);
    const journal = await readJournal(journalPathFor(resourcesFile));
    const resources = await inspectResourcesFile(resourcesFile, journal.batches);
    if (!args.dryRun && journal.bytes > 0) {
      await sweepTempFiles(path.dirname(resourcesFile));
      await (await openResources(resourcesFile, nodeFileSystem, undefined, {})).close();
    }
    for (const line of describeResourcesReport(resources, args.dryRun)) out(line);
    return 0;
  } catch (e) {
    if (e instanceof StoreFileError) {
      err(e.message);
      return 1;
    }
    throw e;
  } finally {
    await lock.release();
  }
}
