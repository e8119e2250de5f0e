// The server under test: the real app from buildApp, plus one route that sends the catalogue's bytes from
// a constant (the framework limit the catalogue route is compared with). Forked by the bench runner; it
// reports its port, start-up time and RSS over IPC once listening.
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

export const CONSTANT_ROUTE = '/bench/constant';

const config = loadConfig(process.env);
const app = await buildApp({ config, logger: createLogger(config.logLevel) });

let constant = '';
let constantEtag = '';
app.get(CONSTANT_ROUTE, { schema: { hide: true } }, async (_request, reply) =>
  reply.header('etag', constantEtag).header('cache-control', 'private, no-cache').type('application/json; charset=utf-8').send(constant),
);

await app.listen({ host: config.host, port: config.port });
const startupMs = performance.now();
const catalogue = await app.inject({ url: '/api/acp/resources', headers: { authorization: `Bearer ${config.ownerToken}` } });
if (catalogue.statusCode !== 200) throw new Error(`catalogue read failed: ${catalogue.statusCode}`);
constant = catalogue.body;
constantEtag = String(catalogue.headers.etag);

const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
process.send?.({ type: 'ready', port, startupMs, rss: process.memoryUsage().rss, etag: constantEtag, bytes: Buffer.byteLength(constant) });

process.on('message', (message: { type?: string }) => {
  if (message?.type === 'stop') void app.close().then(() => process.exit(0));
});
process.on('disconnect', () => void app.close().then(() => process.exit(0)));
