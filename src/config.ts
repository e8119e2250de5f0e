// Configuration, read and validated once from the environment (docs/configuration.md) and passed down explicitly.
// Nothing else in the code reads process.env.
import path from 'node:path';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { RESOURCE_ID_PATTERN, SLUG_ID_PATTERN } from './schemas/common.js';
import { DEFAULT_REQUIRED_RESOURCE_IDS } from './schemas/record-rules.js';
import { CapabilitiesFileError, type HostedCapabilities, loadHostedCapabilities } from './invocation/capabilities-file.js';
import type { SecretAllowlistEntry } from './schemas/secret-allowlist.js';
import { MAX_RECONCILE_RESOURCES } from './schemas/resource.js';
import type { RecordQuota } from './registry/record-quota.js';
import { readSecretAllowlistSync, SecretAllowlistFileError } from './secrets/secret-allowlist.js';
import { SIGNING_KEYS_FILE } from './credentials/signing-keys.js';
import { DEFAULT_PAGE_CACHE_BYTES } from './registry/catalogue-cache.js';

/** Addresses that mean "every interface": no client can use them to reach this process. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);

export const MIN_TOKEN_LENGTH = 24;
export const DEFAULT_AUDIT_MAX_BYTES = 64 * 1024 * 1024;
export const DEFAULT_AUDIT_MAX_FILES = 5;
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 30;
/** Change events per machine per minute: one machine alone needs EVENTS_RETAIN_COUNT / this many minutes to fill the retention. */
export const DEFAULT_EVENTS_PER_MACHINE_PER_MINUTE = 2000;
/** Records one machine may hold (RECORDS_PER_MACHINE): a reconcile's largest set, so a valid sync always fits. */
export const DEFAULT_RECORDS_PER_MACHINE = MAX_RECONCILE_RESOURCES;
/** Bytes of record text one machine may hold (RECORD_BYTES_PER_MACHINE): a reconcile's body bound, so a valid sync always fits. */
export const DEFAULT_RECORD_BYTES_PER_MACHINE = 8 * 1024 * 1024;
/** Bytes of JSON one MCP POST's answer may reach before its later reads are refused (MCP_ANSWER_BYTES). */
export const DEFAULT_MCP_ANSWER_BYTES = 4 * 1024 * 1024;
/** Tokens of resource names and descriptions an agent may hold from its start before it is warned about (CONTEXT_BUDGET_TOKENS). */
export const DEFAULT_CONTEXT_BUDGET_TOKENS = 16_000;
/** The change log keeps the newest this many events (EVENTS_RETAIN_COUNT) ... */
export const DEFAULT_EVENTS_RETAIN_COUNT = 100_000;
/** ... and none older than this many days (EVENTS_RETAIN_DAYS). */
export const DEFAULT_EVENTS_RETAIN_DAYS = 7;
/**
 * PostgreSQL's audit bound, in rows: about what the JSON store's default (6 files of 64 MiB) holds, at the
 * 250 to 400 bytes an entry takes (audit entries with details are the larger ones).
 */
