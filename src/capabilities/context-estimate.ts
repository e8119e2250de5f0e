// How much of an agent's context its resources take: the names and descriptions it holds from the start,
// and the bodies it reads when it uses a resource. Counted with a real tokenizer (gpt-tokenizer's
// o200k_base encoding, docs/capability-projection.md says how close it is to others). Pure; counts are kept
// per text, so a snapshot built again costs lookups, not tokenization.
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { guidanceOf, labelOf, summaryOf } from '../registry/resource-versions.js';
import type { StoredResource } from '../schemas/resource.js';

/** What the estimate is counted with: named in the docs and in the OpenAPI description. */
export const TOKENIZER = 'gpt-tokenizer 4.0.0, encoding o200k_base';

/**
 * Characters of one text counted exactly; a longer text is counted on its first this many characters and
 * scaled by its length (a record's body may hold 100,000 characters, counted in about as many microseconds
 * as characters: the bound keeps one record's count near 10 ms).
 */
export const EXACT_CHARS = 8_000;
/** Characters of text whose counts are kept (oldest first out). */
const KEPT_CHARS = 16_000_000;

export interface ContextEstimate {
  /** The names and descriptions of every effective resource: what an agent holds from its start. */
  alwaysLoadedTokens: number;
  /** Their bodies (instructions, or a v2 record's guidance): what it reads when it uses each one. */
  onActivationTokens: number;
}

const kept = new Map<string, number>();
let keptChars = 0;

/** Tokens of `text`; special-token markers in it count as the ordinary text they are. */
export function tokensOf(text: string): number {
  const known = kept.get(text);
  if (known !== undefined) return known;
  const counted =
    text.length <= EXACT_CHARS
      ? countTokens(text, { disallowedSpecial: new Set() })
      : Math.round((countTokens(text.slice(0, EXACT_CHARS), { disallowedSpecial: new Set() }) * text.length) / EXACT_CHARS);
  kept.set(text, counted);
  keptChars += text.length;
  for (const [old] of kept) {
    if (keptChars <= KEPT_CHARS) break;
    kept.delete(old);
    keptChars -= old.length;
  }
  return counted;
}

/** The estimate of one effective set: each record counted once, in the representation an agent reads. */
export function contextEstimate(records: Iterable<StoredResource>): ContextEstimate {
  let alwaysLoadedTokens = 0;
  let onActivationTokens = 0;
  for (const record of records) {
    alwaysLoadedTokens += tokensOf(`${labelOf(record)}: ${summaryOf(record)}`);
    onActivationTokens += tokensOf(guidanceOf(record));
  }
  return { alwaysLoadedTokens, onActivationTokens };
}
