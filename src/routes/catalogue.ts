// Owner catalogue: the whole catalogue (cached, pre-serialized, with ETag), one record, and the dry-run
// validator (owner or provider).
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import Type from 'typebox';
import { protect } from '../http/auth.js';
import { sendEncoded } from '../http/compression.js';
import { answer, errors, sent } from '../http/openapi.js';
import { WEB_SEARCH_V1, WEB_SEARCH_V2, PDF_GREP_V1, PDF_GREP_V2 } from './examples.js';
import { catalogueBody, type CachedBody, type CatalogueCache } from '../registry/catalogue-cache.js';
import { isPaged, type CataloguePages, type PageParams, type ViewScope } from '../registry/catalogue-pages.js';
import { LINK_HEADER, PageQuery } from '../schemas/pages.js';
import { ProviderId, ResourceId } from '../schemas/common.js';
import { actorOf } from '../credentials/principal.js';
import { answerV2, represent } from '../registry/resource-versions.js';
import {
  AnyAgentResource,
  AnyOwnerResourceList,
  ResourceCustomization,
  ResourceMutationResult,
  CompatSchemaVersionQuery,
  ValidateResult,
  type Representation,
  type StoredResource,
} from '../schemas/resource.js';
import type { Config } from '../config.js';
import type { RouteDeps } from './deps.js';

/**
 * The representation of an owner or RFS read that names no `?schemaVersion`: record v1 (every v1 client's
 * bytes), or record v2 under `HUABU_COMPAT=1` (upstream's UI and agents read v2 without asking).
 */
export function defaultRepresentation(config: Config): Representation {
  return config.huabuCompat ? 2 : 1;
}

/**
 * Sends a cached catalogue body in the coding `Accept-Encoding` asks for (br, gzip, or as it is), or 304
 * when the client already holds that coding's ETag (`sendEncoded`). A compressed body comes from the cache
 * entry (built once per revision), never compressed per request.
 */
export function sendCatalogue(reply: FastifyReply, headers: IncomingHttpHeaders, cached: CachedBody): FastifyReply | Promise<FastifyReply> {
  reply.header('cache-control', 'private, no-cache');
  return sendEncoded(reply, headers, cached, { type: 'application/json; charset=utf-8' });
}

/**
 * A catalogue view's handler: the cached body at the store's current revision, sent (or 304) without a turn
 * of the event loop when it is cached — the common read, an agent or the UI polling with `If-None-Match` —
 * and built from `select` first on a miss. Returns undefined once sent, or the promise Fastify waits on.
 */
export function sendView(
  reply: FastifyReply,
  headers: IncomingHttpHeaders,
  view: { catalogue: CatalogueCache; revision: string; key: string; representation: Representation },
  select: () => Promise<readonly StoredResource[]>,
  besides?: (records: readonly StoredResource[]) => Record<string, unknown>,
): undefined | Promise<FastifyReply> {
  const { catalogue, revision, key, representation } = view;
  const hit = catalogue.hit(revision, key, representation);
  const sent = hit
    ? sendCatalogue(reply, headers, hit)
    : catalogue.get(revision, key, representation, select, besides).then((cached) => sendCatalogue(reply, headers, cached));
  return sent === reply ? undefined : (sent as Promise<FastifyReply>);
}

/** The request URL with its `cursor` set to `cursor`: the page after this one. */
function nextUrl(url: string, cursor: string): string {
  const next = new URL(url, 'http://localhost');
  next.searchParams.set('cursor', cursor);
  return `${next.pathname}${next.search}`;
}

/**
 * A paged or searched read of a view (`isPaged`): the page the parameters ask for, in `representation`,
 * with `Link: <…>; rel="next"` while more remain. A page is kept in `cache.catalogue` until the revision
 * changes, so the same page read again (the first page of a picker, an agent's search) is sent without a
 * turn of the event loop, compressed once. A page served as a launched thread pinned it is built per request.
 * Returns undefined once sent, or the promise Fastify waits on.
 */
