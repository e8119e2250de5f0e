#!/usr/bin/env bash
# After a red `npm test`: prints every failed assertion tap recorded (.tap/test-results), with the lines of
# diagnostics that follow it, so the end of a CI log names what failed even when the log is cut.
# With the test command's log as $1, first the test files tap reported as failed (a file that timed out or
# died on a signal has no failed assertion of its own to show).
set -uo pipefail
log="${1:-}"
cd "$(dirname "$0")/../.."
if [ -n "$log" ] && [ -r "$log" ]; then
  echo "--- failed test files"
  grep -E '^not ok [0-9]+ - ' "$log" || echo "(none reported: the failure was outside tap's files)"
fi
results=.tap/test-results
[ -d "$results" ] || exit 0
echo "--- failed tests (from $results)"
grep -rlE '^[[:space:]]*not ok ' "$results" 2>/dev/null | sort | while read -r file; do
  echo "## ${file#"$results"/}"
  # Each failure and up to 24 lines of its YAML diagnostics; `# TODO`/`# SKIP` lines are not failures.
  grep -nE -A24 '^[[:space:]]*not ok ' "$file" | grep -vE '# (TODO|SKIP)' | head -120
done
echo "--- end of failed tests"
