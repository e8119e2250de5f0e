// Catalogue search, the rules both stores share (docs/decisions/search-and-pages.md): how text becomes words,
// how a query becomes terms (every word, the last one also as a prefix, one edit of fuzziness for words of
// FUZZY_MIN_LETTERS letters or more), which text of a record weighs what, and a match's tier. A store finds
// the records whose fields hold every term (MiniSearch's index in the JSON store, a GIN-indexed tsvector in
// PostgreSQL) and orders them by tier, then (provider, id). A tier depends only on the record and the query,
// never on the rest of the catalogue: a record's place in the answer is the same whoever else is in it.
import { AppError } from '../errors.js';
import type { StoredResource } from '../schemas/resource.js';
import { summaryOf } from './resource-versions.js';

/** The longest `q` accepted (characters); longer is 400 `validation_failed`. */
export const SEARCH_MAX_CHARS = 256;
/** The most words a query may hold; more is 400 `validation_failed`. */
export const SEARCH_MAX_TERMS = 8;
/** Words longer than this are neither indexed nor searched (no word of a skill's text is this long). */
export const MAX_WORD_CHARS = 64;
/** A word of at least this many letters also matches words one edit away (insert, delete or substitute). */
export const FUZZY_MIN_LETTERS = 5;
/** ...and of at most this many: the edits of a longer word are not tried (it bounds a query's work). */
export const FUZZY_MAX_LETTERS = 16;
/** The last word matches as a prefix once it has this many letters. */
export const PREFIX_MIN_LETTERS = 2;

/** The weighted texts of a record. */
export type SearchField = 'key' | 'summary' | 'body';
/**
 * ID, name and displayName weigh more than the description, which weighs more than the body. A match's tier
 * is the sum, over the query's terms, of the weight of the heaviest field each term matched in.
 */
export const FIELD_WEIGHT: Readonly<Record<SearchField, number>> = { key: 3, summary: 2, body: 1 };

/** Tested on one character (code point): whether it is a letter or a digit. */
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * The words of a text: NFKC-normalized, lower-cased, split at every character that is not a letter or a
 * digit (`\p{L}`, `\p{N}`), words longer than MAX_WORD_CHARS left out. The one tokenizer of both stores and
 * of queries. One pass over the characters, ASCII decided by its code and any other character by the
 * Unicode classes: a third of the time of splitting with the classes' regular expression, the same words.
 */
export function searchWords(text: string): string[] {
  const s = text.normalize('NFKC').toLowerCase();
  const words: string[] = [];
  let start = -1;
  const end = (at: number) => {
    if (start >= 0 && at - start <= MAX_WORD_CHARS) words.push(s.slice(start, at));
    start = -1;
  };
  for (let i = 0; i < s.length;) {
    const c = s.charCodeAt(i);
    let width = 1;
    let inWord: boolean;
    // Lower-cased: no ASCII capital is left.
    if (c < 0x80) inWord = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
    else {
      const point = s.codePointAt(i)!;
      if (point > 0xffff) width = 2;
      inWord = LETTER_OR_DIGIT.test(String.fromCodePoint(point));
    }
    if (!inWord) end(i);
    else if (start < 0) start = i;
    i += width;
  }
  end(s.length);
  return words;
}

export interface SearchTerm {
  word: string;
  /** Matches every word that starts with it (the last word of the query, of PREFIX_MIN_LETTERS or more). */
  prefix: boolean;
  /** Matches words one edit away too. */
  fuzzy: boolean;
}

/**
 * The terms of a query. A query without any word has no terms (the caller lists instead of searching);
 * one over SEARCH_MAX_CHARS characters or SEARCH_MAX_TERMS words is 400 `validation_failed`. Repeated
 * words count once.
 */
export function parseSearch(q: string): SearchTerm[] {
  if (q.length > SEARCH_MAX_CHARS) {
    throw new AppError('validation_failed', `A search may hold at most ${SEARCH_MAX_CHARS} characters.`, { field: '/q' });
  }
  const words = [...new Set(searchWords(q))];
  if (words.length > SEARCH_MAX_TERMS) {
    throw new AppError('validation_failed', `A search may hold at most ${SEARCH_MAX_TERMS} words.`, { field: '/q' });
  }
  return words.map((word, i) => ({
    word,
    prefix: i === words.length - 1 && [...word].length >= PREFIX_MIN_LETTERS,
    fuzzy: isFuzzy(word),
  }));
}

function isFuzzy(word: string): boolean {
  const letters = [...word].length;
  return letters >= FUZZY_MIN_LETTERS && letters <= FUZZY_MAX_LETTERS;
}

/** A canonical text of the terms (the query a cursor is bound to). */
export function searchKey(terms: readonly SearchTerm[]): string {
  return terms.map((t) => `${t.word}${t.prefix ? '*' : ''}${t.fuzzy ? '~' : ''}`).join(' ');
}

/**
 * The texts of a record by weight, split into the provider's part and the owner's (displayName and
 * userContent, which survive a provider's replace; PostgreSQL indexes the two parts in separate columns).
 */
export function searchTextsOf(record: StoredResource): {
  key: string;
  summary: string;
  body: string;
  ownerKey: string;
  ownerBody: string;
} {
  return {
    key: `${record.id} ${record.name}`,
    summary: summaryOf(record),
    body: record.schemaVersion === 1 ? record.instructions : record.sourceContent,
    ownerKey: record.displayName ?? '',
    ownerBody: record.userContent ?? '',
  };
}

/**
 * The words one edit away from `word` that a store without fuzzy matching looks up (PostgreSQL): every
 * deletion, and every substitution and insertion of a letter a–z, a digit, or a letter of the word itself.
 * At most ~75 words per letter of a FUZZY_MAX_LETTERS word.
 */
export function oneEditWords(word: string): string[] {
  const letters = [...word];
  const alphabet = [...new Set([...'abcdefghijklmnopqrstuvwxyz0123456789', ...letters])];
  const out = new Set<string>();
  for (let i = 0; i <= letters.length; i++) {
    const head = letters.slice(0, i).join('');
    const tail = letters.slice(i).join('');
    const rest = letters.slice(i + 1).join('');
    if (i < letters.length) out.add(head + rest);
    for (const c of alphabet) {
      out.add(head + c + tail);
      if (i < letters.length) out.add(head + c + rest);
    }
  }
  out.delete(word);
  return [...out].filter((w) => w.length > 0 && w.length <= MAX_WORD_CHARS);
}
