// RFS: what an agent reads and records with its canvas token. The safe catalogue for its canvas (the host's
// records and those of the token's machine), the host skills' guides, the agent profiles of its machine,
// and the local receipts of what it installed there. A token for another canvas is 403 and reveals nothing.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { actorOf } from '../credentials/principal.js';
import { AppError } from '../errors.js';
import { hostSkill, SKILL_INDEX } from '../host/skills.js';
import { protect, requireUrlCanvas } from '../http/auth.js';
import { answer, errors } from '../http/openapi.js';
import { WEB_SEARCH_V1, WEB_SEARCH_V2, PDF_GREP_V1, PDF_GREP_V2, PROFILE } from './examples.js';
import { LocalReceipts } from '../registry/local-receipts.js';
import { CanvasId, ResourceId } from '../schemas/common.js';
import { represent } from '../registry/resource-versions.js';
import { AnyAgentResource, AnyResourceList, CompatSchemaVersionQuery } from '../schemas/resource.js';
import { LocalReceiptBody, LocalReceiptRemoval, LocalReceiptResult, RfsAgentProfiles, SkillName } from '../schemas/rfs.js';
import { CATALOGUE_HEADERS, defaultRepresentation, NotModified, sendView } from './catalogue.js';
import type { RouteDeps } from './deps.js';

const MARKDOWN = 'text/markdown; charset=utf-8';

