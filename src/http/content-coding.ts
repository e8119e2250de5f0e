// Accept-Encoding negotiation for the bodies the service keeps compressed (the catalogue lists): which of
// br, gzip and identity a request gets. Parsing and ranking are the `negotiator` package's (q-values, `*`,
// explicit codings over `*`, `identity` acceptable unless refused, case-insensitive), not our own.
import Negotiator from 'negotiator';
import { CONTENT_CODINGS, type ContentCoding } from '../registry/catalogue-cache.js';

/** What we offer, in our order of preference when the client ranks codings alike (br is the smallest). */
const OFFERED: string[] = [...CONTENT_CODINGS, 'identity'];

/** `negotiator` 1.x takes `{preferred}` to break ties between equal q-values; @types/negotiator predates it. */
type EncodingNegotiator = { encodings(available: string[], options: { preferred: string[] }): string[] };

/** Answers per header value: clients send a handful of distinct values, so a small memo saves the parse. */
const memo = new Map<string, ContentCoding | 'identity'>();
const MEMO_MAX = 256;

/**
 * The coding to send for this `Accept-Encoding` value. No header means identity (what a client that never
 * asked for compression can read; the v1 bytes). When nothing we offer is acceptable (e.g.
 * `identity;q=0` alone, or `*;q=0`), the body is sent as it is rather than refused with 406: RFC 9110
 * §12.1 lets a server disregard the header, and a catalogue reader is better served by bytes than by an
 * error (docs/decisions/catalogue-compression.md).
 */
export function negotiateCoding(acceptEncoding: string | undefined): ContentCoding | 'identity' {
  if (acceptEncoding === undefined) return 'identity';
  const known = memo.get(acceptEncoding);
  if (known) return known;
  const negotiator = new Negotiator({ headers: { 'accept-encoding': acceptEncoding } }) as unknown as EncodingNegotiator;
  const chosen = (negotiator.encodings(OFFERED, { preferred: OFFERED })[0] ?? 'identity') as ContentCoding | 'identity';
  if (memo.size >= MEMO_MAX) memo.clear();
  memo.set(acceptEncoding, chosen);
  return chosen;
}
