// gitleaks' rule set (vendored in gitleaks-rules.json with its licence and source commit) run the way
// gitleaks runs it: keyword prefilter, each rule's regex, its secret group, entropy threshold and allowlists,
// then the global allowlist. Every regex runs on RE2JS, linear in the text whatever the text.
import { RE2JS, RE2Set } from 're2js';
import vendored from './gitleaks-rules.json' with { type: 'json' };

interface Allowlist {
  condition?: string;
  regexTarget?: string;
  regexes?: string[];
  stopwords?: string[];
}
interface RuleSource {
  id: string;
  regex: string;
  secretGroup?: number;
  entropy?: number;
  keywords?: string[];
  allowlists?: Allowlist[];
}

/** A finding: the rule, where its secret starts in the text, and the secret (never shown, only hashed). */
export interface Candidate {
  rule: string;
  index: number;
  secret: string;
  /** Past the rule's budget of candidates: not checked against entropy or allowlists, and the field is read no further. */
  over?: true;
}

interface CompiledAllowlist {
  and: boolean;
  target: 'secret' | 'match' | 'line';
  regex?: RE2JS;
  stopwords: string[];
}
interface CompiledRule {
  id: string;
  regex: RE2JS;
  secretGroup: number;
  entropy: number;
  allowlists: CompiledAllowlist[];
}

/**
 * A rule as the engine holds it: its keywords at once, its regexes compiled the first time a text holds one
 * of them. Compiling all 200-odd rules takes about a third of a second, and most texts name no keyword.
 */
interface LazyRule {
  keywords: string[];
  source: RuleSource;
  compiled?: CompiledRule;
}

/**
 * A text with more let-through candidates than this for one rule is refused by that rule: each candidate
 * costs an NFA search (the slow part), and a text dense with them (`api_key=` repeated) would otherwise cost
 * seconds a MiB. Real documents hold far fewer (none in the corpus comes near).
 */
const MAX_MATCHES_PER_RULE = 200;
/** Window length for the NFA and the overlap between windows, in UTF-16 code units. */
const WINDOW = 2048;
const OVERLAP = 512;

/**
 * RE2JS answers "is there a match" on its DFA, and finds match positions and groups on its much slower NFA.
 * So a rule's DFA looks first at the whole text, then at windows of it, and its NFA runs only in the windows
 * that hold a match. Windows overlap by more than any rule's match spans (the private-key rule aside, which
 * the built-in header rule covers) and end at whitespace, where a rule's trailing `$` or `\s` fits.
 */
export function* windows(text: string): Generator<[offset: number, part: string]> {
  if (text.length <= WINDOW) {
    yield [0, text];
    return;
  }
  for (let start = 0; start < text.length;) {
    const end = boundaryAfter(text, start + WINDOW);
    yield [start, text.slice(start, end)];
    if (end >= text.length) return;
    start = boundaryAfter(text, end - OVERLAP);
  }
}

/** The first whitespace position at or after `at` (at most 512 further), or the end of the text. */
function boundaryAfter(text: string, at: number): number {
  const limit = Math.min(text.length, at + 512);
  for (let i = Math.max(at, 0); i < limit; i++) if (/\s/.test(text[i]!)) return i;
  return limit;
}

function compileAllowlist(a: Allowlist): CompiledAllowlist {
  return {
    and: a.condition === 'AND',
    target: a.regexTarget === 'match' ? 'match' : a.regexTarget === 'line' ? 'line' : 'secret',
    ...(a.regexes?.length ? { regex: RE2JS.compile(a.regexes.map((r) => `(?:${r})`).join('|')) } : {}),
    stopwords: (a.stopwords ?? []).map((w) => w.toLowerCase()),
  };
}

/**
 * gitleaks ends most rules with this group: a secret must be followed by a quote, space, `;`, an escaped
 * newline or the end. In an agent's instructions a key also ends a sentence or a clause (`re-run with
 * npm_….`, `(key AIza…)`, `"hf_…\"` in JSON inside a string), so the same group here also takes closing
 * punctuation and a backslash. A secret followed by one of these is no less a secret.
 */
const GITLEAKS_SUFFIX = String.raw`(?:[\x60'"\s;]|\\[nr]|$)`;
const PROSE_SUFFIX = String.raw`(?:[\x60'"\s;.,:!?)\]}>\\]|$)`;

function compile(rule: RuleSource): CompiledRule {
  return {
    id: rule.id,
    regex: RE2JS.compile(rule.regex.replaceAll(GITLEAKS_SUFFIX, PROSE_SUFFIX)),
    secretGroup: rule.secretGroup ?? 0,
    entropy: rule.entropy ?? 0,
    allowlists: (rule.allowlists ?? []).map(compileAllowlist),
  };
}

