// YAML front matter: the block between `---` lines at the top of a Markdown file (a skill's `SKILL.md`), and
// the Agent Skills format's rules for a skill's front matter. One parser for every reader: the Agentlet's
// scan and import, and the registry's views of a record whose source content opens with front matter.
// Framework-free; the only package is `yaml`.
import { isScalar, Lexer, LineCounter, parseDocument, visit } from 'yaml';

/** What a Markdown file's front matter holds, and the text after it. */
export interface FrontMatter {
  /** The front matter's YAML mapping. */
  data: Record<string, unknown>;
  /** Everything after the closing `---` line, as it is. */
  body: string;
}

export type FrontMatterRead =
  | ({ ok: true } & FrontMatter)
  | { ok: false; problem: 'missing'; message: string }
  | {
      ok: false;
      /** The text opens with a `---` block that is not a YAML mapping. */
      problem: 'invalid';
      message: string;
      /** Everything after the block's closing `---` line. */
      body: string;
    };

// An opening `---` line (after an optional byte order mark), the YAML, a closing `---` line (or the end).
const FENCED = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;

/**
 * How much front matter is read at all. Real skills' front matter is a few hundred characters and a handful
 * of keys (the format's `description` is at most 1,024 characters); past these bounds it is refused before
 * it is parsed, so no text makes a read cost more than a parse of this size.
 */
export const FRONT_MATTER_BOUNDS = {
  /** Characters between the fences. */
  chars: 16_000,
  /** Keys of every mapping in it, nested ones included. */
  keys: 256,
  /**
   * YAML tokens (`yaml`'s lexer: each scalar, indicator, space, line break and comment). Parsing costs about
   * 2 µs a token, so 16,000 characters of one-character flow items took 40 ms; real skills' front matter is
   * 10–120 tokens, a mapping of 256 keys about 2,050.
   */
  tokens: 4096,
} as const;

/** A parsed front matter: its mapping, or why it is not one (the part of a read that does not depend on the body). */
export type ParsedFrontMatter = { ok: true; data: Record<string, unknown> } | { ok: false; message: string };
type Parsed = ParsedFrontMatter;

/**
 * Parses of recent front matter, by their YAML text, least recently read first: a record read again and
 * again is parsed once. At most PARSED_KEPT_CHARS characters of YAML are kept (thousands of real skills'
 * front matter, 250 at the bound).
 */
const parsed = new Map<string, { yaml: string; result: Parsed }>();
let parsedChars = 0;
const PARSED_KEPT_CHARS = 4_000_000;

/**
 * Reads the front matter at the top of `text`: a mapping parsed as YAML 1.2 (duplicate keys refused, at
 * most 10 aliases expanded, within FRONT_MATTER_BOUNDS), or why there is none. The mapping is frozen and
 * shared by every read of the same front matter.
 */
export function readFrontMatter(text: string): FrontMatterRead {
  const match = FENCED.exec(text);
  if (!match) return { ok: false, problem: 'missing', message: 'no YAML front matter (a block between --- lines at the top)' };
  const body = text.slice(match[0].length);
  const yaml = match[1] ?? '';
  if (yaml.length > FRONT_MATTER_BOUNDS.chars)
    return { ok: false, problem: 'invalid', message: `the front matter is longer than ${FRONT_MATTER_BOUNDS.chars} characters`, body };
  let entry = parsed.get(yaml);
  // Most recently read last.
  if (entry !== undefined) parsed.delete(yaml);
  else {
    const own = ownCopy(yaml);
    parsedChars += own.length;
    entry = { yaml: own, result: parseMapping(own) };
  }
  const result = keep(entry);
  return result.ok ? { ok: true, data: result.data, body } : { ok: false, problem: 'invalid', message: result.message, body };
}

/**
 * Whether a scanned text field (a JSON pointer, as textFieldsOf in src/registry/resource-versions.ts names
 * them) is one every reader parses as a skill's SKILL.md: record v2's `sourceContent`.
 */
export function isFrontMatterField(pointer: string): boolean {
  return pointer === '/sourceContent' || pointer.endsWith('/sourceContent');
}

/** The YAML between the fences at the top of `text`, when it opens with front matter within the character bound. */
export function frontMatterYaml(text: string): string | undefined {
  const match = FENCED.exec(text);
  const yaml = match ? (match[1] ?? '') : undefined;
  return yaml !== undefined && yaml.length <= FRONT_MATTER_BOUNDS.chars ? yaml : undefined;
}

/** Parses `yaml` as readFrontMatter does (the bounds, duplicate keys, aliases), without keeping it: what a worker thread runs. */
export function parseFrontMatter(yaml: string): ParsedFrontMatter {
  return yaml.length > FRONT_MATTER_BOUNDS.chars
    ? { ok: false, message: `the front matter is longer than ${FRONT_MATTER_BOUNDS.chars} characters` }
    : parseMapping(yaml);
}

