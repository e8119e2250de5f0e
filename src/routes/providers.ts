// Provider routes: a provider (the host `huabu` or one Agentlet machine) lists, registers, replaces,
// withdraws and reconciles its own records. `:provider` must be the caller's own provider ID.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';
import { protect } from '../http/auth.js';
import { answer, errors, sent } from '../http/openapi.js';
import { PDF_GREP_V1, PDF_GREP_V2 } from './examples.js';
import { EXPENSIVE_RECONCILE_RECORDS } from '../http/expensive-work.js';
import { LARGE_BODY_BYTES, LARGE_BODY_QUEUE, LARGE_BODY_WAIT_MS } from '../http/large-bodies.js';
import { HOST_PROVIDER, ProviderId, ResourceId } from '../schemas/common.js';
import { represent } from '../registry/resource-versions.js';
import {
  AnyAgentResource,
  AnyResourceList,
  AnyResourcePutBody,
  MAX_RECONCILE_RESOURCES,
  ReconcileBody,
  ReconcileResult,
  SchemaVersionQuery,
} from '../schemas/resource.js';
import type { RouteDeps } from './deps.js';

/** Reconcile bodies carry a whole set, so they may be larger than other bodies. */
export const RECONCILE_BODY_LIMIT = 8 * 1024 * 1024;

const ProviderParams = Type.Object({ provider: ProviderId });
const ResourceParams = Type.Object({ provider: ProviderId, id: ResourceId });

