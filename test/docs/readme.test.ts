// The README is tested, as rustdoc and doctest test theirs: the shell blocks of its quick start, then those
// of the Agentlet walk-through (docs/agentlet-walkthrough.md), then the README's stop, each between
// `<!-- doctest: NAME -->` and `<!-- /doctest -->`, run in order, in one bash with `set -euo pipefail`, against
// the real server the quick start starts, on a free port, from a temporary directory that mirrors the
// checkout (test/helpers/doctest.ts). A broken step fails this test, so it fails CI; after the stop, nothing
// listens on the port and the server's process is gone.
import t from 'tap';
import { assertRan, assertStopped, docBlocks, runDoctest } from '../helpers/doctest.js';

t.setTimeout(600_000);

t.test('the README quick start and Agentlet walk-through run top to bottom', async (t) => {
  const quick = await docBlocks('README.md', 'quickstart');
  const agentlet = await docBlocks('docs/agentlet-walkthrough.md', 'agentlet');
  const stop = await docBlocks('README.md', 'stop');
  t.ok(quick.length >= 10, `the quick start has its blocks (${quick.length})`);
  t.ok(agentlet.length >= 5, `the Agentlet walk-through has its blocks (${agentlet.length})`);
  t.equal(stop.length, 1, 'the README says how to stop the service');
  const run = await runDoctest(t, [...quick, ...agentlet, ...stop]);
  assertRan(t, run);
  const { out, err, log, step } = run;

  t.match(step(3), /"id":"web-search"/, 'huabu registered web-search');
  t.match(step(5), /"created":\["pdf-tools"\]/, 'the machine published pdf-tools (a real reconcile, not a dry run)');
  t.match(step(6), /"id":"pdf-tools"[\s\S]*"id":"web-search"|"id":"web-search"[\s\S]*"id":"pdf-tools"/);
  t.match(
    step(8),
    /"resourceIds":\["huabu-access","local-resource-management","web-search","pdf-tools"\]/,
    'the launch pinned the defaults and the selection',
  );
  const agentView = step(10);
  t.match(agentView, /"id":"pdf-tools"/, "the agent sees its machine's record");
  t.match(agentView, /"id":"web-search"/, "and huabu's");
  const q = quick.length;
  t.match(step(q + 4), /ok summarize-pdf/, 'the receipt validates');
  t.match(step(q + 5), /summarize-pdf/, 'sync published it and list shows it');
  t.notMatch(out + err, /arr_owner_|arr_huabu_|arr_machine_|arr_canvas_/, 'no token printed by any step');

  // What the README says a first start logs: three JSON lines, the last one the ready line.
  const startLines = log
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { level: number; msg: string }).msg)
    .slice(0, 3);
  t.match(
    startLines,
    [
      /^Server listening at http:\/\/127\.0\.0\.1:\d+$/,
      /^generated missing credentials; read them from this file/,
      /^agent-resource-registry ready: listening on /,
    ],
    'a first start logs: listening, credentials generated, ready',
  );

  // The README's stop stopped the service: its process is gone and its port is free.
  await assertStopped(t, run);
});
