// The registry's public launch-signing keys (no credential): a JWKS, so that whoever holds a launch's
// attestation (an ACP driver, `agentlet-resources verify-launch`) can check it.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { KEYS_PATH, type PublicJwk } from '../workloads/attestation.js';

const Jwk = Type.Object(
  {
    kty: Type.Literal('OKP'),
    crv: Type.Literal('Ed25519'),
    x: Type.String({ description: 'The public key, base64url (RFC 8037).' }),
    kid: Type.String({ description: "The key's RFC 7638 thumbprint: the `keyid` of the envelopes it signs." }),
    alg: Type.Literal('EdDSA'),
    use: Type.Literal('sig'),
  },
  { additionalProperties: false, title: 'SigningJwk' },
);

export const signingKeyRoutes: FastifyPluginCallbackTypebox<{ publicKeys: () => readonly PublicJwk[] }> = (app, { publicKeys }, done) => {
  app.get(
    KEYS_PATH,
    {
      schema: {
        operationId: 'getSigningKeys',
        tags: ['workloads'],
        security: [],
        summary: 'Launch-signing public keys (JWKS)',
        description:
          "The Ed25519 keys whose signatures a launch's `attestation` carries, as a JSON Web Key Set: the signing key first, then the older keys kept for verifying attestations they signed. No credential.",
        response: {
          200: Type.Object(
            { keys: Type.Array(Jwk) },
            {
              additionalProperties: false,
              description: 'The key set.',
              examples: [
                {
                  keys: [
                    {
                      kty: 'OKP',
                      crv: 'Ed25519',
                      x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
                      kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
                      alg: 'EdDSA',
                      use: 'sig',
                    },
                  ],
                },
              ],
            },
          ),
        },
      },
    },
    async (_request, reply) => {
      // Public and changed only by a rotation and a restart: caches may keep it a few minutes.
      reply.header('cache-control', 'public, max-age=300');
      return { keys: [...publicKeys()] };
    },
  );
  done();
};
