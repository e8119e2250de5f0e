// Scenario 15: what a launched thread's read at its pin costs next to an ordinary read of the same bytes,
// on one real server process. Record A is launched into thread `bench-pin`, then replaced, so the thread's
// reads of A (`X-Huabu-Thread-Id`) are served from A's pinned revision; record B holds exactly the content A
// was launched with and is read without the header. Both as `GET <rfs>/resources/<id>?schemaVersion=2` and as
// MCP `resources/read`, each by CONNECTIONS concurrent keep-alive loops, alternating rounds; req/s compared.
import { Agent, request } from 'undici';
import { benchProfileId, canvasToken, CANVAS_ID, startServer, type Credentials } from './harness.js';

export interface PinnedReadsResult {
  /** Median req/s: the thread's read at its pin, and the ordinary read of the same bytes. */
  rfs: { pinned: number; plain: number };
  mcp: { pinned: number; plain: number };
  bytes: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
const THREAD = 'bench-pin';

export async function measurePinnedReads(
  dataDir: string,
  creds: Credentials,
  opts: { connections: number; durationSec: number; runs: number },
): Promise<PinnedReadsResult> {
  const server = await startServer(dataDir, creds, {
    REQUIRED_RESOURCE_IDS: '',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
  });
  const agent = new Agent({ connections: opts.connections + 2 });
  try {
    const call = async (url: string, headers: Record<string, string>, body?: unknown, expect = 200, method?: string) => {
      const res = await request(url, {
        method: (method ?? (body === undefined ? 'GET' : 'POST')) as 'GET',
        dispatcher: agent,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      if (res.statusCode !== expect) throw new Error(`${url}: ${res.statusCode} ${text}`);
      return text;
    };
    const huabu = { authorization: `Bearer ${creds.huabu}` };
    const launched = `# Pinned guide\n\n${'Follow these steps carefully. '.repeat(60).trim()}`;
    const put = (id: string, sourceContent: string, status: number) =>
      call(
        `${server.url}/api/acp/providers/huabu/resources/${id}`,
        huabu,
        { schemaVersion: 2, name: `Bench ${id}`, sourceContent },
        status,
        'PUT',
      );
    await put('bench-pin-a', launched, 201);
    await put('bench-pin-b', launched, 201);
    const owner = { authorization: `Bearer ${creds.owner}` };
    await call(
      `${server.url}/api/acp/launch`,
      owner,
      { profileId: benchProfileId(0), canvasId: CANVAS_ID, threadId: THREAD, resourceIds: ['bench-pin-a'] },
      201,
    );
    await put('bench-pin-a', `${launched}\n\nChanged after the launch.`, 200);

    const canvas = { authorization: `Bearer ${canvasToken(creds)}` };
    const thread = { ...canvas, 'x-huabu-thread-id': THREAD };
    const rfs = `${server.url}/api/rfs/${CANVAS_ID}`;
    const mcp = `${rfs}/mcp`;
    // The two reads serve the same bytes but for the ID (and so the digest): checked once before timing.
    const pinnedBody = await call(`${rfs}/resources/bench-pin-a?schemaVersion=2`, thread);
    const plainBody = await call(`${rfs}/resources/bench-pin-b?schemaVersion=2`, canvas);
    if ((JSON.parse(pinnedBody) as { sourceContent: string }).sourceContent !== launched || pinnedBody.length !== plainBody.length) {
      throw new Error('the pinned read does not serve the launched content');
    }
    const mcpRead = (id: string, headers: Record<string, string>) => async () => {
      const answer = await call(
        mcp,
        { ...MCP_HEADERS, ...headers },
        { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: `registry://resources/${id}` } },
      );
      if (!answer.includes(`"text":"# Pinned guide`)) throw new Error(`resources/read: ${answer.slice(0, 200)}`);
    };
    const reads = {
      rfsPinned: () => call(`${rfs}/resources/bench-pin-a?schemaVersion=2`, thread),
      rfsPlain: () => call(`${rfs}/resources/bench-pin-b?schemaVersion=2`, canvas),
      mcpPinned: mcpRead('bench-pin-a', thread),
      mcpPlain: mcpRead('bench-pin-b', canvas),
    };
    const rate = async (one: () => Promise<unknown>, seconds: number) => {
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
      return done / ((performance.now() - started) / 1000);
    };
    for (const one of Object.values(reads)) await rate(one, 1);
    const rates: Record<keyof typeof reads, number[]> = { rfsPinned: [], rfsPlain: [], mcpPinned: [], mcpPlain: [] };
    for (let i = 0; i < opts.runs; i++) {
      // The order flips every round.
      const order = (Object.keys(reads) as (keyof typeof reads)[]).sort(() => 0);
      if (i % 2 === 1) order.reverse();
      for (const key of order) rates[key].push(await rate(reads[key], opts.durationSec));
    }
    return {
      rfs: { pinned: median(rates.rfsPinned), plain: median(rates.rfsPlain) },
      mcp: { pinned: median(rates.mcpPinned), plain: median(rates.mcpPlain) },
      bytes: Buffer.byteLength(pinnedBody),
    };
  } finally {
    await agent.close();
    await server.stop();
  }
}
