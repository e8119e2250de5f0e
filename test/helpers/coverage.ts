// tap's coverage and the processes a test starts.

/**
 * For a child process that runs a tool rather than the registry (npm, tsc, esbuild), or whose coverage would
 * not be reported: tap's coverage off for its process tree. tap passes its coverage hook to every process a
 * test starts, and under V8's precise coverage tsc runs several times slower, for nothing here.
 */
export const WITHOUT_COVERAGE = { _TAPJS_PROCESSINFO_COVERAGE_: '0' } as const;
