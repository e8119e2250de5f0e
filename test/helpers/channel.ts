// The test holds a machine's channel stream as the machine would, over a real socket, and takes the jobs the
// registry sends it one by one.
import type { Test } from 'tap';
import { request } from 'undici';
import { EventStreamParser } from '../../src/agentlet/channel-client.js';
import type { Job } from '../../src/channel/machine-channels.js';

/** Opens `machineId`'s channel at `origin` with its machine `token`; closed when the test ends. */
export async function holdChannel(t: Test, origin: string, machineId: string, token: string): Promise<{ nextJob(): Promise<Job> }> {
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await request(`${origin}/api/acp/providers/${machineId}/channel`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  t.equal(res.statusCode, 200, 'the channel is open');
  const parser = new EventStreamParser();
  res.body.setEncoding('utf8');
  const jobs: Job[] = [];
  let wake: (() => void) | undefined;
  void (async () => {
    try {
      for await (const chunk of res.body as AsyncIterable<string>) {
        for (const e of parser.feed(chunk)) if (e.event === 'job') jobs.push(JSON.parse(e.data) as Job);
        wake?.();
      }
    } catch {
      // closed by the test
    }
  })();
  return {
    async nextJob(): Promise<Job> {
      while (jobs.length === 0) await new Promise<void>((r) => (wake = r));
      return jobs.shift()!;
    },
  };
}
