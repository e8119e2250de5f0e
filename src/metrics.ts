// Prometheus metrics for one app instance (its own registry, so several apps can live in one process):
// request durations by route and status, durable-write batches and their latency, catalogue cache
// rebuilds, and process vitals. Labels carry route patterns, file names and codes, never IDs or tokens.
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { BatchInfo } from './storage/durable-document.js';

export class Metrics {
  readonly registry = new Registry();

  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration in seconds, by route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly storeBatchOperations = new Histogram({
    name: 'registry_store_batch_operations',
    help: 'Operations covered by one durable write (group commit batch size).',
    labelNames: ['file'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });

  readonly storeWriteDuration = new Histogram({
    name: 'registry_store_write_duration_seconds',
    help: 'Duration of one durable write (temp file, fsync, rename, directory fsync).',
    labelNames: ['file', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  readonly catalogueRebuilds = new Counter({
    name: 'registry_catalogue_cache_rebuilds_total',
    help: 'Catalogue bodies serialized after a change (each serves every read until the next change).',
    labelNames: ['view'] as const,
    registers: [this.registry],
  });

  readonly catalogueCompressions = new Counter({
    name: 'registry_catalogue_compressions_total',
    help: 'Compressed copies of catalogue bodies built (once per body and coding; each serves every read that asks for that coding until the next change).',
    labelNames: ['view', 'encoding'] as const,
    registers: [this.registry],
  });

  readonly launchOutcomes = new Counter({
    name: 'registry_launch_outcomes_total',
    help: 'Launch requests by outcome (`realized`, `repeated`, or the error code).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly invocations = new Histogram({
    name: 'registry_invocations_duration_seconds',
    help: 'Hosted-capability invocations through the RFS boundary, by resource (configured IDs only) and outcome (`ok`, `cancelled` or the error code); the _count series counts them.',
    labelNames: ['resource', 'outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The observer the store calls after each durable write. */
  readonly observeBatch = (info: BatchInfo): void => {
    this.storeBatchOperations.observe({ file: info.label }, info.operations);
    this.storeWriteDuration.observe({ file: info.label, outcome: info.ok ? 'ok' : 'failed' }, info.durationMs / 1000);
  };
}
