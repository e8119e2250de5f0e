// Builds the whole application (store, credentials, core services, HTTP routes, OpenAPI) and never
// listens. Tests and scripts build it with their own configuration; src/server.ts runs it.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginCallback } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { AuditTrail } from './audit/audit-trail.js';
import { CapabilityProjection } from './capabilities/capability-projection.js';
import { assertNoErrors } from './capabilities/diagnostics.js';
import { resolveCredentials } from './credentials/credentials-file.js';
import { resolveSigningKeys } from './credentials/signing-keys.js';
import { seedHuabuResources } from './host/huabu.js';
import { authPlugin } from './http/auth.js';
import { registerCompression } from './http/compression.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling, MAX_PARAM_LENGTH } from './http/error-handler.js';
import { trackRequests } from './http/in-flight.js';
import { ExpensiveWork } from './http/expensive-work.js';
import { LargeBodyGate, type LargeBodyOptions } from './http/large-bodies.js';
import { registerLimits } from './http/limits.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRefusals, type Refusals } from './http/refusals.js';
import { lazySerializerFactory, type SerializerFactory } from './http/serializer.js';
import { validatorCompiler } from './http/validator.js';
import { createLogger } from './logger.js';
import { Metrics } from './metrics.js';
import { MachineRegistry } from './machines/machine-registry.js';
import { MachineChannels } from './channel/machine-channels.js';
import { StatusEvents } from './channel/status-events.js';
import { EventBudget } from './registry/event-budget.js';
import { Revocations } from './credentials/revocations.js';
import type { EventDraft } from './registry/events.js';
import { machineChannelRoutes, machineJobRoutes } from './routes/channel.js';
import { skillRoutes } from './routes/skills.js';
import { ProfileRegistry } from './profiles/profile-registry.js';
import { aliasCollisions } from './profiles/profile-rules.js';
import { CatalogueCache, viewLabel } from './registry/catalogue-cache.js';
import { CataloguePages } from './registry/catalogue-pages.js';
import { ResourceRegistry } from './registry/resource-registry.js';
import { capabilityRoutes } from './routes/capabilities.js';
import { canvasTokenRoutes, rfsUrl } from './routes/canvas-tokens.js';
import { catalogueRoutes } from './routes/catalogue.js';
import { revisionRoutes } from './routes/revisions.js';
import { ThreadReads } from './registry/thread-reads.js';
import type { RouteDeps } from './routes/deps.js';
import { machineRoutes } from './routes/machines.js';
import { profileRoutes } from './routes/profiles.js';
import { operationsRoutes } from './routes/operations.js';
import { providerRoutes } from './routes/providers.js';
import { rfsRoutes } from './routes/rfs.js';
import { mcpRoutes } from './routes/mcp.js';
import { grantRoutes } from './routes/grants.js';
import { secretAllowlistRoutes } from './routes/secret-allowlist.js';
import { signingKeyRoutes } from './routes/signing-keys.js';
import { invokeRoutes } from './routes/invoke.js';
import { InvocationService } from './invocation/invocation-service.js';
import { OutboundClient } from './invocation/outbound.js';
import { workloadRoutes } from './routes/workloads.js';
import { driftRoutes } from './routes/drift.js';
import { eventRoutes, rfsEventRoutes } from './routes/events.js';
import { WorkloadService } from './workloads/workload-service.js';
import { SecretAllowlist } from './secrets/secret-allowlist.js';
import { PooledSecretScanner } from './secrets/scan-pool.js';
import type { FileSystemSeam } from './storage/durable-file.js';
import { JsonFileStore } from './storage/json-file-store.js';
import type { RegistryStore } from './registry/store.js';

export const BODY_LIMIT = 1024 * 1024;

