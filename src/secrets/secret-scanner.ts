// Secret scanning for every text field the registry writes: this service's own token formats, JWT-like
// strings, AWS key IDs, PEM private keys, the exact credential values the process was configured with,
// gitleaks' rule set, and the agent-host formats gitleaks lacks; all on RE2, linear in the text. Findings
// name the field and the rule, never the value.
import type { GitleaksRules } from './gitleaks-engine.js';
import { AppError } from '../errors.js';

export interface SecretFinding {
  /** JSON pointer of the field, e.g. `/instructions` or `/customData/notes`. */
  field: string;
  /** Rule that matched, e.g. `github-pat` (a gitleaks rule ID) or `registry-token`. */
  rule: string;
}

interface PatternRule {
  rule: string;
  /** RE2 syntax. */
  pattern: string;
  /** The capture group holding the secret (0: the whole match). */
  group?: number;
  /** The secret must have more Shannon entropy (bits per character) than this: an `xxxx` placeholder has none. */
  entropy?: number;
  /** A secret matching this (RE2) is a documented example or placeholder, not a secret. */
  allow?: string;
}

/**
 * The service's own patterns, in RE2 syntax and run by RE2's linear-time engine (re2js): a field is text
 * anyone with write access chooses, so no pattern may backtrack (V8's engine took 17 s over 100 k characters
 * of "eyJ" with the JWT pattern below). Tokens this service issues all start with `arr_<kind>_`, so a leaked
 * one is recognizable. No word boundary before it (nor before a JWT): a token glued to a preceding word
 * (`TOKENarr_machine_...`) is still a token.
 */
const BUILT_IN: readonly PatternRule[] = [
  { rule: 'registry-token', pattern: 'arr_(?:owner|huabu|machine|canvas|secret|grant)_[A-Za-z0-9_.-]{16,}' },
  { rule: 'jwt-like', pattern: 'eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}' },
  // AWS access key IDs (gitleaks' and trufflehog's prefixes), bare; AWS's documented example key is not one.
  {
    rule: 'aws-access-key-id',
    pattern: '(?:^|[^A-Z0-9])((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16})(?:[^A-Z0-9]|$)',
    group: 1,
    allow: 'EXAMPLE$',
  },
  // A PEM private key, or its header alone: the header says what follows.
  { rule: 'private-key', pattern: '-----BEGIN (?:[A-Z0-9]+ ){0,8}PRIVATE KEY(?: BLOCK)?-----' },
];

/**
 * Credential formats of the AI and developer platforms agent hosts use that gitleaks' rule set (run between
 * the built-in patterns and these) does not know, or knows only in an older shape.
 */
const AGENT_HOST: readonly PatternRule[] = [
  // gitleaks asks 3 bits of entropy of a GitHub token; a patterned one (`a1B2a1B2...`) is still refused here,
  // an x-filled placeholder is not.
  { rule: 'github-token', pattern: '(?:ghp|gho|ghu|ghs|ghr)_([A-Za-z0-9]{36,})', group: 1, entropy: 1.5 },
  { rule: 'openai-api-key', pattern: 'sk-(?:proj|svcacct|admin)-([A-Za-z0-9_-]{40,})', group: 1, entropy: 3 },
  // OpenAI's user keys before project keys: `sk-` and 48 letters and digits (gitleaks knows them only with
  // the `T3BlbkFJ` marker inside).
  { rule: 'openai-api-key', pattern: '(?:^|[^A-Za-z0-9_-])sk-([A-Za-z0-9]{48})(?:[^A-Za-z0-9_-]|$)', group: 1, entropy: 3 },
  { rule: 'slack-token', pattern: 'xox[abposre]-(?:[0-9]{6,}-){1,3}([A-Za-z0-9]{20,})', group: 1, entropy: 3 },
  { rule: 'tavily-api-key', pattern: 'tvly-(?:dev-|prod-)?([A-Za-z0-9_-]{20,})', group: 1, entropy: 3 },
  { rule: 'groq-api-key', pattern: 'gsk_([A-Za-z0-9]{40,})', group: 1, entropy: 3 },
  { rule: 'replicate-api-token', pattern: 'r8_([A-Za-z0-9]{30,})', group: 1, entropy: 3 },
  { rule: 'dockerhub-pat', pattern: 'dckr_pat_([A-Za-z0-9_-]{20,})', group: 1, entropy: 3 },
  { rule: 'azure-storage-account-key', pattern: '(?i)AccountKey=([A-Za-z0-9+/]{40,}={0,2})', group: 1, entropy: 3 },
  {
    rule: 'aws-secret-access-key',
    pattern: '(?i)aws_?secret_?(?:access_?)?key["\'\\s]{0,3}[:=]{1,2}["\'\\s]{0,3}([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)',
    group: 1,
    entropy: 3.5,
    allow: 'EXAMPLE',
  },
  // scheme://user:password@host, unless the password is a placeholder (`password`, `${DB_PASSWORD}`, `<pass>`).
  {
    rule: 'credentialed-url',
    pattern: '[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\\s:/@]{1,64}:([^\\s:/@]{6,128})@[A-Za-z0-9.-]',
    group: 1,
    entropy: 2,
    allow: '^[$<{%]|^(?i:pass(?:word)?|passwd|pwd|secret|changeme|example|x+|\\*+|\\.+)$',
  },
  // A high-entropy value assigned to a credential-named key (`password=...`, `api_key: "..."`).
  {
    rule: 'credential-assignment',
    pattern: '(?i)(?:passw(?:or)?d|pwd|secret|api_?key|access_?key|token)["\']?[ \\t]{0,3}[:=][ \\t]{0,3}["\']?([^\\s"\'`,;]{12,128})',
    group: 1,
    entropy: 3.5,
    allow: '^[$<{%]|^(?:[A-Za-z]+[_.-]?)+$|EXAMPLE',
  },
];
const MAX_CANDIDATES = 200;
const MIN_KNOWN_SECRET_LENGTH = 12;

