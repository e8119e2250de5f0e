// A real local HTTP server playing a hosted provider for the invocation tests: it records what it received
// (headers, body) and whether the caller hung up, and answers by path: /ok echoes, /hold waits until
// released or aborted, /fail answers 500 with a body and header that must never reach the agent, /big
// answers more than a small bound, /not-json answers text, /echo-headers answers the request's headers
// (the credential among them), /echo-base64 the credential header's value in base64 inside a longer
// blob, /deep a JSON array nested 100,000 levels deep.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { listen } from './sockets.js';

export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Resolves true when the caller closed the connection before the answer was sent. */
  aborted: Promise<boolean>;
}

export const UPSTREAM_LEAK = 'UPSTREAM-BODY-MUST-NOT-LEAK';

export interface HostedEndpoint {
  origin: string;
  received: Received[];
  /** Resolves with the next request's record. */
  next(): Promise<Received>;
  /** Answers every held request. */
  releaseAll(): void;
  close(): Promise<void>;
}

export async function startHostedEndpoint(): Promise<HostedEndpoint> {
  const received: Received[] = [];
  const waiters: ((r: Received) => void)[] = [];
  const held = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let settle!: (v: boolean) => void;
      const aborted = new Promise<boolean>((resolve) => (settle = resolve));
      res.on('close', () => settle(!res.writableFinished));
      const record: Received = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), aborted };
      received.push(record);
      waiters.shift()?.(record);
      const json = (status: number, value: unknown, extra: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...extra });
        res.end(JSON.stringify(value));
      };
      switch (req.url) {
        case '/ok':
          return json(200, { results: [{ title: 'A result', url: 'https://example.org/' }], echoed: JSON.parse(record.body) });
        case '/hold': {
          const release = () => {
            held.delete(release);
            if (!res.destroyed) json(200, { results: [] });
          };
          held.add(release);
          return;
        }
        case '/fail':
          return json(500, { error: UPSTREAM_LEAK }, { 'x-upstream-leak': UPSTREAM_LEAK });
        case '/big':
          return json(200, { blob: 'x'.repeat(5000) });
        case '/echo-headers':
          return json(200, { headers: req.headers });
        case '/echo-base64': {
          const value = String(req.headers['x-api-key'] ?? '');
          return json(200, { blob: Buffer.from(`x-api-key: ${value}\r\n`).toString('base64') });
        }
        case '/deep':
          res.writeHead(200, { 'content-type': 'application/json' });
          return res.end('['.repeat(100_000) + ']'.repeat(100_000));
        case '/not-json':
          res.writeHead(200, { 'content-type': 'text/plain' });
          return res.end(UPSTREAM_LEAK);
        default:
          return json(404, { error: UPSTREAM_LEAK });
      }
    });
  });
  const origin = await listen(server);
  return {
    origin,
    received,
    next: () => new Promise((resolve) => waiters.push(resolve)),
    releaseAll: () => [...held].forEach((r) => r()),
    close: () =>
      new Promise((resolve) => {
        for (const r of [...held]) r();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
