// Host policy for Huabu: the records the host publishes as provider `huabu` at start. Core never
// hard-codes these; the app seeds them when SEED_HUABU_RESOURCES is on, and the required default IDs come
// from configuration (REQUIRED_RESOURCE_IDS).
import { HOST_PROVIDER } from '../schemas/common.js';
import type { ResourcePutBody } from '../schemas/resource.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';

/**
 * The two host skills every agent gets (the required defaults), as record v2. Their text sends the agent to
 * the guides this service serves over RFS (src/host/skills.ts); a store that holds them as the older v1
 * records is upgraded at start, keeping the owner's `displayName` and `userContent`.
 */
export const HUABU_RESOURCES: ReadonlyArray<ResourcePutBody & { id: string }> = [
  {
    schemaVersion: 2,
    id: 'huabu-access',
    name: 'Huabu access',
    sourceContent: [
      'How to work with the Huabu canvas you serve: its resource catalogue, hosted capabilities and agent profiles.',
      '',
      'Read the guide first: GET $HUABU_RFS_URL/skill/huabu-access with the header `Authorization: Bearer $AGENTLET_TOKEN` (GET $HUABU_RFS_URL/skill lists every guide of this host).',
      'List the resources you may use with GET $HUABU_RFS_URL/resources; invoke a hosted capability with POST $HUABU_RFS_URL/resources/<id>/invoke and the headers `X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT` and `X-Huabu-Thread-Id: $HUABU_THREAD_ID`.',
      'The token and the grant are already in your environment: never print or copy them. A record tells you about a resource; it does not grant you the right to use it.',
    ].join('\n'),
  },
  {
    schemaVersion: 2,
    id: 'local-resource-management',
    name: 'Local resource management',
    sourceContent: [
      'How to install, record and remove skills, tools and connectors on the machine you run on, under $AGENT_RESOURCE_DIR.',
      '',
      'Before you change anything there, read GET $HUABU_RFS_URL/skill/local-resource-management with the header `Authorization: Bearer $AGENTLET_TOKEN`.',
      'Change local resources only when the owner asks you to. Record an install with POST $HUABU_RFS_URL/resources/local/receipts and remove its record with DELETE $HUABU_RFS_URL/resources/local/receipts/<id>.',
    ].join('\n'),
  },
];

/**
 * Records for the hosted capabilities upstream Huabu ships, seeded only when the operator's
 * HOSTED_CAPABILITIES_FILE hosts that ID (a record without an endpoint would promise what nobody serves).
 * Shapes follow upstream's host records (microsoft/Huabu, the `web-search` and `generate-image` records
 * beside docs/architecture/agent-resources.md, read at commit 0e53b7eb538ed0c1b76c4018daca13e8c8fd82ce).
 */
export const HUABU_HOSTED_RESOURCES: ReadonlyArray<ResourcePutBody & { id: string }> = [
  {
    schemaVersion: 1,
    id: 'web-search',
    name: 'Web search',
    description: 'Search the web through the host, with credentials the host keeps.',
    instructions: [
      'POST {"schemaVersion":1,"correlationId":"<your label, optional>","input":{"query":"..."}} to $HUABU_RFS_URL/resources/web-search/invoke with the headers `Authorization: Bearer $AGENTLET_TOKEN`, `X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT` and `X-Huabu-Thread-Id: $HUABU_THREAD_ID`.',
      'The answer is {"schemaVersion":1,"resourceId":"web-search","result":...} (with your "correlationId" when you sent one). 429 quota_exceeded names when to retry (Retry-After); 403 forbidden with details.reason grant_expired means the grant ran out: stop and report it.',
      'Never print or copy the token or the grant.',
    ].join('\n'),
  },
  {
    schemaVersion: 1,
    id: 'generate-image',
    name: 'Generate image',
    description: 'Generate an image through the host, with credentials the host keeps.',
    instructions: [
      'POST {"schemaVersion":1,"correlationId":"<your label, optional>","input":{"prompt":"..."}} to $HUABU_RFS_URL/resources/generate-image/invoke with the headers `Authorization: Bearer $AGENTLET_TOKEN`, `X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT` and `X-Huabu-Thread-Id: $HUABU_THREAD_ID`.',
      'The answer is {"schemaVersion":1,"resourceId":"generate-image","result":...} (with your "correlationId" when you sent one). 429 quota_exceeded names when to retry (Retry-After); 403 forbidden with details.reason grant_expired means the grant ran out: stop and report it.',
      'Never print or copy the token or the grant.',
    ].join('\n'),
  },
];

/**
 * Registers (or refreshes) the host's own records as provider `huabu`, and the records of the hosted
 * capabilities in `hostedCapabilityIds` that the host knows how to describe. Records already stored as they
 * are are left alone.
 */
export async function seedHuabuResources(registry: ResourceRegistry, hostedCapabilityIds: readonly string[] = []): Promise<void> {
  const hosted = new Set(hostedCapabilityIds);
  for (const { id, ...body } of [...HUABU_RESOURCES, ...HUABU_HOSTED_RESOURCES.filter((r) => hosted.has(r.id))]) {
    // A restart finds them stored as they are: nothing to register, so nothing is scanned or audited (an
    // `unchanged` line per record per start said nothing, and the scan loaded its rule engines at every start).
    if (await registry.holdsUnchanged(HOST_PROVIDER, id, body)) continue;
    await registry.register(HOST_PROVIDER, id, body, 'host:seed');
  }
}
