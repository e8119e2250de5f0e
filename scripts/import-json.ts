// The import command: `DATABASE_URL=... npm run import -- --data-dir DIR` (see src/storage/postgres/commands.ts).
import { terminalProgress } from '../src/progress.js';
import { runImport } from '../src/storage/postgres/commands.js';

process.exitCode = await runImport(
  process.argv.slice(2),
  process.env.DATABASE_URL || undefined,
  (line) => console.log(line),
  (line) => console.error(line),
  terminalProgress(process.stderr),
);
