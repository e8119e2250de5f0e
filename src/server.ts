// The process: read configuration, build the app, listen, and close gracefully on signals. A start that
// fails for a reason the operator can fix (configuration, DATA_DIR, database, port) prints one line and
// exits non-zero, without a stack trace and without generating credentials.
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, loadProcessConfig } from './config.js';
import { CredentialsFileError } from './credentials/credentials-file.js';
import { SigningKeysFileError } from './credentials/signing-keys.js';
import { createProcessLogger } from './logger.js';
import { startTracingIfConfigured } from './tracing/load.js';
import { DataDirLockedError } from './storage/data-dir-lock.js';
import { DataDirError, StoreFileError } from './storage/json-file-store.js';
import { DatabaseSchemaError } from './storage/postgres/migrations.js';
import { DatabaseUnavailableError } from './storage/postgres/pg-errors.js';
import { deferredCommitFileSystem } from './storage/unsafe-deferred-commit.js';

/** Errors of a listen() the operator can fix, as one line. */
function listenProblem(err: unknown, host: string, port: number): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return `Cannot listen on ${host}:${port}: the port is already in use (set PORT to a free one).`;
  if (code === 'EACCES') return `Cannot listen on ${host}:${port}: permission denied (use a port above 1023).`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return `Cannot listen on ${host}:${port}: this machine has no such address (check HOST).`;
  return undefined;
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(
      'Usage: npm start   (or: node dist/bundle/server.js)\nRuns the registry; configured by environment variables only (see docs/configuration.md).',
    );
    return;
  }
  let config;
  try {
    config = loadProcessConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createProcessLogger(config.logLevel, process.stdout.isTTY === true);
  const fatal = (message: string) => {
    logger.fatal(message);
    logger.flush();
    process.exitCode = 1;
  };
  const tracing = await startTracingIfConfigured(config);
  const unsafeMs = config.unsafeAckBeforeWriteMs;
  if (unsafeMs !== undefined) logger.warn({ delayMs: unsafeMs }, 'UNSAFE TEST MODE: writes are acknowledged before they are committed');
  let app;
  try {
    app = await buildApp({
      config,
      logger,
      deferCredentialWrite: true,
      ...(tracing ? { tracingPlugin: tracing.fastifyPlugin } : {}),
      ...(unsafeMs === undefined
        ? {}
        : { fs: deferredCommitFileSystem(unsafeMs, (err) => logger.error({ err }, 'deferred commit failed')) }),
    });
  } catch (err) {
    if (
      err instanceof DataDirLockedError ||
      err instanceof StoreFileError ||
      err instanceof DataDirError ||
      err instanceof CredentialsFileError ||
      err instanceof SigningKeysFileError ||
      err instanceof DatabaseSchemaError ||
      err instanceof DatabaseUnavailableError
    ) {
      return fatal(err.message);
    }
    throw err;
  }
  let listening: string;
  try {
    listening = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    const problem = listenProblem(err, config.host, config.port);
    if (problem === undefined) throw err;
    await app.close();
    return fatal(problem);
  }
  // PORT=0 (any free port) and no PUBLIC_BASE_URL: the default address names the port actually bound.
  if (config.publicBaseUrlFollowsListen) config.publicBaseUrl = listening;
  // Registered only once listening: close-with-grace also acts on 'beforeExit' (and would exit 0).
  closeWithGrace({ delay: 10_000, logger }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an error');
    else app.log.info({ signal }, 'closing');
    await app.close();
    await tracing?.shutdown();
  });
  // Only now, with the port bound, are generated credentials written (a failed start leaves none).
  await app.persistGeneratedCredentials();
  const store = config.databaseUrl ? 'postgres' : 'json';
  app.log.info(
    {
      listening,
      publicBaseUrl: config.publicBaseUrl,
      store,
      ...(config.databaseUrl ? {} : { dataDir: config.dataDir }),
      docs: `${config.publicBaseUrl}/docs`,
    },
    `agent-resource-registry ready: listening on ${listening}, PUBLIC_BASE_URL ${config.publicBaseUrl}, store ${store}${config.databaseUrl ? '' : ` in ${config.dataDir}`}, docs ${config.publicBaseUrl}/docs`,
  );
}

await main();
