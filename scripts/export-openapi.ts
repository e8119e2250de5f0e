// Writes the OpenAPI document of the real app to openapi/openapi.json, or with --check fails when the
// committed file differs from what the routes produce now.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const OPENAPI_FILE = path.join(root, 'openapi', 'openapi.json');

/** The document as the running service serves it, serialized the way it is committed. */
export async function generateOpenApi(): Promise<string> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'arr-openapi-'));
  try {
    const config = loadConfig({ DATA_DIR: dataDir, SEED_HUABU_RESOURCES: 'false' });
    const app = await buildApp({ config, logger: createLogger('silent') });
    try {
      await app.ready();
      return JSON.stringify(app.swagger(), null, 2) + '\n';
    } finally {
      await app.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const check = process.argv.includes('--check');
const generated = await generateOpenApi();
if (check) {
  const committed = await readFile(OPENAPI_FILE, 'utf8').catch(() => '');
  if (committed !== generated) {
    console.error(
      `${path.relative(process.cwd(), OPENAPI_FILE)} is out of date with the routes; run \`npm run openapi\` and commit the result.`,
    );
    process.exit(1);
  }
  console.log('openapi/openapi.json matches the routes');
} else {
  await writeFile(OPENAPI_FILE, generated);
  console.log(`wrote ${path.relative(process.cwd(), OPENAPI_FILE)}`);
}
