// OpenTelemetry traces, started by the server before the app is built, and only when the configuration
// asks for them (config.ts reads the OTEL_* variables; docs/tracing.md): this module and every OpenTelemetry
// package it imports are loaded by a dynamic import, so a server without OTEL_* settings never loads them.
//
// What is traced, through the maintained instrumentations:
// - each HTTP request: @fastify/otel, registered as the app's first plugin (it wraps the routes as they are
//   added, no module patching, so it works as well from the esbuild bundle). The span continues the W3C
//   `traceparent` of the request, is named by the route template (`GET /api/resources/:id`), and carries the
//   path without its query string.
// - outbound HTTP from undici (a hosted capability's vendor call): @opentelemetry/instrumentation-undici,
//   fed by undici's diagnostics channels (no patching either); the query string of the URL is redacted.
// - PostgreSQL statements: @opentelemetry/instrumentation-pg, which patches the `pg` module as it loads
//   (the store loads it on open, after this module ran). Statement texts only: the parameters' values are
//   never recorded (enhancedDatabaseReporting off).
// - the store's group-commit batch: a span of our own (tracing/spans.ts).
import { register } from 'node:module';
import * as api from '@opentelemetry/api';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_URL_FULL, ATTR_URL_PATH, ATTR_URL_QUERY } from '@opentelemetry/semantic-conventions';
import type { FastifyInstance, FastifyPluginCallback, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { TracingConfig } from '../config.js';
import { useTracer } from './spans.js';

export interface Tracing {
  /** Registered first in the app, before any route. */
  fastifyPlugin: FastifyPluginCallback;
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** A URL's query string with every value replaced: parameter names stay (they say what was asked), values may be keys. */
export function redactedQuery(search: string): string {
  if (search === '' || search === '?') return '';
  const names = [...new URLSearchParams(search).keys()];
  return `?${names.map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&')}`;
}

/** The path of a request target, without its query string. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The `message` of an error answer (our envelope, serialized), or undefined. */
export function answerMessage(payload: unknown): string | undefined {
  if (typeof payload !== 'string') return undefined;
  try {
    const message = (JSON.parse(payload) as { message?: unknown } | null)?.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

export function startTracing(config: TracingConfig): Tracing {
  // ESM imports of `pg` do not pass through require(): the loader hook of import-in-the-middle lets the pg
  // instrumentation see them, limited to the modules it patches.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['pg', 'pg-pool'] } });

  // Binary protobuf by default: the specification's default encoding, and less than half the CPU per span
  // of OTLP's JSON encoding to serialize (docs/tracing.md, What traces cost).
  const exporter =
    config.exporter === 'console'
      ? new ConsoleSpanExporter()
      : config.protocol === 'http/json'
        ? new OtlpJsonExporter({ url: config.endpoint })
        : new OtlpProtobufExporter({ url: config.endpoint });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  // The global tracer provider, the AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();

  const fastify = new FastifyOtelInstrumentation({
    // One span per request; none per lifecycle hook or handler (each would add to the cost of every read).
    instrumentHooks: false,
    instrumentHandler: false,
    // A failed request's span says its error's message (status ERROR); no exception event with a stack.
    recordExceptions: false,
    requestHook: (span: api.Span, request: FastifyRequest) => {
      const route = request.routeOptions.url;
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`);
      span.setAttribute(ATTR_URL_PATH, pathOf(request.url));
    },
    // Any other span it makes (the not-found handler's) by route too (an anonymous plugin's name would be its source text).
    lifecycleHook: (span: api.Span, { hookName, request }: { hookName: string; request: FastifyRequest }) => {
      span.updateName(`${hookName} ${request.method} ${request.routeOptions.url ?? ''}`.trimEnd());
    },
  });
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      fastify,
      new UndiciInstrumentation({
        // Only calls made while serving a request (a hosted capability's vendor call).
        requireParentforSpans: true,
        startSpanHook: (request) => {
          const url = new URL(request.path, request.origin);
          const query = redactedQuery(url.search);
          return { [ATTR_URL_FULL]: `${url.origin}${url.pathname}${query}`, [ATTR_URL_QUERY]: query };
        },
      }),
      new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
    ],
  });
  useTracer(api, provider.getTracer('agent-resource-registry'));

  // The handler runs in its request's context, so the spans it causes (the vendor call, the batch) are the
  // request's children: the request's body is read on the socket's own context, which the request span's
  // onRequest hook does not reach. Fastify calls the handler from the last preHandler hook's `done`.
  //
  // A failed request's span says what its answer said, never the error's own message: @fastify/otel records
  // `error.message` (a schema error names the unknown property, which may be a pasted token), and the answer's
  // message is the one that went through the error handler's withholding. These hooks are the app's, so they
  // run before the route's own that @fastify/otel appends (its onSend ends the span).
  const failed = new WeakSet<FastifyRequest>();
  const fastifyPlugin = fp((app: FastifyInstance, _opts: unknown, done: () => void) => {
    void app.register(fastify.plugin());
    app.addHook('preHandler', (request, _reply, next) => {
      const { context } = request.opentelemetry();
      if (context) api.context.with(context, next);
      else next();
    });
    app.addHook('onError', (request, _reply, _error, next) => {
      failed.add(request);
      next();
    });
    app.addHook('onSend', (request, _reply, payload, next) => {
      if (failed.has(request)) request.opentelemetry().span?.setStatus({ code: api.SpanStatusCode.ERROR, message: answerMessage(payload) });
      next(null, payload);
    });
    done();
  });

  return {
    fastifyPlugin,
    shutdown: () => provider.shutdown(),
  };
}
