// The catalogue's discovery over MCP (docs/mcp.md): `resources/list` a page at a time (`nextCursor`), and
// the `find_resources` tool every canvas token lists, grant or not, so an agent searches, then reads what it
// found (progressive disclosure). Both go through the catalogue's pages and search (src/registry/catalogue-pages.ts)
// over the canvas's own scope, exactly as `GET <rfs>/resources?q=&limit=&cursor=` does.
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../errors.js';
import type { CataloguePages, ViewScope } from '../registry/catalogue-pages.js';
import { SEARCH_MAX_CHARS } from '../registry/search.js';
import type { StoredResource } from '../schemas/resource.js';

/** Records per `resources/list` page. */
export const MCP_PAGE_LIMIT = 100;
export const FIND_TOOL_NAME = 'find_resources';
/** The most matches `find_resources` answers (`limit`), and how many without one. */
export const FIND_MAX_LIMIT = 50;
export const FIND_DEFAULT_LIMIT = 10;

/** The tool as `tools/list` shows it. Its name cannot be a hosted capability's (IDs are kebab-case). */
export const FIND_TOOL: Tool = {
  name: FIND_TOOL_NAME,
  title: 'Find resources',
  description:
    'Search the records this canvas may read (skills, tools, connectors): every word of `query` must match, the last also as a prefix, longer words also with a typo. Answers the best matches first, each with its `uri`: read one with resources/read.',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: SEARCH_MAX_CHARS, description: 'Words to look for.' },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: FIND_MAX_LIMIT,
        description: `How many matches at most (default ${FIND_DEFAULT_LIMIT}).`,
      },
    },
    required: ['query'],
    additionalProperties: false,
  },
};

/** One page of `resources/list`: the records after `cursor`; 'Invalid params' for a cursor this list did not hand out. */
export async function listPage(
  pages: CataloguePages,
  scope: ViewScope,
  cursor: string | undefined,
): Promise<{ records: readonly StoredResource[]; nextCursor?: string }> {
  try {
    const page = await pages.page(scope, { limit: MCP_PAGE_LIMIT, ...(cursor === undefined ? {} : { cursor }) });
    return { records: page.records, ...(page.next === undefined ? {} : { nextCursor: page.next }) };
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_cursor') throw new McpError(ErrorCode.InvalidParams, err.message);
    throw err;
  }
}

/** What a match is shown as: its ID, title, description and URI. */
export interface Found {
  id: string;
  title: string;
  description: string;
  uri: string;
}

/** A `find_resources` call: the matches as structured content (and the same JSON as text), or an isError result. */
export async function findResources(
  pages: CataloguePages,
  scope: ViewScope,
  args: Record<string, unknown>,
  show: (record: StoredResource) => Found,
): Promise<CallToolResult> {
  const refuse = (message: string, code = 'validation_failed'): CallToolResult => ({
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}` }],
    structuredContent: { code, message },
  });
  const { query, limit = FIND_DEFAULT_LIMIT, ...rest } = args;
  if (Object.keys(rest).length > 0) return refuse('find_resources takes `query` and `limit` only.');
  if (typeof query !== 'string' || query.length === 0) return refuse('`query` must be a non-empty string.');
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > FIND_MAX_LIMIT) {
    return refuse(`\`limit\` must be an integer from 1 to ${FIND_MAX_LIMIT}.`);
  }
  try {
    const page = await pages.page(scope, { q: query, limit });
    const found = { resources: page.records.map(show) };
    return { content: [{ type: 'text', text: JSON.stringify(found) }], structuredContent: found };
  } catch (err) {
    if (err instanceof AppError && err.statusCode === 400) return refuse(err.message, err.code);
    throw err;
  }
}
