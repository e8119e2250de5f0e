// Node labels for the SVG projection that fit their shapes in whatever sans-serif font the viewer has.
// Graphviz (WebAssembly, no fonts) sizes a node from its built-in Helvetica metrics, but a viewer without
// Helvetica draws the text in its own sans-serif, on Linux usually DejaVu Sans, up to ~40% wider on some
// letters ("t", "r", "m"), so long names ran out of their boxes. Here a long label is wrapped into short
// lines (the full text kept as the node's tooltip when it had to be cut), and each node gets a minimum width
// from a conservative estimate: per character, the wider of Helvetica's and DejaVu Sans's advance.
// DOT output (`?format=dot`) is left as it was: whoever renders it has real fonts.

/** Advance widths in em, the wider of Helvetica and DejaVu Sans, for printable ASCII (32..126). */
const ASCII_EM = [
  0.318,
  0.401,
  0.46,
  0.838,
  0.636,
  0.95,
  0.78,
  0.275,
  0.39,
  0.39,
  0.5,
  0.838,
  0.318,
  0.361,
  0.318,
  0.337, // space .. /
  0.636,
  0.636,
  0.636,
  0.636,
  0.636,
  0.636,
  0.636,
  0.636,
  0.636,
  0.636, // 0 .. 9
  0.337,
  0.337,
  0.838,
  0.838,
  0.838,
  0.556,
  1.015, // : ; < = > ? @
  0.684,
  0.686,
  0.722,
  0.77,
  0.667,
  0.611,
  0.778,
  0.752,
  0.295,
  0.5,
  0.667,
  0.557,
  0.863,
  0.748,
  0.787,
  0.667,
  0.787,
  0.722,
  0.667,
  0.611,
  0.732,
  0.684,
  0.989,
  0.685,
  0.667,
  0.685, // A .. Z
  0.39,
  0.337,
  0.39,
  0.838,
  0.556,
  0.5, // [ \ ] ^ _ `
  0.613,
  0.635,
  0.55,
  0.635,
  0.615,
  0.352,
  0.635,
  0.634,
  0.278,
  0.278,
  0.579,
  0.278,
  0.974,
  0.634,
  0.612,
  0.635,
  0.635,
  0.411,
  0.521,
  0.392,
  0.634,
  0.592,
  0.818,
  0.592,
  0.592,
  0.525, // a .. z
  0.636,
  0.337,
  0.636,
  0.838, // { | } ~
];

/** Anything else (accented letters, other scripts, symbols): a full em, as wide as a CJK ideograph. */
const OTHER_EM = 1;

/** The width (pt) a line of text may take at `fontSize` pt in Helvetica or DejaVu Sans, whichever is wider. */
export function estimateTextWidth(text: string, fontSize: number): number {
  let em = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    em += code >= 32 && code <= 126 ? ASCII_EM[code - 32]! : OTHER_EM;
  }
  return em * fontSize;
}

/** Characters per line before a label is wrapped, and lines per name before it is cut (with "…"). */
export const LABEL_LINE_CHARS = 32;
export const LABEL_MAX_LINES = 3;

/**
 * `text` in lines of at most `maxChars` characters, broken after a space, `-`, `_`, `.` or `/` where one is
 * near enough, else inside the word; at most `maxLines` lines, the last ending in "…" when text was cut.
 */
export function wrapLabel(text: string, maxChars = LABEL_LINE_CHARS, maxLines = LABEL_MAX_LINES): { lines: string[]; cut: boolean } {
  const chars = [...text];
  const lines: string[] = [];
  let start = 0;
  while (start < chars.length && lines.length < maxLines) {
    let end = Math.min(chars.length, start + maxChars);
    if (end < chars.length) {
      // Break after the last separator in the second half of the line, if there is one.
      for (let i = end - 1; i > start + maxChars / 2; i--) {
        if (/[\s\-_./]/.test(chars[i]!)) {
          end = i + 1;
          break;
        }
      }
    }
    lines.push(chars.slice(start, end).join('').trim());
    start = end;
    while (start < chars.length && /\s/.test(chars[start]!)) start++;
  }
  const cut = start < chars.length;
  if (cut) {
    const last = [...lines[lines.length - 1]!];
    lines[lines.length - 1] = `${last
      .slice(0, Math.max(0, maxChars - 1))
      .join('')
      .trimEnd()}…`;
  }
  return { lines: lines.filter((l, i) => l !== '' || i === 0), cut };
}

/** Graphviz's default node margin, horizontally, in points (0.11 inch). */
const NODE_MARGIN_PT = 0.11 * 72;
/** The component shape's tabs stand this far into its left side. */
const COMPONENT_TABS_PT = 8;
/** A little room beyond the estimate (rounding, anti-aliasing). */
const SLACK_PT = 4;

/** The minimum node width (inches) for `lines` at `fontSize` in a shape, so the widest line fits inside it. */
export function minNodeWidth(lines: readonly string[], fontSize: number, shape: 'box' | 'ellipse' | 'component'): number {
  const text = Math.max(...lines.map((l) => estimateTextWidth(l, fontSize)));
  const box = text + 2 * NODE_MARGIN_PT + SLACK_PT + (shape === 'component' ? COMPONENT_TABS_PT : 0);
  // An ellipse holds its label's box when both of its axes are √2 times the box's (Graphviz does the same).
  const points = shape === 'ellipse' ? box * Math.SQRT2 : box;
  return Math.ceil((points / 72) * 100) / 100;
}
