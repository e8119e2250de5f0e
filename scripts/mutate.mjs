// `npm run mutate`: StrykerJS over the domain core, one source file at a time, each against the suites
// that target it (the map below). One run per file keeps the dry run small (only those suites, with
// coverage), lets a long run stop between files without losing the files done (each file has its own
// incremental file under reports/), and gives a score per file.
// Plain JavaScript so it runs before anything is compiled.
//   npm run mutate                                   # every core file
//   npm run mutate -- src/credentials/tokens.ts      # one (or a few) of them
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const TARGETS = {
  'src/registry/ownership.ts': ['domain/rules', 'domain/rules-over-http', 'registry/resources'],
  'src/profiles/placement.ts': ['domain/rules', 'domain/rules-over-http', 'profiles/profiles', 'launch/launch'],
  'src/migrations/profile-v1.ts': ['domain/rules', 'migrations/registry-file'],
  'src/credentials/tokens.ts': ['domain/rules', 'domain/rules-over-http', 'http/auth'],
  'src/profiles/profile-rules.ts': ['domain/rules', 'domain/rules-over-http', 'profiles/profiles', 'profiles/upstream'],
  'src/workloads/workload-service.ts': ['domain/rules', 'domain/rules-over-http', 'launch/launch', 'secrets/fields-scanned'],
  'src/http/auth.ts': ['domain/rules', 'domain/rules-over-http', 'http/auth', 'http/authz-matrix'],
  'src/migrations/registry-file.ts': ['domain/rules', 'migrations/registry-file'],
  'src/capabilities/diagnostics.ts': ['capabilities/projection', 'capabilities/http'],
  'src/invocation/invocation-errors.ts': ['invocation/upstream-shapes', 'invocation/invoke'],
  'src/invocation/adapters.ts': ['invocation/adapters'],
  'src/registry/local-receipts.ts': ['registry/rfs-agents'],
  'src/registry/manageable.ts': ['registry/catalogue-upstream'],
  'src/channel/machine-channels.ts': ['machines/channel'],
  'src/command-args.ts': ['commands/args'],
  'src/agentlet/skill-jobs.ts': [
    'agentlet/skill-jobs',
    'agentlet/skill-jobs-refusals',
    'agentlet/skill-jobs-answers',
    'agentlet/skill-import-allowlist',
  ],
  'src/storage/event-log.ts': ['events/change-log', 'storage/contract'],
  'src/http/in-flight.ts': ['lifecycle/shutdown'],
  'src/http/refusals.ts': ['audit/refusal-summaries'],
  'src/http/limits.ts': ['http/limits'],
  'src/registry/catalogue-cache.ts': ['registry/catalogue-cache', 'http/compression'],
  'src/storage/append-log.ts': ['audit/torn-append', 'audit/rotation', 'launch/audit-recovery', 'storage/contract'],
  'src/routes/mcp-exchange.ts': ['mcp/wire', 'mcp/sdk-client'],
  'src/routes/mcp.ts': ['mcp/tool-result', 'mcp/wire', 'mcp/sdk-client', 'pins/thread-reads'],
  'src/routes/feed-reader.ts': ['events/change-events', 'events/connection-bounds', 'mcp/sdk-client'],
  'src/text/front-matter.ts': ['text/front-matter', 'registry/record-versions'],
  'src/registry/record-quota.ts': ['registry/record-quota', 'storage/contract-revisions'],
  'src/secrets/secret-scanner.ts': [
    'secrets/findings',
    'secrets/scanner-evasions',
    'secrets/public-skills-false-findings',
    'secrets/rule-formats',
  ],
  'src/secrets/secret-allowlist.ts': ['secrets/allowlist'],
  'src/storage/resource-index.ts': ['storage/resource-index', 'storage/contract-search'],
  'src/registry/search.ts': ['registry/search-words', 'registry/search-terms', 'storage/resource-index', 'storage/contract-search'],
};

const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log(`usage: npm run mutate [-- <core file>...]
Runs StrykerJS (stryker.config.json) on each core file against the suites that target it:
${Object.entries(TARGETS)
  .map(([f, t]) => `  ${f}: ${t.join(', ')}`)
  .join('\n')}
Reports: reports/mutation/<file>.json and .html; a summary per file at the end.`);
  process.exit(0);
}
const unknown = args.filter((a) => !(a in TARGETS));
if (unknown.length > 0) {
  console.error(`not a core file of the mutation run: ${unknown.join(', ')} (see npm run mutate -- --help)`);
  process.exit(2);
}
const files = args.length > 0 ? args : Object.keys(TARGETS);
mkdirSync('reports/mutation', { recursive: true });
const summary = [];
let failed = false;
for (const file of files) {
  const name = path.basename(file, '.ts');
  const testFiles = TARGETS[file].map((t) => `test/${t}.test.ts`);
  const started = Date.now();
  const run = spawnSync(
    process.execPath,
    [
      path.join('node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'),
      'run',
      '--mutate',
      file,
      '--testFiles',
      testFiles.join(','),
      '--incrementalFile',
      `reports/stryker-incremental-${name}.json`,
    ],
    // Stryker runs a test file without package.json's tap config; a suite slowed by the machine's load keeps
    // the same per-test timeout as `npm test` gives it.
    { stdio: 'inherit', env: { ...process.env, TAP_TIMEOUT: process.env.TAP_TIMEOUT ?? '480' } },
  );
  if (run.status !== 0) {
    failed = true;
    summary.push(`${file}: stryker exited ${run.status ?? run.signal}`);
    continue;
  }
  for (const ext of ['json', 'html'])
    if (existsSync(`reports/mutation/mutation.${ext}`)) copyFileSync(`reports/mutation/mutation.${ext}`, `reports/mutation/${name}.${ext}`);
  const report = JSON.parse(readFileSync('reports/mutation/mutation.json', 'utf8'));
  const count = {};
  for (const m of report.files[file]?.mutants ?? []) count[m.status] = (count[m.status] ?? 0) + 1;
  const detected = (count.Killed ?? 0) + (count.Timeout ?? 0);
  const valid = detected + (count.Survived ?? 0) + (count.NoCoverage ?? 0);
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  summary.push(
    `${file}: ${score.toFixed(1)} % (${detected} of ${valid} detected; survived ${count.Survived ?? 0}, no coverage ${count.NoCoverage ?? 0}, compile errors ${count.CompileError ?? 0}, ignored ${count.Ignored ?? 0}) in ${((Date.now() - started) / 60000).toFixed(1)} min`,
  );
}
console.log(
  `\nmutation score per file (suites: ${files.map((f) => `${path.basename(f, '.ts')} ← ${TARGETS[f].join('+')}`).join('; ')}):\n${summary.join('\n')}`,
);
process.exit(failed ? 1 : 0);
