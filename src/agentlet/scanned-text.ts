// What the secret scan reads of a skill's file, text or binary. Framework-free.

const MIN_TEXT_RUN = 8;

/**
 * What the secret scan reads of a file: a file without a NUL byte is text; one with NUL bytes (an image, a
 * font, a binary) is scanned as its text runs, as `strings` finds them: runs of at least 8 printable ASCII
 * characters, read byte by byte and as UTF-16 (little and big endian), one run per line.
 */
export function scannedText(bytes: Buffer): string {
  if (!bytes.includes(0)) return bytes.toString('utf8');
  const runs: string[] = [];
  const printable = (b: number | undefined) => b !== undefined && ((b >= 0x20 && b <= 0x7e) || b === 0x09);
  // step 1: one byte a character; step 2: UTF-16, the character's byte at `at` and a 0 beside it.
  const collect = (step: 1 | 2, offset: number, at: 0 | 1) => {
    let run = '';
    for (let i = offset; i + step <= bytes.length; i += step) {
      const b = bytes[i + (step === 2 ? at : 0)];
      const ok = printable(b) && (step === 1 || bytes[i + 1 - at] === 0);
      if (ok) run += String.fromCharCode(b!);
      else {
        if (run.length >= MIN_TEXT_RUN) runs.push(run);
        run = '';
      }
    }
    if (run.length >= MIN_TEXT_RUN) runs.push(run);
  };
  collect(1, 0, 0);
  // UTF-16 little endian (the character's byte first) and big endian (second), at either alignment.
  for (const offset of [0, 1]) {
    collect(2, offset, 0);
    collect(2, offset, 1);
  }
  return runs.join('\n');
}
