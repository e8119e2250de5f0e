// The process: read configuration, build the app, listen, and close gracefully on signals.
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { CredentialsFileError } from './credentials/credentials-file.js';
import { createLogger } from './logger.js';
import { DataDirLockedError } from './storage/data-dir-lock.js';
import { StoreFileError } from './storage/json-file-store.js';
import { DatabaseSchemaError } from './storage/postgres/migrations.js';
import { DatabaseUnavailableError } from './storage/postgres/pg-errors.js';
import { deferredCommitFileSystem } from './storage/unsafe-deferred-commit.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const unsafeMs = config.unsafeAckBeforeWriteMs;
  if (unsafeMs !== undefined) logger.warn({ delayMs: unsafeMs }, 'UNSAFE TEST MODE: writes are acknowledged before they are committed');
  let app;
  try {
    app = await buildApp({
      config,
      logger,
      ...(unsafeMs === undefined ? {} : { fs: deferredCommitFileSystem(unsafeMs, (err) => logger.error({ err }, 'deferred commit failed')) }),
    });
  } catch (err) {
    if (
      err instanceof DataDirLockedError ||
      err instanceof StoreFileError ||
      err instanceof CredentialsFileError ||
      err instanceof DatabaseSchemaError ||
      err instanceof DatabaseUnavailableError
    ) {
      logger.fatal(err.message);
      logger.flush();
      process.exitCode = 1;
      return;
    }
    throw err;
  }
  closeWithGrace({ delay: 10_000, logger }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an error');
    else app.log.info({ signal }, 'closing');
    await app.close();
  });
  await app.listen({ host: config.host, port: config.port });
  app.log.info({ ...(config.databaseUrl ? { store: 'postgres' } : { dataDir: config.dataDir }), docs: `${config.publicBaseUrl}/docs` }, 'agent-resource-registry ready');
}

await main();
