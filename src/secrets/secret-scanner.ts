// Secret scanning for every text field the registry writes: secretlint's recommended preset (GitHub, Slack,
// npm, AWS, Anthropic/OpenAI keys, PEM keys, connection strings, ...) plus this service's own token formats,
// JWT-like strings and the exact credential values the process was configured with. Findings name the
// field and the rule, never the value.
import type { lintSource as LintSource } from '@secretlint/core';
import type { RE2JS } from 're2js';
import { AppError } from '../errors.js';

export interface SecretFinding {
  /** JSON pointer of the field, e.g. `/instructions` or `/customData/notes`. */
  field: string;
  /** Rule that matched, e.g. `@secretlint/secretlint-rule-github` or `registry-token`. */
  rule: string;
}

/**
 * The built-in patterns, in RE2 syntax and run by RE2's linear-time engine (re2js): a field is text anyone
 * with write access chooses, so no pattern may backtrack (V8's engine took 17 s over 100 k characters of
 * "eyJ" with the JWT pattern below). Tokens this service issues all start with `arr_<kind>_`, so a leaked one
 * is recognizable. No word boundary before it (nor before a JWT): a token glued to a preceding word
 * (`TOKENarr_machine_...`) is still a token.
 */
const BUILT_IN: readonly (readonly [rule: string, pattern: string])[] = [
  ['registry-token', 'arr_(?:owner|huabu|machine|canvas|secret|grant)_[A-Za-z0-9_.-]{16,}'],
  ['jwt-like', 'eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}'],
  // AWS access key IDs (gitleaks' and trufflehog's prefixes). secretlint's AWS rule only reports them with
  // `enableIDScanRule`, which also reports bare 12-digit account IDs; this reports the key IDs alone.
  ['aws-access-key-id', '(?:^|[^A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16}(?:[^A-Z0-9]|$)'],
  // A PEM private key block with key material (secretlint's rule misses short ones, such as P-256 EC keys).
  ['private-key', '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----\\s*[A-Za-z0-9+/=]{40,}'],
];
const MIN_KNOWN_SECRET_LENGTH = 12;
const YIELD_EVERY_FIELDS = 32;

const FILTER_COMMENTS_RULE = '@secretlint/secretlint-rule-filter-comments';

interface SecretlintEngine {
  lintSource: typeof LintSource;
  config: Parameters<typeof LintSource>[0]['options']['config'];
  builtIn: { rule: string; pattern: RE2JS }[];
}

/**
 * secretlint, loaded on the first value that needs it rather than with the module: most starts scan
 * nothing before they serve, and loading it was ~65 ms of every start (issue 15 item 4). A failed load is
 * not kept, so the next scan tries again (and fails closed meanwhile: the write is refused, not let through).
 */
let engine: Promise<SecretlintEngine> | undefined;
function secretlint(): Promise<SecretlintEngine> {
  engine ??= (async () => {
    const [{ lintSource }, { secretLintProfiler }, { rules }, { RE2JS }] = await Promise.all([
      import('@secretlint/core'),
      import('@secretlint/profiler'),
      import('@secretlint/secretlint-rule-preset-recommend'),
      import('re2js'),
    ]);
    silenceSecretlintProfiler(secretLintProfiler);
    // The recommended preset's rules, each registered on its own, without `secretlint-rule-filter-comments`:
    // that rule obeys `secretlint-disable` comments, and text in a field must never switch scanning off
    // (the field is data, not a source file its author annotates).
    const config = { rules: rules.filter((rule) => rule.meta.id !== FILTER_COMMENTS_RULE).map((rule) => ({ id: rule.meta.id, rule })) };
    const builtIn = BUILT_IN.map(([rule, pattern]) => ({ rule, pattern: RE2JS.compile(pattern) }));
    return { lintSource, config, builtIn };
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
      // secretlint is synchronous under its promises: yield to the event loop now and then, so a large
      // write (a 1,000-record reconcile) does not hold every other request (agents' reads) until it ends.
      if (++scanned % YIELD_EVERY_FIELDS === 0) await new Promise((resolve) => setImmediate(resolve));
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
    const { lintSource, config, builtIn } = await secretlint();
    for (const { rule, pattern } of builtIn) if (pattern.test(value)) return rule;
    if (this.#knownSecrets.some((s) => value.includes(s))) return 'configured-credential';
    const result = await lintSource({
      source: { filePath: '/registry/field.txt', content: value, contentType: 'text' },
      options: { config, maskSecrets: true },
    });
    return result.messages[0]?.ruleId;
  }
}

/**
 * secretlint marks each lint in the global performance timeline, and its profiler keeps every mark in an
 * array it searches linearly on each new mark: memory without bound, and a cost per scan that grows with
 * the number of scans the process has made (after a few thousand registrations it dominated the write
 * path). Nothing reads those marks, so the profiler gets a timeline that records nothing.
 */
function silenceSecretlintProfiler(profiler: unknown): void {
  (profiler as { perf: Pick<typeof performance, 'mark' | 'measure'> }).perf = {
    mark: () => undefined as never,
    measure: () => undefined as never,
  };
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