export const DEFAULT_AUDIT_MAX_ROWS = 1_000_000;

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /**
   * TEST ONLY (crash-test negative check): acknowledge writes this many ms before they are committed, so a
   * kill loses acknowledged writes. Unset in every real deployment; see ARR_UNSAFE_ACK_BEFORE_WRITE_MS.
   */
  unsafeAckBeforeWriteMs?: number;
  publicBaseUrl: string;
  /** PORT=0 without PUBLIC_BASE_URL: the public address is the one the server binds (set once it listens). */
  publicBaseUrlFollowsListen?: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  ownerToken: string | undefined;
  huabuProviderToken: string | undefined;
  canvasTokenSecret: string | undefined;
  requiredResourceIds: string[];
  seedHuabuResources: boolean;
  /** Write requests per credential per minute; 0 turns the limit off. */
  rateLimitWritesPerMinute: number;
  /** Change events one machine's activity may write per minute before its writes are refused (0: no bound). */
  eventsPerMachinePerMinute: number;
  /** Each machine's record quota (docs/decisions/record-quotas.md); 0 in either turns that bound off. */
  recordQuota: RecordQuota;
  /**
   * Failed authentications (401 without a recognized credential) per client address per minute; past it,
   * that address's requests needing a credential are refused 429 before authentication. 0 turns it off.
   */
  authFailuresPerMinute: number;
  /** Event-loop delay (ms) above which requests get 503 `overloaded`; 0 turns the check off. */
  maxEventLoopDelayMs: number;
  /** Most updates one durable write may cover; `undefined` = unlimited (tuning and benchmark knob). */
  storeMaxBatch: number | undefined;
  /** JSON store: compact the workloads journal once it holds this many bytes (default 1 MiB). */
  workloadsCompactAtBytes?: number;
  /**
   * Set: the PostgreSQL store on this database instead of JSON files (DATA_DIR is then not used, and the
   * three credentials must come from the environment, identical on every replica).
   */
  databaseUrl: string | undefined;
  /** Pooled database connections per process (PostgreSQL store only). */
  databasePoolSize: number;
  /** JSON store: rotate audit.jsonl before it would pass this many bytes; 0 turns rotation off. */
  auditMaxBytes: number;
  /** JSON store: rotated audit files kept (audit.1.jsonl ... audit.N.jsonl); older ones are deleted. */
  auditMaxFiles: number;
  /** PostgreSQL store: most rows the audit table keeps, the newest; 0 keeps every row. */
  auditMaxRows: number;
  /** The change log's retention: the newest `retainCount` events, none older than `retainDays` days. */
  eventRetention: { retainCount: number; retainDays: number };
  /**
   * The machine a profile created without `agentletId` runs on (the Huabu server's own machine, which the
   * Huabu UI leaves out); unset: `agentletId` is required.
   */
  defaultAgentletId?: string;
  /**
   * The operator's hosted capabilities (HOSTED_CAPABILITIES_FILE, read and validated here, once; their
   * credential values come from the environment variables the file names and are never serialized).
   */
  hostedCapabilities: HostedCapabilities;
  /**
   * The owner's secret allowlist (SECRET_ALLOWLIST_FILE, default DATA_DIR/secret-allowlist.json): its file,
   * and its entries as read and validated at start (a bad file stops the start).
   */
  secretAllowlist: { file: string; entries: SecretAllowlistEntry[] };
  /** The launch-signing keys' file (SIGNING_KEYS_FILE, default DATA_DIR/signing-keys.json). */
  signingKeysFile: string;
  /**
   * HUABU_COMPAT=1: the few answers where upstream Huabu's registry line and this service's contract differ
   * follow upstream (reads default to record v2; profile create answers 200, delete 200 `{deleted: true}`).
   */
  huabuCompat: boolean;
  /** How long a job sent over a machine channel waits for the machine's answer (then 504 `agentlet_timeout`). */
  agentletJobTimeoutMs: number;
  /**
   * Bytes of JSON an MCP POST's answer may reach: once a batch's answers reach it, its later `resources/read`
   * and `resources/list` answers are JSON-RPC errors (docs/mcp.md).
   */
  mcpAnswerBytes: number;
  /** CONTEXT_BUDGET_TOKENS: above it an agent's always-loaded tokens are a `context_budget_exceeded` warning; 0: never. */
  contextBudgetTokens: number;
  /** CATALOGUE_PAGE_CACHE_BYTES: bytes of catalogue pages kept per revision (docs/decisions/page-cache.md); 0: none. */
  pageCacheBytes: number;
  /** OpenTelemetry traces, from the standard `OTEL_*` variables; unset: nothing of OpenTelemetry is loaded. */
  tracing?: TracingConfig;
}

/** Where and how spans are exported (docs/tracing.md). */
export interface TracingConfig {
  /** `otlp`: OTLP over HTTP to `endpoint`; `console`: each span printed on stdout. */
  exporter: 'otlp' | 'console';
  /** The full URL spans are POSTed to (OTLP only), e.g. http://localhost:4318/v1/traces. */
  endpoint: string;
  /** OTLP's body encoding: binary protobuf (the specification's default) or JSON. */
  protocol: OtlpProtocol;
  serviceName: string;
}

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** The OTLP/HTTP receiver's default address (the OpenTelemetry specification's). */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
export const DEFAULT_SERVICE_NAME = 'agent-resource-registry';