interface CompiledPattern {
  rule: string;
  finds(text: string): boolean;
}
const YIELD_EVERY_FIELDS = 32;
/** A field at least this long (UTF-16 code units) is scanned on an event-loop turn of its own. */
const YIELD_BEFORE_CHARS = 4 * 1024;

interface Engine {
  builtIn: CompiledPattern[];
  agentHost: CompiledPattern[];
  gitleaks: GitleaksRules;
}

/**
 * The rule engines, loaded and compiled on the first value that needs them rather than with the module: most
 * starts scan nothing before they serve. A failed load is not kept, so the next scan tries again (and fails
 * closed meanwhile: the write is refused, not let through).
 */
let engine: Promise<Engine> | undefined;
function engines(): Promise<Engine> {
  engine ??= (async () => {
    const [{ RE2JS }, { GitleaksRules, shannonEntropy, windows }] = await Promise.all([import('re2js'), import('./gitleaks-engine.js')]);
    const compile = (r: PatternRule): CompiledPattern => {
      const pattern = RE2JS.compile(r.pattern);
      const allow = r.allow === undefined ? undefined : RE2JS.compile(r.allow);
      return {
        rule: r.rule,
        finds(text) {
          // The DFA answers this alone; the (slower) NFA runs only when there is a candidate to look at.
          if (!pattern.test(text)) return false;
          if (r.group === undefined && r.entropy === undefined && !allow) return true;
          let n = 0;
          for (const part of windows(text)) {
            if (!pattern.test(part)) continue;
            const matcher = pattern.matcher(part);
            for (; matcher.find(); n++) {
              // Bounded: past this many let-through candidates the text is refused rather than read on.
              if (n >= MAX_CANDIDATES) return true;
              const secret = matcher.group(r.group ?? 0) ?? '';
              if (r.entropy !== undefined && shannonEntropy(secret) <= r.entropy) continue;
              if (allow?.test(secret)) continue;
              return true;
            }
          }
          return false;
        },
      };
    };
    return { builtIn: BUILT_IN.map(compile), agentHost: AGENT_HOST.map(compile), gitleaks: new GitleaksRules() };
  })().catch((err: unknown) => {
    engine = undefined;
    throw err;
  });
  return engine;
}

export class SecretScanner {
  readonly #knownSecrets: string[];

  /** @param knownSecrets exact credential values configured for this process (owner token, ...). */
  constructor(knownSecrets: readonly string[] = []) {
    this.#knownSecrets = knownSecrets.filter((s) => s.length >= MIN_KNOWN_SECRET_LENGTH);
  }

  /**
   * Scans every string, reporting at most one finding per field. A secret object key (a `#key` field from
   * `stringLeaves`) ends the scan: the pointers after it could name that key.
   */
  async scan(fields: Iterable<[field: string, value: string]>): Promise<SecretFinding[]> {
    const findings: SecretFinding[] = [];
    let scanned = 0;
    for (const [field, value] of fields) {
      // Scanning is synchronous: yield to the event loop now and then, so a large
      // write (a 1,000-record reconcile) does not hold every other request (agents' reads) until it ends.
      // Real skills are 2-100 k characters each, milliseconds of scanning apiece: each gets a turn of its own.
      if (++scanned % YIELD_EVERY_FIELDS === 0 || value.length >= YIELD_BEFORE_CHARS) await new Promise((resolve) => setImmediate(resolve));
      const rule = await this.#firstRule(value);
      if (rule) findings.push({ field, rule });
      if (rule && field.endsWith(KEY_SUFFIX)) break;
    }
    return findings;
  }

  /** Throws 422 `secret_detected` naming every offending field and rule. */
  async assertClean(fields: Iterable<[field: string, value: string]>): Promise<void> {
    const findings = await this.scan(fields);
    if (findings.length > 0) {
      const first = findings[0]!;
      throw new AppError(
        'secret_detected',
        `Field ${first.field} looks like it contains a secret (rule ${first.rule}); secrets never belong in the registry.`,
        { findings },
      );
    }
  }

  async #firstRule(value: string): Promise<string | undefined> {
    if (value.length === 0) return undefined;
    const { builtIn, agentHost, gitleaks } = await engines();
    for (const { rule, finds } of builtIn) if (finds(value)) return rule;
    if (this.#knownSecrets.some((s) => value.includes(s))) return 'configured-credential';
    return gitleaks.firstRule(value) ?? agentHost.find(({ finds }) => finds(value))?.rule;
  }
}

const KEY_SUFFIX = '#key';

/**
 * Every string inside a JSON value, with its JSON pointer, for scanning nested data such as `customData`.
 * An object key is yielded (as `<object pointer>#key`, which never contains the key) before anything
 * whose pointer names it.
 */
export function* stringLeaves(value: unknown, pointer = ''): Generator<[string, string]> {
  if (typeof value === 'string') {
    yield [pointer, value];
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) yield* stringLeaves(value[i], `${pointer}/${i}`);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const escaped = key.replaceAll('~', '~0').replaceAll('/', '~1');
      yield [`${pointer}${KEY_SUFFIX}`, key];
      yield* stringLeaves(child, `${pointer}/${escaped}`);
    }
  }
}
