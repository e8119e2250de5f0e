// The built-in hosted-capability adapters: a HOSTED_CAPABILITIES_FILE entry may name one of these instead
// of describing a generic endpoint. Each adapter (src/invocation/adapters/*.ts) is one object holding what
// differs between vendors: the HTTP method, the auth header and scheme, the endpoint and Huabu's defaults,
// the agent's input schema (the one Huabu's own agents are written against), and the mappings from that
// input to the vendor's request and from the vendor's answer to the result Huabu hands agents. This list is
// the one place a vendor is added: the capabilities file's `adapter` values, the outbound call and the
// docs' table of adapters all derive from it. The operator may override bounds, deadline, per-grant
// concurrency and the endpoint (a proxy, a test server). The vendor's key comes from the variable the entry
// names and travels only in the adapter's auth header. Framework-free.
import type { BuiltInAdapter } from './adapters/adapter.js';
import { braveSearch } from './adapters/brave-search.js';
import { openaiImages } from './adapters/openai-images.js';
import { tavilySearch } from './adapters/tavily-search.js';

export type { AdapterResult, BuiltInAdapter, VendorRequest } from './adapters/adapter.js';
export { imageSizeProblem } from './adapters/openai-images.js';

/** Every built-in adapter, one entry per vendor, in the order the docs list them. */
const ADAPTERS = [tavilySearch, braveSearch, openaiImages] as const;

export type AdapterName = (typeof ADAPTERS)[number]['name'];
/** The names of a tuple of adapters, as a tuple of literal types. */
type NamesOf<T extends readonly BuiltInAdapter[]> = { -readonly [K in keyof T]: T[K] extends BuiltInAdapter<infer N> ? N : never };
/** The adapters' names, in order (typed as a tuple, so a TypeBox union of them keeps its literal types). */
export const ADAPTER_NAMES = ADAPTERS.map((a) => a.name) as NamesOf<typeof ADAPTERS>;
export const BUILT_IN_ADAPTERS: Readonly<Record<AdapterName, BuiltInAdapter<AdapterName>>> = Object.fromEntries(
  ADAPTERS.map((a) => [a.name, a]),
) as Record<AdapterName, BuiltInAdapter<AdapterName>>;
if (new Set(ADAPTER_NAMES).size !== ADAPTERS.length) throw new Error('two built-in adapters share a name');

/** The adapters as the docs list them: a Markdown table, generated into docs/hosted-capabilities.md. */
export function adapterTable(): string {
  const rows = ADAPTERS.map((a) => {
    const auth = `\`${a.auth.header}: ${a.auth.scheme ? `${a.auth.scheme} ` : ''}<key>\``;
    const d = a.defaults;
    const limits = `${d.timeoutMs / 1000} s, ${d.perGrant.concurrency} in flight and ${d.perGrant.perMinute} a minute per grant`;
    const model = a.defaultModel === undefined ? '' : ` (model \`${a.defaultModel}\`)`;
    return `| \`${a.name}\` | ${a.capability} | [${a.vendor}](${a.reference})${model} | \`${a.method} ${d.endpoint}\` | ${auth} | ${limits} |`;
  });
  return ['| `adapter` | Capability | Vendor | Request | Key sent as | Defaults |', '| --- | --- | --- | --- | --- | --- |', ...rows].join(
    '\n',
  );
}