export const providerRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (app, { registry, machines, expensive, largeBodies }, done) => {
  protect(app, [app.requireProvider], ['providerToken']);
  app.addHook('onRequest', (request, _reply, done) => {
    const principal = request.principal;
    const { provider } = request.params as { provider?: string };
    if (principal?.kind !== 'provider' || principal.provider !== provider) {
      throw new AppError('forbidden', 'A provider may act only on its own provider path.');
    }
    done();
  });

  app.get(
    '/resources',
    {
      schema: {
        tags: ['providers'],
        operationId: 'listProviderResources',
        summary: "List the provider's own records",
        description:
          'The records the provider (`huabu`, or the machine whose token calls) registered, in the record version `schemaVersion` asks for (1 by default), sorted by ID: what a machine compares with its receipts before it reconciles.',
        params: ProviderParams,
        querystring: Type.Object({ schemaVersion: SchemaVersionQuery }, { additionalProperties: false }),
        response: {
          200: answer(AnyResourceList, "The provider's records, sorted by id.", { resources: [PDF_GREP_V1] }, { resources: [PDF_GREP_V2] }),
          ...errors('validation_failed'),
        },
      },
    },
    async (request) => ({
      resources: (await registry.listByProvider(request.params.provider)).map((r) => represent(r, request.query.schemaVersion ?? 1)),
    }),
  );

  app.put(
    '/resources/:id',
    {
      schema: {
        tags: ['providers'],
        operationId: 'putProviderResource',
        summary: 'Register or replace one record',
        description:
          "Creates an unused ID (201) or replaces the provider's own record (200), as record v1 or v2 (`schemaVersion` of the body); the answer is the record in that version. The owner's `displayName` and `userContent` are never taken from a provider (400) and survive a replace. An ID held by another provider is 409 `resource_conflict` and the held record is left unchanged. `id` and `provider` may be repeated in the body and must match. A machine's write past its record quota (`RECORDS_PER_MACHINE`, `RECORD_BYTES_PER_MACHINE`) is 409 `record_quota_exceeded` and writes nothing.",
        params: ResourceParams,
        body: AnyResourcePutBody,
        response: {
          200: answer(AnyAgentResource, 'Replaced (or already identical).', PDF_GREP_V1, PDF_GREP_V2),
          201: answer(AnyAgentResource, 'Created.', PDF_GREP_V1, PDF_GREP_V2),
          ...errors(
            'validation_failed',
            'resource_conflict',
            'record_quota_exceeded',
            'secret_detected',
            'rate_limited',
            'storage_unavailable',
          ),
        },
      },
    },
    async (request, reply) => {
      const { provider, id } = request.params;
      const { outcome, record } = await expensive.scanning(request, () =>
        registry.register(provider, id, request.body, actorOf(request.principal!)),
      );
      return reply.code(outcome === 'created' ? 201 : 200).send(represent(record, request.body.schemaVersion));
    },
  );

  app.delete(
    '/resources/:id',
    {
      schema: {
        tags: ['providers'],
        operationId: 'withdrawProviderResource',
        summary: 'Withdraw one record',
        description:
          "Removes the provider's own record. Profiles and workloads that name the ID keep it; resolving it later fails explicitly.",
        params: ResourceParams,
        response: {
          204: Type.Null({ description: 'Withdrawn.' }),
          ...errors('validation_failed', 'resource_not_found', 'resource_conflict', 'storage_unavailable'),
        },
      },
    },
    async (request, reply) => {
      const { provider, id } = request.params;
      await registry.withdraw(provider, id, actorOf(request.principal!));
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/resources',
    {
      bodyLimit: RECONCILE_BODY_LIMIT,
      preParsing: largeBodies.preParsing,
      schema: {
        tags: ['providers'],
        operationId: 'reconcileProviderResources',
        summary: "Reconcile the provider's whole set",
        description: `Replaces the provider's complete set (at most ${MAX_RECONCILE_RESOURCES} records, each record v1 or v2) in one atomic step; the owner's customization of a kept record survives: listed records are created or replaced, the provider's records left out are withdrawn. Any conflict rejects the whole request and changes nothing. \`?dryRun=true\` reports the plan only. A machine may add \`problems\`: the receipts it could not publish, shown for it in \`GET /api/acp/machines\` (a change of them is a \`machine.problems\` event); a reconcile without them clears them. A machine's set past its record quota (\`RECORDS_PER_MACHINE\`, \`RECORD_BYTES_PER_MACHINE\`) is 409 \`record_quota_exceeded\`, dry run too, and changes nothing. A body of ${LARGE_BODY_BYTES / 1024 / 1024} MiB or more waits for its turn (one is read and handled at a time); one that waits past ${LARGE_BODY_WAIT_MS / 1000} s, or finds ${LARGE_BODY_QUEUE} waiting, is 503 \`overloaded\` with Retry-After and changes nothing.`,
        params: ProviderParams,
        querystring: Type.Object(
          { dryRun: Type.Optional(Type.Boolean({ default: false, description: 'True: answer with the plan and change nothing.' })) },
          { additionalProperties: false },
        ),
        body: sent(ReconcileBody, {
          resources: [
            { schemaVersion: 2, id: 'pdf-grep', name: PDF_GREP_V2.name, sourceContent: PDF_GREP_V2.sourceContent },
            {
              schemaVersion: 1,
              id: 'repo-map',
              name: 'Repo map',
              description: 'Lists the files of a repository.',
              instructions: 'Run git ls-files in the repository.',
            },
          ],
        }),
        response: {
          200: answer(ReconcileResult, 'What changed (or would change, with dryRun).', {
            dryRun: false,
            created: ['pdf-grep'],
            replaced: ['csv-summary'],
            withdrawn: ['old-notes'],
            unchanged: ['repo-map'],
          }),
          ...errors(
            'validation_failed',
            'resource_conflict',
            'record_quota_exceeded',
            'secret_detected',
            'payload_too_large',
            'rate_limited',
            'overloaded',
            'storage_unavailable',
          ),
        },
      },
    },
    async (request) => {
      const { provider } = request.params;
      const { problems } = request.body;
      const dryRun = request.query.dryRun === true;
      const work = async () => {
        if (problems !== undefined) await machines.checkProblems(provider, problems);
        const result = await registry.reconcile(provider, request.body.resources, dryRun, actorOf(request.principal!));
        if (!dryRun && provider !== HOST_PROVIDER) machines.reportProblems(provider, problems ?? []);
        return result;
      };
      return request.body.resources.length >= EXPENSIVE_RECONCILE_RECORDS
        ? expensive.run(request, work)
        : expensive.scanning(request, work);
    },
  );
  done();
};
