// Look-alike text: the key under which names and aliases are compared (UTS #39 confusable skeletons from
// Unicode's confusables.txt, ignoring case, so `Ivan`, `Іvan` with a Cyrillic І, `Ｉｖａｎ` and `IVAN`
// clash, as do `Modem` and `Modern`), and the invisible characters refused in names and aliases, by Unicode
// property. Leaf module, no app imports.
import { CONFUSABLES_TABLE } from './confusables-data.js';

/** Every Default_Ignorable_Code_Point (zero-width characters, tags, variation selectors...) and bidi control. */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Bidi_Control}]/u;
const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'gu');

/** confusables.txt: each source code point's prototype. */
const PROTOTYPES: ReadonlyMap<number, string> = new Map(
  CONFUSABLES_TABLE.split(/\s+/)
    .filter((entry) => entry !== '')
    .map((entry) => {
      const [source, prototype] = entry.split(':') as [string, string];
      return [Number.parseInt(source, 16), String.fromCodePoint(...prototype.split('+').map((cp) => Number.parseInt(cp, 16)))];
    }),
);

/** True when `text` holds an invisible or bidi-control character. */
export function hasInvisible(text: string): boolean {
  return INVISIBLE.test(text);
}

/**
 * The UTS #39 skeleton: NFD, default-ignorable characters removed, each character replaced by its
 * confusables.txt prototype, NFD again. Case-sensitive, as the data is (`I` → `l`, `m` → `rn`).
 */
export function skeleton(text: string): string {
  let out = '';
  for (const ch of text.normalize('NFD').replace(INVISIBLE_ALL, '')) out += PROTOTYPES.get(ch.codePointAt(0)!) ?? ch;
  return out.normalize('NFD');
}

/**
 * The comparison key: NFKC, then the skeleton of the upper-case form, lower-cased, skeletonized again,
 * surrounding space trimmed and inner runs of space collapsed. It depends on the text only through its
 * upper-case form, so case variants always share it; the upper-case skeleton catches capitals that only
 * look like Latin ones (Cyrillic `В`, `Т`), the second skeleton small letters (`һ`, `ɑ`, `m` → `rn`).
 * Confusables and case together also join `I`, `l`, `i` and `1`.
 */
export function lookAlikeKey(text: string): string {
  return (asciiKey(text) ?? fullKey(text)).trim().replace(/\s+/g, ' ');
}

function fullKey(text: string): string {
  const upper = text.normalize('NFKC').toLowerCase().toUpperCase();
  return skeleton(skeleton(upper).toLowerCase());
}

// On ASCII text every step works character by character (normalization is the identity, case mapping has
// no context), so the key is the concatenation of each character's own key while those stay ASCII: the
// common case, at a fraction of the cost, for stores that key every alias on each write.
const ASCII_KEYS: ReadonlyArray<string | undefined> = Array.from({ length: 128 }, (_, code) => {
  const key = fullKey(String.fromCharCode(code));
  return /^\p{ASCII}*$/u.test(key) ? key : undefined;
});

function asciiKey(text: string): string | undefined {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const key = ASCII_KEYS[text.charCodeAt(i)];
    if (key === undefined) return undefined;
    out += key;
  }
  return out;
}