export interface BuildOptions {
  config: Config;
  /** Defaults to a pino logger at `config.logLevel` on stdout. */
  logger?: Logger;
  /** File-system seam for the store (fault injection in tests). */
  fs?: FileSystemSeam;
  /** Clock (tests move it to expire canvas tokens). */
  now?: () => Date;
  /**
   * Generated credentials are written only when `app.persistGeneratedCredentials()` is called (the server
   * does so once it listens), so a start that fails before listening leaves no credentials.json behind.
   */
  deferCredentialWrite?: boolean;
  /** Interval of the machine channels' heartbeat (15 s; tests shorten it). */
  channelHeartbeatMs?: number;
  /** The window of a machine's channel status events (10 s; tests shorten it). */
  statusEventWindowMs?: number;
  /** How often an open stream's credential is checked again in full (15 s; tests shorten it). */
  credentialRecheckMs?: number;
  /** Builds the response serializers; defaults to fast-json-stringify compiled on first use (tests wrap it to watch). */
  serializerFactory?: SerializerFactory;
  /** The event streams' heartbeat and per-subscriber bound (tests shorten them). */
  events?: { heartbeatMs?: number; maxUnsentBytes?: number; stallMs?: number };
  /** With traces on (tracing/start.ts): the plugin that opens a span per request, registered before everything else. */
  tracingPlugin?: FastifyPluginCallback;
  /** The bounds of large publishes admitted one at a time (tests make them small). */
  largeBodies?: Partial<LargeBodyOptions>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Writes generated credentials to DATA_DIR/credentials.json, if any are pending (see BuildOptions). */
    persistGeneratedCredentials(): Promise<void>;
  }
}

/** The store the configuration selects: PostgreSQL when DATABASE_URL is set, else JSON files in DATA_DIR. */
async function openStore(config: Config, logger: Logger, metrics: Metrics, fs: FileSystemSeam | undefined): Promise<RegistryStore> {
  if (config.databaseUrl) {
    // Loaded only when configured: the JSON store's start-up does not pay for pg.
    const { PostgresStore } = await import('./storage/postgres/postgres-store.js');
    return PostgresStore.open({
      databaseUrl: config.databaseUrl,
      poolSize: config.databasePoolSize,
      auditMaxRows: config.auditMaxRows,
      eventRetention: config.eventRetention,
      observeBatch: metrics.observeBatch,
      ...(config.storeMaxBatch !== undefined ? { maxBatch: config.storeMaxBatch } : {}),
      log: (level, message, err) => logger[level](err === undefined ? {} : { err }, message),
      onMigrated: (report) => logger.warn({ from: report.from, to: report.to, applied: report.applied }, 'migrated the database schema'),
    });
  }
  return JsonFileStore.open({
    dataDir: config.dataDir,
    observeBatch: metrics.observeBatch,
    ...(config.storeMaxBatch !== undefined ? { maxBatch: config.storeMaxBatch } : {}),
    ...(config.workloadsCompactAtBytes !== undefined ? { workloadsCompactAtBytes: config.workloadsCompactAtBytes } : {}),
    onWorkloadFileUnreadable: (err, canvasId) =>
      logger.error(
        { file: err.file, canvasId, reason: err.message },
        'a workload file does not load: requests for this canvas answer 503 storage_unavailable until it is fixed (nothing else is affected; the file is left as it is)',
      ),
    ...(fs ? { fs } : {}),
    auditRotation: { maxBytes: config.auditMaxBytes, maxFiles: config.auditMaxFiles },
    eventRetention: config.eventRetention,
    onBackup: ({ pausedMs, ok, reason }) =>
      ok
        ? logger.info({ pausedMs }, 'online backup: writes were paused while the files were copied')
        : logger.warn({ pausedMs, reason }, 'online backup abandoned: writes resumed before the copy was finished'),
    onRegistryMigrated: (report) =>
      logger.warn(
        {
          file: report.file,
          from: report.from,
          backup: report.backupFile,
          steps: report.steps,
          upgradedProfiles: report.upgradedProfileIds.length,
        },
        'migrated the registry file to the current version; the original is kept in the backup file',
      ),
  });
}

