// The registry as an MCP server, driven by a client no one here wrote: the MCP Inspector's command line
// (`@modelcontextprotocol/inspector-cli`, the Node 20 line), run as a child process against a real server on
// a real socket, with the flags docs/mcp.md shows a user. It lists the records its canvas may see and not
// another machine's, reads a record's guidance, lists the hosted capability the grant allows only when the
// grant is sent, calls it through to a real local vendor (audited), and fails when the canvas token is
// wrong, refused with 401 before any JSON-RPC. No token, grant or vendor key reaches its output or the
// server's log.
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { request } from 'undici';
import { CANARY } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';
import { until } from '../helpers/wait.js';
import { capabilitiesFile, SEARCH_KEY, world } from '../helpers/invocation-world.js';

// The package's own CLI proper (its `build/cli.js` launcher only prints a banner and spawns this file).
const CLI = createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/build/index.js');

// None of this project's code runs in the CLI: it is started without the test runner's hooks and coverage.
const CLI_ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && name !== 'NODE_V8_COVERAGE'));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// One server for every test below; each drives it with the CLI.
t.test("the MCP Inspector's CLI against a running registry", async (t) => {
  const w = await world(t);
  const mcpUrl = `${w.origin}/api/rfs/canvas-1/mcp`;
  /** A canvas token of the right form whose signature is not the registry's. */
  const forged = `${w.tokens.c1m1.split('.')[0]}.${Buffer.from('not the signature').toString('base64url')}`;
  const runs: Run[] = [];

  /**
   * Runs the Inspector's CLI against the registry's MCP endpoint: `--method <method>` plus `args`, the canvas
   * token (or `token`) as `Authorization`, and the grant and thread headers when `grant` is set.
   */
  async function inspector(method: string, args: string[] = [], opts: { token?: string; grant?: string } = {}): Promise<Run> {
    const headers = [`Authorization: Bearer ${opts.token ?? w.tokens.c1m1}`];
    if (opts.grant) headers.push(`X-Huabu-Resource-Grant: ${opts.grant}`, 'X-Huabu-Thread-Id: thread-1');
    const argv = [CLI, mcpUrl, '--transport', 'http', '--method', method, ...args];
    for (const header of headers) argv.push('--header', header);
    const run = await new Promise<Run>((resolve) => {
      // Its working directory is its own build folder: the CLI reads its name and version from
      // `../package.json` relative to the working directory.
      execFile(process.execPath, argv, { cwd: path.dirname(CLI), env: CLI_ENV, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
      });
    });
    runs.push(run);
    return run;
  }

  const answer = <T>(run: Run): T => JSON.parse(run.stdout) as T;

  interface LogLine {
    reqId?: string;
    msg?: string;
    code?: string;
    req?: { method: string; path: string };
    res?: { statusCode: number };
  }

  /** The log lines the server wrote from `from` bytes on. */
  async function logSince(from: number): Promise<LogLine[]> {
    const text = (await readFile(w.h.logFile)).subarray(from).toString('utf8');
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
  }

  t.equal((await w.h.put('mac-1', w.machines.m1, 'mine', { description: 'My own tool.' })).statusCode, 201);
  t.equal((await w.h.put('mac-2', w.machines.m2, 'theirs')).statusCode, 201);
  const customized = await w.h.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/mine',
    headers: w.h.owner,
    payload: { displayName: 'My tool', userContent: 'Prefer the short form.' },
  });
  t.equal(customized.statusCode, 200, customized.body);

  await t.test('resources/list shows the records the canvas may read, not another machine’s', async (t) => {
    const run = await inspector('resources/list');
    t.equal(run.code, 0, run.stderr);
    const { resources } = answer<{ resources: { uri: string; name: string; title?: string; description?: string }[] }>(run);
    const records = resources.filter((r) => r.uri.startsWith('registry://resources/')).map((r) => r.name);
    const rfs = await request(`${w.origin}/api/rfs/canvas-1/resources?limit=100`, { headers: w.h.bearer(w.tokens.c1m1) });
    const catalogue = (await rfs.body.json()) as { resources: { id: string }[] };
    t.same(
      records,
      catalogue.resources.map((r) => r.id),
      'the records GET <rfs>/resources shows, in the order of its pages',
    );
    t.ok(records.includes('mine'), "its machine's record");
    t.notOk(records.includes('theirs'), "never another machine's");
    t.match(
      resources.find((r) => r.name === 'mine'),
      { uri: 'registry://resources/mine', title: 'My tool', description: 'My own tool.' },
    );
    t.same(
      resources.filter((r) => r.uri.startsWith('registry://skill/')).map((r) => r.name),
      ['huabu-access', 'local-resource-management'],
      "and the host's guides",
    );
  });

  await t.test('resources/read returns a record’s guidance; another machine’s record is not found', async (t) => {
    const [run, theirs] = await Promise.all([
      inspector('resources/read', ['--uri', 'registry://resources/mine']),
      inspector('resources/read', ['--uri', 'registry://resources/theirs']),
    ]);
    t.equal(run.code, 0, run.stderr);
    const v2 = await request(`${w.origin}/api/rfs/canvas-1/resources/mine?schemaVersion=2`, { headers: w.h.bearer(w.tokens.c1m1) });
    const record = (await v2.body.json()) as { sourceContent: string; userContent: string };
    const { contents } = answer<{ contents: { text?: string }[] }>(run);
    t.same(contents, [
      {
        uri: 'registry://resources/mine',
        mimeType: 'text/markdown',
        text: `${record.sourceContent}\n\n## Instructions from the owner\n\nPrefer the short form.`,
      },
    ]);
    t.match(contents[0]?.text, /^My own tool\.\n\nUse mine via \$HUABU_RFS_URL\./, "the provider's guidance first");
    t.not(theirs.code, 0, 'the CLI fails');
    t.match(theirs.stderr, /-32002/, 'with MCP’s resource-not-found');
    t.equal(theirs.stdout, '');
  });

  await t.test('tools/list shows the granted hosted capability and its input schema only with the grant', async (t) => {
    const [bare, run] = await Promise.all([inspector('tools/list'), inspector('tools/list', [], { grant: w.grants.t1 })]);
    t.equal(bare.code, 0, bare.stderr);
    t.same(
      answer<{ tools: { name: string }[] }>(bare).tools.map((tool) => tool.name),
      ['find_resources'],
      'without the grant header, no hosted capability: only the search',
    );
    t.equal(run.code, 0, run.stderr);
    const { tools } = answer<{ tools: { name: string; title?: string; description?: string; inputSchema: unknown }[] }>(run);
    const search = tools.find((tool) => tool.name === 'web-search');
    t.match(search, { title: 'Name of web-search', description: 'About web-search.' });
    t.same(
      search?.inputSchema,
      capabilitiesFile(w.endpoint.origin).capabilities['web-search'].inputSchema,
      "the capability's input schema",
    );
    t.notOk(
      tools.some((tool) => tool.name === 'hold-search'),
      "not a capability the thread's profile lacks",
    );
  });

  await t.test('tools/call reaches the vendor and returns its result, audited', async (t) => {
    const before = w.endpoint.received.length;
    const run = await inspector('tools/call', ['--tool-name', 'web-search', '--tool-arg', 'query=lichen', 'maxResults=3'], {
      grant: w.grants.t1,
    });
    t.equal(run.code, 0, run.stderr);
    const calls = w.endpoint.received.slice(before);
    t.same(
      calls.map((call) => [call.path, JSON.parse(call.body) as unknown]),
      [['/ok', { query: 'lichen', maxResults: 3 }]],
      'the vendor got one call with the arguments',
    );
    t.equal(calls[0]?.headers['x-api-key'], SEARCH_KEY, 'and its key');
    const output = { results: [{ title: 'A result', url: 'https://example.org/' }], echoed: { query: 'lichen', maxResults: 3 } };
    const result = answer<{ isError?: boolean; structuredContent: unknown; content: unknown }>(run);
    t.notOk(result.isError);
    t.same(result.structuredContent, output, "the vendor's result");
    t.same(result.content, [{ type: 'text', text: JSON.stringify(output) }]);
    const invoked = await until('the call audited', async () => {
      const lines = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
      return lines.length > 0 && lines;
    });
    t.match(invoked, [{ actor: 'canvas:canvas-1@mac-1', id: 'web-search', outcome: 'ok', details: { thread: 'thread-1' } }]);
  });

  await t.test('a wrong canvas token: the CLI fails, refused with 401 before any JSON-RPC', async (t) => {
    const { size } = await stat(w.h.logFile);
    const run = await inspector('tools/list', [], { token: forged, grant: w.grants.t1 });
    t.not(run.code, 0, 'a non-zero exit');
    t.equal(run.stdout, '', 'no answer printed');
    t.match(run.stderr, /401/, 'the CLI says why');
    t.match(run.stderr, /"code":"unauthorized"/, "the service's error envelope, not a JSON-RPC error");
    t.notOk(run.stderr.includes(forged), 'without the token');
    const lines = await logSince(size);
    const requests = lines.filter((line) => line.req !== undefined);
    t.same(
      requests.map((line) => `${line.req?.method} ${line.req?.path}`),
      ['POST /api/rfs/canvas-1/mcp'],
      'one request: its initialize',
    );
    const answered = lines.filter((line) => line.reqId === requests[0]?.reqId);
    t.same(
      answered.map((line) => [line.msg, line.code ?? line.res?.statusCode ?? null]),
      [
        ['incoming request', null],
        ['request rejected', 'unauthorized'],
        ['request completed', 401],
      ],
      'refused 401 unauthorized by the canvas-token check, never handed to the MCP server',
    );
  });

  await t.test('no token, grant or vendor key in the CLI’s output or the server’s log', async (t) => {
    const secrets = { 'canvas token': w.tokens.c1m1, grant: w.grants.t1, 'vendor key': SEARCH_KEY, 'owner token': CANARY.owner };
    const printed = runs.map((run) => run.stdout + run.stderr).join('\n');
    const log = await readFile(w.h.logFile, 'utf8');
    t.ok(runs.length > 0 && log.includes('/api/rfs/canvas-1/mcp'), 'the CLI ran and the server logged its requests');
    for (const [what, value] of Object.entries({ ...secrets, 'wrong token': forged })) {
      t.notOk(printed.includes(value), `no ${what} in the CLI's output`);
      t.notOk(log.includes(value), `no ${what} in the server's log`);
    }
  });
});
