// Secret scanning for every text field the registry writes: this service's own token formats, JWT-like
// strings, AWS key IDs, PEM private keys, the exact credential values the process was configured with,
// gitleaks' rule set, and the agent-host formats gitleaks lacks; all on RE2, linear in the text. Findings
// name the field, line, rule and fingerprint (the rule and the SHA-256 of the matched secret), never the
// value; the owner's allowlist lets exactly a fingerprint through, and nothing in a text switches a rule off.
import { createHash } from 'node:crypto';
import type { Candidate, GitleaksRules } from './gitleaks-engine.js';
import { AppError } from '../errors.js';
import { MAX_NAMED_FINDINGS } from '../schemas/secret-allowlist.js';

export interface SecretFinding {
  /** JSON pointer of the field, e.g. `/instructions` or `/customData/notes`; a skill file is `/files/<path>`. */
  field: string;
  /** 1-based line of the field (or file) where the secret starts. */
  line: number;
  /** Rule that matched, e.g. `github-pat` (a gitleaks rule ID) or `registry-token`. */
  rule: string;
  /** `<rule>:<SHA-256 hex of the matched secret>`: names this secret without showing it. */
  fingerprint: string;
  /** The write scanned (the scan's `route`), when it named one: what an allowlist entry's `route` matches. */
  route?: string;
}

/**
 * An owner's allowlist entry as the scanner reads it: exactly this fingerprint, only in this field or file
 * (`file`: a JSON pointer or a path within a skill, matched at the end of the finding's field on a `/`
 * boundary) and only on this route (the scan's `route`, an audit action such as `resource.register`), when set.
 */
export interface AllowedFinding {
  fingerprint: string;
  file?: string;
  route?: string;
}

export interface ScanScope {
  /** Which write is scanned (an audit action: `resource.register`, `resource.import`, ...): an entry limited to a route matches only it. */
  route?: string;
  /** Entries that apply to this scan besides the scanner's own allowlist (the machine's import job receives the owner's). */
  allowed?: readonly AllowedFinding[];
}

/** Rules whose finding no allowlist lets through: a credential of this service is never ordinary text. */
const NEVER_ALLOWED = new Set(['configured-credential', 'registry-token']);

export function secretFingerprint(rule: string, secret: string): string {
  return `${rule}:${createHash('sha256').update(secret, 'utf8').digest('hex')}`;
}

/**
 * Whether an entry's `file` names the finding's field: equal, or its end after a `/`. A skill's `SKILL.md` is
 * its record's `sourceContent` (the text the machine's scan, the record's writes and its views all read), so
 * `SKILL.md` names that field too.
 */
function namesField(file: string, field: string): boolean {
  const name = file.startsWith('/') ? file : `/${file}`;
  if (name === `/${SKILL_FILE}` && (field === '/sourceContent' || field.endsWith('/sourceContent'))) return true;
  return field === name || field.endsWith(name);
}
const SKILL_FILE = 'SKILL.md';

function allowedBy(
  entries: readonly AllowedFinding[],
  finding: Pick<SecretFinding, 'field' | 'rule' | 'fingerprint'>,
  route: string | undefined,
): boolean {
  if (NEVER_ALLOWED.has(finding.rule)) return false;
  return entries.some(
    (e) =>
      e.fingerprint === finding.fingerprint &&
      (e.file === undefined || namesField(e.file, finding.field)) &&
      (e.route === undefined || e.route === route),
  );
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
  /** A match (the whole of it) matching this (RE2) is a placeholder, not a secret. */
  allowMatch?: string;
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
  // A PEM private key, or its header alone: the header says what follows; unless what follows is a
  // placeholder (`...`, `<key>`) or the end line at once, as in a manifest template.
  {
    rule: 'private-key',
    pattern: '(-----BEGIN (?:[A-Z0-9]+ ){0,8}PRIVATE KEY(?: BLOCK)?-----)(?:\\s{0,16}(?:\\.\\.\\.|…|<[^>\\n]{0,64}>|-----END))?',
    group: 1,
    allowMatch: '(?:\\.\\.\\.|…|>|-----END)$',
  },
];

