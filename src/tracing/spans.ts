// The few spans the service makes itself (the PostgreSQL store's batch transaction), through the tracer
// that tracing/start.ts hands over once traces are on. Until then, and always without OTEL_* settings, every
// call here is a plain function call that returns at once: only types are imported, so OpenTelemetry is
// never loaded for it. Framework-free.
import type * as Api from '@opentelemetry/api';

/** A request's trace context, as the store keeps it beside a queued write. */
export type TraceContext = Api.Context;

let active: { api: typeof Api; tracer: Api.Tracer } | undefined;

/** Called once by tracing/start.ts when traces are on. */
export function useTracer(api: typeof Api, tracer: Api.Tracer): void {
  active = { api, tracer };
}

/** The caller's trace context (its request's span), kept beside work that another task runs later; undefined when traces are off. */
export function currentTraceContext(): Api.Context | undefined {
  return active?.api.context.active();
}

/**
 * Runs `work` inside a span named `name`: a child of the first traced caller's span (the first request the
 * work serves), linked to the other callers' spans, so each request that shares it finds it. `work`'s own
 * spans (the database statements) are its children. Work that serves no traced request (start-up, background
 * upkeep), and every call without traces, is just `work()`.
 */
export function inSharedSpan<T>(
  name: string,
  attributes: Api.Attributes,
  callers: readonly (TraceContext | undefined)[],
  work: () => Promise<T>,
): Promise<T> {
  if (active === undefined) return work();
  const { api, tracer } = active;
  const traced = callers.filter((ctx): ctx is TraceContext => ctx !== undefined && api.trace.getSpanContext(ctx) !== undefined);
  const [parent, ...others] = traced;
  if (parent === undefined) return work();
  const links = others.map((ctx) => ({ context: api.trace.getSpanContext(ctx)! }));
  const span = tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes, links }, parent);
  return api.context.with(api.trace.setSpan(parent, span), work).finally(() => span.end());
}
