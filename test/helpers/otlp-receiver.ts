// A local OTLP/HTTP receiver for the trace tests: a node:http server that accepts POST /v1/traces with a
// binary protobuf body (`application/x-protobuf`, OTLP's default encoding) or a JSON one (`application/json`),
// keeps every body as received (for scanning) and every span decoded, and answers 200 with an empty
// response (an export that fully succeeded). Anything else it receives is kept too, so a test can prove that
// nothing reached it. The protobuf reader below knows the few fields of OTLP's trace messages a test reads
// (opentelemetry-proto's trace/v1/trace.proto and common/v1/common.proto) and skips the others.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface ReceivedSpan {
  /** How the span arrived: the export request's content type. */
  encoding: 'application/x-protobuf' | 'application/json';
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind numbers). */
  kind: number;
  scope: string;
  attributes: Record<string, string | number | boolean | undefined>;
  links: { traceId: string; spanId: string }[];
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  origin: string;
  spans: ReceivedSpan[];
  /** Every request body as received (bytes as latin1 characters, so any text in it is found), for scanning. */
  bodies: string[];
  /** Every request, `METHOD path content-type`. */
  requests: string[];
  /** Waits (bounded) until a span satisfies `match`. */
  waitFor(match: (span: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

const valueOf = (v: AnyValue) =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.boolValue ?? v.doubleValue;

function jsonSpans(body: string): ReceivedSpan[] {
  const doc = JSON.parse(body) as {
    resourceSpans: {
      scopeSpans: {
        scope: { name: string };
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: KeyValue[];
          links?: { traceId: string; spanId: string }[];
        }[];
      }[];
    }[];
  };
  return doc.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        encoding: 'application/json' as const,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId || undefined,
        name: s.name,
        kind: s.kind,
        scope: ss.scope.name,
        attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
      })),
    ),
  );
}

/** A protobuf message's fields, in order: number and value (a varint as a bigint, a length-delimited field as its bytes). */
function fields(buf: Buffer): [number, bigint | Buffer][] {
  const out: [number, bigint | Buffer][] = [];
  let at = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[at++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const wire = key & 7;
    if (wire === 0) out.push([key >> 3, varint()]);
    else if (wire === 2) {
      const len = Number(varint());
      out.push([key >> 3, buf.subarray(at, at + len)]);
      at += len;
    } else if (wire === 1) {
      out.push([key >> 3, buf.readBigUInt64LE(at)]);
      at += 8;
    } else if (wire === 5) {
      out.push([key >> 3, BigInt(buf.readUInt32LE(at))]);
      at += 4;
    } else throw new Error(`protobuf wire type ${wire} at ${at}`);
  }
  return out;
}
const bytesOf = (msg: Buffer, n: number) =>
  fields(msg)
    .filter(([f]) => f === n)
    .map(([, v]) => v as Buffer);
const numberOf = (msg: Buffer, n: number) => Number((fields(msg).find(([f]) => f === n)?.[1] as bigint | undefined) ?? 0n);

/** AnyValue: 1 string, 2 bool, 3 int, 4 double. */
function anyValue(msg: Buffer): string | number | boolean | undefined {
  const [field, v] = fields(msg)[0] ?? [];
  if (field === 1) return (v as Buffer).toString('utf8');
  if (field === 2) return v === 1n;
  if (field === 3) return Number(BigInt.asIntN(64, v as bigint));
  if (field === 4) return Buffer.from((v as bigint).toString(16).padStart(16, '0'), 'hex').readDoubleBE(0);
  return undefined;
}

/** ExportTraceServiceRequest → ResourceSpans (1) → ScopeSpans (2) → scope (1, name 1) and Span (2). */
function protobufSpans(body: Buffer): ReceivedSpan[] {
  const hex = (b: Buffer | undefined) => (b === undefined || b.length === 0 ? undefined : b.toString('hex'));
  return bytesOf(body, 1).flatMap((rs) =>
    bytesOf(rs, 2).flatMap((ss) => {
      const scope = bytesOf(bytesOf(ss, 1)[0] ?? Buffer.alloc(0), 1)[0]?.toString('utf8') ?? '';
      // Span: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 9 attributes (KeyValue: 1 key, 2 value), 13 links (1 trace_id, 2 span_id).
      return bytesOf(ss, 2).map((span) => ({
        encoding: 'application/x-protobuf' as const,
        traceId: hex(bytesOf(span, 1)[0])!,
        spanId: hex(bytesOf(span, 2)[0])!,
        parentSpanId: hex(bytesOf(span, 4)[0]),
        name: bytesOf(span, 5)[0]?.toString('utf8') ?? '',
        kind: numberOf(span, 6),
        scope,
        attributes: Object.fromEntries(
          bytesOf(span, 9).map((kv) => [bytesOf(kv, 1)[0]!.toString('utf8'), anyValue(bytesOf(kv, 2)[0] ?? Buffer.alloc(0))]),
        ),
        links: bytesOf(span, 13).map((l) => ({ traceId: hex(bytesOf(l, 1)[0])!, spanId: hex(bytesOf(l, 2)[0])! })),
      }));
    }),
  );
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = req.headers['content-type'];
      requests.push(`${req.method} ${req.url} ${type}`);
      bodies.push(body.toString('latin1'));
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (type === 'application/x-protobuf') {
        spans.push(...protobufSpans(body));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else if (type === 'application/json') {
        spans.push(...jsonSpans(body.toString('utf8')));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else res.writeHead(415).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    spans,
    bodies,
    requests,
    async waitFor(match, timeoutMs = 15_000) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = spans.find(match);
        if (found) return found;
        if (performance.now() > deadline)
          throw new Error(`no such span within ${timeoutMs} ms; received: ${spans.map((s) => s.name).join(', ')}`);
        await sleep(25);
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The chain of parents of `span` among `spans`, nearest first (ends where a parent was not received). */
export function ancestorsOf(span: ReceivedSpan, spans: readonly ReceivedSpan[]): ReceivedSpan[] {
  const chain: ReceivedSpan[] = [];
  let current: ReceivedSpan | undefined = span;
  while (current?.parentSpanId !== undefined) {
    const parentId: string = current.parentSpanId;
    current = spans.find((s) => s.traceId === span.traceId && s.spanId === parentId);
    if (current) chain.push(current);
  }
  return chain;
}
