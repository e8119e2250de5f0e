// Scenario 14's OTLP/HTTP receiver: a node:http server in the runner that takes what a traced server
// exports (POST /v1/traces, protobuf or JSON) and answers 200 at once, as a collector that keeps up would.
// It only counts: requests, bytes and spans (a JSON span carries one "spanId" key; in protobuf, the spans
// are found by walking the message's length-delimited fields, never decoding them), so its own CPU stays small.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  origin: string;
  /** Spans, bytes and export requests received so far. */
  counts(): { spans: number; bytes: number; exports: number };
  close(): Promise<void>;
}

/** The length-delimited fields numbered `field` in a protobuf message (other wire types skipped). */
function* lengthDelimited(buf: Buffer, field: number): Generator<Buffer> {
  let at = 0;
  const varint = (): number => {
    let v = 0;
    for (let mul = 1; ; mul *= 128) {
      const b = buf[at++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
    }
  };
  while (at < buf.length) {
    const key = varint();
    const wire = key % 8;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const len = varint();
      if (Math.floor(key / 8) === field) yield buf.subarray(at, at + len);
      at += len;
    } else return;
  }
}

/** ExportTraceServiceRequest: resource_spans (1) → scope_spans (2) → spans (2). */
function protobufSpanCount(body: Buffer): number {
  let n = 0;
  for (const rs of lengthDelimited(body, 1)) for (const ss of lengthDelimited(rs, 2)) for (const _ of lengthDelimited(ss, 2)) n++;
  return n;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let spans = 0;
  let bytes = 0;
  let exports = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      exports++;
      bytes += raw.length;
      if (req.headers['content-type'] === 'application/x-protobuf') {
        spans += protobufSpanCount(raw);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        return;
      }
      const body = raw.toString('utf8');
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
