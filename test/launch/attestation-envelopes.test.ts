// What verify-launch refuses in an envelope the registry's key did sign: a payload that is not JSON, not an
// in-toto launch statement, or one without subjects or resources; and a published key that does not parse is
// passed over for the next signature, never taken as verified.
import t from 'tap';
import { generateKeyPairSync, sign } from 'node:crypto';
import {
  DSSE_PAYLOAD_TYPE,
  LAUNCH_PREDICATE_TYPE,
  pae,
  publicJwkOf,
  STATEMENT_TYPE,
  verifyEnvelope,
} from '../../src/workloads/attestation.js';

const PAYLOAD_TYPE = DSSE_PAYLOAD_TYPE;
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const jwk = publicJwkOf(publicKey);

/** An envelope over `payload`, signed by the registry's key as the registry signs. */
const envelope = (payload: string) => {
  const bytes = Buffer.from(payload, 'utf8');
  return {
    payloadType: PAYLOAD_TYPE,
    payload: bytes.toString('base64'),
    signatures: [{ keyid: jwk.kid, sig: sign(null, pae(PAYLOAD_TYPE, bytes), privateKey).toString('base64') }],
  };
};

const launch = {
  _type: STATEMENT_TYPE,
  predicateType: LAUNCH_PREDICATE_TYPE,
  subject: [],
  predicate: { resources: [] },
};

t.test('a signed payload that is no launch statement is refused, naming why', (t) => {
  t.throws(() => verifyEnvelope(envelope('not json {'), [jwk]), { message: 'the signed payload is not JSON' });
  t.throws(() => verifyEnvelope(envelope(JSON.stringify({ ...launch, _type: 'https://in-toto.io/Statement/v0.1' })), [jwk]), {
    message: /not a launch statement/,
  });
  t.throws(() => verifyEnvelope(envelope(JSON.stringify({ ...launch, predicateType: 'https://slsa.dev/provenance/v1' })), [jwk]), {
    message: /not a launch statement/,
  });
  t.throws(() => verifyEnvelope(envelope(JSON.stringify({ ...launch, subject: undefined })), [jwk]), {
    message: "the launch statement has no subjects or no predicate's resources",
  });
  t.throws(() => verifyEnvelope(envelope(JSON.stringify({ ...launch, predicate: { resources: 'all' } })), [jwk]), {
    message: "the launch statement has no subjects or no predicate's resources",
  });
  t.end();
});

t.test('a published key that does not parse is passed over, never taken as verified', (t) => {
  const signed = envelope(JSON.stringify(launch));
  const broken = { ...jwk, x: 'AAAA' };
  t.throws(() => verifyEnvelope(signed, [broken]), { message: /the signature does not verify/ });
  const other = publicJwkOf(generateKeyPairSync('ed25519').publicKey);
  const twice = { ...signed, signatures: [{ keyid: other.kid, sig: signed.signatures[0]!.sig }, ...signed.signatures] };
  t.throws(() => verifyEnvelope(twice, [{ ...other, x: 'AAAA' }]), { message: /does not verify|does not publish/ });
  t.same(verifyEnvelope(twice, [{ ...other, x: 'AAAA' }, jwk]), launch, 'the next signature, by a key that parses, verifies');
  t.end();
});
