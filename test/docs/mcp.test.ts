// docs/mcp.md's hands-on steps continue the README's quick start: its quick start, then the guide's blocks,
// then the README's stop, run in one bash as written (test/helpers/doctest.ts). The guide starts the
// stand-in vendor, writes a capabilities file, restarts the service with it, mints a grant, lists and
// calls the hosted web search with the MCP Inspector's CLI and with curl; every answer is checked, no
// token is printed, and after the README's stop the service is gone and its port free.
import t from 'tap';
import { assertRan, assertStopped, docBlocks, runDoctest } from '../helpers/doctest.js';

t.setTimeout(600_000);

t.test("the README quick start, then docs/mcp.md's steps, run as written", async (t) => {
  const quick = await docBlocks('README.md', 'quickstart');
  const mcp = await docBlocks('docs/mcp.md', 'mcp');
  const stop = await docBlocks('README.md', 'stop');
  t.ok(mcp.length >= 5, `docs/mcp.md has its blocks (${mcp.length})`);
  const run = await runDoctest(t, [...quick, ...mcp, ...stop]);
  assertRan(t, run);
  const q = quick.length;
  const step = (n: number) => run.step(q + n);

  const reads = step(5);
  t.match(reads, /"uri":\s*"registry:\/\/resources\/web-search"/, 'resources/list shows the hosted record');
  t.match(reads, /"uri":\s*"registry:\/\/resources\/pdf-tools"/, "and the machine's");
  t.match(reads, /"contents":\s*\[/, 'resources/read gives its text');
  t.match(step(6), /"name":\s*"web-search"[\s\S]*"inputSchema"/, 'tools/list: the grant allows web-search');
  t.match(step(7), /"isError":\s*false|"structuredContent"/, 'tools/call answered');
  t.match(step(7), /About lichen/, "the stand-in vendor's result, as Huabu's search result");
  t.notMatch(step(7), /"isError":\s*true/, 'not an error');
  t.match(step(8), /^\{"result":\{"content":\[[\s\S]*"jsonrpc":"2\.0","id":1\}$/m, 'curl: the JSON-RPC result');
  t.match(step(8), /About moss/, "the stand-in vendor's result");
  t.notMatch(
    run.out + run.err,
    /arr_owner_|arr_huabu_|arr_machine_|arr_canvas_|arr_grant_|stand-in-key/,
    'no token or key printed by any step',
  );
  await assertStopped(t, run);
});
