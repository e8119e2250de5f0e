// A launch's attestation: a DSSE envelope (payload type `application/vnd.in-toto+json`) of an in-toto
// Statement v1 whose subjects are the launch's pins, signed with Ed25519 (node:crypto). The formats:
// https://github.com/secure-systems-lab/dsse/blob/master/protocol.md and
// https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md. Framework-free: the registry signs
// with it and the Agentlet's `verify-launch` verifies with it.
import { createHash, createPublicKey, sign, verify, type JsonWebKey, type KeyObject } from 'node:crypto';

/** Where the registry publishes its public keys (a JWKS, no credential). */
export const KEYS_PATH = '/.well-known/agent-resource-registry/keys';
export const DSSE_PAYLOAD_TYPE = 'application/vnd.in-toto+json';
export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const LAUNCH_PREDICATE_TYPE =
  'https://github.com/agent-resource-registry/agent-resource-registry/blob/main/docs/attestation.md#launch-v1';

const DIGEST = /^sha256:([0-9a-f]{64})$/;

export interface DsseSignature {
  keyid: string;
  sig: string;
}

export interface DsseEnvelope {
  payloadType: typeof DSSE_PAYLOAD_TYPE;
  /** The statement's JSON, base64. */
  payload: string;
  signatures: DsseSignature[];
}

/** One pinned resource as the predicate names it: who provided it and, for a machine's skill, its source. */
export interface AttestedResource {
  id: string;
  digest: string;
  provider: string;
  /** An imported skill's `sourceRevision` (its folder's files, as the Agentlet computes it). */
  sourceRevision?: string;
  /** sha256 (hex) of a skill's `sourceContent`, the SKILL.md text the record serves. */
  sourceContentSha256?: string;
}

export interface LaunchFacts {
  canvasId: string;
  threadId: string;
  profileId: string;
  profileRevision: number;
  machineId: string;
  realizedAt: string;
  /** When the owner last moved one of the workload's pins (absent until then). */
  repinnedAt?: string;
  resources: readonly AttestedResource[];
}

export interface LaunchStatement {
  _type: typeof STATEMENT_TYPE;
  subject: { name: string; digest: { sha256: string } }[];
  predicateType: typeof LAUNCH_PREDICATE_TYPE;
  predicate: {
    canvasId: string;
    threadId: string;
    profile: { id: string; revision: number };
    machineId: string;
    realizedAt: string;
    repinnedAt?: string;
    resources: AttestedResource[];
  };
}

/** The hex of a `sha256:<hex>` digest; throws on any other shape (a pin is always one). */
function hexOf(digest: string): string {
  const match = DIGEST.exec(digest);
  if (!match) throw new Error(`not a sha256 digest: ${digest.slice(0, 80)}`);
  return match[1]!;
}

export function launchStatement(facts: LaunchFacts): LaunchStatement {
  return {
    _type: STATEMENT_TYPE,
    subject: facts.resources.map((r) => ({ name: r.id, digest: { sha256: hexOf(r.digest) } })),
    predicateType: LAUNCH_PREDICATE_TYPE,
    predicate: {
      canvasId: facts.canvasId,
      threadId: facts.threadId,
      profile: { id: facts.profileId, revision: facts.profileRevision },
      machineId: facts.machineId,
      realizedAt: facts.realizedAt,
      ...(facts.repinnedAt === undefined ? {} : { repinnedAt: facts.repinnedAt }),
      resources: facts.resources.map((r) => ({ ...r })),
    },
  };
}

/** The statement a stored envelope signed (one this registry made: not verified again here). */
export function statementOf(envelope: DsseEnvelope): LaunchStatement {
  return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as LaunchStatement;
}

/**
 * The statement of a workload after one of its pins moved: the launch's facts as signed at realization
 * (`realizedAt` included), `repinnedAt` the move's time, and `pin` in place of the resource of the same ID.
 */
export function repinnedStatement(signed: LaunchStatement, pin: AttestedResource, repinnedAt: string): LaunchStatement {
  const p = signed.predicate;
  return launchStatement({
    canvasId: p.canvasId,
    threadId: p.threadId,
    profileId: p.profile.id,
    profileRevision: p.profile.revision,
    machineId: p.machineId,
    realizedAt: p.realizedAt,
    repinnedAt,
    resources: p.resources.map((r) => (r.id === pin.id ? pin : r)),
  });
}

