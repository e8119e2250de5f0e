// The import command: `DATABASE_URL=... npm run import -- --data-dir DIR` (see src/storage/postgres/commands.ts).
import { terminalProgress } from '../src/progress.js';
import { IMPORT_USAGE, runImport } from '../src/storage/postgres/commands.js';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(`${IMPORT_USAGE}
       (inside the image: node dist/scripts/import-json.js --data-dir DIR)
Copies a stopped JSON DATA_DIR (resources, machines, profiles, workloads, audit log) into the empty
PostgreSQL database named by DATABASE_URL. Start the PostgreSQL service with the same OWNER_TOKEN,
HUABU_PROVIDER_TOKEN and CANVAS_TOKEN_SECRET as the JSON service used (see DATA_DIR/credentials.json), or
Huabu's token and every issued canvas token stop working.`);
} else {
  process.exitCode = await runImport(
    argv,
    process.env.DATABASE_URL || undefined,
    (line) => console.log(line),
    (line) => console.error(line),
    terminalProgress(process.stderr),
  );
}
