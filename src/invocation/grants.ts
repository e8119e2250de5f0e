// Resource grants: `arr_grant_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, an opaque runtime-only
// token that says who may invoke which hosted capabilities, for which thread, until when. Each claim is a
// fact checked at every invocation (deny by default): machine and its enrollment, profile, canvas, thread,
// allowed resource IDs, expiry, policy version. Signed with a key derived from CANVAS_TOKEN_SECRET under a
// label of its own, so a canvas token can never pass as a grant nor a grant as a canvas token. Never stored.
// Framework-free.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { decodeBase64url, SIGNATURE_BYTES } from '../credentials/tokens.js';

export const GRANT_PREFIX = 'arr_grant_';
export const GRANT_HEADER = 'x-huabu-resource-grant';
export const GRANT_ENV = 'HUABU_RESOURCE_GRANT';
const KEY_LABEL = 'agent-resource-registry/resource-grant/v1';

export interface GrantClaims {
  machineId: string;
  /** The machine record's `enrolledAt` when the grant was minted: a re-enrollment does not revive it. */
  enrolledAt: string;
  profileId: string;
  canvasId: string;
  threadId: string;
  allowedResourceIds: string[];
  /** Seconds since the epoch. */
  exp: number;
  policyVersion: string;
  /**
   * Milliseconds since the epoch when the grant was minted, checked against its canvas's revocation
   * cut-off. Grants minted before this claim existed have none and count as minted at 0.
   */
  mintedAtMs?: number;
}

export type GrantCheck = { ok: true; claims: GrantClaims; id: string } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/** The grant signing key: HMAC-SHA256(CANVAS_TOKEN_SECRET, label). */
export function grantKey(canvasTokenSecret: string): Buffer {
  return createHmac('sha256', canvasTokenSecret).update(KEY_LABEL).digest();
}

function sign(payload: string, key: Buffer): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

export function mintGrant(claims: GrantClaims, key: Buffer): string {
  const c = claims;
  const payload = Buffer.from(
    JSON.stringify({
      v: 1,
      m: c.machineId,
      e: c.enrolledAt,
      p: c.profileId,
      c: c.canvasId,
      t: c.threadId,
      r: c.allowedResourceIds,
      exp: c.exp,
      pv: c.policyVersion,
      ...(c.mintedAtMs === undefined ? {} : { at: c.mintedAtMs }),
    }),
  ).toString('base64url');
  return `${GRANT_PREFIX}${payload}.${sign(payload, key).toString('base64url')}`;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 256;

export function verifyGrant(token: string, key: Buffer, nowSeconds: number): GrantCheck {
  if (!token.startsWith(GRANT_PREFIX) || token.length > 16 * 1024) return { ok: false, reason: 'malformed' };
  const [payload, signature, extra] = token.slice(GRANT_PREFIX.length).split('.');
  if (!payload || !signature || extra !== undefined) return { ok: false, reason: 'malformed' };
  // Canonical spellings only: one grant, one string (quotas and audit facts must not be multiplied by re-spelling).
  const given = decodeBase64url(signature, SIGNATURE_BYTES);
  const claimBytes = decodeBase64url(payload);
  if (!given || !claimBytes) return { ok: false, reason: 'malformed' };
  if (!timingSafeEqual(given, sign(payload, key))) return { ok: false, reason: 'bad_signature' };
  let raw: Record<string, unknown> | null;
  try {
    raw = JSON.parse(claimBytes.toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (raw === null || typeof raw !== 'object') return { ok: false, reason: 'malformed' };
  const { v, m, e, p, c, t, r, exp, pv, at } = raw;
  if (
    v !== 1 ||
    ![m, e, p, c, t, pv].every(isString) ||
    typeof exp !== 'number' ||
    !Array.isArray(r) ||
    !r.every(isString) ||
    (at !== undefined && typeof at !== 'number')
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (exp <= nowSeconds) return { ok: false, reason: 'expired' };
  const claims: GrantClaims = {
    machineId: m as string,
    enrolledAt: e as string,
    profileId: p as string,
    canvasId: c as string,
    threadId: t as string,
    allowedResourceIds: r,
    exp,
    policyVersion: pv as string,
    ...(at === undefined ? {} : { mintedAtMs: at }),
  };
  return { ok: true, claims, id: grantId(claims) };
}

/**
 * A grant's identity for quotas: the SHA-256 of its verified claims in a fixed order, so it depends on what
 * the grant says, never on how the header spelled it. Not secret (the claims are readable).
 */
export function grantId(c: GrantClaims): string {
  const fields = [
    c.machineId,
    c.enrolledAt,
    c.profileId,
    c.canvasId,
    c.threadId,
    c.allowedResourceIds,
    c.exp,
    c.policyVersion,
    c.mintedAtMs ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}
