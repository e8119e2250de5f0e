// OpenAPI: the document is generated from the route schemas (the same TypeBox objects that validate),
// served at /openapi.json (serialized once, compressed once per coding), explored through Swagger UI at /docs,
// and written to openapi/openapi.json by `npm run generate` (scripts/generate.ts).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import Type, { type Static, type TSchema } from 'typebox';
import { ErrorBody } from '../schemas/common.js';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { errorExample } from './error-examples.js';
import { CachedBody } from '../registry/catalogue-cache.js';
import { sendEncoded } from './compression.js';
import { DOCS_CSP } from './limits.js';

export const API_VERSION = '0.1.0';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Resource Registry',
        version: API_VERSION,
        description:
          'The machine-aware catalogue of what an AI agent may use. Providers (the host `huabu` or one Agentlet machine) register their resources; owners read the catalogue and enroll machines; agents read it through the canvas-scoped RFS boundary. A record describes a resource; it never grants the right to use it.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      tags: [
        { name: 'operations', description: 'Health, readiness and this document. No credential.' },
        { name: 'catalogue', description: 'The owner reads the whole catalogue.' },
        {
          name: 'profiles',
          description: 'The owner manages Agent Profiles: which resources an agent placed on a machine should know about.',
        },
        { name: 'machines', description: 'The owner enrolls Agentlet machines and revokes their credentials.' },
        {
          name: 'secret allowlist',
          description: 'The owner lets a finding of the secret scan that is no secret through, by its fingerprint.',
        },
        {
          name: 'skills',
          description:
            'The owner scans folders on a connected machine for skills, imports them into its resource root, refreshes them from their source and removes them.',
        },
        {
          name: 'capabilities',
          description: 'The owner reads one snapshot of every component, link and diagnostic, as JSON, Graphviz DOT or SVG.',
        },
        { name: 'canvas tokens', description: 'Short-lived tokens an agent uses to read the catalogue for one canvas.' },
        { name: 'providers', description: 'A provider registers, replaces and withdraws its own records.' },
        { name: 'workloads', description: 'The owner launches agent threads; each realized thread pins its resources durably.' },
        {
          name: 'rfs',
          description:
            'An agent reads the safe catalogue for its canvas and machine, and invokes the hosted capabilities its grant covers.',
        },
        {
          name: 'grants',
          description: 'Runtime-only resource grants: which hosted capabilities one realized thread may invoke, until when.',
        },
      ],
      components: {
        // The Authorize dialog lists these in this order, and opens on the first (AUTHORIZE_FOCUS below):
        // the owner token first, since the owner's console is who uses this page (docs/decisions/openapi-examples.md).
        securitySchemes: {
          ownerToken: { type: 'http', scheme: 'bearer', description: 'The owner token (OWNER_TOKEN).' },
          providerToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A provider token: the Huabu provider token (HUABU_PROVIDER_TOKEN) or a machine token from `POST /api/acp/machines`.',
          },
          canvasToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'A canvas token from `POST /api/acp/canvas-tokens` ($AGENTLET_TOKEN).',
          },
          resourceGrant: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Huabu-Resource-Grant',
            description: 'A resource grant from `POST /api/acp/grants` ($HUABU_RESOURCE_GRANT); sent together with the canvas token.',
          },
        },
      },
    },
    transformObject: (document) =>
      withoutQueryExamples(('openapiObject' in document ? document.openapiObject : document.swaggerObject) as OpenApiDocument) as object,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', tryItOutEnabled: false },
    theme: { title: 'Agent Resource Registry API', js: [{ filename: 'authorize-focus.js', content: AUTHORIZE_FOCUS }] },
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply.header('content-security-policy', DOCS_CSP);
        done();
      },
    },
  });
  // The document never changes while the process runs: serialized once, and each compressed copy built once.
  let document: CachedBody | undefined;
  app.get('/openapi.json', { schema: { hide: true } }, (request, reply) => {
    document ??= new CachedBody(JSON.stringify(app.swagger()), '"openapi"');
    return sendEncoded(reply, request.headers, document, { type: 'application/json; charset=utf-8', etag: 'none' });
  });
}

interface OpenApiDocument {
  paths?: Record<
    string,
    Record<string, { parameters?: { in: string; example?: unknown; examples?: unknown; schema?: Record<string, unknown> }[] }>
  >;
}