export function sendPage(
  reply: FastifyReply,
  request: { url: string; headers: IncomingHttpHeaders },
  pages: CataloguePages,
  view: {
    scope: ViewScope;
    representation: Representation;
    params: PageParams;
    cache: { catalogue: CatalogueCache; revision: string };
    /** What the page's records are served as (a launched thread's pins); absent: as they are. */
    served?: (records: readonly StoredResource[]) => Promise<readonly StoredResource[]>;
  },
  besides?: (records: readonly StoredResource[]) => Record<string, unknown>,
): undefined | Promise<FastifyReply> {
  const { scope, representation, params, served } = view;
  const send = ({ body, next }: { body: CachedBody; next?: string | undefined }) => {
    if (next !== undefined) reply.header('link', `<${nextUrl(request.url, next)}>; rel="next"`);
    return sendCatalogue(reply, request.headers, body);
  };
  if (served) {
    return pages
      .page(scope, params)
      .then(async ({ records, next }) =>
        send({ body: catalogueBody(await served(records), representation, besides, { kept: false }), next }),
      );
  }
  const { catalogue, revision } = view.cache;
  const key = JSON.stringify([scope.binding, representation, params.q, params.limit, params.cursor]);
  const hit = catalogue.pageHit(revision, key);
  const sent = hit ? send(hit) : catalogue.page(revision, key, representation, () => pages.page(scope, params), besides).then(send);
  return sent === reply ? undefined : (sent as Promise<FastifyReply>);
}

/** The response headers of a catalogue list, as @fastify/swagger documents them. */
export const CATALOGUE_HEADERS = {
  etag: Type.String({
    description:
      'The body\'s content ETag, one per representation and per coding: `"<digest>"` as it is, `"<digest>-br"` and `"<digest>-gz"` compressed. `If-None-Match` answers 304 only with the ETag of the coding this request would get.',
  }),
  vary: Type.Literal('Accept-Encoding', { description: "Always sent: the body's coding follows `Accept-Encoding`." }),
  'content-encoding': Type.Union([Type.Literal('br'), Type.Literal('gzip')], {
    description:
      'Present when the body is compressed: `br` or `gzip` as `Accept-Encoding` ranks them (br on a tie); absent without `Accept-Encoding` and for bodies under 1 KiB.',
  }),
};

export const NotModified = Type.Null({ description: 'Not modified: the `If-None-Match` ETag is current; no body.' });

