// Writes what is generated from the code: the OpenAPI document of the real app (openapi/openapi.json, what
// the typed client is generated from), the client's list of error codes (packages/client/src/error-codes.ts,
// from src/errors.ts) and docs/CONTRACT.md's route tables (scripts/contract-routes.ts, from the document).
// With --check it fails when a committed file differs from what the code produces now.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { ERROR_CODES } from '../src/errors.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { CONTRACT_FILE, generateContract } from './contract-routes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const OPENAPI_FILE = path.join(root, 'openapi', 'openapi.json');
export const CLIENT_ERROR_CODES_FILE = path.join(root, 'packages', 'client', 'src', 'error-codes.ts');

/** The client's error-code module: the server's list (src/errors.ts), written as the client ships it. */
export function generateClientErrorCodes(): string {
  const entries = Object.entries(ERROR_CODES).map(([code, status]) => `  ${code}: ${status},`);
  return `// Every stable \`code\` the registry answers with in its error envelope, and the HTTP status it comes with.
// Generated from the server's list (src/errors.ts) by \`npm run openapi\`; \`npm test\` fails when it is out of date.

export const ERROR_CODES = {
${entries.join('\n')}
} as const;

/** A stable error code of the registry, e.g. \`resource_conflict\`. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether \`value\` is one of the registry's stable error codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
`;
}

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
const openapi = await generateOpenApi();
const files: [string, string][] = [
  [OPENAPI_FILE, openapi],
  [CLIENT_ERROR_CODES_FILE, generateClientErrorCodes()],
  [path.join(root, CONTRACT_FILE), await generateContract(openapi, path.join(root, CONTRACT_FILE))],
];
let stale = false;
for (const [file, generated] of files) {
  const name = path.relative(process.cwd(), file);
  if (check) {
    const committed = await readFile(file, 'utf8').catch(() => '');
    if (committed === generated) console.log(`${name} is up to date`);
    else {
      console.error(`${name} is out of date with the code; run \`npm run openapi\` and commit the result.`);
      stale = true;
    }
  } else {
    await writeFile(file, generated);
    console.log(`wrote ${name}`);
  }
}
if (stale) process.exit(1);