/** Shannon entropy in bits per character, as gitleaks computes it. */
export function shannonEntropy(text: string): number {
  if (text.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let entropy = 0;
  for (const n of counts.values()) {
    const p = n / text.length;
    entropy -= p * Math.log2(p);
  }
  return entropy;
}

/** `lineTest` answers a line-target regex test, cached per line (a long line may hold many matches). */
function allowed(lists: readonly CompiledAllowlist[], secret: string, match: string, lineTest: (a: CompiledAllowlist) => boolean): boolean {
  for (const a of lists) {
    const regexAllowed =
      a.regex !== undefined && secret !== '' && (a.target === 'line' ? lineTest(a) : a.regex.test(a.target === 'match' ? match : secret));
    const lower = secret.toLowerCase();
    const stopword = a.stopwords.some((w) => lower.includes(w));
    if (a.and) {
      const checks = [...(a.regex ? [regexAllowed] : []), ...(a.stopwords.length > 0 ? [stopword] : [])];
      if (checks.length > 0 && checks.every(Boolean)) return true;
    } else if (regexAllowed || stopword) return true;
  }
  return false;
}

export class GitleaksRules {
  readonly #rules: LazyRule[];
  readonly #global: CompiledAllowlist[];

  /** Every rule's keywords, found in one linear pass over the text. */
  readonly #keywords: string[];
  readonly #keywordSet: RE2Set;

  /**
   * @param exclude rule IDs left out.
   * @param allow per rule ID, one more allowlist (RE2, tested on the secret): what this service knows a rule
   *   mistakes for a secret in skill documents (code shapes, placeholders), kept apart from the vendored file.
   */
  constructor(exclude: ReadonlySet<string> = new Set(), allow: Readonly<Record<string, string>> = {}) {
    this.#rules = (vendored.rules as RuleSource[])
      .filter((r) => !exclude.has(r.id))
      .map((r) => (allow[r.id] === undefined ? r : { ...r, allowlists: [...(r.allowlists ?? []), { regexes: [allow[r.id]!] }] }))
      .map((source) => ({ source, keywords: (source.keywords ?? []).map((k) => k.toLowerCase()) }));
    this.#global = [compileAllowlist(vendored.allowlist)];
    this.#keywords = [...new Set(this.#rules.flatMap((r) => r.keywords))];
    this.#keywordSet = new RE2Set();
    for (const k of this.#keywords) this.#keywordSet.add(RE2JS.quote(k));
    this.#keywordSet.compile();
  }

  /** The first rule with a finding in `text` that no allowlist lets through, or undefined. */
  firstRule(text: string): string | undefined {
    for (const candidate of this.candidates(text)) return candidate.rule;
    return undefined;
  }

  /**
   * Every finding in `text` that no allowlist of the rule set lets through, rule by rule (each rule's in text
   * order; a match in the overlap of two windows may come twice). A rule with more let-through candidates
   * than its budget yields the candidate past it: the text is refused rather than read on.
   */
  *candidates(text: string): Generator<Candidate> {
    const present = new Set(this.#keywordSet.match(text.toLowerCase()).map((i) => this.#keywords[i]!));
    for (const rule of this.#rules) {
      if (rule.keywords.length > 0 && !rule.keywords.some((k) => present.has(k))) continue;
      rule.compiled ??= compile(rule.source);
      yield* this.#candidates(rule.compiled, text);
    }
  }

  *#candidates(rule: CompiledRule, text: string): Generator<Candidate> {
    if (!rule.regex.test(text)) return;
    const budget = { left: MAX_MATCHES_PER_RULE };
    for (const [offset, part] of windows(text)) {
      if (!rule.regex.test(part)) continue;
      for (const found of this.#candidatesIn(rule, part, budget)) yield { ...found, index: found.index + offset };
    }
  }

  *#candidatesIn(rule: CompiledRule, text: string, budget: { left: number }): Generator<Candidate> {
    const matcher = rule.regex.matcher(text);
    const lineResults = new Map<string, boolean>();
    while (matcher.find()) {
      const start = matcher.start();
      const end = matcher.end();
      const match = text.slice(start, end).replace(/^\n+|\n+$/g, '');
      let secret = match;
      let index = start + text.slice(start, end).indexOf(match);
      let group = rule.secretGroup;
      if (group === 0) {
        for (let g = 1; g <= matcher.groupCount(); g++) {
          if (matcher.group(g)) {
            group = g;
            break;
          }
        }
      }
      if (group > 0) {
        secret = matcher.group(group) ?? '';
        index = matcher.start(group);
      }
      const over = budget.left-- <= 0;
      if (!over) {
        if (rule.entropy > 0 && shannonEntropy(secret) <= rule.entropy) continue;
        const lineStart = text.lastIndexOf('\n', start - 1) + 1;
        const lineTest = (a: CompiledAllowlist) => {
          const key = `${lineStart}:${this.#global.includes(a) ? 'g' : rule.allowlists.indexOf(a)}`;
          let result = lineResults.get(key);
          if (result === undefined) {
            const nl = text.indexOf('\n', end);
            result = a.regex!.test(text.slice(lineStart, nl === -1 ? text.length : nl));
            lineResults.set(key, result);
          }
          return result;
        };
        if (allowed(this.#global, secret, match, lineTest)) continue;
        if (allowed(rule.allowlists, secret, match, lineTest)) continue;
      }
      yield { rule: rule.id, index: Math.max(index, 0), secret, ...(over ? { over: true as const } : {}) };
    }
  }
}