export const catalogueRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { registry, catalogue, pages, expensive, config }) => {
  const byDefault = defaultRepresentation(config);
  await app.register((scope, _options, done) => {
    const owner = scope.withTypeProvider<TypeBoxTypeProvider>();
    protect(owner, [owner.requireOwner], ['ownerToken']);

    owner.get(
      '/resources',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'listResources',
          summary: 'Read the catalogue, whole or a page at a time',
          description:
            'Without `q`, `limit` and `cursor`: all records sorted by id, optionally of one provider, in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`). As record v2, the whole catalogue (no `provider`) also carries `manageableResourceIds`: the IDs the owner may import again, refresh or delete (`[]` when none); a v1 body, and a list of one provider, is `{resources}` alone. Each representation has its own `ETag`; answers `If-None-Match` with 304. Sent compressed (`br` or `gzip`) when `Accept-Encoding` asks for it, from a copy compressed once per change of the catalogue, with its own `ETag` per coding. With any of `q`, `limit`, `cursor`: one page of the same body (`manageableResourceIds` then names the page\'s manageable records), in (provider, id) order or by relevance with `q`, and `Link: <…>; rel="next"` while more remain; a walk through the pages yields every record that existed for the whole walk exactly once, whatever is written meanwhile.',
          querystring: Type.Object(
            { provider: Type.Optional(ProviderId), schemaVersion: CompatSchemaVersionQuery, ...PageQuery },
            { additionalProperties: false },
          ),
          response: {
            200: {
              ...answer(
                AnyOwnerResourceList,
                'The catalogue.',
                { resources: [PDF_GREP_V1, WEB_SEARCH_V1] },
                { resources: [PDF_GREP_V2, WEB_SEARCH_V2], manageableResourceIds: ['pdf-grep'] },
              ),
              headers: { ...CATALOGUE_HEADERS, ...LINK_HEADER },
            },
            304: NotModified,
            ...errors('validation_failed', 'invalid_cursor', 'search_too_broad'),
          },
        },
      },
      (request, reply) => {
        const { provider, schemaVersion = byDefault, q, limit, cursor } = request.query;
        const key = provider === undefined ? 'all' : `provider:${provider}`;
        const besides =
          schemaVersion === 2 && provider === undefined
            ? (records: readonly StoredResource[]) => ({ manageableResourceIds: registry.manageableIds(records) })
            : undefined;
        const params = { q, limit, cursor };
        if (isPaged(params)) {
          const scope = { binding: `owner:${key}`, ...(provider === undefined ? {} : { providers: [provider] }) };
          const cache = { catalogue, revision: registry.revision() };
          return sendPage(reply, request, pages, { scope, representation: schemaVersion, params, cache }, besides);
        }
        return sendView(
          reply,
          request.headers,
          { catalogue, revision: registry.revision(), key, representation: schemaVersion },
          () => (provider === undefined ? registry.list() : registry.listByProvider(provider)),
          besides,
        );
      },
    );

    owner.get(
      '/resources/:id',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'getResource',
          summary: 'Read one record',
          description: 'One record in the representation `schemaVersion` asks for (1 or 2; without it 1, or 2 under `HUABU_COMPAT=1`).',
          params: Type.Object({ id: ResourceId }),
          querystring: Type.Object({ schemaVersion: CompatSchemaVersionQuery }, { additionalProperties: false }),
          response: {
            200: answer(AnyAgentResource, 'The record.', WEB_SEARCH_V1, WEB_SEARCH_V2),
            ...errors('validation_failed', 'resource_not_found'),
          },
        },
      },
      async (request) => represent(await registry.get(request.params.id), request.query.schemaVersion ?? byDefault),
    );

    owner.patch(
      '/resources/:id',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'customizeResource',
          summary: "Customize a record (the owner's fields)",
          description:
            "Sets the owner's `displayName` (`null` clears it) and `userContent` (`''` clears it) of any record, whichever version its provider wrote. A provider's later replace or reconcile keeps them. Answers `{resource}`: the record v2. Both fields are scanned for secrets.",
          params: Type.Object({ id: ResourceId }),
          body: sent(ResourceCustomization, { displayName: 'Grep in PDFs', userContent: 'Prefer this to opening PDFs page by page.' }),
          response: {
            200: answer(ResourceMutationResult, 'The customized record, as record v2, in `resource`.', { resource: PDF_GREP_V2 }),
            ...errors('validation_failed', 'resource_not_found', 'secret_detected', 'storage_unavailable'),
          },
        },
      },
      async (request) => ({ resource: answerV2(await registry.customize(request.params.id, request.body, actorOf(request.principal!))) }),
    );
    done();
  });

  await app.register((scope, _options, done) => {
    const checker = scope.withTypeProvider<TypeBoxTypeProvider>();
    protect(checker, [checker.requireOwner, checker.requireProvider], ['ownerToken', 'providerToken']);
    checker.post(
      '/resources/validate',
      {
        schema: {
          tags: ['catalogue'],
          operationId: 'validateResource',
          summary: 'Check a candidate record without storing it',
          description:
            "Reports every problem of a candidate record: schema rules, secrets, ownership (when the ID is taken), a name an agent could see twice (`duplicate_resource_name`: another ID with the same name ignoring case and surrounding space, of the host, or of the same machine, or any provider when the candidate is the host's) and `$VARIABLE`s outside the runtime set (`unknown_variable`, a warning). A provider checks a record as its own; the owner may name the `provider`. Nothing is stored.",
          body: Type.Unknown({
            description:
              'A candidate AgentResource: `{schemaVersion: 1, id, name, description, instructions, provider?}` or `{schemaVersion: 2, id, name, sourceContent, provider?}`.',
          }),
          response: {
            200: answer(ValidateResult, 'The issues found (empty when valid).', {
              valid: false,
              issues: [
                {
                  code: 'unknown_variable',
                  field: 'sourceContent',
                  severity: 'warning',
                  message: '$SEARCH_URL is not a runtime variable; an agent will not find it in its environment.',
                },
                {
                  code: 'resource_conflict',
                  field: 'id',
                  severity: 'error',
                  message: 'Resource pdf-grep belongs to provider agentlet-7f3a.',
                },
              ],
            }),
            ...errors('validation_failed', 'rate_limited'),
          },
        },
      },
      async (request) => {
        const principal = request.principal!;
        return expensive.scanning(request, () =>
          registry.validate(request.body, principal.kind === 'provider' ? principal.provider : undefined),
        );
      },
    );
    done();
  });
};
