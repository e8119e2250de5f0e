// Upstream's resources.json parser, re-stated for tests: what microsoft/Huabu's Agenetes store accepts
// (`external/agenetes/packages/resource-registry/src/store.ts` `parseRegistryFile` and the zod
// `agentResourceSchema` of `protocol/src/resource.ts`, both at commit a8514a7df0798d075ddffe50ef3bd7f0ddcd2d25).
// zod's `.trim()` trims before the bounds are checked; `z.object` drops unknown keys. Throws like upstream.

const ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function text(value: unknown, field: string, min: number, max: number): string {
  if (typeof value !== 'string') throw new Error(`${field} is not a string`);
  const v = value.trim();
  if (v.length < min || v.length > max) throw new Error(`${field} is out of bounds`);
  return v;
}

export interface UpstreamResourceV2 {
  schemaVersion: 2;
  id: string;
  name: string;
  displayName?: string;
  provider: string;
  sourceContent: string;
  userContent: string;
}

function parseResource(value: unknown): UpstreamResourceV2 {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a valid AgentResource');
  const r = value as Record<string, unknown>;
  if (r.schemaVersion !== 2) throw new Error('not a valid AgentResource');
  const id = text(r.id, 'id', 1, 128);
  if (!ID.test(id)) throw new Error('Resource ID must be lowercase kebab-case');
  return {
    schemaVersion: 2,
    id,
    name: text(r.name, 'name', 1, 128),
    ...(r.displayName === undefined ? {} : { displayName: text(r.displayName, 'displayName', 1, 128) }),
    provider: text(r.provider, 'provider', 1, 128),
    sourceContent: text(r.sourceContent, 'sourceContent', 1, 100_000),
    userContent: text(r.userContent, 'userContent', 0, 20_000),
  };
}

function migrateLegacyResource(value: unknown): UpstreamResourceV2 {
  const r = value as Record<string, unknown>;
  for (const k of ['id', 'name', 'provider', 'description', 'instructions'])
    if (typeof r?.[k] !== 'string') throw new Error('not a valid AgentResource');
  if (r.schemaVersion !== 1) throw new Error('not a valid AgentResource');
  return parseResource({
    schemaVersion: 2,
    id: r.id,
    name: r.name,
    provider: r.provider,
    sourceContent: `${(r.description as string).trim()}\n\n${(r.instructions as string).trim()}`,
    userContent: '',
  });
}

/** The state upstream's FileResourceRegistryStore.load() returns for this file text. */
export function upstreamLoad(fileText: string): { resources: UpstreamResourceV2[] } {
  const value = JSON.parse(fileText) as { schemaVersion?: unknown; state?: { resources?: unknown } };
  if (value === null || typeof value !== 'object' || typeof value.state !== 'object' || value.state === null) {
    throw new Error('Unsupported or invalid Resource Registry schema');
  }
  if (value.schemaVersion !== 1 && value.schemaVersion !== 2) throw new Error('Unsupported or invalid Resource Registry schema');
  if (!Array.isArray(value.state.resources)) throw new Error('Invalid Resource Registry state: resources must be an array');
  const resources = value.schemaVersion === 1 ? value.state.resources.map(migrateLegacyResource) : value.state.resources.map(parseResource);
  if (new Set(resources.map((r) => r.id)).size !== resources.length) throw new Error('Invalid Resource Registry: duplicate resource id');
  return { resources };
}