export const Env = Type.Object({
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  // Test-only switches, refused unless ARR_ALLOW_UNSAFE_TEST_MODES=1 (see loadConfig).
  ARR_UNSAFE_ACK_BEFORE_WRITE_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })),
  ARR_ALLOW_UNSAFE_TEST_MODES: Type.Optional(Type.Literal('1')),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s/?#]+(/[^\\s?#]*)?$' })),
  LOG_LEVEL: Type.Optional(Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)))),
  OWNER_TOKEN: Type.Optional(Type.String({ minLength: MIN_TOKEN_LENGTH })),
  HUABU_PROVIDER_TOKEN: Type.Optional(Type.String({ minLength: MIN_TOKEN_LENGTH })),
  CANVAS_TOKEN_SECRET: Type.Optional(Type.String({ minLength: MIN_TOKEN_LENGTH })),
  REQUIRED_RESOURCE_IDS: Type.Optional(Type.String()),
  SEED_HUABU_RESOURCES: Type.Optional(Type.Union(['true', 'false', '1', '0'].map((v) => Type.Literal(v)))),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_SIZE: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$' })),
  RATE_LIMIT_WRITES_PER_MINUTE: Type.Optional(Type.String({ pattern: '^[0-9]{1,7}$' })),
  EVENTS_PER_MACHINE_PER_MINUTE: Type.Optional(Type.String({ pattern: '^[0-9]{1,7}$' })),
  RECORDS_PER_MACHINE: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$' })),
  RECORD_BYTES_PER_MACHINE: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
  AUTH_FAILURES_PER_MINUTE: Type.Optional(Type.String({ pattern: '^[0-9]{1,7}$' })),
  MAX_EVENT_LOOP_DELAY_MS: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  AUDIT_MAX_BYTES: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
  AUDIT_MAX_FILES: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  AUDIT_MAX_ROWS: Type.Optional(Type.String({ pattern: '^[0-9]{1,12}$' })),
  EVENTS_RETAIN_COUNT: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,8}$' })),
  EVENTS_RETAIN_DAYS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  STORE_MAX_BATCH: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  WORKLOADS_COMPACT_AT_BYTES: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{3,9}$' })),
  DEFAULT_AGENTLET_ID: Type.Optional(Type.String({ pattern: SLUG_ID_PATTERN })),
  HOSTED_CAPABILITIES_FILE: Type.Optional(Type.String({ minLength: 1 })),
  SECRET_ALLOWLIST_FILE: Type.Optional(Type.String({ minLength: 1 })),
  SIGNING_KEYS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  HUABU_COMPAT: Type.Optional(Type.Union(['1', '0', 'true', 'false'].map((v) => Type.Literal(v)))),
  AGENTLET_JOB_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  MCP_ANSWER_BYTES: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{5,9}$' })),
  CONTEXT_BUDGET_TOKENS: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,8})$' })),
  CATALOGUE_PAGE_CACHE_BYTES: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,9})$' })),
  // OpenTelemetry's standard variables (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
  OTEL_SDK_DISABLED: Type.Optional(Type.Union(['true', 'false'].map((v) => Type.Literal(v)))),
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Union(['otlp', 'console', 'none'].map((v) => Type.Literal(v)))),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s@/?#]+(/[^\\s?#]*)?$' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s@/?#]+(/[^\\s?#]*)?$' })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(Type.Union(OTLP_PROTOCOLS.map((v) => Type.Literal(v)))),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(Type.Union(OTLP_PROTOCOLS.map((v) => Type.Literal(v)))),
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});
const checkEnv = Compile(Env);

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The service's configuration from this process's environment (the one place that reads it). */
export function loadProcessConfig(): Config {
  return loadConfig(process.env);
}