export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? (() => new Date());
  const clock = { now };

  const metrics = new Metrics();
  const store = await openStore(config, logger, metrics, options.fs);
  let app: FastifyInstance | undefined;
  try {
    const resolved = await resolveCredentials(
      config.dataDir,
      { ownerToken: config.ownerToken, huabuProviderToken: config.huabuProviderToken, canvasTokenSecret: config.canvasTokenSecret },
      { deferWrite: options.deferCredentialWrite === true },
    );
    // Which source each credential comes from (environment, file, generated), never a value.
    const credentialSources = {
      owner: resolved.sources.ownerToken,
      huabu: resolved.sources.huabuProviderToken,
      canvasSecret: resolved.sources.canvasTokenSecret,
    };
    const announceCredentials = () => {
      if (resolved.generated)
        logger.warn({ file: resolved.file, credentialSources }, 'generated missing credentials; read them from this file (mode 0600)');
      else
        logger.info(
          { ...(resolved.file ? { file: resolved.file } : {}), credentialSources },
          'credentials: environment overrides the file',
        );
    };
    if (!options.deferCredentialWrite) announceCredentials();
    const { credentials } = resolved;
    const signingKeys = await resolveSigningKeys(config.signingKeysFile, now, {
      deferWrite: options.deferCredentialWrite === true,
      ...(config.databaseUrl !== undefined && resolved.file === undefined ? { derivedFrom: credentials.canvasTokenSecret } : {}),
    });
    for (const ids of aliasCollisions((await store.listProfiles()).map((e) => e.profile))) {
      logger.warn(
        { profileIds: ids },
        `profiles ${ids.join(', ')} share an alias under the current look-alike rule; both are kept, new look-alikes are refused (rename one)`,
      );
    }

    // The hosted capabilities' credential values are known secrets too: no record may carry one.
    // The owner's allowlist is read by every scan that finds something; its own texts are scanned by the same scanner.
    const audit = new AuditTrail(store, clock, (err) => logger.error({ err }, 'audit log append failed'));
    const secretAllowlist: SecretAllowlist = new SecretAllowlist(config.secretAllowlist.file, config.secretAllowlist.entries, {
      audit,
      assertClean: (fields): Promise<void> => scanner.assertClean(fields),
      onError: (err) => logger.error({ err }, 'the secret allowlist file cannot be read; no entry applies until it is fixed'),
      clock,
    });
    // Scanning runs in a pool of worker threads (src/secrets/scan-pool.ts): reads are answered while machines publish.
    const scanner: PooledSecretScanner = new PooledSecretScanner(
      [...Object.values(credentials), ...config.hostedCapabilities.credentialValues()],
      { allowlist: () => secretAllowlist.entries() },
    );
    const registry = new ResourceRegistry(
      store,
      scanner,
      audit,
      config.requiredResourceIds,
      config.hostedCapabilities.ids,
      config.recordQuota,
    );
    // A machine's channel and its jobs are not stored documents: their events are written on their own, and
    // a failure to write one is logged, never a failure of the channel or the job. The store closes after them.
    const eventWrites = new Set<Promise<void>>();
    const recordOnItsOwn = (draft: EventDraft) => {
      const write: Promise<void> = store
        .recordEvents([draft])
        .catch((err: unknown) =>
          logger.error({ err, event: draft.type, subject: draft.subject }, `the ${draft.type} event could not be written`),
        )
        .finally(() => eventWrites.delete(write));
      eventWrites.add(write);
    };
    // At most one status event per machine per window (docs/events.md): a channel dropped and opened in a
    // loop cannot flush the change log's retention.
    const statusEvents = new StatusEvents(
      (machineId, status) => recordOnItsOwn({ type: `machine.${status}`, subject: { kind: 'machine', id: machineId } }),
      options.statusEventWindowMs,
    );
    const channels = new MachineChannels({
      now,
      jobTimeoutMs: config.agentletJobTimeoutMs,
      ...(options.channelHeartbeatMs === undefined ? {} : { heartbeatMs: options.channelHeartbeatMs }),
      onMachineStatus: (machineId, status) => {
        logger.info({ machineId, status }, `machine ${machineId} ${status}`);
        statusEvents.changed(machineId, status);
      },
      onJobSettled: (machineId, job, outcome) =>
        recordOnItsOwn({ type: `job.${outcome}`, subject: { kind: 'job', id: job.jobId, provider: machineId } }),
    });
    const revocations = new Revocations();
    const machines = new MachineRegistry(store, clock, audit, scanner, channels, revocations, (machineId, problems) => {
      if (problems.length === 0) logger.info({ machineId }, `machine ${machineId} reports no unpublished receipts any more`);
      else
        logger.warn(
          { machineId, receipts: problems.map((p) => p.receipt) },
          `machine ${machineId} reports ${problems.length} receipt(s) it cannot publish`,
        );
      recordOnItsOwn({ type: 'machine.problems', subject: { kind: 'machine', id: machineId } });
    });
    const profiles = new ProfileRegistry(store, scanner, audit, {
      requiredResourceIds: config.requiredResourceIds,
      channelStatus: (machineId) => channels.status(machineId),
      ...(config.defaultAgentletId !== undefined ? { defaultAgentletId: config.defaultAgentletId } : {}),
    });
    const catalogue = new CatalogueCache(
      (view) => metrics.catalogueRebuilds.inc({ view: viewLabel(view) }),
      (view, encoding) => metrics.catalogueCompressions.inc({ view: viewLabel(view), encoding }),
      { maxPageBytes: config.pageCacheBytes },
    );
    const capabilities = new CapabilityProjection(
      store,
      config.requiredResourceIds,
      config.hostedCapabilities.ids,
      config.contextBudgetTokens,
    );
    const deps: RouteDeps = {
      config,
      credentials,
      registry,
      machines,
      profiles,
      catalogue,
      pages: new CataloguePages(store, credentials.canvasTokenSecret),
      capabilities,
      scanner,
      secretAllowlist,
      audit,
      expensive: new ExpensiveWork(),
      largeBodies: new LargeBodyGate(options.largeBodies),
      now,
      threads: new ThreadReads(store).follow(store.events),
    };
    const workloads = new WorkloadService({
      store,
      profiles,
      scanner,
      requiredResourceIds: config.requiredResourceIds,
      rfsUrl: (canvasId) => rfsUrl(config.publicBaseUrl, canvasId),
      clock,
      audit,
      signer: signingKeys.active,
      // Fail closed: any error diagnostic touching the profile or its effective set stops the launch.
      preflight: async (profile, effective) =>
        assertNoErrors(await capabilities.diagnosticsFor(profile, effective), 'The launch would confuse the agent', {
          profileId: profile.id,
        }),
    });

    // Off with the other per-credential write limits (RATE_LIMIT_WRITES_PER_MINUTE=0: load tests, benches).
    const eventBudget = new EventBudget(store.events, config.rateLimitWritesPerMinute > 0 ? config.eventsPerMachinePerMinute : 0);
    const outbound = new OutboundClient();
    const invocations = new InvocationService({
      store,
      capabilities: config.hostedCapabilities,
      canvasTokenSecret: credentials.canvasTokenSecret,
      audit,
      outbound,
      now,
      scanner,
      observe: (resource, outcome, seconds) => metrics.invocations.observe({ resource, outcome }, seconds),
      onCallFailed: (facts) => logger.warn(facts, 'hosted capability call failed'),
      isCanvasRevoked: (canvasId, mintedAtMs) => machines.isCanvasTokenRevoked(canvasId, mintedAtMs),
    });

    // The instance's type follows its logger's: typed as Fastify's base logger, it is a plain FastifyInstance.
    const loggerInstance: FastifyBaseLogger = logger;
    app = Fastify({
      loggerInstance,
      bodyLimit: BODY_LIMIT,
      requestTimeout: 30_000,
      return503OnClosing: true,
      routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
      frameworkErrors,
      clientErrorHandler,
      schemaController: { compilersFactory: { buildSerializer: options.serializerFactory ?? lazySerializerFactory() } },
    }).withTypeProvider<TypeBoxTypeProvider>();
    if (options.tracingPlugin) await app.register(options.tracingPlugin);
    app.setValidatorCompiler(validatorCompiler);
    // Not ready while generated credentials are not yet on disk: whoever waits for /readyz can read them.
    let credentialsPending = options.deferCredentialWrite === true && (resolved.generated || signingKeys.generated);
    app.decorate('persistGeneratedCredentials', async () => {
      await resolved.persist();
      await signingKeys.persist();
      credentialsPending = false;
      if (options.deferCredentialWrite) announceCredentials();
    });
    installErrorHandling(app);
    const inFlight = trackRequests(app);

    // Close order: preClose (readiness goes 503), then Fastify closes the HTTP side (no new requests; its
    // onClose runs before ours, which were added earlier), then the requests still in flight finish (their
    // clients may have hung up, the work goes on: store writes and audit lines land), then the store.
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      // Open channels would hold the HTTP server open; their machines reconnect to whichever replica answers.
      channels.closeAll();
      statusEvents.flush();
      done();
    });
    // eslint-disable-next-line prefer-const -- assigned below, after the hooks that must come first; this onClose hook reads it
    let refusals: Refusals | undefined;
    app.addHook('onClose', async () => {
      await inFlight.drain();
      await refusals?.close();
      await capabilities.close();
      await outbound.close();
      eventBudget.close();
      deps.threads.close();
      await Promise.all(eventWrites);
      await scanner.close();
      await store.close();
    });
    app.addHook('onResponse', (request, reply, done) => {
      metrics.requestDuration.observe(
        { method: request.method, route: request.routeOptions.url ?? '__unmatched__', status_code: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
      done();
    });

    // Before every route: the compression plugin attaches itself to the routes added after it.
    await registerCompression(app);
    await registerLimits(app, config, eventBudget);
    // Refused writes leave an audit entry (anonymous ones summarized per client address; never the concrete
    // path, which could carry anything); refusals by the core are audited where they happen, with the ID.
    refusals = registerRefusals(app, audit, config.authFailuresPerMinute, now);
    await registerOpenApi(app);
    await app.register(authPlugin, {
      credentials,
      machines,
      now,
      onAuthFailure: refusals.onAuthFailure,
      revocations,
      ...(options.credentialRecheckMs === undefined ? {} : { credentialRecheckMs: options.credentialRecheckMs }),
    });
    const publicKeys = signingKeys.keys.map((k) => k.publicJwk);
    await app.register(signingKeyRoutes, { publicKeys: () => publicKeys });
    await app.register(operationsRoutes, { isReady: async () => !closing && !credentialsPending && (await store.isAvailable()), metrics });
    await app.register(
      async (acp) => {
        await acp.register(catalogueRoutes, deps);
        await acp.register(revisionRoutes, deps);
        await acp.register(skillRoutes, { ...deps, channels });
        await acp.register(machineRoutes, deps);
        await acp.register(machineJobRoutes, { channels, machines, scanner, prefix: '/machines' });
        await acp.register(machineChannelRoutes, { channels, machines, scanner, prefix: '/providers' });
        await acp.register(profileRoutes, deps);
        await acp.register(canvasTokenRoutes, deps);
        await acp.register(workloadRoutes, { ...deps, workloads, metrics });
        await acp.register(driftRoutes, { workloads, source: store });
        await acp.register(capabilityRoutes, deps);
        await acp.register(grantRoutes, { invocations });
        await acp.register(secretAllowlistRoutes, { secretAllowlist });
        await acp.register(providerRoutes, { ...deps, prefix: '/providers/:provider' });
        await acp.register(eventRoutes, { events: store.events, ...options.events });
      },
      { prefix: '/api/acp' },
    );
    await app.register(rfsRoutes, { ...deps, prefix: '/api/rfs/:canvasId' });
    await app.register(invokeRoutes, { invocations, prefix: '/api/rfs/:canvasId' });
    await app.register(rfsEventRoutes, { events: store.events, ...options.events, prefix: '/api/rfs/:canvasId' });
    await app.register(mcpRoutes, { ...deps, events: store.events, invocations, prefix: '/api/rfs/:canvasId' });

    if (config.seedHuabuResources) {
      await seedHuabuResources(registry, config.hostedCapabilities.ids).catch((err: unknown) => {
        logger.error({ err }, 'could not register the host resources as provider huabu');
      });
    }
    return app;
  } catch (err) {
    if (app) await app.close();
    else await store.close();
    throw err;
  }
}
