// Look-alike text: the key under which names and aliases are compared (so `Reviewer`, `Rеviewer` with a
// Cyrillic е, `Ｒｅｖｉｅｗｅｒ` and `Re\u200Bviewer` clash), and the invisible and bidi-control characters
// refused in names and aliases. Leaf module, no app imports.
import { remove as removeConfusables } from 'confusables';

/**
 * Invisible and bidirectional-control characters: zero-width spaces and joiners, LRM/RLM/ALM, bidi
 * embeddings, overrides and isolates, word joiner and invisible operators, BOM, soft hyphen, Mongolian
 * vowel separator, Hangul fillers, variation selectors.
 */
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0]/u;
const INVISIBLE_ALL = new RegExp(INVISIBLE.source, 'gu');

/** True when `text` holds an invisible or bidi-control character. */
export function hasInvisible(text: string): boolean {
  return INVISIBLE.test(text);
}

/**
 * The comparison key: NFKC (full-width forms, ligatures, NBSP become their plain forms), invisible
 * characters dropped, each confusable replaced by its Latin look-alike (the `confusables` package's
 * skeleton), lower-cased, surrounding space trimmed and inner runs of space collapsed.
 */
export function lookAlikeKey(text: string): string {
  const normalized = text.normalize('NFKC').replace(INVISIBLE_ALL, '');
  return removeConfusables(normalized).normalize('NFKC').toLowerCase().trim().replace(/\s+/g, ' ');
}
