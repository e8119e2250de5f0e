// tap's coverage and the processes a test starts.

/**
 * For a child process that runs tools rather than the registry (npm, tsc, esbuild): tap's coverage off for
 * its process tree. tap passes its coverage hook to every process a test starts; under V8's precise coverage
 * tsc runs several times slower, and nothing it would record is reported.
 */
export const TOOLS_WITHOUT_COVERAGE = { _TAPJS_PROCESSINFO_COVERAGE_: '0' } as const;
