// Bounds of `agentlet-resources serve` that argument parsing needs without loading the daemon.

/** The first reconnect waits up to this long; each failed attempt doubles the bound. */
export const RECONNECT_BASE_MS = 500;
/** The cap on that bound, unless `--reconnect-max-ms` says otherwise. */
export const DEFAULT_RECONNECT_MAX_MS = 30_000;