/**
 * Drops every query parameter's example. Swagger UI fills a parameter's `example` (and the first of its
 * `examples`) into the field as its value, so an example on an optional filter (`?provider=huabu`) made a
 * plain Execute return a filtered answer. The description says what a value looks like.
 */
export function withoutQueryExamples<T extends OpenApiDocument>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}))
    for (const operation of Object.values(operations))
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'query') continue;
        delete parameter.example;
        delete parameter.examples;
        if (parameter.schema) {
          delete parameter.schema.example;
          delete parameter.schema.examples;
        }
      }
  return document;
}

/**
 * Swagger UI's Authorize dialog focuses the input of every scheme as it opens, so the last one keeps the
 * focus and the dialog opens scrolled down to it. This page script focuses the first scheme instead.
 */
const AUTHORIZE_FOCUS = `"use strict";
new MutationObserver(function () {
  var dialog = document.querySelector(".dialog-ux .modal-ux");
  if (!dialog || dialog.getAttribute("data-focused")) return;
  dialog.setAttribute("data-focused", "first");
  var first = dialog.querySelector(".auth-container input");
  if (first) first.focus();
  var content = dialog.querySelector(".modal-ux-content");
  if (content) content.scrollTop = 0;
}).observe(document.documentElement, { childList: true, subtree: true });
`;

/** A named example of an OpenAPI media type: Swagger UI offers one per name. */
export interface NamedExample {
  summary: string;
  value: unknown;
}

/** An error response's schema: the envelope, described by its codes, with one example per code. */
export type ErrorResponse = typeof ErrorBody & { 'x-examples': Record<string, NamedExample> };

/**
 * Per-status error responses for a route schema, each described by the codes it can carry and with one
 * example per code (the envelope as sent: that code, its status). List every code the route answers.
 */
export function errors(...codes: ErrorCode[]): Record<number, ErrorResponse> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, ErrorResponse> = {};
  for (const [status, list] of byStatus) out[status] = errorResponse(list);
  return out;
}

function errorResponse(codes: readonly ErrorCode[]): ErrorResponse {
  const unique = [...new Set(codes)];
  const description = unique.map((c) => `\`${c}\``).join(', ');
  const examples = Object.fromEntries(unique.map((c) => [c, { summary: c, value: errorExample(c) }]));
  return Object.assign(Type.Object(ErrorBody.properties, { additionalProperties: false, description }), { 'x-examples': examples });
}

/** The codes an error response built by `errors()` documents (none for any other schema). */
export function documentedCodes(schema: unknown): ErrorCode[] {
  const examples = (schema as Partial<ErrorResponse> | undefined)?.['x-examples'];
  return examples ? (Object.keys(examples).filter((c) => Object.hasOwn(ERROR_CODES, c)) as ErrorCode[]) : [];
}

/**
 * A route's responses with `shared` (e.g. the refusals every protected route answers) added: where both
 * document errors of one status, that status lists the codes of both; otherwise the route's own schema wins.
 */
export function withErrors(shared: Record<number, ErrorResponse>, own: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...shared, ...own };
  for (const [status, schema] of Object.entries(shared)) {
    const mine = own?.[status];
    const codes = documentedCodes(mine);
    if (mine !== undefined && codes.length > 0) out[status] = errorResponse([...documentedCodes(schema), ...codes]);
  }
  return out;
}

/**
 * A success response: its schema, what it means, and the example Swagger UI shows for it: an answer as the
 * route sends it (test/http/openapi-examples.test.ts checks each against the schema). Give two or more when
 * the answer has shapes worth seeing apart. Written next to the route's schema:
 * `200: answer(Schema, 'The record.', { ... })`.
 */
export function answer<T extends TSchema>(
  schema: T,
  description: string,
  ...examples: [Static<T>, ...Static<T>[]]
): T & { description: string } {
  return { ...schema, description, examples };
}

/**
 * A request body's schema with the example Swagger UI fills in when "Try it out" is pressed (checked
 * against the schema by the same test): `body: sent(Body, { ... })`.
 */
export function sent<T extends TSchema>(schema: T, ...examples: [Static<T>, ...Static<T>[]]): T {
  return { ...schema, examples };
}
