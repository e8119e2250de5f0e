// Token formats and digests. Every token this service issues starts with `arr_<kind>_` so it is
// recognizable to secret scanners (ours included). Tokens are stored only as SHA-256 digests and compared
// as digests in constant time.
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOKEN_PREFIX = {
  owner: 'arr_owner_',
  huabu: 'arr_huabu_',
  machine: 'arr_machine_',
  canvas: 'arr_canvas_',
  canvasSecret: 'arr_secret_',
} as const;

/** 32 random bytes, base64url, behind the kind's prefix. */
export function generateToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function tokenDigest(token: string): Buffer {
  // One-shot hash (no Hash object per call): every authenticated request computes one.
  return hash('sha256', token, 'buffer');
}

/**
 * Compares `presented` with every candidate digest, without stopping at the first match, and returns the
 * index of the match (or -1).
 */
export function matchDigest(presented: Buffer, candidates: readonly Buffer[]): number {
  let found = -1;
  for (let i = 0; i < candidates.length; i++) {
    if (timingSafeEqual(presented, candidates[i]!) && found === -1) found = i;
  }
  return found;
}

export interface CanvasClaims {
  canvasId: string;
  agentletId: string;
  /** The machine's `enrolledAt` when the token was minted (see MachineRegistry.activeEnrollment). */
  enrolledAt: string;
  /** Seconds since the epoch. */
  exp: number;
  /**
   * Milliseconds since the epoch when the token was minted (checked against a canvas's revocation
   * cut-off). Tokens minted before this claim existed have none and count as minted at 0.
   */
  mintedAtMs?: number;
}

export type CanvasTokenCheck = { ok: true; claims: CanvasClaims } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

function sign(payload: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(payload).digest();
}

/**
 * Decodes canonical base64url only: the URL-safe alphabet, no padding, and the last character's unused
 * bits zero, so exactly one spelling decodes to given bytes (Node's decoder skips stray characters and
 * ignores those bits; a token spelled another way would otherwise pass as a different string). Undefined
 * for anything else, and when `bytes` is given and the length differs. One check says all of it: the
 * encoder writes only the alphabet, never padding, never a dangling character and zero unused bits, so a
 * text it does not give back from its own decoding is not canonical.
 */
export function decodeBase64url(text: string, bytes?: number): Buffer | undefined {
  const decoded = Buffer.from(text, 'base64url');
  if (decoded.toString('base64url') !== text) return undefined;
  if (bytes !== undefined && decoded.length !== bytes) return undefined;
  return decoded;
}

/** The HMAC-SHA256 length: a signature is exactly this many bytes, in 43 characters. */
export const SIGNATURE_BYTES = 32;

/**
 * `arr_canvas_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, bound to one canvas, one machine and
 * that machine's enrollment (`e`).
 */
export function mintCanvasToken(claims: CanvasClaims, secret: string): string {
  const payload = Buffer.from(
    JSON.stringify({
      c: claims.canvasId,
      m: claims.agentletId,
      e: claims.enrolledAt,
      exp: claims.exp,
      ...(claims.mintedAtMs === undefined ? {} : { t: claims.mintedAtMs }),
    }),
  ).toString('base64url');
  return `${TOKEN_PREFIX.canvas}${payload}.${sign(payload, secret).toString('base64url')}`;
}

export function verifyCanvasToken(token: string, secret: string, nowSeconds: number): CanvasTokenCheck {
  if (!token.startsWith(TOKEN_PREFIX.canvas)) return { ok: false, reason: 'malformed' };
  const [payload, signature, extra] = token.slice(TOKEN_PREFIX.canvas.length).split('.');
  if (!payload || !signature || extra !== undefined) return { ok: false, reason: 'malformed' };
  const given = decodeBase64url(signature, SIGNATURE_BYTES);
  const claimBytes = decodeBase64url(payload);
  if (!given || !claimBytes) return { ok: false, reason: 'malformed' };
  if (!timingSafeEqual(given, sign(payload, secret))) return { ok: false, reason: 'bad_signature' };
  let claims: { c?: unknown; m?: unknown; e?: unknown; exp?: unknown; t?: unknown } | null;
  try {
    claims = JSON.parse(claimBytes.toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  // A signed `null` payload is malformed too (not a TypeError).
  if (
    claims === null ||
    typeof claims.c !== 'string' ||
    typeof claims.m !== 'string' ||
    typeof claims.e !== 'string' ||
    typeof claims.exp !== 'number' ||
    (claims.t !== undefined && typeof claims.t !== 'number')
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (claims.exp <= nowSeconds) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    claims: {
      canvasId: claims.c,
      agentletId: claims.m,
      enrolledAt: claims.e,
      exp: claims.exp,
      ...(claims.t === undefined ? {} : { mintedAtMs: claims.t }),
    },
  };
}
