// Record v2 answers carry each record's content `digest`: tests that compare a body field for field check
// that every digest is well formed and compare the rest.
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** `body` with every `digest` member removed; throws if one is not `sha256:<64 hex>`. */
export function sansDigest<T>(body: T): T {
  if (Array.isArray(body)) return body.map(sansDigest) as T;
  if (body === null || typeof body !== 'object') return body;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'digest') {
      if (typeof value !== 'string' || !DIGEST.test(value)) throw new Error(`not a record digest: ${String(value)}`);
      continue;
    }
    out[key] = sansDigest(value);
  }
  return out as T;
}
