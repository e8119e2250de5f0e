// Host policy for Huabu: the records the host publishes as provider `huabu` at start. Core never
// hard-codes these; the app seeds them when SEED_HUABU_RESOURCES is on, and the required default IDs come
// from configuration (REQUIRED_RESOURCE_IDS).
import { HOST_PROVIDER } from '../schemas/common.js';
import type { ResourcePutBody } from '../schemas/resource.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';

export const HUABU_RESOURCES: ReadonlyArray<ResourcePutBody & { id: string }> = [
  {
    schemaVersion: 1,
    id: 'huabu-access',
    name: 'Huabu access',
    description: 'How an agent reaches the Huabu canvas it works for: its resource catalogue and shared files.',
    instructions: [
      'You work for one Huabu canvas. Its resource file system is at $HUABU_RFS_URL.',
      'Send every request there with the header `Authorization: Bearer $AGENTLET_TOKEN`; the token is already in your environment, so never print or copy it.',
      'List the resources you may use with `GET $HUABU_RFS_URL/resources` and read one with `GET $HUABU_RFS_URL/resources/<id>`.',
      'A record tells you about a resource; it does not grant you the right to use it.',
    ].join('\n'),
  },
  {
    schemaVersion: 1,
    id: 'local-resource-management',
    name: 'Local resource management',
    description: 'How an agent finds the skills, tools and connectors installed on the machine it runs on.',
    instructions: [
      'Resources installed on this machine live under $AGENT_RESOURCE_DIR (skills/, tools/, connectors/).',
      'Each installed resource has a receipt in $AGENT_RESOURCE_DIR/receipts/<id>.json naming its entrypoint relative to that directory.',
      'Read the catalogue at $HUABU_RFS_URL/resources (header `Authorization: Bearer $AGENTLET_TOKEN`) to learn which of them you may use, and follow each record\'s instructions.',
      'Do not install, remove or modify resources yourself unless the owner asks you to.',
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
      'POST {"schemaVersion":1,"input":{"query":"..."}} to $HUABU_RFS_URL/resources/web-search/invoke with the headers `Authorization: Bearer $AGENTLET_TOKEN`, `X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT` and `X-Huabu-Thread-Id: $HUABU_THREAD_ID`.',
      'The answer is {"schemaVersion":1,"resourceId":"web-search","output":...}. A 429 answer names when to retry (Retry-After); 401 grant_expired means the grant ran out: stop and report it.',
      'Never print or copy the token or the grant.',
    ].join('\n'),
  },
  {
    schemaVersion: 1,
    id: 'generate-image',
    name: 'Generate image',
    description: 'Generate an image through the host, with credentials the host keeps.',
    instructions: [
      'POST {"schemaVersion":1,"input":{"prompt":"..."}} to $HUABU_RFS_URL/resources/generate-image/invoke with the headers `Authorization: Bearer $AGENTLET_TOKEN`, `X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT` and `X-Huabu-Thread-Id: $HUABU_THREAD_ID`.',
      'The answer is {"schemaVersion":1,"resourceId":"generate-image","output":...}. A 429 answer names when to retry (Retry-After); 401 grant_expired means the grant ran out: stop and report it.',
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
