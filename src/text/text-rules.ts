// The text rules every field, key and line of the service is held to, in one place: which control characters
// each kind of text refuses, and the patterns (for JSON Schema and OpenAPI) and regular expressions built from
// them. Leaf module: the schemas, the domain and the audit trail all build on it.

/** Control characters a text field refuses: every C0 control and DEL, except tab and newline (which are text). */
export const TEXT_CONTROLS = '\\u0000-\\u0008\\u000B-\\u001F\\u007F';
/** Control characters a single-line string or a key refuses: every C0 control and DEL. */
export const LINE_CONTROLS = '\\u0000-\\u001F\\u007F';
/** The C1 controls (8-bit CSI and OSC among them). */
export const C1_CONTROLS = '\\u0080-\\u009F';
/** Every C0 control, DEL and every C1 control. */
export const LINE_AND_C1_CONTROLS = '\\u0000-\\u001F\\u007F-\\u009F';
/** Characters that reorder or split what a terminal or a log viewer shows: bidi controls, line and paragraph separators. */
export const LAYOUT_CONTROLS = '\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069';

/** Holds at least one visible (non-white-space) character. */
const VISIBLE_SOMEWHERE = '(?=[\\s\\S]*\\S)';
/** Starts and ends with a visible character. */
const NO_EDGE_SPACE = '(?!\\s)(?![\\s\\S]*\\s$)';
/** Starts and ends with a visible character, and so is not empty. */
const VISIBLE_EDGES = '(?=\\S)(?=[\\s\\S]*\\S$)';

const only = (controls: string) => `[^${controls}]*`;

/** Text (guidance, descriptions): tab and newline allowed, other controls refused, something visible in it. */
export const SAFE_TEXT_PATTERN = `^${VISIBLE_SOMEWHERE}${only(TEXT_CONTROLS)}$`;
/** Text that may be empty (an owner's content that `''` clears): tab and newline allowed, other controls refused. */
export const OPTIONAL_TEXT_PATTERN = `^${only(TEXT_CONTROLS)}$`;
/**
 * Record v2 text (upstream trims it): no control characters other than newline and tab, and no leading or
 * trailing white space. The empty string matches; a minLength says whether it is allowed.
 */
export const TRIMMED_TEXT_PATTERN = `^${NO_EDGE_SPACE}${only(TEXT_CONTROLS)}$`;
/** Single-line strings (paths, names in URLs): no control characters at all. */
export const SINGLE_LINE_PATTERN = `^${only(LINE_CONTROLS)}$`;
/** A single line with something visible in it. */
export const VISIBLE_LINE_PATTERN = `^${VISIBLE_SOMEWHERE}${only(LINE_CONTROLS)}$`;
/** A single line with no surrounding white space (and so not blank). */
export const TRIMMED_LINE_PATTERN = `^${VISIBLE_EDGES}${only(LINE_CONTROLS)}$`;
/** A single line with no surrounding white space and no C1 control either (upstream's printable labels). */
export const PRINTABLE_LINE_PATTERN = `^${VISIBLE_EDGES}${only(LINE_AND_C1_CONTROLS)}$`;

/** A control character a text field refuses. */
export const TEXT_CONTROL_CHARACTER = new RegExp(`[${TEXT_CONTROLS}]`);
/** A control character a key or single-line string refuses. */
export const LINE_CONTROL_CHARACTER = new RegExp(`[${LINE_CONTROLS}]`);
/** Every C0 control and DEL, for escaping. */
export const ANY_CONTROL_CHARACTERS = new RegExp(`[${LINE_CONTROLS}]`, 'g');
/**
 * What an audit field or a log line may not hold as it is: C0 and C1 controls, DEL, the layout controls, and
 * unpaired surrogates (not valid UTF-8, refused by PostgreSQL's jsonb).
 */
export const UNSAFE_FOR_LOGS = new RegExp(
  `[${LINE_AND_C1_CONTROLS}${LAYOUT_CONTROLS}]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|(?<![\\uD800-\\uDBFF])[\\uDC00-\\uDFFF]`,
  'g',
);
