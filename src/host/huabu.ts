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

/** Registers (or refreshes) the host's own records as provider `huabu`. */
export async function seedHuabuResources(registry: ResourceRegistry): Promise<void> {
  for (const { id, ...body } of HUABU_RESOURCES) {
    await registry.register(HOST_PROVIDER, id, body, 'host:seed');
  }
}