/**
 * Keeps `result`, parsed from `yaml` elsewhere (a worker thread's parseFrontMatter), as readFrontMatter's own
 * parse: the next read of the same front matter finds it. Its mapping is frozen here.
 */
export function keepParsedFrontMatter(yaml: string, result: ParsedFrontMatter): ParsedFrontMatter {
  const known = parsed.get(yaml);
  if (known !== undefined) return known.result;
  const own = ownCopy(yaml);
  parsedChars += own.length;
  return keep({ yaml: own, result: result.ok ? { ok: true, data: deepFreeze(result.data) } : result });
}

/**
 * A copy of `yaml` of its own (exact, lone surrogates included), so that neither a kept key nor the strings
 * parsed from it keep the whole text they were cut from alive.
 */
function ownCopy(yaml: string): string {
  return JSON.parse(JSON.stringify(yaml)) as string;
}

/** Keeps `entry` as the most recently read, dropping the least recently read past PARSED_KEPT_CHARS. */
function keep(entry: { yaml: string; result: Parsed }): Parsed {
  parsed.set(entry.yaml, entry);
  for (const [kept] of parsed) {
    if (parsedChars <= PARSED_KEPT_CHARS) break;
    parsed.delete(kept);
    parsedChars -= kept.length;
  }
  return entry.result;
}

/**
 * Parses front matter in time linear in its length: `yaml`'s own duplicate-key check compares each key with
 * every earlier one, so keys are counted and compared here, with a set per mapping.
 */
let parsesHere = 0;

/** How many front matters this thread has parsed itself (kept parses, a worker's included, are not counted). */
export function frontMatterParses(): number {
  return parsesHere;
}

function parseMapping(yaml: string): Parsed {
  parsesHere++;
  let tokens = 0;
  for (const _ of new Lexer().lex(yaml)) {
    if (++tokens > FRONT_MATTER_BOUNDS.tokens)
      return { ok: false, message: `the front matter has more than ${FRONT_MATTER_BOUNDS.tokens} YAML tokens` };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(yaml, { uniqueKeys: false, prettyErrors: false, lineCounter });
  // The YAML starts on the file's second line.
  const invalid = (offset: number, code: string): Parsed => ({
    ok: false,
    message: `the front matter is not valid YAML (line ${lineCounter.linePos(offset).line + 1}: ${code})`,
  });
  if (doc.errors.length > 0) return invalid(doc.errors[0]!.pos[0], doc.errors[0]!.code);
  let keys = 0;
  let duplicate: number | undefined;
  visit(doc, {
    Map(_, map) {
      keys += map.items.length;
      if (keys > FRONT_MATTER_BOUNDS.keys) return visit.BREAK;
      const seen = new Set<string>();
      for (const { key } of map.items) {
        // Scalars are compared as the property they become (`1` and `"1"` are one key of the mapping read);
        // a collection as a key is never equal to another, as in `yaml`'s own check.
        if (!isScalar(key)) continue;
        const property = String(key.value);
        if (seen.has(property)) {
          duplicate = key.range?.[0] ?? 0;
          return visit.BREAK;
        }
        seen.add(property);
      }
      return undefined;
    },
  });
  if (keys > FRONT_MATTER_BOUNDS.keys) return { ok: false, message: `the front matter has more than ${FRONT_MATTER_BOUNDS.keys} keys` };
  if (duplicate !== undefined) return invalid(duplicate, 'DUPLICATE_KEY');
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 10 });
  } catch {
    return { ok: false, message: 'the front matter expands too many YAML aliases' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, message: 'the front matter is not a YAML mapping' };
  return { ok: true, data: deepFreeze(value as Record<string, unknown>) };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** The front matter's mapping and the body after it, or undefined when the text does not open with a valid one. */
export function splitFrontMatter(text: string): FrontMatter | undefined {
  const read = readFrontMatter(text);
  return read.ok ? { data: read.data, body: read.body } : undefined;
}

/** The Agent Skills format's bounds on a skill's front matter. */
export const SKILL_FRONT_MATTER_BOUNDS = { name: 64, description: 1024, compatibility: 500 } as const;
/** The fields the Agent Skills format defines. */
export const SKILL_FRONT_MATTER_FIELDS = ['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools'] as const;
/** The format's `name`: lower-case letters and digits, single hyphens between them. */
export const SKILL_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Front matter codes that refuse a skill. */
export const SKILL_FRONT_MATTER_ERRORS = [
  'skill_front_matter_missing',
  'skill_front_matter_invalid',
  'skill_name_missing',
  'skill_description_missing',
] as const;
/** Front matter codes that are shown beside a skill without refusing it. */
export const SKILL_FRONT_MATTER_WARNINGS = [
  'skill_name_format',
  'skill_name_mismatch',
  'skill_description_too_long',
  'skill_field_invalid',
  'skill_field_unknown',
] as const;

/**
 * What a skill's front matter can be told. An `error` refuses the skill; a `warning` is shown beside it
 * (docs/decisions/skill-management.md says which is which, and why).
 */
export type SkillFrontMatterError = (typeof SKILL_FRONT_MATTER_ERRORS)[number];
export type SkillFrontMatterWarning = (typeof SKILL_FRONT_MATTER_WARNINGS)[number];
export type SkillFrontMatterCode = SkillFrontMatterError | SkillFrontMatterWarning;

export type SkillFrontMatterIssue =
  | { code: SkillFrontMatterError; severity: 'error'; message: string }
  | { code: SkillFrontMatterWarning; severity: 'warning'; message: string };

export interface SkillFrontMatter {
  /** `name` and `description`, trimmed; present when no issue is an error. */
  name?: string;
  description?: string;
  /** The whole mapping, when there is one. */
  data?: Record<string, unknown>;
  issues: SkillFrontMatterIssue[];
}

const quoted = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);

