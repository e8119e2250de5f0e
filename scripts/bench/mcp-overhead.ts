// Scenario 13: what the MCP face costs next to the plain RFS routes, on one real server process. Reads: the
// same record read as `GET <rfs>/resources/<id>?schemaVersion=2` and as MCP `resources/read`, each by
// CONNECTIONS concurrent keep-alive loops for a few seconds, alternating rounds; req/s compared. Calls: a
// hosted capability against a local endpoint (a plain node:http server in the runner), called through
// `POST /invoke` and through MCP `tools/call` alternately, one at a time; median latencies compared.
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Agent, request } from 'undici';
import { benchProfileId, canvasToken, CANVAS_ID, startServer, type Credentials } from './harness.js';

export interface McpOverheadResult {
  /** Median req/s each way, and the server's CPU per request (ms) over all timed rounds each way. */
  read: { rfs: number; mcp: number; record: string; rfsCpuMs: number; mcpCpuMs: number };
  call: { calls: number; invoke: number; mcp: number };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

export async function measureMcpOverhead(
  dataDir: string,
  root: string,
  creds: Credentials,
  opts: { calls: number; connections: number; durationSec: number; runs: number },
): Promise<McpOverheadResult> {
  const endpoint = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ results: [{ title: 'A result', url: 'https://example.org/' }] }));
    });
  });
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
  const endpointUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/search`;
  const capsFile = path.join(root, 'bench-mcp-capabilities.json');
  await writeFile(
    capsFile,
    JSON.stringify({
      schemaVersion: 1,
      capabilities: {
        'bench-search': {
          endpoint: endpointUrl,
          credential: { header: 'x-api-key', env: 'BENCH_SEARCH_KEY' },
          inputSchema: {
            type: 'object',
            properties: { query: { type: 'string', minLength: 1, maxLength: 4000 } },
            required: ['query'],
            additionalProperties: false,
          },
          timeoutMs: 10_000,
          maxInputBytes: 16_384,
          maxOutputBytes: 65_536,
          perGrant: { concurrency: 8, perMinute: 10_000 },
        },
      },
    }),
  );
  const server = await startServer(dataDir, creds, {
    HOSTED_CAPABILITIES_FILE: capsFile,
    BENCH_SEARCH_KEY: 'bench-search-key-not-a-secret',
    REQUIRED_RESOURCE_IDS: '',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
  });
  const agent = new Agent({ connections: opts.connections + 2 });
  try {
    const call = async (
      url: string,
      headers: Record<string, string>,
      body?: unknown,
      expect = 200,
      method = body === undefined ? 'GET' : 'POST',
    ) => {
      const res = await request(url, {
        method: method as 'GET',
        dispatcher: agent,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      if (res.statusCode !== expect) throw new Error(`${url}: ${res.statusCode} ${text}`);
      return text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    };
    const owner = { authorization: `Bearer ${creds.owner}` };
    await call(
      `${server.url}/api/acp/providers/huabu/resources/bench-search`,
      { authorization: `Bearer ${creds.huabu}` },
      { schemaVersion: 1, name: 'Bench search', description: 'Searches.', instructions: 'Invoke it.' },
      201,
      'PUT',
    );
    await call(
      `${server.url}/api/acp/launch`,
      owner,
      { profileId: benchProfileId(0), canvasId: CANVAS_ID, threadId: 'bench-mcp', resourceIds: ['bench-search'] },
      201,
    );
    const { grant } = (await call(
      `${server.url}/api/acp/grants`,
      owner,
      {
        canvasId: CANVAS_ID,
        threadId: 'bench-mcp',
        ttlSeconds: 86_400,
      },
      201,
    )) as { grant: string };
    const canvas = { authorization: `Bearer ${canvasToken(creds)}` };
    const granted = { ...canvas, 'x-huabu-resource-grant': grant, 'x-huabu-thread-id': 'bench-mcp' };
    const rfs = `${server.url}/api/rfs/${CANVAS_ID}`;
    const mcp = `${rfs}/mcp`;
    await call(
      mcp,
      { ...MCP_HEADERS, ...canvas },
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      },
    );

    // Reads: the same record both ways, by concurrent loops for durationSec, alternating rounds.
    const record = 'bench-search';
    const readRfs = () => call(`${rfs}/resources/${record}?schemaVersion=2`, canvas);
    const readMcp = async () => {
      const answer = await call(
        mcp,
        { ...MCP_HEADERS, ...canvas },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'resources/read',
          params: { uri: `registry://resources/${record}` },
        },
      );
      if (!answer?.result) throw new Error(`resources/read: ${JSON.stringify(answer)}`);
    };
    const cpu = { rfs: { ms: 0, n: 0 }, mcp: { ms: 0, n: 0 } };
    const rate = async (one: () => Promise<unknown>, seconds: number, tally?: { ms: number; n: number }) => {
      const cpuBefore = tally ? (await server.probe(false)).cpuMs : 0;
      const until = performance.now() + seconds * 1000;
      let done = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: opts.connections }, async () => {
          while (performance.now() < until) {
            await one();
            done++;
          }
        }),
      );
      const seconds_ = (performance.now() - started) / 1000;
      if (tally) {
        tally.ms += (await server.probe(false)).cpuMs - cpuBefore;
        tally.n += done;
      }
      return done / seconds_;
    };
    await rate(readRfs, 1);
    await rate(readMcp, 1);
    const rfsRates: number[] = [];
    const mcpRates: number[] = [];
    for (let i = 0; i < opts.runs; i++) {
      rfsRates.push(await rate(readRfs, opts.durationSec, cpu.rfs));
      mcpRates.push(await rate(readMcp, opts.durationSec, cpu.mcp));
    }

    // Calls: /invoke and tools/call alternately, one at a time.
    const input = { query: 'lichen growth rates' };
    const viaInvoke = () => call(`${rfs}/resources/bench-search/invoke`, granted, { schemaVersion: 1, input });
    const viaMcp = async () => {
      const answer = (await call(
        mcp,
        { ...MCP_HEADERS, ...granted },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'bench-search', arguments: input },
        },
      )) as { result?: { isError?: boolean } };
      if (!answer.result || answer.result.isError) throw new Error(`tools/call: ${JSON.stringify(answer)}`);
    };
    const invokeTimes: number[] = [];
    const mcpTimes: number[] = [];
    const warm = Math.min(200, opts.calls);
    for (let i = 0; i < opts.calls + warm; i++) {
      let t0 = performance.now();
      await viaInvoke();
      const a = performance.now() - t0;
      t0 = performance.now();
      await viaMcp();
      const b = performance.now() - t0;
      if (i >= warm) {
        invokeTimes.push(a);
        mcpTimes.push(b);
      }
    }
    return {
      read: {
        rfs: median(rfsRates),
        mcp: median(mcpRates),
        record,
        rfsCpuMs: cpu.rfs.ms / cpu.rfs.n,
        mcpCpuMs: cpu.mcp.ms / cpu.mcp.n,
      },
      call: { calls: opts.calls, invoke: median(invokeTimes), mcp: median(mcpTimes) },
    };
  } finally {
    await agent.close();
    await server.stop();
    await new Promise((r) => endpoint.close(r));
  }
}
