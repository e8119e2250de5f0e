// Text made fit for a terminal. Everything the CLI prints passes through `terminalSafe` at the output boundary,
// whoever wrote it (the registry, a file name, a record), so no escape sequence can recolour, retitle, clear or
// rewrite what the user reads.
import { LINE_AND_C1_CONTROLS } from '../text/text-rules.js';

/**
 * C0 controls but newline and tab, DEL, C1 controls (8-bit CSI and OSC among them) and the bidi overrides and
 * isolates, which reorder what is shown. Stripping only well-formed ANSI sequences would leave a lone ESC, CR or
 * C1 byte acting on the terminal.
 */
const UNSAFE = new RegExp(`(?![\\n\\t])[${LINE_AND_C1_CONTROLS}\\u202A-\\u202E\\u2066-\\u2069]`, 'gu');

/** Each unsafe character becomes U+FFFD, so tampered text stays visibly tampered. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, '\uFFFD');
}

/** One line of at most `max` characters: text quoted from elsewhere cannot start a line that looks like ours. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
