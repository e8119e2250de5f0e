// Exit codes of `agentlet-resources`, and the error that carries one to the process boundary.

export const EXIT = {
  /** Everything asked for happened (or, with --dry-run, would happen). */
  ok: 0,
  /** A receipt is invalid, an ID is held by another provider, or the registry rejected the set. */
  rejected: 1,
  /** Bad arguments or local setup: unknown option, relative resource dir, missing or unsafe root or receipts/, unsafe token file. */
  usage: 2,
  /** The registry could not be used: unreachable, timed out, 401/403, 5xx or an unexpected (or oversized) answer. */
  unavailable: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error whose message is meant for the user (never holds a token) and whose exit code is decided. */
export class CliError extends Error {
  readonly exitCode: ExitCode;

  constructor(message: string, exitCode: ExitCode) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}
