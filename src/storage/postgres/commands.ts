// The database commands: `npm run migrate` with DATABASE_URL set (the numbered SQL migrations, or with
// --dry-run the ones pending) and `npm run import -- --data-dir DIR` (a JSON DATA_DIR into the database).
// Each returns the process exit code and never prints DATABASE_URL (it may hold a password).
import path from 'node:path';
import pg from 'pg';
import { parseCommandArgs } from '../../command-args.js';
import { DataDirLockedError } from '../data-dir-lock.js';
import { DataDirError, StoreFileError } from '../store-file-error.js';
import { silentProgress, type Progress } from '../../progress.js';
import { importJsonDataDir, ImportRefusedError } from './import-json.js';
import { DatabaseSchemaError, migrate, SCHEMA_VERSION } from './migrations.js';
import { DatabaseUnavailableError } from './pg-errors.js';

type Print = (line: string) => void;

export const DATABASE_MIGRATE_USAGE = 'usage: DATABASE_URL=postgres://... npm run migrate [-- --dry-run]';
export const IMPORT_USAGE = 'usage: DATABASE_URL=postgres://... npm run import -- --data-dir DIR';

export async function runDatabaseMigrate(argv: readonly string[], databaseUrl: string, out: Print, err: Print): Promise<number> {
  const parsed = parseCommandArgs(argv, { 'dry-run': { type: 'boolean' } });
  if ('error' in parsed) {
    err(`${parsed.error}\n${DATABASE_MIGRATE_USAGE}`);
    return 2;
  }
  const dryRun = parsed.values['dry-run'] === true;
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'agent-resource-registry-migrate' });
  try {
    await client.connect();
  } catch (e) {
    err(new DatabaseUnavailableError(e).message);
    return 1;
  }
  try {
    const report = await migrate(client, { dryRun });
    if (report.applied.length === 0) out(`database schema already at version ${report.from}; nothing to do`);
    else
      out(`database schema ${report.from} → ${SCHEMA_VERSION}${dryRun ? ' (dry run: nothing applied)' : ''}: ${report.applied.join(', ')}`);
    return 0;
  } catch (e) {
    if (e instanceof DatabaseSchemaError) {
      err(e.message);
      return 1;
    }
    throw e;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function runImport(
  argv: readonly string[],
  databaseUrl: string | undefined,
  out: Print,
  err: Print,
  progress: Progress = silentProgress,
): Promise<number> {
  const parsed = parseCommandArgs(argv, { 'data-dir': { type: 'string' } });
  if ('error' in parsed) {
    err(`${parsed.error}\n${IMPORT_USAGE}`);
    return 2;
  }
  const dataDir = parsed.values['data-dir'];
  if (!dataDir || !databaseUrl) {
    err(`${!databaseUrl ? 'DATABASE_URL must be set' : '--data-dir DIR is required'}\n${IMPORT_USAGE}`);
    return 2;
  }
  try {
    const { found, written } = await importJsonDataDir(path.resolve(dataDir), databaseUrl, progress);
    const line = (c: typeof found) =>
      `${c.resources} resources, ${c.machines} machines, ${c.profiles} profiles, ${c.registryStateKeys} other registry keys, ${c.workloads} workloads, ${c.auditEntries} audit entries, ${c.revisions} revisions, ${c.revisionHolds} revision holds, ${c.driftNotices} drift notices`;
    out(`${path.resolve(dataDir)} holds ${line(found)}`);
    out(
      Object.values(written).every((n) => n === 0) ? 'the database already held all of it; nothing written' : `written: ${line(written)}`,
    );
    return 0;
  } catch (e) {
    if (
      e instanceof ImportRefusedError ||
      e instanceof DataDirLockedError ||
      e instanceof DataDirError ||
      e instanceof StoreFileError ||
      e instanceof DatabaseSchemaError ||
      e instanceof DatabaseUnavailableError
    ) {
      err(e.message);
      return 1;
    }
    throw e;
  }
}