/** DSSE's pre-authentication encoding: `DSSEv1 <len(type)> <type> <len(body)> <body>`, lengths in bytes. */
export function pae(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

export interface Signer {
  kid: string;
  privateKey: KeyObject;
}

export function signStatement(statement: LaunchStatement, signer: Signer): DsseEnvelope {
  const payload = Buffer.from(JSON.stringify(statement), 'utf8');
  const sig = sign(null, pae(DSSE_PAYLOAD_TYPE, payload), signer.privateKey);
  return {
    payloadType: DSSE_PAYLOAD_TYPE,
    payload: payload.toString('base64'),
    signatures: [{ keyid: signer.kid, sig: sig.toString('base64') }],
  };
}

/** A public key as the JWKS route publishes it (RFC 8037 `OKP`/`Ed25519`). */
export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/** RFC 7638 thumbprint of an Ed25519 public key (base64url of sha256 over `{"crv","kty","x"}`): its `kid`. */
export function keyIdOf(x: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
}

export function publicJwkOf(publicKey: KeyObject): PublicJwk {
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  return { kty: 'OKP', crv: 'Ed25519', x, kid: keyIdOf(x), alg: 'EdDSA', use: 'sig' };
}

export class AttestationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AttestationError';
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks `envelope` against `keys` (a JWKS's `keys`): the payload type, one signature by a listed Ed25519 key
 * over the exact payload, and a launch statement inside. Answers the statement; throws AttestationError
 * naming what failed.
 */
export function verifyEnvelope(envelope: unknown, keys: readonly unknown[]): LaunchStatement {
  if (!isObject(envelope)) throw new AttestationError('the attestation is not a DSSE envelope (an object)');
  const { payloadType, payload, signatures } = envelope;
  if (payloadType !== DSSE_PAYLOAD_TYPE) throw new AttestationError(`the envelope's payloadType is not ${DSSE_PAYLOAD_TYPE}`);
  if (typeof payload !== 'string' || !BASE64.test(payload)) throw new AttestationError("the envelope's payload is not base64");
  if (!Array.isArray(signatures) || signatures.length === 0) throw new AttestationError('the envelope has no signature');
  const bytes = Buffer.from(payload, 'base64');
  const signed = pae(DSSE_PAYLOAD_TYPE, bytes);
  const known = new Map<string, JsonWebKey>();
  for (const key of keys) {
    if (isObject(key) && key.kty === 'OKP' && key.crv === 'Ed25519' && typeof key.kid === 'string' && typeof key.x === 'string') {
      known.set(key.kid, { kty: 'OKP', crv: 'Ed25519', x: key.x });
    }
  }
  const tried: string[] = [];
  let verified = false;
  for (const s of signatures) {
    if (!isObject(s) || typeof s.keyid !== 'string' || typeof s.sig !== 'string' || !BASE64.test(s.sig)) continue;
    const jwk = known.get(s.keyid);
    tried.push(s.keyid);
    if (!jwk) continue;
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: jwk, format: 'jwk' });
    } catch {
      continue;
    }
    if (verify(null, signed, publicKey, Buffer.from(s.sig, 'base64'))) {
      verified = true;
      break;
    }
  }
  if (!verified) {
    const unknownKeys = tried.filter((kid) => !known.has(kid));
    throw new AttestationError(
      unknownKeys.length === tried.length && tried.length > 0
        ? `the envelope is signed by a key the registry does not publish (${unknownKeys.join(', ')})`
        : 'the signature does not verify: the attestation was changed or not signed by the registry',
    );
  }
  let statement: unknown;
  try {
    statement = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new AttestationError('the signed payload is not JSON');
  }
  if (!isObject(statement) || statement._type !== STATEMENT_TYPE || statement.predicateType !== LAUNCH_PREDICATE_TYPE) {
    throw new AttestationError('the signed payload is not a launch statement (in-toto Statement v1)');
  }
  const predicate = statement.predicate;
  if (!Array.isArray(statement.subject) || !isObject(predicate) || !Array.isArray(predicate.resources)) {
    throw new AttestationError("the launch statement has no subjects or no predicate's resources");
  }
  return statement as unknown as LaunchStatement;
}
