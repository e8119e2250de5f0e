// The framework-free reference: a plain `node:http` server that answers with bytes recorded once from the
// server under test (status, headers and body of the same request), sent from a constant. Forked by the bench
// runner, in its own process like the server under test, so a ratio against it is the cost of the service
// over the cost of putting the same bytes on the wire.
import { createServer, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import type { PlainRecord } from './protocol.js';

/** Headers that belong to one connection or one moment, not to the answer. */
const PER_CONNECTION = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

interface Answer {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

const answers = new Map<string, Answer>();
/** An answer is recorded and looked up by path and the request's `Accept-Encoding`. */
const keyOf = (path: string, acceptEncoding: string | undefined) => `${acceptEncoding ?? ''} ${path}`;

async function record(source: string, records: PlainRecord[]): Promise<number[]> {
  const sizes: number[] = [];
  for (const { path, headers } of records) {
    const response = await request(new URL(path, source), { headers });
    const body = Buffer.from(await response.body.arrayBuffer());
    const kept: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(response.headers)) if (!PER_CONNECTION.has(name) && value !== undefined) kept[name] = value;
    answers.set(keyOf(path, headers['accept-encoding']), { status: response.statusCode, headers: kept, body });
    sizes.push(body.length);
  }
  return sizes;
}

const server = createServer((req, res) => {
  const answer = answers.get(keyOf(req.url ?? '', req.headers['accept-encoding']));
  if (!answer) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(answer.status, answer.headers).end(answer.body);
});

process.on('message', (message: { type?: string; source?: string; records?: PlainRecord[] }) => {
  if (message?.type === 'record') {
    record(message.source!, message.records!).then(
      (sizes) => process.send?.({ type: 'recorded', sizes }),
      (error: unknown) => process.send?.({ type: 'recorded', error: String(error) }),
    );
  }
  if (message?.type === 'stop') server.close(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send?.({ type: 'listening', port: (server.address() as AddressInfo).port }));
