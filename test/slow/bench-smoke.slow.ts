// The bench harness in --smoke mode: one small scale, one short run per variant. Checks that every scenario
// of the table prints a row (timings are not asserted: CI machines vary). About 100 s of starting servers:
// part of `npm run test:slow` (CI runs it after `npm test`), not of `npm test`.
import t from 'tap';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

t.test('the bench in --smoke mode prints a row for every scenario', async (t) => {
  // Compiled first, as `npm run bench` does: under the test's TypeScript loader every child process the
  // bench forks would compile the app again. Inside `npm test` the build is already current (generate:check
  // built it), so this costs no second tsc run.
  await run(process.execPath, [path.resolve('scripts/build-if-changed.mjs')], { timeout: 120_000 });
  const { stdout } = await run(process.execPath, [path.resolve('dist/scripts/bench/run.js'), '--smoke'], {
    // About 90-120 s on an idle two-core machine (scenarios 10 and 11 added some 25 s, 12 some 10 s); the bound only guards
    // against a hang (CI runs two files at once).
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const rows = stdout.split('\n').filter((l) => /^\| \d/.test(l));
  const cells = rows.map((l) => l.split('|').map((c) => c.trim()));
  for (const id of ['1', '2', '4', '5', '6'])
    t.ok(
      cells.some((c) => c[1] === id && c[3] === '100'),
      `scenario ${id} measured at 100`,
    );
  for (const what of ['identity', 'br', 'RFS (canvas token)']) {
    t.ok(
      cells.some((c) => c[1] === '1' && c[4]!.startsWith(`${what}: `) && /^plain node:http: .* KiB$/.test(c[5]!) && /×$/.test(c[6]!)),
      `scenario 1: ${what} beside a plain node:http server sending the same bytes`,
    );
  }
  for (const connections of [10, 32]) {
    t.ok(
      cells.some((c) => c[1] === '2' && c[4]!.startsWith(`${connections} connections: `) && /×$/.test(c[6]!)),
      `scenario 2: 304 vs /healthz at ${connections} connections`,
    );
  }
  t.ok(
    cells.some((c) => c[1] === '4' && c[3] === '100 vs 100'),
    'scenario 4 across scales',
  );
  t.ok(
    cells.some((c) => c[1] === '5' && /launches\/s \(p99/.test(c[4]!) && !/⚠/.test(c[4]!)),
    'scenario 5: launches at full speed',
  );
  t.ok(
    cells.some(
      (c) =>
        c[1] === '5' &&
        /^\d+ launches\/s: p99 .* ms \(p50 /.test(c[4]!) &&
        /^append \+ fdatasync at \d+\/s in its data directory: p99 /.test(c[5]!) &&
        /× the disk's p99$/.test(c[6]!),
    ),
    "scenario 5: launch latency at a fixed rate beside the disk's",
  );
  t.ok(
    cells.some((c) => c[1] === '7' && /ms to listening, .* ms to \/readyz 200, RSS/.test(c[4]!) && !/workloads/.test(c[5]!)),
    'scenario 7 (resources, profiles)',
  );
  t.ok(
    cells.some((c) => c[1] === '7' && /ms to \/readyz 200, RSS/.test(c[4]!) && /workloads/.test(c[5]!)),
    'scenario 7 (with workloads)',
  );
  t.ok(
    cells.some((c) => c[1] === '9' && /^through the service p50 .* ms, p99 .* ms \(overhead/.test(c[4]!) && /^direct p50/.test(c[5]!)),
    'scenario 9: invocation overhead',
  );
  for (const coding of ['gzip', 'br']) {
    t.ok(
      cells.some(
        (c) => c[1] === '10' && c[4]!.startsWith(`${coding}: `) && / KiB per response$/.test(c[4]!) && /× fewer bytes$/.test(c[6]!),
      ),
      `scenario 10: ${coding} beside identity`,
    );
  }
  const events = cells.filter((c) => c[1] === '11' && c[3] === '100');
  t.ok(
    events.some((c) => /^delivery after the 201: p99 .* ms \(p50 /.test(c[4]!) && !/never received/.test(c[4]!)),
    "scenario 11: every subscriber received every write's event",
  );
  t.ok(
    events.some((c) => /^with 20 subscribers: .* writes\/s/.test(c[4]!) && /^without: /.test(c[5]!) && /×$/.test(c[6]!)),
    'scenario 11: paced writes with and without subscribers',
  );
  t.ok(
    events.some((c) => / KiB RSS per subscriber/.test(c[4]!)),
    'scenario 11: memory per subscriber',
  );
  t.ok(
    events.some((c) => /^3 streams that never read/.test(c[4]!)),
    'scenario 11: streams that never read',
  );
  for (const what of ['first publish', 're-publish after a restart, unchanged']) {
    t.ok(
      cells.some(
        (c) =>
          c[1] === '12' &&
          c[3] === '100' &&
          c[4]!.startsWith(`${what} of 20 skills (`) &&
          / answered in [\d,]+ ms(?: ⚠ [^:]*)?: reads p99 .* ms \(p50 .*, max .*\), \d+ × 503 of [\d,]+ reads(?: ⚠ .*)?$/.test(c[4]!) &&
          /^steady state \(no publish\): p99 .* × 503 of [\d,]+ reads.*; 50 reads\/s$/.test(c[5]!) &&
          /× p99$/.test(c[6]!),
      ),
      `scenario 12: owner reads during a ${what} of skills beside the steady state`,
    );
  }
  t.notOk(
    rows.some((l) => /n\/a \(.*not yet built/.test(l)),
    'every scenario is built',
  );
  t.same(
    rows.filter((l) => /NaN|undefined/.test(l)),
    [],
    'no missing figure',
  );
});
