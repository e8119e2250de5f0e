// What a machine says reaches the owner scanned: every string of its answer (object keys included) that looks
// like a secret is withheld, replaced by a fixed text, and the rest arrives as sent. The same rule as the
// withheld error message of a failed job (src/routes/channel.ts), for the answers that succeed.
import type { ScanScope, SecretScanner } from './secret-scanner.js';

export const WITHHELD_TEXT = "[withheld: the machine's text looked like a secret]";

/** Every string of a JSON value with a pointer of its own; the n-th key of an object is `<object>#key<n>` (never the key itself). */
function* leaves(value: unknown, pointer: string): Generator<[string, string]> {
  if (typeof value === 'string') yield [pointer, value];
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* leaves(value[i], `${pointer}/${i}`);
  else if (value !== null && typeof value === 'object') {
    let n = 0;
    for (const [key, child] of Object.entries(value)) {
      yield [`${pointer}#key${n++}`, key];
      yield* leaves(child, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    }
  }
}

/** `value` with every string the scanner flags replaced by WITHHELD_TEXT (a flagged key by `withheld-<n>`); `withheld` counts them. */
export async function withholdSecrets<T>(scanner: SecretScanner, value: T, scope: ScanScope = {}): Promise<{ value: T; withheld: number }> {
  const flagged = new Set((await scanner.scan(leaves(value, ''), scope)).map((f) => f.field));
  if (flagged.size === 0) return { value, withheld: 0 };
  let withheld = 0;
  const rebuild = (node: unknown, pointer: string): unknown => {
    if (typeof node === 'string') {
      if (!flagged.has(pointer)) return node;
      withheld++;
      return WITHHELD_TEXT;
    }
    if (Array.isArray(node)) return node.map((child, i) => rebuild(child, `${pointer}/${i}`));
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [key, child] of Object.entries(node)) {
      const copy = rebuild(child, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
      if (flagged.has(`${pointer}#key${n++}`)) out[`withheld-${++withheld}`] = copy;
      else out[key] = copy;
    }
    return out;
  };
  return { value: rebuild(value, '') as T, withheld };
}
