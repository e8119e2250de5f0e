// The durable bootstrap (`initialPreamble[0]`): it names every effective resource and tells the agent where
// to read their records, in runtime variables only: never a concrete URL or a token. Also the workload's MCP
// server entry, whose header values are variable references.
import { MCP_SERVER_NAME, type McpServerEntry } from '../schemas/workload.js';

export function bootstrapPreamble(resourceIds: readonly string[]): string {
  const list = resourceIds.length > 0 ? resourceIds.map((id) => `- ${id}`).join('\n') : '- (none)';
  return [
    'Resources available to you in this thread (their records describe them; a record grants no right by itself):',
    list,
    'Read the record of each before you rely on it: `GET $HUABU_RFS_URL/resources` lists them and `GET $HUABU_RFS_URL/resources/<id>` returns one.',
    "An MCP client reads the same records as resources at `$HUABU_MCP_URL`, and calls the hosted capabilities your grant allows as tools; the workload's `mcpServers` entry configures it.",
    'Send `Authorization: Bearer $AGENTLET_TOKEN` with every request. These variables are in your environment; never print, log or copy the token.',
  ].join('\n');
}

/**
 * The ACP-ready `mcpServers` entry of a workload: the registry's MCP endpoint with the canvas token, the
 * thread's grant and its ID as variable references the driver fills in. Secrets never appear in a workload.
 */
export function mcpServerEntry(mcpUrl: string): McpServerEntry {
  return {
    type: 'http',
    name: MCP_SERVER_NAME,
    url: mcpUrl,
    headers: [
      { name: 'Authorization', value: 'Bearer $AGENTLET_TOKEN' },
      { name: 'X-Huabu-Resource-Grant', value: '$HUABU_RESOURCE_GRANT' },
      { name: 'X-Huabu-Thread-Id', value: '$HUABU_THREAD_ID' },
    ],
  };
}
