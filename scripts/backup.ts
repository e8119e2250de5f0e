// The backup command: `npm run backup -- --to DIR [--with-credentials]` (see src/storage/backup.ts).
import { BACKUP_USAGE, BackupError, parseBackupArgs, runBackup } from '../src/storage/backup.js';
import { DataDirError } from '../src/storage/store-file-error.js';

export const BACKUP_HELP = `${BACKUP_USAGE}
       (inside the image: node dist/scripts/backup.js --to DIR)
Writes a consistent copy of the JSON DATA_DIR (default: $DATA_DIR, else ./data) into DIR, a new or empty
directory, while the service runs on it or not: a running service pauses its writes for the copy (every
write it acknowledged before is in the backup). Start a service on the copy with DATA_DIR=DIR.
credentials.json is left out unless --with-credentials (keep such a backup as carefully as the tokens).
A backup that is interrupted leaves DIR absent (or as empty as it was), never half written.
With DATABASE_URL set there is nothing here to copy: back up PostgreSQL with pg_dump.`;

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(BACKUP_HELP);
} else if (process.env.DATABASE_URL) {
  console.error(
    'DATABASE_URL is set: the data is in PostgreSQL, not in DATA_DIR; back it up with pg_dump (docs/operations.md, "Backups").',
  );
  process.exitCode = 2;
} else {
  const options = parseBackupArgs(argv, process.env);
  if ('error' in options) {
    console.error(`${options.error}\n${BACKUP_USAGE}`);
    process.exitCode = 2;
  } else {
    try {
      // ARR_BACKUP_TRACE=1 (tests): each step on stderr as it is reached, so a test can kill the process there.
      const trace = process.env.ARR_BACKUP_TRACE === '1' ? (step: string) => void process.stderr.write(`backup step ${step}\n`) : undefined;
      const report = await runBackup(trace ? { ...options, onStep: trace } : options);
      const paused =
        report.mode === 'online'
          ? `online: the service paused its writes for ${report.pausedMs} ms`
          : 'offline: no service was running on it';
      console.log(
        `backed up ${options.dataDir} to ${report.to} (${report.files} files, ${report.bytes} bytes; ${paused}; ${report.credentials === 'none in DATA_DIR' ? 'no credentials.json in DATA_DIR' : `credentials.json ${report.credentials}`})`,
      );
    } catch (err) {
      if (!(err instanceof BackupError) && !(err instanceof DataDirError) && !(err instanceof Error && 'code' in err)) throw err;
      console.error(`backup failed: ${err.message}`);
      process.exitCode = 1;
    }
  }
}
