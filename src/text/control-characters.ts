// Control characters in stored JSON values: finding the ones the text rules (text-rules.ts) refuse in keys and
// strings at any depth, and writing them out as escapes. Leaf module, no app imports.
import { ANY_CONTROL_CHARACTERS, LINE_CONTROL_CHARACTER, TEXT_CONTROL_CHARACTER } from './text-rules.js';

export { LINE_CONTROL_CHARACTER, TEXT_CONTROL_CHARACTER };

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

/**
 * The first control character a text field refuses (every C0 control and DEL but tab and newline; a line's
 * `expression` refuses those too), as `U+000D`, with its 1-based line; undefined when there is none.
 */
export function firstControlCharacter(
  text: string,
  expression: RegExp = TEXT_CONTROL_CHARACTER,
): { character: string; line: number } | undefined {
  const found = new RegExp(expression.source).exec(text);
  if (!found) return undefined;
  let line = 1;
  for (let at = text.indexOf('\n'); at !== -1 && at < found.index; at = text.indexOf('\n', at + 1)) line++;
  return { character: `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`, line };
}

/** `text` with every control character written out as its JSON escape (`\u0000`), visible and NUL-free. */
export function escapeControlCharacters(text: string): string {
  return text.replace(ANY_CONTROL_CHARACTERS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
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
