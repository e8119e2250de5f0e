// Control characters in stored text: what a text field refuses (every C0 control and DEL, except newline and
// tab, which are text) and what a key or single-line string refuses (all of them). Leaf module, no app imports.

/** A control character a text field refuses. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const TEXT_CONTROL_CHARACTER = /[\u0000-\u0008\u000B-\u001F\u007F]/;
/** A control character a key or single-line string refuses. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const LINE_CONTROL_CHARACTER = /[\u0000-\u001F\u007F]/;

/**
 * Where a JSON value holds a refused control character: in an object key, in a string, or nowhere. Walks
 * without recursion, so a value of any depth answers.
 */
export function findControlCharacter(value: unknown): 'key' | 'string' | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (TEXT_CONTROL_CHARACTER.test(item)) return 'string';
    } else if (item !== null && typeof item === 'object') {
      const isArray = Array.isArray(item);
      for (const [key, child] of Object.entries(item)) {
        if (!isArray && LINE_CONTROL_CHARACTER.test(key)) return 'key';
        stack.push(child);
      }
    }
  }
  return undefined;
}

// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const ANY_CONTROL_CHARACTER = /[\u0000-\u001F\u007F]/g;

/** `text` with every control character written out as its JSON escape (`\u0000`), visible and NUL-free. */
export function escapeControlCharacters(text: string): string {
  return text.replace(ANY_CONTROL_CHARACTER, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A JSON value with escapeControlCharacters applied to every key and string in it. */
export function escapeControlCharactersDeep(value: unknown): unknown {
  if (typeof value === 'string') return escapeControlCharacters(value);
  if (Array.isArray(value)) return value.map(escapeControlCharactersDeep);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [escapeControlCharacters(k), escapeControlCharactersDeep(v)]));
  }
  return value;
}
