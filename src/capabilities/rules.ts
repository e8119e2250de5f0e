// The small rules the capability projection is made of: when two resource names clash, which providers an
// agent can see together, and which `$VARIABLE`s an instruction may name. Pure; no I/O.
import { lookAlikeKey } from '../text/look-alike.js';
import { HOST_PROVIDER } from '../schemas/common.js';

/** The runtime variables an agent's environment provides (docs/records.md). */
export const RUNTIME_VARIABLES: readonly string[] = [
  'AGENTLET_TOKEN',
  'AGENT_RESOURCE_DIR',
  'HUABU_MCP_URL',
  'HUABU_RESOURCE_GRANT',
  'HUABU_RFS_URL',
  'HUABU_THREAD_ID',
];
const RUNTIME = new Set(RUNTIME_VARIABLES);

/** Names clash ignoring case, surrounding whitespace and look-alike characters (src/text/look-alike.ts). */
export function nameKey(name: string): string {
  return lookAlikeKey(name);
}

/**
 * True when an agent could see records of both providers at once: an agent on machine M reads the host's
 * records and M's own, so two host records, a host record and any machine's, or two of one machine clash.
 */
export function canSeeTogether(providerA: string, providerB: string): boolean {
  return providerA === HOST_PROVIDER || providerB === HOST_PROVIDER || providerA === providerB;
}

// `$NAME` or `${NAME...`, not escaped (`\$NAME`) and not after another `$` (`$$` is a shell PID).
const VARIABLE = /(?<![\\$])\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * The variables `text` names that are not runtime variables, sorted and unique. A name written in
 * environment style (upper case, digits, `_`) is checked; a name with a lower-case letter is taken for
 * prose or a placeholder (`$foo`, jq's `$x`) and ignored, unless it is a runtime variable in the wrong
 * case (`$huabu_rfs_url`), which would not expand either. `$5`, `$$` and `\$X` are not variables.
 */
export function unknownVariables(text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(VARIABLE)) {
    const name = (match[1] ?? match[2])!;
    if (RUNTIME.has(name)) continue;
    if (/[a-z]/.test(name) && !RUNTIME.has(name.toUpperCase())) continue;
    found.add(name);
  }
  return [...found].sort();
}