/** A name in code (a variable, property, type or function; `#` opens a JavaScript private field). */
const NAME = '#?[A-Za-z_][A-Za-z0-9_]*';
/** What joins the names of a path in code: `.`, `::` (Rust, C++), `->` (PHP), `?.` (optional chaining). */
const PATH_JOIN = '(?:\\.|::|->|\\?\\.)';

/**
 * Values that are code, not credentials: a name path followed by `(` or `[` (a call, an index:
 * `Environment.GetEnvironmentVariable(…)`, `os.environ[…]`, `this.#hash(…)`), a path of two names or more
 * (`process.env.X`, `process.env.X!`, `Curve25519.KeyAgreement`), words with at most two digits each joined by
 * `_`, `-` or `.` (`msg2_wire_bytes`, `sk-or-v1-project1-key`), a file path with an extension
 * (`path/to/credentials.json`). A bare high-entropy word is none of these.
 */
const CODE_SHAPES = [
  `^${NAME}(?:${PATH_JOIN}${NAME})*[(\\[]`,
  `^${NAME}(?:${PATH_JOIN}${NAME})+[!?]?$`,
  '^[A-Za-z]+[0-9]{0,2}(?:[_.-][A-Za-z]+[0-9]{0,2})+$',
  '^[.~]{0,2}/?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_-]+\\.[A-Za-z]{1,5}$',
];
/** Placeholders: `...`, `…`, `your-`/`YOUR_`, `-here`/`_here`, `changeme`, `replace_me`, `placeholder`. */
const PLACEHOLDERS = ['\\.\\.\\.|…', '(?i:your[_-]|[_-]here$|replace[_-]?me|change[_-]?me|placeholder)'];

/**
 * What gitleaks' rules mistake for a secret in skill documents, by rule (tested on the secret, after the
 * vendored allowlists): its generic rule reads code and placeholders after a key-named word; its curl rules
 * read `Bearer YOUR_TOKEN`; and Google's documentation shows an API key whose body counts `A1B2C3D4…`.
 */
const GITLEAKS_ALLOW: Readonly<Record<string, string>> = {
  'generic-api-key': [...CODE_SHAPES, ...PLACEHOLDERS].join('|'),
  'curl-auth-header': PLACEHOLDERS.join('|'),
  'curl-auth-user': PLACEHOLDERS.join('|'),
  'gcp-api-key': '(?i:A1B2C3D4E5F6)',
};

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
  // A high-entropy value assigned to a credential-named key (`password=...`, `api_key: "..."`), unless the
  // value is what SDK samples assign there: a variable or an environment lookup (`$TOKEN`, `${X}`, `%X%`,
  // `process.env.X`, `os.environ["X"]`, `ENV.fetch(...)`), a call (`Environment.GetEnvironmentVariable(...)`,
  // `jwt.encode(...)`, `anthropic.String(...)`: a name path followed by `(` or `[`, or of two names or more),
  // or a placeholder (`xoxp-new-...`, `sk-…`, `<your-key>`, `YOUR_API_KEY`, `your-token-here`).
  {
    rule: 'credential-assignment',
    // The value does not open with `:`: `token::transfer(…)` is a Rust path, not an assignment.
    pattern:
      '(?i)(?:passw(?:or)?d|pwd|secret|api_?key|access_?key|token)["\']?[ \\t]{0,3}[:=][ \\t]{0,3}["\']?([^\\s"\'`,;:][^\\s"\'`,;]{11,127})',
    group: 1,
    entropy: 3.5,
    allow: [
      '^[$<{%]',
      '^(?:[A-Za-z]+[_.-]?)+$',
      'EXAMPLE',
      // A name before a query string's next parameter (`api_key=DEMO_KEY&date=…`).
      '^[A-Za-z][A-Za-z_.-]*&',
      // A sample password that says it is one (`securePassword123`).
      '(?i:passw(?:or)?d)',
      ...CODE_SHAPES,
      ...PLACEHOLDERS,
    ].join('|'),
  },
];
const MAX_CANDIDATES = 200;
const MIN_KNOWN_SECRET_LENGTH = 12;

