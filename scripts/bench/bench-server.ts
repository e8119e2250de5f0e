// The server under test: the real app from buildApp, plus one route that sends the catalogue's bytes from
// a constant (the framework limit the catalogue route is compared with). Forked by the bench runner; it
// reports its port, start-up time and RSS over IPC once listening.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startTracingIfConfigured } from '../../src/tracing/load.js';

export const CONSTANT_ROUTE = '/bench/constant';

const config = loadConfig(process.env);
// Started as `npm start` starts it (src/server.ts): OTEL_* settings turn traces on (scenario 14).
const tracing = await startTracingIfConfigured(config);
const app = await buildApp({ config, logger: createLogger(config.logLevel), ...(tracing ? { tracingPlugin: tracing.fastifyPlugin } : {}) });

// BENCH_SERVER_TIMING=1: the server's own time per request (Fastify's elapsedTime, from the request's first
// byte parsed to the reply sent), printed per route at stop, to tell server time from client time.
const timings = new Map<string, number[]>();
if (process.env.BENCH_SERVER_TIMING) {
  app.addHook('onResponse', async (request, reply) => {
    const key = `${request.method} ${request.routeOptions.url ?? '?'} ${reply.statusCode}`;
    let list = timings.get(key);
    if (!list) timings.set(key, (list = []));
    list.push(reply.elapsedTime);
  });
}
function printTimings(): void {
  for (const [key, list] of timings) {
    list.sort((a, b) => a - b);
    const at = (q: number) => list[Math.min(list.length - 1, Math.floor(q * list.length))]!.toFixed(2);
    console.error(`[bench-server] ${key}: n ${list.length} · p50 ${at(0.5)} · p99 ${at(0.99)} · max ${at(1)} ms`);
  }
}

let constant: Buffer = Buffer.alloc(0);
let constantEtag = '';
app.get(CONSTANT_ROUTE, { schema: { hide: true } }, async (_request, reply) =>
  reply.header('etag', constantEtag).header('cache-control', 'private, no-cache').type('application/json; charset=utf-8').send(constant),
);

await app.listen({ host: config.host, port: config.port });
const startupMs = performance.now();
const rss = process.memoryUsage().rss;
// The constant route's bytes are the catalogue's, read once here. Not for a start-up measurement
// (BENCH_STARTUP_ONLY, scenario 7): that read serializes the whole catalogue right after listening, so a
// /readyz poll arriving meanwhile waited for it and the RSS held its body: start-up plus one catalogue read,
// not what `npm start` does.
if (!process.env.BENCH_STARTUP_ONLY) {
  const catalogue = await app.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${config.ownerToken}` } });
  if (catalogue.statusCode !== 200) throw new Error(`catalogue read failed: ${catalogue.statusCode}`);
  constant = catalogue.rawPayload;
  constantEtag = String(catalogue.headers.etag);
}

const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
process.send?.({ type: 'ready', port, startupMs, rss, etag: constantEtag, bytes: constant.length });

// A full GC on request (scenario 11's memory per subscriber), without running the whole server with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

process.on('message', (message: { type?: string; gc?: boolean }) => {
  if (message?.type === 'probe') {
    const { user, system } = process.cpuUsage();
    if (message.gc !== false) {
      gc();
      gc();
    }
    const { rss, heapUsed, external } = process.memoryUsage();
    app.server.getConnections((_err, connections) =>
      process.send?.({ type: 'probe', rss, heapUsed, external, connections, cpuMs: (user + system) / 1000 }),
    );
  }
  if (message?.type === 'stop') {
    printTimings();
    void app.close().then(() => process.exit(0));
  }
});
process.on('disconnect', () => void app.close().then(() => process.exit(0)));
