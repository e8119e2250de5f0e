// The migrate command: `npm run migrate -- --data-dir DIR [--dry-run]` (see src/migrations/migrate-command.ts).
import { runMigrate } from '../src/migrations/migrate-command.js';

process.exitCode = await runMigrate(
  process.argv.slice(2),
  (line) => console.log(line),
  (line) => console.error(line),
);
