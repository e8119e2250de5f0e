// Shortening Markdown without breaking it: a cut lands where a block ends (before a blank line outside any
// code fence, or after a fence's closing line), so what is kept renders as the same blocks it had in the
// whole text. Framework-free.

/** An opening or closing code fence line (CommonMark: up to three spaces, then ``` or ~~~, three or more). */
const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fence open after `line`, given the one open before it (`undefined`: none). */
function fenceAfter(open: string | undefined, line: string): string | undefined {
  const m = FENCE.exec(line);
  if (!m) return open;
  const [, marker, rest] = m as unknown as [string, string, string];
  if (open === undefined) return marker[0] === '`' && rest.includes('`') ? undefined : marker;
  return marker[0] === open[0] && marker.length >= open.length && rest.trim() === '' ? undefined : open;
}

/** Drops a trailing high surrogate (the first half of a pair whose second half was cut off). */
function wholeCodePoints(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

/**
 * A prefix of `text` of at most `max` characters that never ends inside a code fence, trailing space dropped.
 * It ends where a Markdown block ends (the longest such prefix) unless that keeps less than half of `max`
 * (a block larger than the room follows); then it ends at a line end, or within a line, and a fence left open
 * there is closed on a line of its own.
 */
export function cutMarkdownAtBlock(text: string, max: number): string {
  if (text.length <= max) return text;
  const lines = text.split('\n');
  let fence: string | undefined;
  let offset = 0;
  let block = 0;
  /** The longest whole-line prefix that fits with its open fence closed: [end, closing line]. */
  let atLine: [number, string] = [0, ''];
  /** Where the first line that does not fit starts, and the fence open there. */
  let within: [number, string | undefined] = [0, undefined];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '');
    const end = offset + lines[i]!.length;
    within = [offset, fence];
    offset = end + 1;
    if (end > max) break;
    const before = fence;
    fence = fenceAfter(fence, line);
    const closer = fence === undefined ? '' : `\n${fence}`;
    if (end + closer.length <= max) atLine = [end, closer];
    if (fence !== undefined || line.trim() === '') continue;
    const next = lines[i + 1];
    if (before !== undefined || next === undefined || next.trim() === '') block = end;
  }
  if (block >= max / 2) return text.slice(0, block).trimEnd();
  if (atLine[0] >= max / 2) return text.slice(0, atLine[0]).trimEnd() + atLine[1];
  const closer = within[1] === undefined ? '' : `\n${within[1]}`;
  return wholeCodePoints(text.slice(0, Math.max(within[0], max - closer.length))).trimEnd() + closer;
}
