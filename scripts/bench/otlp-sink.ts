// Scenario 14's OTLP/HTTP receiver: a node:http server in the runner that takes what a traced server
// exports (POST /v1/traces, JSON) and answers 200 `{}` at once, as a collector that keeps up would. It
// only counts: requests, bytes and spans (each span carries one "spanId" key), so its own CPU stays small.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  origin: string;
  /** Spans, bytes and export requests received so far. */
  counts(): { spans: number; bytes: number; exports: number };
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let spans = 0;
  let bytes = 0;
  let exports = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      exports++;
      bytes += body.length;
      for (let at = body.indexOf('"spanId"'); at !== -1; at = body.indexOf('"spanId"', at + 8)) spans++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts: () => ({ spans, bytes, exports }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
