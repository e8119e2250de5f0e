// Scenario 16: what a provider's write of a record pinned by many launched threads costs next to the write
// of an unpinned record, on one real server process (JSON store). WORKLOADS threads are launched pinning
// record P; then, in alternating rounds, P is replaced WRITES times one after the other (each time with new
// content, so every write moves every pin: the worst case, with the bounded drift events of each write) and
// the unpinned record U likewise. Each round gives its median write latency; the medians of the rounds are
// compared. The drift events are found through the pins of P's ID, never by reading the workloads.
import { Agent, request } from 'undici';
import { benchProfileId, CANVAS_ID, startServer, type Credentials } from './harness.js';

export interface DriftWriteResult {
  /** Median over rounds of each round's median write latency (ms). */
  pinned: number;
  unpinned: number;
  workloads: number;
  writes: number;
  /** `workload.drifted` events one pinned write appended (checked once). */
  eventsPerWrite: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function measureDriftWrite(
  dataDir: string,
  creds: Credentials,
  opts: { workloads: number; writes: number; runs: number },
): Promise<DriftWriteResult> {
  const server = await startServer(dataDir, creds, {
    REQUIRED_RESOURCE_IDS: '',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
  });
  const agent = new Agent({ connections: 16 });
  try {
    const call = async (url: string, headers: Record<string, string>, body: unknown, expect: number, method: 'PUT' | 'POST' | 'GET') => {
      const res = await request(url, {
        method,
        dispatcher: agent,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      if (res.statusCode !== expect) throw new Error(`${method} ${url}: ${res.statusCode} ${text.slice(0, 300)}`);
      return text;
    };
    const huabu = { authorization: `Bearer ${creds.huabu}` };
    const owner = { authorization: `Bearer ${creds.owner}` };
    const text = (n: number) => `# Drift bench\n\nRevision ${n}. ${'Follow these steps carefully. '.repeat(40).trim()}`;
    const put = (id: string, n: number, status: number) =>
      call(
        `${server.url}/api/acp/providers/huabu/resources/${id}`,
        huabu,
        { schemaVersion: 2, name: `Bench ${id}`, sourceContent: text(n) },
        status,
        'PUT',
      );
    await put('bench-drift-pinned', 0, 201);
    await put('bench-drift-free', 0, 201);
    // The launches, a few at a time.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < opts.workloads) {
          const i = next++;
          await call(
            `${server.url}/api/acp/launch`,
            owner,
            { profileId: benchProfileId(0), canvasId: CANVAS_ID, threadId: `drift-${i}`, resourceIds: ['bench-drift-pinned'] },
            201,
            'POST',
          );
        }
      }),
    );
    let n = 1;
    // One pinned write checked: it tells the threads (bounded), so the figure is of the real work.
    const cursor = async () => {
      let since = '0';
      for (;;) {
        const page = JSON.parse(await call(`${server.url}/api/acp/changes?limit=1000&since=${since}`, owner, undefined, 200, 'GET')) as {
          changes: { type: string }[];
          next: string;
        };
        if (page.changes.length === 0) return since;
        since = page.next;
      }
    };
    const before = await cursor();
    await put('bench-drift-pinned', n++, 200);
    const after = JSON.parse(await call(`${server.url}/api/acp/changes?limit=1000&since=${before}`, owner, undefined, 200, 'GET')) as {
      changes: { type: string }[];
    };
    const eventsPerWrite = after.changes.filter((e) => e.type === 'workload.drifted').length;
    if (opts.workloads > 0 && eventsPerWrite === 0) throw new Error('a pinned write told no thread');

    const round = async (id: string) => {
      const times: number[] = [];
      for (let i = 0; i < opts.writes; i++) {
        const started = performance.now();
        await put(id, n++, 200);
        times.push(performance.now() - started);
      }
      return median(times);
    };
    await round('bench-drift-pinned');
    await round('bench-drift-free');
    const rounds = { pinned: [] as number[], unpinned: [] as number[] };
    for (let r = 0; r < opts.runs; r++) {
      // The order flips every round.
      if (r % 2 === 0) {
        rounds.pinned.push(await round('bench-drift-pinned'));
        rounds.unpinned.push(await round('bench-drift-free'));
      } else {
        rounds.unpinned.push(await round('bench-drift-free'));
        rounds.pinned.push(await round('bench-drift-pinned'));
      }
    }
    return {
      pinned: median(rounds.pinned),
      unpinned: median(rounds.unpinned),
      workloads: opts.workloads,
      writes: opts.writes,
      eventsPerWrite,
    };
  } finally {
    await agent.close();
    await server.stop();
  }
}
