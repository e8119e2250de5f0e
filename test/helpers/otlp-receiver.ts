// A local OTLP/HTTP receiver for the trace tests: a node:http server that accepts POST /v1/traces with a
// JSON body (OTLP's JSON encoding, as @opentelemetry/exporter-trace-otlp-http sends it), keeps every body
// as received (for scanning) and every span decoded, and answers 200 `{}` (an export that fully succeeded).
// Anything else it receives is kept too, so a test can prove that nothing reached it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface ReceivedSpan {
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
  /** Every request body as received, for scanning. */
  bodies: string[];
  /** Every request, `METHOD path content-type`. */
  requests: string[];
  /** Waits (bounded) until a span satisfies `match`. */
  waitFor(match: (span: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

const valueOf = (v: AnyValue) =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.boolValue ?? v.doubleValue;

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      bodies.push(body);
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
        res.writeHead(404).end();
        return;
      }
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
      for (const rs of doc.resourceSpans)
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              scope: ss.scope.name,
              attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
            });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
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