interface CompiledPattern {
  rule: string;
  candidates(text: string): Generator<Candidate>;
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
      const allowMatch = r.allowMatch === undefined ? undefined : RE2JS.compile(r.allowMatch);
      return {
        rule: r.rule,
        *candidates(text) {
          // The DFA answers this alone; the (slower) NFA runs only when there is a candidate to look at.
          if (!pattern.test(text)) return;
          let n = 0;
          for (const [offset, part] of windows(text)) {
            if (!pattern.test(part)) continue;
            const matcher = pattern.matcher(part);
            while (matcher.find()) {
              const group = r.group ?? 0;
              const secret = matcher.group(group) ?? '';
              const found = { rule: r.rule, index: offset + Math.max(matcher.start(group), 0), secret };
              // Bounded: past this many let-through candidates the text is refused rather than read on.
              if (n++ >= MAX_CANDIDATES) {
                yield { ...found, over: true };
                continue;
              }
              if (r.entropy !== undefined && shannonEntropy(secret) <= r.entropy) continue;
              if (allow?.test(secret)) continue;
              if (allowMatch?.test(matcher.group(0) ?? '')) continue;
              yield found;
            }
          }
        },
      };
    };
    return { builtIn: BUILT_IN.map(compile), agentHost: AGENT_HOST.map(compile), gitleaks: new GitleaksRules(new Set(), GITLEAKS_ALLOW) };
  })().catch((err: unknown) => {
    engine = undefined;
    throw err;
  });
  return engine;
}

export interface SecretScannerOptions {
  /**
   * The owner's allowlist, read when a field holds a finding (never for a clean one); a failed read refuses
   * the write (fails closed).
   */
  allowlist?: () => Promise<readonly AllowedFinding[]>;
}

export class SecretScanner {
  readonly #knownSecrets: string[];
  readonly #allowlist: (() => Promise<readonly AllowedFinding[]>) | undefined;

  /** @param knownSecrets exact credential values configured for this process (owner token, ...). */
  constructor(knownSecrets: readonly string[] = [], options: SecretScannerOptions = {}) {
    this.#knownSecrets = knownSecrets.filter((s) => s.length >= MIN_KNOWN_SECRET_LENGTH);
    this.#allowlist = options.allowlist;
  }

