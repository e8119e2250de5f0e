// The migrate command. With --data-dir: the registry-file migration of a JSON DATA_DIR
// (`npm run migrate -- --data-dir DIR [--dry-run]`, see src/migrations/migrate-command.ts). Without it and
// with DATABASE_URL set: the PostgreSQL schema migrations (`npm run migrate [-- --dry-run]`, see
// src/storage/postgres/commands.ts), the same ones every service start runs.
import { runMigrate } from '../src/migrations/migrate-command.js';
import { terminalProgress } from '../src/progress.js';
import { runDatabaseMigrate } from '../src/storage/postgres/commands.js';

const argv = process.argv.slice(2);
const databaseUrl = process.env.DATABASE_URL || undefined;
const print = (line: string) => console.log(line);
const printErr = (line: string) => console.error(line);
process.exitCode =
  databaseUrl && !argv.some((a) => a === '--data-dir' || a.startsWith('--data-dir='))
    ? await runDatabaseMigrate(argv, databaseUrl, print, printErr)
    : await runMigrate(argv, print, printErr, terminalProgress(process.stderr));
