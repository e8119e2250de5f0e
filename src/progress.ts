// Progress of a long command (`npm run migrate`, `npm run import`) on a terminal: one bar per stage, drawn
// with cli-progress on the given stream, and nothing at all when that stream is not a TTY (logs, pipes,
// CI). Domain code reports through the `Progress` interface and never learns where it goes.
import { createRequire } from 'node:module';
import type cliProgressModule from 'cli-progress';

/**
 * cli-progress, loaded when a bar is first drawn: the server imports this module (through the migrations)
 * but never draws a bar, and loading cli-progress cost ~16 ms of every start.
 */
let loaded: typeof cliProgressModule | undefined;
function cliProgress(): typeof cliProgressModule {
  return (loaded ??= createRequire(import.meta.url)('cli-progress') as typeof cliProgressModule);
}

export interface Progress {
  /** Starts a stage of `total` units (ends the previous one). */
  stage(label: string, total: number, unit?: string): void;
  advance(by?: number): void;
  /** Ends the last stage. */
  done(): void;
}

export const silentProgress: Progress = { stage() {}, advance() {}, done() {} };

/** Work below these sizes ends before a bar could say anything: no bar. */
export const LARGE_FILE_BYTES = 1024 * 1024;
export const LARGE_ROW_COUNT = 5000;

/** Bars on `stream` when it is a TTY; otherwise `silentProgress`. */
export function terminalProgress(stream: NodeJS.WritableStream & { isTTY?: boolean }): Progress {
  if (!stream.isTTY) return silentProgress;
  let bar: cliProgressModule.SingleBar | undefined;
  const end = () => {
    bar?.stop();
    bar = undefined;
  };
  return {
    stage(label, total, unit = '') {
      end();
      bar = new (cliProgress().SingleBar)(
        {
          stream,
          format: `${label.padEnd(24)} [{bar}] {percentage}% {value}/{total}${unit ? ` ${unit}` : ''}`,
          hideCursor: false,
          clearOnComplete: false,
          // Rendered during synchronous work too (reading and parsing a large file).
          synchronousUpdate: true,
          fps: 10,
        },
        cliProgress().Presets.shades_classic,
      );
      bar.start(total, 0);
    },
    advance(by = 1) {
      bar?.increment(by);
    },
    done: end,
  };
}
