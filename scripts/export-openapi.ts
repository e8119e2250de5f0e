// Writes what the typed client is generated from: the OpenAPI document of the real app
// (openapi/openapi.json) and the client's list of error codes (packages/client/src/error-codes.ts, from
// src/errors.ts); and the docs' table of built-in adapters (docs/hosted-capabilities.md, from
// src/invocation/adapters.ts). With --check it fails when a committed file differs from what the code
// produces now.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { ERROR_CODES } from '../src/errors.js';
import { adapterTable } from '../src/invocation/adapters.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const OPENAPI_FILE = path.join(root, 'openapi', 'openapi.json');
export const CLIENT_ERROR_CODES_FILE = path.join(root, 'packages', 'client', 'src', 'error-codes.ts');
export const HOSTED_CAPABILITIES_DOC = path.join(root, 'docs', 'hosted-capabilities.md');

/**
 * `text` with the generated section `name` (between `<!-- generated: name -->` and `<!-- /generated -->`)
 * holding `content`.
 */
export function withGeneratedSection(text: string, name: string, content: string): string {
  const begin = `<!-- generated: ${name} -->\n`;
  const start = text.indexOf(begin);
  const end = text.indexOf('<!-- /generated -->', start);
  if (start < 0 || end < 0) throw new Error(`no generated section ${name}`);
  return `${text.slice(0, start + begin.length)}${content}\n${text.slice(end)}`;
}

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
const files: [string, string][] = [
  [OPENAPI_FILE, await generateOpenApi()],
  [CLIENT_ERROR_CODES_FILE, generateClientErrorCodes()],
  [HOSTED_CAPABILITIES_DOC, withGeneratedSection(await readFile(HOSTED_CAPABILITIES_DOC, 'utf8'), 'adapters', adapterTable())],
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
