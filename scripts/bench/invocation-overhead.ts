// Scenario 8: what the service adds to a hosted-capability call. A local endpoint (a plain node:http
// server in the runner) answers a small JSON body; the same input is sent N times straight to it and N
// times through `POST /api/rfs/<canvas>/resources/bench-search/invoke` of a real server process (canvas
// token + grant, input validated, quota, audit line appended durably before the answer), alternating the
// two so both see the same machine load. One keep-alive connection each, one call at a time.
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Agent, request } from 'undici';
import { benchProfileId, canvasToken, CANVAS_ID, startServer, type Credentials } from './harness.js';

export interface OverheadResult {
  calls: number;
  direct: { p50: number; p99: number };
  service: { p50: number; p99: number };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export async function measureInvocationOverhead(dataDir: string, root: string, creds: Credentials, calls: number): Promise<OverheadResult> {
  const endpoint = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ results: [{ title: 'A result', url: 'https://example.org/' }], bytes: Buffer.concat(chunks).length }));
    });
  });
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
  const endpointUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/search`;
  const capsFile = path.join(root, 'bench-capabilities.json');
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
            properties: {
              query: { type: 'string', minLength: 1, maxLength: 4000 },
              maxResults: { type: 'integer', minimum: 1, maximum: 10 },
            },
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
  });
  const agent = new Agent({ connections: 2 });
  try {
    const call = async (url: string, headers: Record<string, string>, body: unknown, expect = 200, method: 'POST' | 'PUT' = 'POST') => {
      const res = await request(url, {
        method,
        dispatcher: agent,
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      const text = await res.body.text();
      if (res.statusCode !== expect) throw new Error(`${url}: ${res.statusCode} ${text}`);
      return text ? JSON.parse(text) : undefined;
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
      { profileId: benchProfileId(0), canvasId: CANVAS_ID, threadId: 'bench-invoke', resourceIds: ['bench-search'] },
      201,
    );
    const { grant } = (await call(
      `${server.url}/api/acp/grants`,
      owner,
      { canvasId: CANVAS_ID, threadId: 'bench-invoke', ttlSeconds: 86_400 },
      201,
    )) as { grant: string };
    const viaService = {
      authorization: `Bearer ${canvasToken(creds)}`,
      'x-huabu-resource-grant': grant,
      'x-huabu-thread-id': 'bench-invoke',
    };
    const invokeUrl = `${server.url}/api/rfs/${CANVAS_ID}/resources/bench-search/invoke`;
    const input = { query: 'lichen growth rates', maxResults: 5 };
    const direct: number[] = [];
    const service: number[] = [];
    const warm = Math.min(200, calls);
    for (let i = 0; i < calls + warm; i++) {
      let t0 = performance.now();
      await call(endpointUrl, { 'x-api-key': 'bench-search-key-not-a-secret' }, input);
      const d = performance.now() - t0;
      t0 = performance.now();
      await call(invokeUrl, viaService, { schemaVersion: 1, input });
      const s = performance.now() - t0;
      if (i >= warm) {
        direct.push(d);
        service.push(s);
      }
    }
    direct.sort((a, b) => a - b);
    service.sort((a, b) => a - b);
    return {
      calls,
      direct: { p50: quantile(direct, 0.5), p99: quantile(direct, 0.99) },
      service: { p50: quantile(service, 0.5), p99: quantile(service, 0.99) },
    };
  } finally {
    await agent.close();
    await server.stop();
    await new Promise((r) => endpoint.close(r));
  }
}
