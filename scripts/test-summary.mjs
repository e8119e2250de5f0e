// The last lines of `npm test`: the failing tests by name (file › subtest › assertion), then one line
// `N passed, N failed, N skipped`, counted over the TAP tap saved per test file (.tap/test-results). Counts
// are of test points (assertions and skipped subtests), as tap counts them; a subtest's own closing point is
// not counted again. Usage: node scripts/test-summary.mjs [results dir]
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Parser } from 'tap-parser';

/** The TAP files under `dir`, relative to it, sorted. */
function tapFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.tap'))
    .map((entry) => path.relative(dir, path.join(entry.parentPath ?? entry.path, entry.name)))
    .sort();
}

/** One file's TAP: its counts and the full names of its failing test points (innermost only). */
export function summarizeTap(file, tap) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const failures = [];
  const parser = new Parser({ bail: false });
  const watch = (p, names) => {
    p.on('child', (child) => watch(child, [...names, child.name]));
    p.on('assert', (res) => {
      const name = [...names, res.name].join(' › ');
      if (res.closingTestPoint) {
        // A subtest that failed without a failing point of its own (a timeout, a crash): name it.
        if (!res.ok && !res.todo && !failures.some((f) => f.startsWith(`${name} › `))) {
          counts.failed++;
          failures.push(name);
        }
        return;
      }
      if (res.skip || res.todo) counts.skipped++;
      else if (res.ok) counts.passed++;
      else {
        counts.failed++;
        failures.push(name);
      }
    });
  };
  watch(parser, []);
  parser.end(tap);
  const name = file.replace(/\.tap$/, '');
  // A file that printed nothing stopped before its first test (it threw while loading): tap marks it not ok,
  // and its TAP is empty.
  if (tap.trim() === '') {
    counts.failed++;
    failures.push('(the file printed no test: it stopped before its first, see its output above)');
  }
  // A file that ended without passing (a crash, a plan not met) counts as one failure even with no failing point.
  else if (!parser.ok && failures.length === 0) {
    counts.failed++;
    failures.push('(the file did not complete)');
  }
  return { counts, failures: failures.map((f) => `${name} › ${f}`) };
}

/** The summary of every TAP file under `dir`. */
export function summarize(dir) {
  const total = { passed: 0, failed: 0, skipped: 0 };
  const failures = [];
  let files = [];
  try {
    files = tapFiles(dir);
  } catch {
    // no results at all: the summary says 0 passed
  }
  for (const file of files) {
    const one = summarizeTap(file, readFileSync(path.join(dir, file), 'utf8'));
    for (const key of Object.keys(total)) total[key] += one.counts[key];
    failures.push(...one.failures);
  }
  return { ...total, files: files.length, failures };
}

/** The lines to print: each failure, then the one summary line. */
export function summaryLines({ passed, failed, skipped, failures }, failedSteps = []) {
  return [
    ...failures.map((name) => `not ok: ${name}`),
    ...failedSteps.map((step) => `failed: ${step}`),
    `${passed} passed, ${failed} failed, ${skipped} skipped`,
  ];
}

if (process.argv[1] && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) {
  const summary = summarize(process.argv[2] ?? path.join('.tap', 'test-results'));
  console.log(summaryLines(summary).join('\n'));
  process.exit(summary.failed === 0 ? 0 : 1);
}
