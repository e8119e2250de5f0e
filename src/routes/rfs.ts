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
import { CATALOGUE_HEADERS, defaultRepresentation, NotModified, sendPage, sendView } from './catalogue.js';
import { isPaged, type ViewScope } from '../registry/catalogue-pages.js';
import { providersVisibleOnMachine } from '../registry/visibility.js';
import { LINK_HEADER, PageQuery } from '../schemas/pages.js';
import type { RouteDeps } from './deps.js';
import type { IncomingHttpHeaders } from 'node:http';
import { THREAD_HEADER } from './invoke.js';
import { digestOf } from '../registry/record-digest.js';
import type { StoredResource } from '../schemas/resource.js';

const MARKDOWN = 'text/markdown; charset=utf-8';

/** The view of an agent on `canvasId` with a token of `machineId`: the host's records and the machine's. */
export function machineScope(canvasId: string, machineId: string): ViewScope {
  return { binding: `canvas:${canvasId}:machine:${machineId}`, providers: providersVisibleOnMachine(machineId) };
}

/** The optional thread header of the catalogue reads. */
const ThreadHeaders = Type.Object({
  'x-huabu-thread-id': Type.Optional(
    Type.String({
      description:
        'The reading thread (`$HUABU_THREAD_ID`): a realized workload of this canvas and machine reads the records its launch pinned as they were pinned. Any other value reads as without it.',
    }),
  ),
});

/** The thread a read names (`X-Huabu-Thread-Id`), if any. */
export function threadOf(headers: IncomingHttpHeaders): string | undefined {
  const value = headers[THREAD_HEADER];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export const rfsRoutes: FastifyPluginCallbackTypebox<RouteDeps> = (
  app,
  { registry, catalogue, pages, config, audit, profiles, expensive, threads },
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
          "The host's records and those of the token's machine, sorted by id, in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`). Each representation has its own `ETag`; answers `If-None-Match` with 304. Sent compressed (`br` or `gzip`) when `Accept-Encoding` asks for it, from a copy compressed once per change of the catalogue, with its own `ETag` per coding. With any of `q`, `limit`, `cursor`: one page of the same body, in (provider, id) order or by relevance with `q` (only the records this token may read are searched), and `Link: <…>; rel=\"next\"` while more remain; a walk through the pages yields every record that existed for the whole walk exactly once. With `X-Huabu-Thread-Id` of a realized workload of this canvas and machine, each record the thread's launch pinned is served as it was pinned (record v2 with that `digest`), and a pinned record withdrawn since is left out; pages are chosen from today's catalogue and then served so. Every other record, and a read without the header, is as above.",
        params: Type.Object({ canvasId: CanvasId }),
        headers: ThreadHeaders,
        querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery, ...PageQuery }, { additionalProperties: false }),
        response: {
          200: {
            ...answer(
              AnyResourceList,
              'The records this agent may read about.',
              { resources: [PDF_GREP_V1, WEB_SEARCH_V1] },
              { resources: [PDF_GREP_V2, WEB_SEARCH_V2] },
            ),
            headers: { ...CATALOGUE_HEADERS, ...LINK_HEADER },
          },
          304: NotModified,
          ...errors('validation_failed', 'invalid_cursor', 'search_too_broad'),
        },
      },
    },
    async (request, reply) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const representation = request.query.schemaVersion ?? byDefault;
      const threadId = threadOf(request.headers);
      const pins = threadId && (await threads.pinsOf(request.params.canvasId, machineId, threadId));
      const { q, limit, cursor } = request.query;
      if (isPaged({ q, limit, cursor })) {
        const scope = machineScope(request.params.canvasId, machineId);
        // A page is chosen from today's catalogue; a launched thread is then served the records it pinned as pinned.
        const served = pins ? (records: readonly StoredResource[]) => threads.listFor(records, machineId, pins) : undefined;
        const cache = { catalogue, revision: registry.revision() };
        return sendPage(reply, request, pages, {
          scope,
          representation,
          params: { q, limit, cursor },
          cache,
          ...(served ? { served } : {}),
        });
      }
      // A launched thread's view is cached like the machine's, per thread (it changes with the catalogue).
      return sendView(
        reply,
        request.headers,
        {
          catalogue,
          revision: registry.revision(),
          key: pins ? `thread:${machineId}:${threadId}` : `machine:${machineId}`,
          representation,
        },
        pins
          ? async () => threads.listFor(await registry.listVisibleOnMachine(machineId), machineId, pins)
          : () => registry.listVisibleOnMachine(machineId),
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
        description:
          "One record in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`). With `X-Huabu-Thread-Id` of a realized workload of this canvas and machine, a record the thread's launch pinned is served as it was pinned, with its digest in `X-Resource-Digest` (every record read so carries the header); a pinned record withdrawn since is 410 `resource_withdrawn`. The header never shows a record the token could not read without it.",
        params: Type.Object({ canvasId: CanvasId, id: ResourceId }),
        headers: ThreadHeaders,
        querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery }, { additionalProperties: false }),
        response: {
          200: {
            ...answer(AnyAgentResource, 'The record.', WEB_SEARCH_V1, WEB_SEARCH_V2),
            headers: {
              'x-resource-digest': Type.String({ description: "The served content's digest; sent on reads that name a launched thread." }),
            },
          },
          ...errors('validation_failed', 'resource_not_found', 'resource_withdrawn'),
        },
      },
    },
    async (request, reply) => {
      const machineId = (request.principal as { agentletId: string }).agentletId;
      const { id } = request.params;
      const pins = await threads.pinsOf(request.params.canvasId, machineId, threadOf(request.headers));
      if (!pins) return represent(await registry.getVisibleOnMachine(id, machineId), request.query.schemaVersion ?? byDefault);
      const current = await registry.getVisibleOnMachine(id, machineId).catch(() => undefined);
      const record = await threads.contentFor(id, current, machineId, pins);
      if (!record) throw new AppError('resource_not_found', `No resource with ID ${id} for this agent.`, { id });
      reply.header('x-resource-digest', digestOf(record));
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
