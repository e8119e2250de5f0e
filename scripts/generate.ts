// `npm run generate`: writes every generated file of the repository from the code it describes:
//   openapi/openapi.json                     the OpenAPI document of the real app
//   packages/client/src/api-types.ts         the client's types, from that document (openapi-typescript)
//   packages/client/src/error-codes.ts       the client's list of error codes, from src/errors.ts
//   docs/hosted-capabilities.md              its table of built-in adapters, from src/invocation/adapters.ts
//   docs/capabilities-example.{dot,svg}      the capability graph of a small example registry
// With --check it writes nothing and fails, naming `npm run generate`, when a committed file differs from
// what the code produces now (`npm test` runs it). --root DIR reads and writes the files under DIR instead
// of the checkout.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildApp } from '../src/app.js';
import { ERROR_CODES } from '../src/errors.js';
import { adapterTable } from '../src/invocation/adapters.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { generateCapabilitiesExample } from './capabilities-example.js';
import { CONTRACT_FILE, generateContract } from './contract-routes.js';

/** The one command that regenerates everything generated; every drift check names it. */
export const GENERATE_COMMAND = 'npm run generate';

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
// Generated from the server's list (src/errors.ts) by \`${GENERATE_COMMAND}\`; \`npm test\` fails when it is out of date.

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

/** The client's types from an OpenAPI document, as openapi-typescript's command line writes them. */
export async function generateApiTypes(openapi: string): Promise<string> {
  // Its package exports map `*.js` to `*.mjs`, so its bin is found beside its package.json.
  const cli = path.join(path.dirname(createRequire(import.meta.url).resolve('openapi-typescript/package.json')), 'bin', 'cli.js');
  const dir = await mkdtemp(path.join(tmpdir(), 'arr-api-types-'));
  try {
    await writeFile(path.join(dir, 'openapi.json'), openapi);
    await promisify(execFile)(process.execPath, [cli, 'openapi.json', '-o', 'api-types.ts'], { cwd: dir });
    return await readFile(path.join(dir, 'api-types.ts'), 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every generated file, relative to the root, with what the code produces for it now. */
export async function generatedFiles(root: string): Promise<[string, string][]> {
  const openapi = await generateOpenApi();
  const hostedDoc = path.join('docs', 'hosted-capabilities.md');
  const example = await generateCapabilitiesExample();
  return [
    [path.join('openapi', 'openapi.json'), openapi],
    [path.join('packages', 'client', 'src', 'api-types.ts'), await generateApiTypes(openapi)],
    [path.join('packages', 'client', 'src', 'error-codes.ts'), generateClientErrorCodes()],
    [hostedDoc, withGeneratedSection(await readFile(path.join(root, hostedDoc), 'utf8'), 'adapters', adapterTable())],
    [path.join('docs', 'capabilities-example.dot'), example.dot],
    [path.join('docs', 'capabilities-example.svg'), example.svg],
    [CONTRACT_FILE, await generateContract(openapi, path.join(root, CONTRACT_FILE))],
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(`Usage: ${GENERATE_COMMAND} [-- --check] [-- --root DIR]

Writes every generated file from the code: openapi/openapi.json, packages/client/src/api-types.ts,
packages/client/src/error-codes.ts, the adapters table in docs/hosted-capabilities.md and
docs/capabilities-example.{dot,svg}. --check writes nothing and fails when a committed file is out of date.`);
    process.exit(0);
  }
  const check = args.includes('--check');
  const rootAt = args.indexOf('--root');
  // The checkout: two levels up when compiled (dist/scripts/), one from source (scripts/).
  const here = path.dirname(fileURLToPath(import.meta.url));
  const checkout = path.resolve(here, path.basename(path.dirname(here)) === 'dist' ? '../..' : '..');
  const root = rootAt >= 0 ? path.resolve(args[rootAt + 1]!) : checkout;
  let stale = false;
  for (const [name, generated] of await generatedFiles(root)) {
    const file = path.join(root, name);
    if (check) {
      const committed = await readFile(file, 'utf8').catch(() => '');
      if (committed === generated) console.log(`${name} is up to date`);
      else {
        console.error(`${name} is out of date with the code; run \`${GENERATE_COMMAND}\` and commit the result.`);
        stale = true;
      }
    } else {
      await writeFile(file, generated);
      console.log(`wrote ${name}`);
    }
  }
  if (stale) process.exit(1);
}