/** Names the variable and the rule, never the value (some of these are secrets). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const relevant = Object.fromEntries(
    Object.keys(Env.properties).flatMap((k) => (env[k] === undefined || env[k] === '' ? [] : [[k, env[k]]])),
  );
  const errors = [...checkEnv.Errors(relevant)];
  if (errors.length > 0) {
    const problems = errors.map((e) => `${e.instancePath.slice(1) || 'environment'} ${e.message}`);
    throw new ConfigError(`Invalid configuration: ${[...new Set(problems)].join('; ')}`);
  }
  const e = relevant as Record<keyof typeof Env.properties, string | undefined>;
  if (e.DATABASE_URL) {
    const missing = (['OWNER_TOKEN', 'HUABU_PROVIDER_TOKEN', 'CANVAS_TOKEN_SECRET'] as const).filter((k) => e[k] === undefined);
    if (missing.length > 0) {
      throw new ConfigError(
        `DATABASE_URL is set, so ${missing.join(', ')} must be set too: every replica on the database needs the same credentials, so they are not generated into a per-process DATA_DIR.`,
      );
    }
  }
  if (e.ARR_UNSAFE_ACK_BEFORE_WRITE_MS !== undefined && e.ARR_ALLOW_UNSAFE_TEST_MODES !== '1') {
    throw new ConfigError(
      'ARR_UNSAFE_ACK_BEFORE_WRITE_MS is a test-only mode that loses acknowledged writes on a crash; it is refused unless ARR_ALLOW_UNSAFE_TEST_MODES=1 is also set.',
    );
  }
  // The authority is everything between `//` and the first `/` (the pattern keeps `?`, `#` and space out of
  // it), so an `@` there is userinfo. Refused, never echoed: the URL is logged at start and handed to agents.
  if (e.PUBLIC_BASE_URL !== undefined && /^https?:\/\/[^/]*@/.test(e.PUBLIC_BASE_URL)) {
    throw new ConfigError(
      'PUBLIC_BASE_URL must not carry a user name or password (user:password@): it is logged at start and handed to every agent in $HUABU_RFS_URL. Give the bare URL, e.g. https://registry.example.internal:8787.',
    );
  }
  if (e.DEFAULT_AGENTLET_ID === 'huabu')
    throw new ConfigError('DEFAULT_AGENTLET_ID must be an Agentlet machine ID; `huabu` is the host provider, never a machine.');
  const host = e.HOST ?? '127.0.0.1';
  const port = e.PORT === undefined ? 8787 : Number(e.PORT);
  if (port > 65535) throw new ConfigError('PORT must be between 0 and 65535');
  const requiredResourceIds =
    // Set but empty means "no required defaults"; unset means the host default.
    env.REQUIRED_RESOURCE_IDS === undefined
      ? [...DEFAULT_REQUIRED_RESOURCE_IDS]
      : [
          ...new Set(
            env.REQUIRED_RESOURCE_IDS.split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          ),
        ];
  const idPattern = new RegExp(RESOURCE_ID_PATTERN);
  const badIds = requiredResourceIds.filter((id) => !idPattern.test(id) || id.length > 128);
  if (badIds.length > 0) throw new ConfigError(`REQUIRED_RESOURCE_IDS holds invalid resource IDs: ${badIds.join(', ')}`);
  let hostedCapabilities: HostedCapabilities;
  try {
    hostedCapabilities = loadHostedCapabilities(
      e.HOSTED_CAPABILITIES_FILE === undefined ? undefined : path.resolve(e.HOSTED_CAPABILITIES_FILE),
      env,
    );
  } catch (err) {
    if (err instanceof CapabilitiesFileError) throw new ConfigError(err.message);
    throw err;
  }
  const dataDir = path.resolve(e.DATA_DIR ?? './data');
  const allowlistFile = path.resolve(e.SECRET_ALLOWLIST_FILE ?? path.join(dataDir, 'secret-allowlist.json'));
  let allowlistEntries: SecretAllowlistEntry[];
  try {
    allowlistEntries = readSecretAllowlistSync(allowlistFile);
  } catch (err) {
    if (err instanceof SecretAllowlistFileError) throw new ConfigError(err.message);
    throw err;
  }
  if (WILDCARD_HOSTS.has(host) && e.PUBLIC_BASE_URL === undefined) {
    // Refused rather than warned about: the registry hands this address to agents ($HUABU_RFS_URL, launch
    // snapshots), and http://0.0.0.0:PORT reaches nothing from another machine. See docs/decisions/start-and-readiness.md.
    throw new ConfigError(
      `HOST=${host} listens on every interface, so PUBLIC_BASE_URL must say how clients reach this registry (e.g. PUBLIC_BASE_URL=http://registry.example.internal:${port}); it is handed to agents in every $HUABU_RFS_URL.`,
    );
  }
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port,
    dataDir,
    ...(e.ARR_UNSAFE_ACK_BEFORE_WRITE_MS === undefined ? {} : { unsafeAckBeforeWriteMs: Number(e.ARR_UNSAFE_ACK_BEFORE_WRITE_MS) }),
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://${urlHost}:${port}`).replace(/\/+$/, ''),
    ...(port === 0 && e.PUBLIC_BASE_URL === undefined ? { publicBaseUrlFollowsListen: true } : {}),
    logLevel: (e.LOG_LEVEL ?? 'info') as Config['logLevel'],
    ownerToken: e.OWNER_TOKEN,
    huabuProviderToken: e.HUABU_PROVIDER_TOKEN,
    canvasTokenSecret: e.CANVAS_TOKEN_SECRET,
    requiredResourceIds,
    seedHuabuResources: e.SEED_HUABU_RESOURCES === undefined ? true : e.SEED_HUABU_RESOURCES === 'true' || e.SEED_HUABU_RESOURCES === '1',
    rateLimitWritesPerMinute: e.RATE_LIMIT_WRITES_PER_MINUTE === undefined ? 1200 : Number(e.RATE_LIMIT_WRITES_PER_MINUTE),
    eventsPerMachinePerMinute:
      e.EVENTS_PER_MACHINE_PER_MINUTE === undefined ? DEFAULT_EVENTS_PER_MACHINE_PER_MINUTE : Number(e.EVENTS_PER_MACHINE_PER_MINUTE),
    recordQuota: {
      maxRecords: e.RECORDS_PER_MACHINE === undefined ? DEFAULT_RECORDS_PER_MACHINE : Number(e.RECORDS_PER_MACHINE),
      maxBytes: e.RECORD_BYTES_PER_MACHINE === undefined ? DEFAULT_RECORD_BYTES_PER_MACHINE : Number(e.RECORD_BYTES_PER_MACHINE),
    },
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE === undefined ? DEFAULT_AUTH_FAILURES_PER_MINUTE : Number(e.AUTH_FAILURES_PER_MINUTE),
    maxEventLoopDelayMs: e.MAX_EVENT_LOOP_DELAY_MS === undefined ? 1000 : Number(e.MAX_EVENT_LOOP_DELAY_MS),
    storeMaxBatch: e.STORE_MAX_BATCH === undefined ? undefined : Number(e.STORE_MAX_BATCH),
    ...(e.WORKLOADS_COMPACT_AT_BYTES === undefined ? {} : { workloadsCompactAtBytes: Number(e.WORKLOADS_COMPACT_AT_BYTES) }),
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE === undefined ? 10 : Number(e.DATABASE_POOL_SIZE),
    auditMaxBytes: e.AUDIT_MAX_BYTES === undefined ? DEFAULT_AUDIT_MAX_BYTES : Number(e.AUDIT_MAX_BYTES),
    auditMaxFiles: e.AUDIT_MAX_FILES === undefined ? DEFAULT_AUDIT_MAX_FILES : Number(e.AUDIT_MAX_FILES),
    auditMaxRows: e.AUDIT_MAX_ROWS === undefined ? DEFAULT_AUDIT_MAX_ROWS : Number(e.AUDIT_MAX_ROWS),
    eventRetention: {
      retainCount: e.EVENTS_RETAIN_COUNT === undefined ? DEFAULT_EVENTS_RETAIN_COUNT : Number(e.EVENTS_RETAIN_COUNT),
      retainDays: e.EVENTS_RETAIN_DAYS === undefined ? DEFAULT_EVENTS_RETAIN_DAYS : Number(e.EVENTS_RETAIN_DAYS),
    },
    ...(e.DEFAULT_AGENTLET_ID === undefined ? {} : { defaultAgentletId: e.DEFAULT_AGENTLET_ID }),
    hostedCapabilities,
    secretAllowlist: { file: allowlistFile, entries: allowlistEntries },
    signingKeysFile: path.resolve(e.SIGNING_KEYS_FILE ?? path.join(dataDir, SIGNING_KEYS_FILE)),
    huabuCompat: e.HUABU_COMPAT === '1' || e.HUABU_COMPAT === 'true',
    agentletJobTimeoutMs: e.AGENTLET_JOB_TIMEOUT_MS === undefined ? 30_000 : Number(e.AGENTLET_JOB_TIMEOUT_MS),
    mcpAnswerBytes: e.MCP_ANSWER_BYTES === undefined ? DEFAULT_MCP_ANSWER_BYTES : Number(e.MCP_ANSWER_BYTES),
    contextBudgetTokens: e.CONTEXT_BUDGET_TOKENS === undefined ? DEFAULT_CONTEXT_BUDGET_TOKENS : Number(e.CONTEXT_BUDGET_TOKENS),
    pageCacheBytes: e.CATALOGUE_PAGE_CACHE_BYTES === undefined ? DEFAULT_PAGE_CACHE_BYTES : Number(e.CATALOGUE_PAGE_CACHE_BYTES),
    ...tracingConfig(e),
  };
}

/**
 * Traces are on only when asked for: an exporter named (`OTEL_TRACES_EXPORTER=otlp` or `console`) or an OTLP
 * endpoint given, and the SDK not disabled (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`). The
 * OpenTelemetry default of exporting to localhost:4318 when nothing is set does not apply here.
 */
function tracingConfig(e: Partial<Record<keyof typeof Env.properties, string>>): { tracing?: TracingConfig } {
  const endpointSet = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined || e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
  if (e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return {};
  if (e.OTEL_TRACES_EXPORTER === undefined && !endpointSet) return {};
  const endpoint =
    e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${(e.OTEL_EXPORTER_OTLP_ENDPOINT ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  return {
    tracing: {
      exporter: e.OTEL_TRACES_EXPORTER === 'console' ? 'console' : 'otlp',
      endpoint,
      protocol: (e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf') as OtlpProtocol,
      serviceName: e.OTEL_SERVICE_NAME ?? DEFAULT_SERVICE_NAME,
    },
  };
}
