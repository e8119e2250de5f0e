// Test helper: builds the real app on a fresh temporary DATA_DIR with recognizable canary credentials,
// writes every log line and every response body (except the ones that issue a token) where the end-of-
// suite canary scan (test/canary/scan.test.ts) looks for leaked tokens.
import { appendFileSync, mkdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, type BuildOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

export const CANARY_ROOT = path.resolve(process.env.ARR_CANARY_DIR ?? path.join('.tap', 'canary'));
const LOG_DIR = path.join(CANARY_ROOT, 'logs');
const RESPONSES_FILE = path.join(CANARY_ROOT, 'responses', `${process.pid}.txt`);
const ISSUED_FILE = path.join(CANARY_ROOT, 'issued', `${process.pid}.txt`);
export const DATA_ROOT = path.join(CANARY_ROOT, 'data');
for (const dir of [LOG_DIR, path.dirname(RESPONSES_FILE), path.dirname(ISSUED_FILE), DATA_ROOT]) mkdirSync(dir, { recursive: true });

/** Canary credentials: recognizable so the scan can find any copy of them. */
export const CANARY = {
  owner: 'arr_owner_CANARY0wner0token0value0for0tests00',
  huabu: 'arr_huabu_CANARYhuabu0token0value0for0tests00',
  secret: 'arr_secret_CANARYsigning0secret0for0tests0000',
} as const;

/** Records a token the app issued, so the scan looks for it everywhere else. */
export function recordIssuedToken(token: string): void {
  appendFileSync(ISSUED_FILE, token + '\n');
}

/** Routes whose response is the one place a token may appear. */
const ISSUING_ROUTES = new Set([
  'POST /api/acp/machines',
  'POST /api/acp/machines/:machineId/rotate',
  'POST /api/acp/canvas-tokens',
  'POST /api/acp/grants',
]);

let counter = 0;

export function canaryLogFile(): string {
  return path.join(LOG_DIR, `${process.pid}-${++counter}.log`);
}

export async function tempDataDir(): Promise<string> {
  return mkdtemp(path.join(DATA_ROOT, 'd-'));
}

export function testEnv(dataDir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    OWNER_TOKEN: CANARY.owner,
    HUABU_PROVIDER_TOKEN: CANARY.huabu,
    CANVAS_TOKEN_SECRET: CANARY.secret,
    LOG_LEVEL: 'info',
    PUBLIC_BASE_URL: 'http://registry.test',
    // In-process tests keep the event loop saturated on purpose; test/http/limits.test.ts turns this on.
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...env,
  };
}

export interface TestApp {
  app: FastifyInstance;
  dataDir: string;
  /** Where this app's log lines go (written synchronously). */
  logFile: string;
  owner: Record<string, string>;
  huabu: Record<string, string>;
  bearer(token: string): Record<string, string>;
  /** Enrolls a machine and returns its token. */
  enroll(machineId: string): Promise<string>;
  /** Mints a canvas token for canvasId on machineId. */
  canvasToken(canvasId: string, agentletId: string, ttlSeconds?: number): Promise<string>;
  put(
    provider: string,
    token: string,
    id: string,
    fields?: Partial<Record<'name' | 'description' | 'instructions', string>>,
  ): Promise<LightMyRequestResponse>;
}

interface Closable {
  teardown(fn: () => unknown): void;
}

export async function build(
  t: Closable,
  options: { env?: Record<string, string>; dataDir?: string } & Omit<BuildOptions, 'config' | 'logger'> = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? (await tempDataDir());
  const config = loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false', ...options.env }));
  const logFile = canaryLogFile();
  const logger = createLogger('info', pino.destination({ dest: logFile, sync: true, mkdir: true }));
  const { env: _env, dataDir: _dir, ...rest } = options;
  const app = await buildApp({ ...rest, config, logger });
  app.addHook('onSend', async (request, _reply, payload) => {
    if (!ISSUING_ROUTES.has(`${request.method} ${request.routeOptions.url}`) && typeof payload === 'string') {
      appendFileSync(RESPONSES_FILE, payload + '\n');
    }
    return payload;
  });
  t.teardown(() => app.close());
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const helper: TestApp = {
    app,
    dataDir,
    logFile,
    owner: bearer(CANARY.owner),
    huabu: bearer(CANARY.huabu),
    bearer,
    async enroll(machineId) {
      const res = await app.inject({ method: 'POST', url: '/api/acp/machines', headers: helper.owner, payload: { machineId } });
      if (res.statusCode !== 201) throw new Error(`enroll ${machineId}: ${res.statusCode} ${res.body}`);
      const token = res.json().token as string;
      recordIssuedToken(token);
      return token;
    },
    async canvasToken(canvasId, agentletId, ttlSeconds) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/acp/canvas-tokens',
        headers: helper.owner,
        payload: { canvasId, agentletId, ...(ttlSeconds ? { ttlSeconds } : {}) },
      });
      if (res.statusCode !== 201) throw new Error(`canvas token: ${res.statusCode} ${res.body}`);
      const token = res.json().token as string;
      recordIssuedToken(token);
      return token;
    },
    put(provider, token, id, fields = {}) {
      return app.inject({
        method: 'PUT',
        url: `/api/acp/providers/${provider}/resources/${id}`,
        headers: bearer(token),
        payload: {
          schemaVersion: 1,
          name: `Name of ${id}`,
          description: `About ${id}.`,
          instructions: `Use ${id} via $HUABU_RFS_URL.`,
          ...fields,
        },
      });
    },
  };
  return helper;
}
