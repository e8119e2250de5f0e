// The load generator, in its own process: runs one autocannon pass described by a LoadSpec received over
// IPC and sends back a LoadResult. Writes are built per request (distinct IDs, replace of own).
import autocannon from 'autocannon';
import { writeBody, type LoadResult, type LoadSpec } from './protocol.js';

function requestsFor(spec: LoadSpec): autocannon.Request[] {
  const r = spec.request;
  if (r.kind === 'get') return [{ method: 'GET', path: r.path, headers: r.headers }];
  if (r.kind === 'launches') {
    let i = 0;
    const headers = { authorization: `Bearer ${r.token}`, 'content-type': 'application/json' };
    return [
      {
        method: 'POST',
        setupRequest: (req) => {
          const n = i++;
          const body = {
            profileId: r.profileIds[(n * 7919) % r.profileIds.length]!,
            canvasId: `${r.tag}-c${Math.floor(n / r.threadsPerCanvas)}`,
            threadId: `t-${n}`,
          };
          return { ...req, method: 'POST', path: '/api/acp/launch', headers, body: JSON.stringify(body) };
        },
      },
    ];
  }
  let n = 0;
  return [
    {
      method: 'PUT',
      setupRequest: (req) => {
        const i = n++;
        const writer = r.writers[i % r.writers.length]!;
        const id = r.mode === 'create' ? `new-${r.tag}-${i}` : writer.ids[Math.floor(i / r.writers.length) % writer.ids.length]!;
        return {
          ...req,
          method: 'PUT',
          path: `/api/acp/providers/${writer.provider}/resources/${id}`,
          headers: { authorization: `Bearer ${writer.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(writeBody(id, `${r.tag}-${i}`)),
        };
      },
    },
  ];
}

/** The `q` quantile of ascending `sorted` (nearest rank). */
const quantile = (sorted: Float64Array, q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;

process.once('message', (spec: LoadSpec) => {
  const times: number[] = [];
  const instance = autocannon(
    {
      url: spec.url,
      connections: spec.connections,
      duration: spec.durationSec,
      ...(spec.overallRate ? { overallRate: spec.overallRate } : {}),
      requests: requestsFor(spec),
    },
    (err, result) => {
      if (err) {
        process.send?.({ error: String(err) });
        process.disconnect();
        return;
      }
      const codes = result.statusCodeStats ?? {};
      const expected = spec.expectStatus.reduce((sum, code) => sum + (codes[String(code)]?.count ?? 0), 0);
      const total = Object.values(codes).reduce((sum, c) => sum + c.count, 0);
      const out: LoadResult = {
        perSecond: expected / result.duration,
        expected,
        unexpected: total - expected,
        errors: result.errors + result.timeouts,
        p50: result.latency.p50,
        p99: result.latency.p99,
        durationSec: result.duration,
      };
      if (!spec.overallRate && times.length > 0) {
        const sorted = Float64Array.from(times).sort();
        out.exact = { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
      }
      process.send?.(out, () => process.disconnect());
    },
  );
  // Each response's own time (autocannon's histogram keeps whole milliseconds).
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (spec.expectStatus.includes(statusCode)) times.push(responseTime);
  });
});
