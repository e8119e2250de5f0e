// The migrate command. With --data-dir: the registry-file migration of a JSON DATA_DIR
// (`npm run migrate -- --data-dir DIR [--dry-run]`, see src/migrations/migrate-command.ts). Without it and
// with DATABASE_URL set: the PostgreSQL schema migrations (`npm run migrate [-- --dry-run]`, see
// src/storage/postgres/commands.ts), the same ones every service start runs.
import { MIGRATE_USAGE, runMigrate } from '../src/migrations/migrate-command.js';
import { terminalProgress } from '../src/progress.js';
import { DATABASE_MIGRATE_USAGE, runDatabaseMigrate } from '../src/storage/postgres/commands.js';

export const MIGRATE_HELP = `${MIGRATE_USAGE}
       ${DATABASE_MIGRATE_USAGE.replace(/^usage: /, '')}
       (inside the image: node dist/scripts/migrate.js ...)
Brings a JSON DATA_DIR's registry file (--data-dir), or the PostgreSQL database named by DATABASE_URL, to
the version this release uses. --dry-run reports what would change and writes nothing. A JSON DATA_DIR is
refused while a service runs on it (stop the service first; the lock is held by the running process).`;

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(MIGRATE_HELP);
} else {
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const print = (line: string) => console.log(line);
  const printErr = (line: string) => console.error(line);
  process.exitCode =
    databaseUrl && !argv.some((a) => a === '--data-dir' || a.startsWith('--data-dir='))
      ? await runDatabaseMigrate(argv, databaseUrl, print, printErr)
      : await runMigrate(argv, print, printErr, terminalProgress(process.stderr));
}