/**
 * Checks a `SKILL.md` against the Agent Skills format. `folderName` is the name of the folder (or archive)
 * the skill came from: a `name` different from it is a warning. Errors: no front matter, front matter that
 * is not a YAML mapping, no non-blank string `name` or `description`. Warnings: every other departure from
 * the format (its bounds on `name`, `description` and `compatibility`, the types of `license`,
 * `compatibility`, `metadata` and `allowed-tools`, and fields it does not define).
 */
export function checkSkillFrontMatter(text: string, folderName?: string): SkillFrontMatter {
  const read = readFrontMatter(text);
  if (!read.ok) {
    return {
      issues: [
        {
          code: read.problem === 'missing' ? 'skill_front_matter_missing' : 'skill_front_matter_invalid',
          severity: 'error',
          message: read.problem === 'missing' ? `SKILL.md has ${read.message}` : `SKILL.md: ${read.message}`,
        },
      ],
    };
  }
  const { data } = read;
  const issues: SkillFrontMatterIssue[] = [];
  const error = (code: SkillFrontMatterError, message: string) => issues.push({ code, severity: 'error', message });
  const warn = (code: SkillFrontMatterWarning, message: string) => issues.push({ code, severity: 'warning', message });
  const name = typeof data.name === 'string' ? data.name.trim() : undefined;
  const description = typeof data.description === 'string' ? data.description.trim() : undefined;
  if (!name) error('skill_name_missing', "SKILL.md's front matter has no name (a non-empty string)");
  if (!description) error('skill_description_missing', "SKILL.md's front matter has no description (a non-empty string)");
  if (name) {
    if (name.length > SKILL_FRONT_MATTER_BOUNDS.name || !SKILL_NAME_PATTERN.test(name)) {
      warn(
        'skill_name_format',
        `the name ${quoted(name)} is not the format's: at most ${SKILL_FRONT_MATTER_BOUNDS.name} lower-case letters, digits and single hyphens, no hyphen first or last`,
      );
    }
    if (folderName !== undefined && name !== folderName)
      warn('skill_name_mismatch', `the name ${quoted(name)} differs from its folder's name ${quoted(folderName)}`);
  }
  if (description && description.length > SKILL_FRONT_MATTER_BOUNDS.description) {
    warn(
      'skill_description_too_long',
      `the description has ${description.length} characters; the format allows ${SKILL_FRONT_MATTER_BOUNDS.description}`,
    );
  }
  if ('license' in data && typeof data.license !== 'string') warn('skill_field_invalid', 'license must be a string');
  if ('compatibility' in data) {
    if (typeof data.compatibility !== 'string') warn('skill_field_invalid', 'compatibility must be a string');
    else if (data.compatibility.length > SKILL_FRONT_MATTER_BOUNDS.compatibility)
      warn('skill_field_invalid', `compatibility must be at most ${SKILL_FRONT_MATTER_BOUNDS.compatibility} characters`);
  }
  if ('metadata' in data) {
    const { metadata } = data;
    if (
      metadata === null ||
      typeof metadata !== 'object' ||
      Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === 'string')
    )
      warn('skill_field_invalid', 'metadata must map strings to strings');
  }
  if ('allowed-tools' in data && typeof data['allowed-tools'] !== 'string')
    warn('skill_field_invalid', 'allowed-tools must be a string (tool names separated by spaces)');
  const unknown = Object.keys(data).filter((key) => !(SKILL_FRONT_MATTER_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    warn(
      'skill_field_unknown',
      `the format defines no field ${unknown
        .slice(0, 5)
        .map((k) => quoted(k))
        .join(', ')}${unknown.length > 5 ? ` (and ${unknown.length - 5} more)` : ''}`,
    );
  }
  const ok = !issues.some((i) => i.severity === 'error');
  return { ...(ok ? { name: name!, description: description! } : {}), data, issues };
}