  /**
   * Scans every string, reporting every finding the allowlist does not let through, by field and then line
   * (one per secret and rule: a secret two rules find is two findings, each with its own fingerprint). A
   * field past a rule's budget of candidates is read no further. A secret object key (a `#key` field from
   * `stringLeaves`) ends the scan: the pointers after it could name that key.
   */
  async scan(fields: Iterable<[field: string, value: string]>, scope: ScanScope = {}): Promise<SecretFinding[]> {
    const findings: SecretFinding[] = [];
    let entries: readonly AllowedFinding[] | undefined;
    let scanned = 0;
    for (const [field, value] of fields) {
      // Scanning is synchronous: yield to the event loop now and then, so a large
      // write (a 1,000-record reconcile) does not hold every other request (agents' reads) until it ends.
      // Real skills are 2-100 k characters each, milliseconds of scanning apiece: each gets a turn of its own.
      if (++scanned % YIELD_EVERY_FIELDS === 0 || value.length >= YIELD_BEFORE_CHARS) await new Promise((resolve) => setImmediate(resolve));
      const found = new Map<string, { index: number; finding: SecretFinding }>();
      for (const candidate of await this.#candidates(value)) {
        const fingerprint = secretFingerprint(candidate.rule, candidate.secret);
        // A match in the overlap of two windows comes twice.
        const key = `${candidate.index}:${fingerprint}`;
        if (found.has(key)) continue;
        entries ??= [...(scope.allowed ?? []), ...((await this.#allowlist?.()) ?? [])];
        if (allowedBy(entries, { field, rule: candidate.rule, fingerprint }, scope.route)) continue;
        found.set(key, {
          index: candidate.index,
          finding: {
            field,
            line: 0,
            rule: candidate.rule,
            fingerprint,
            ...(scope.route === undefined ? {} : { route: scope.route }),
          },
        });
        if (candidate.over) break;
      }
      const inField = [...found.values()].sort((a, b) => a.index - b.index);
      const lines = linesOf(
        value,
        inField.map((f) => f.index),
      );
      for (const [i, f] of inField.entries()) findings.push({ ...f.finding, line: lines[i]! });
      if (inField.length > 0 && isKeyField(field)) break;
    }
    return findings;
  }

  /** Throws 422 `secret_detected` naming every offending field, line, rule and fingerprint. */
  async assertClean(fields: Iterable<[field: string, value: string]>, scope: ScanScope = {}): Promise<void> {
    const findings = await this.scan(fields, scope);
    if (findings.length > 0) throw secretDetected(findings);
  }

  /** Every finding of `value`, built-in rules first, lazily: the scan stops at the first one not allowed. */
  async #candidates(value: string): Promise<Iterable<Candidate>> {
    if (value.length === 0) return [];
    const { builtIn, agentHost, gitleaks } = await engines();
    const known = this.#knownSecrets;
    return (function* () {
      for (const p of builtIn) yield* p.candidates(value);
      for (const s of known) {
        const index = value.indexOf(s);
        if (index >= 0) yield { rule: 'configured-credential', index, secret: s };
      }
      yield* gitleaks.candidates(value);
      for (const p of agentHost) yield* p.candidates(value);
    })();
  }
}

/** 1-based lines of ascending `indexes` in `text` (a `\r\n` ends one line, as `\n` does), in one pass. */
function linesOf(text: string, indexes: readonly number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let at = text.indexOf('\n');
  for (const index of indexes) {
    for (; at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line++;
    lines.push(line);
  }
  return lines;
}

/** Where a finding is, as a refusal names it: `<field> line <n> (rule <rule>, fingerprint <fingerprint>)`. */
export function describeFinding(f: SecretFinding): string {
  return `${f.field} line ${f.line} (rule ${f.rule}, fingerprint ${f.fingerprint}${f.route === undefined ? '' : `, route ${f.route}`})`;
}

export { MAX_NAMED_FINDINGS };

/** The findings a refusal names, and how many more it only counts. */
export function namedFindings<T>(findings: readonly T[]): { named: T[]; more: number } {
  return { named: findings.slice(0, MAX_NAMED_FINDINGS), more: Math.max(findings.length - MAX_NAMED_FINDINGS, 0) };
}

/** `, and 3 more` (or nothing): what a refusal says of the findings it does not name. */
export function andMore(more: number): string {
  return more > 0 ? `, and ${more} more` : '';
}

/**
 * The one 422 `secret_detected` of a write: every finding in the message and in `details.findings`, up to
 * MAX_NAMED_FINDINGS; `details.moreFindings` counts the others. One finding keeps the message it always had.
 */
export function secretDetected(findings: readonly SecretFinding[]): AppError {
  const { named, more } = namedFindings(findings);
  const details = { findings: named, ...(more > 0 ? { moreFindings: more } : {}) };
  if (named.length === 1) {
    return new AppError(
      'secret_detected',
      `Field ${describeFinding(named[0]!)} looks like it contains a secret; secrets never belong in the registry. If it is none, the owner can allow this fingerprint.`,
      details,
    );
  }
  return new AppError(
    'secret_detected',
    `${findings.length} findings look like secrets: ${named.map(describeFinding).join('; ')}${andMore(more)}. Secrets never belong in the registry. If one is none, the owner can allow its fingerprint.`,
    details,
  );
}

const KEY_SUFFIX = '#key';

/** The field of an object key (`stringLeaves`): a finding there ends the scan. */
export function isKeyField(field: string): boolean {
  return field.endsWith(KEY_SUFFIX);
}

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
