// OpenAPI: the document is generated from the route schemas (the same TypeBox objects that validate),
// served at /openapi.json (serialized once, compressed once per coding), explored through Swagger UI at /docs,
// and written to openapi/openapi.json by `npm run generate` (scripts/generate.ts).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import Type from 'typebox';
import { ErrorBody } from '../schemas/common.js';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
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
        license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
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
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', tryItOutEnabled: false },
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

/** Per-status error responses for a route schema, each described by the codes it can carry. */
export function errors(...codes: ErrorCode[]): Record<number, typeof ErrorBody> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, typeof ErrorBody> = {};
  for (const [status, list] of byStatus) {
    const description = list.map((c) => `\`${c}\``).join(', ');
    out[status] = Type.Object(ErrorBody.properties, { additionalProperties: false, description });
  }
  return out;
}
