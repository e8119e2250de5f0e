// The owner's secret allowlist over HTTP: list, add and remove the fingerprints of findings that are not
// secrets. The rules are src/secrets/secret-allowlist.ts; this file only speaks HTTP.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { AT, FINGERPRINT } from './examples.js';
import { SecretAllowlistEntry, SecretAllowlistEntryBody, SecretAllowlistList, SecretAllowlistQuery } from '../schemas/secret-allowlist.js';
import type { SecretAllowlist } from '../secrets/secret-allowlist.js';

const SCOPE =
  'An entry lets exactly one finding through: its `fingerprint` (`<rule>:<SHA-256 of the matched text>`, as `details.findings` of a 422 `secret_detected` names it), only in `file` and only on `route` when they are set. Nothing else switches the scan off.';

export const secretAllowlistRoutes: FastifyPluginCallbackTypebox<{ secretAllowlist: SecretAllowlist }> = (
  app,
  { secretAllowlist },
  done,
) => {
  protect(app, [app.requireOwner], ['ownerToken']);

  app.get(
    '/secret-allowlist',
    {
      schema: {
        tags: ['secret allowlist'],
        operationId: 'listSecretAllowlist',
        summary: 'List the secret allowlist',
        description: `Every entry of the allowlist (SECRET_ALLOWLIST_FILE), in the order added. ${SCOPE}`,
        response: {
          200: answer(SecretAllowlistList, 'The entries.', {
            entries: [
              { fingerprint: FINGERPRINT, route: 'resource.register', reason: 'A revoked token kept in a test fixture.', addedAt: AT },
            ],
          }),
        },
      },
    },
    async () => ({ entries: [...(await secretAllowlist.entries())] }),
  );

  app.post(
    '/secret-allowlist',
    {
      schema: {
        tags: ['secret allowlist'],
        operationId: 'addSecretAllowlistEntry',
        summary: 'Allow one finding of the secret scan',
        description: `Adds an entry (201), or answers the entry already there with the same fingerprint, file and route (200, unchanged). ${SCOPE} \`reason\` and \`file\` are scanned for secrets (422 \`secret_detected\`). Every scan from now on reads it, the machine's skill import included. Audited as \`secret-allowlist.add\`.`,
        body: sent(SecretAllowlistEntryBody, {
          fingerprint: FINGERPRINT,
          route: 'resource.register',
          reason: 'A revoked token kept in a test fixture.',
        }),
        response: {
          200: answer(SecretAllowlistEntry, 'Already there; unchanged.', {
            fingerprint: FINGERPRINT,
            route: 'resource.register',
            reason: 'A revoked token kept in a test fixture.',
            addedAt: AT,
          }),
          201: answer(SecretAllowlistEntry, 'Added.', {
            fingerprint: FINGERPRINT,
            route: 'resource.register',
            reason: 'A revoked token kept in a test fixture.',
            addedAt: AT,
          }),
          ...errors('validation_failed', 'secret_detected'),
        },
      },
    },
    async (request, reply) => {
      const { entry, created } = await secretAllowlist.add(request.body, actorOf(request.principal!));
      return reply.code(created ? 201 : 200).send(entry);
    },
  );

  app.delete(
    '/secret-allowlist',
    {
      schema: {
        tags: ['secret allowlist'],
        operationId: 'removeSecretAllowlistEntry',
        summary: 'Remove an entry of the secret allowlist',
        description:
          'Removes the entry with exactly this `fingerprint`, `file` and `route` (leave out the ones it has not): the finding is refused again from the next scan. 404 `allowlist_entry_not_found` when there is no such entry. Audited as `secret-allowlist.remove`.',
        querystring: SecretAllowlistQuery,
        response: {
          204: Type.Null({ description: 'Removed.' }),
          ...errors('validation_failed', 'allowlist_entry_not_found'),
        },
      },
    },
    async (request, reply) => {
      await secretAllowlist.remove(request.query, actorOf(request.principal!));
      return reply.code(204).send(null);
    },
  );
  done();
};