export const rfsRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (
  app,
  { registry, catalogue, config, audit, profiles, expensive },
  done,
) => {
  const byDefault = defaultRepresentation(config);
  const receipts = new LocalReceipts(registry, audit);
  const machineOf = (principal: unknown) => (principal as { agentletId: string }).agentletId;
  protect(app, [app.requireCanvas], ['canvasToken']);
  requireUrlCanvas(app);

  app.get(
    '/resources',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'listRfsResources',
        summary: "Read the agent's catalogue",
        description:
          "The host's records and those of the token's machine, sorted by id, in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`). Each representation has its own `ETag`; answers `If-None-Match` with 304. Sent compressed (`br` or `gzip`) when `Accept-Encoding` asks for it, from a copy compressed once per change of the catalogue, with its own `ETag` per coding.",
        params: Type.Object({ canvasId: CanvasId }),
        querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery }, { additionalProperties: false }),
        response: {
          200: {
            ...answer(
              AnyResourceList,
              'The records this agent may read about.',
              { resources: [PDF_GREP_V1, WEB_SEARCH_V1] },
              { resources: [PDF_GREP_V2, WEB_SEARCH_V2] },
            ),
            headers: CATALOGUE_HEADERS,
          },
          304: NotModified,
          ...errors('validation_failed'),
        },
      },
    },
    (request, reply) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const representation = request.query.schemaVersion ?? byDefault;
      return sendView(
        reply,
        request.headers,
        { catalogue, revision: registry.revision(), key: `machine:${machineId}`, representation },
        () => registry.listVisibleOnMachine(machineId),
      );
    },
  );

  app.get(
    '/resources/:id',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'getRfsResource',
        summary: 'Read one record',
        description: 'One record in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`).',
        params: Type.Object({ canvasId: CanvasId, id: ResourceId }),
        querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery }, { additionalProperties: false }),
        response: {
          200: answer(AnyAgentResource, 'The record.', WEB_SEARCH_V1, WEB_SEARCH_V2),
          ...errors('validation_failed', 'resource_not_found'),
        },
      },
    },
    async (request) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const record = await registry.getVisibleOnMachine(request.params.id, machineId);
      return represent(record, request.query.schemaVersion ?? byDefault);
    },
  );

  const markdownResponse = (description: string) => ({
    description,
    content: { 'text/markdown': { schema: Type.String({ description: 'Markdown.' }) } },
  });

  app.get(
    '/skill',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'listRfsSkills',
        summary: "Read the index of the host's guides",
        description:
          'Markdown (`text/markdown; charset=utf-8`): the guides this host serves to agents, each read with `GET /skill/<name>`: `huabu-access` (the catalogue, hosted capabilities with the grant, agent profiles) and `local-resource-management` (installing on the machine and recording it with a local receipt).',
        params: Type.Object({ canvasId: CanvasId }),
        response: { 200: markdownResponse('The index.') },
      },
    },
    async (_request, reply) => reply.type(MARKDOWN).send(SKILL_INDEX),
  );

  app.get(
    '/skill/:name',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'getRfsSkill',
        summary: 'Read one host guide',
        description:
          'Markdown (`text/markdown; charset=utf-8`): the guide the host record of the same ID points to. An unknown name is 404 `skill_not_found`.',
        params: Type.Object({ canvasId: CanvasId, name: SkillName }),
        response: { 200: markdownResponse('The guide.'), ...errors('validation_failed', 'skill_not_found') },
      },
    },
    async (request, reply) => {
      const skill = hostSkill(request.params.name);
      if (!skill)
        throw new AppError('skill_not_found', `No host guide named ${request.params.name}; GET /skill lists them.`, {
          name: request.params.name,
        });
      return reply.type(MARKDOWN).send(skill.markdown);
    },
  );

  app.get(
    '/agent/profiles',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'listRfsAgentProfiles',
        summary: 'List the agent profiles of this machine',
        description:
          "The profiles an agent on this canvas may start another agent from: the selectable profiles (every `acp-command` profile; a manifest-backed one once its Agent Team member is ready) placed on the token's machine, in the registry's order, as `{id, alias}`. The first carries `default: true`. Profiles of other machines are left out.",
        params: Type.Object({ canvasId: CanvasId }),
        response: {
          200: answer(RfsAgentProfiles, 'The profiles.', {
            profiles: [
              { id: PROFILE.id, alias: PROFILE.alias, default: true },
              { id: 'prf-w3x8c1v6b9n2m5q7', alias: 'Writer' },
            ],
          }),
        },
      },
    },
    async (request) => {
      const machineId = machineOf(request.principal);
      const { profiles: all, selectableProfileIds } = await profiles.listWithSelectable();
      const selectable = new Set(selectableProfileIds);
      const mine = all.filter((p) => selectable.has(p.id) && p.agentletId === machineId);
      return { profiles: mine.map((p, i) => ({ id: p.id, alias: p.alias, ...(i === 0 ? { default: true as const } : {}) })) };
    },
  );

  app.post(
    '/resources/local/receipts',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'recordLocalReceipt',
        summary: 'Record what the agent installed on its machine',
        description:
          "Registers (or replaces) the record of a skill, tool or connector the agent installed on its machine: the token's machine is the provider, and the record is v2 `{name, sourceContent}` (the owner's `displayName` and `userContent` of a replaced record are kept). `kind`, `entrypoint` and `source` stay on the machine. An ID of the host (the IDs every write reserves: required defaults and hosted capabilities; any record of `huabu`) is 403 `forbidden`; another machine's is 409 `resource_conflict`; a new or larger record past the machine's record quota (`RECORDS_PER_MACHINE`, `RECORD_BYTES_PER_MACHINE`) is 409 `record_quota_exceeded`. Every text field is scanned for secrets (422 `secret_detected`). Audited as `receipt.record`; rate-limited like every write, and one carrying 64 Ki characters of text or more counts as expensive work (at most 2 in progress per credential, then 429 `rate_limited` with `Retry-After: 1`).",
        params: Type.Object({ canvasId: CanvasId }),
        body: LocalReceiptBody,
        response: {
          200: answer(LocalReceiptResult, 'The record, as record v2, in `resource`.', { resource: PDF_GREP_V2 }),
          ...errors(
            'validation_failed',
            'forbidden',
            'resource_conflict',
            'record_quota_exceeded',
            'secret_detected',
            'rate_limited',
            'storage_unavailable',
          ),
        },
      },
    },
    // Up to 100,000 characters to scan: past EXPENSIVE_SCAN_CHARS a receipt is expensive work, as a provider's write is.
    async (request) => ({
      resource: await expensive.scanning(request, () =>
        receipts.record(machineOf(request.principal), request.body, actorOf(request.principal!)),
      ),
    }),
  );

  app.delete(
    '/resources/local/receipts/:id',
    {
      schema: {
        tags: ['rfs'],
        operationId: 'removeLocalReceipt',
        summary: 'Remove the record of a local install',
        description:
          "Withdraws the token's machine's record `id` (remove the installed files first): `{removed: true}`, or `{removed: false}` when no record has that ID. An ID of the host is 403 `forbidden`; another machine's is 409 `resource_conflict`. Audited as `receipt.remove`; rate-limited like every write.",
        params: Type.Object({ canvasId: CanvasId, id: ResourceId }),
        response: {
          200: answer(LocalReceiptRemoval, 'Whether a record was withdrawn.', { removed: true }),
          ...errors('validation_failed', 'forbidden', 'resource_conflict', 'rate_limited', 'storage_unavailable'),
        },
      },
    },
    async (request) => ({ removed: await receipts.remove(machineOf(request.principal), request.params.id, actorOf(request.principal!)) }),
  );
  done();
};
