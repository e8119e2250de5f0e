// Starts traces when the configuration asks for them (OTEL_* settings, config.ts), by a dynamic import, so
// a server without them loads nothing of OpenTelemetry. Run before the app is built: the pg
// instrumentation must be in place before the PostgreSQL store loads `pg`.
import type { Config } from '../config.js';
import type { Tracing } from './start.js';

export async function startTracingIfConfigured(config: Config): Promise<Tracing | undefined> {
  if (config.tracing === undefined) return undefined;
  const { startTracing } = await import('./start.js');
  return startTracing(config.tracing);
}
