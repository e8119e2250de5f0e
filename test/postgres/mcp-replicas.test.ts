// The MCP face with two replicas on one PostgreSQL database: an agent's MCP client holds its notification
// stream on replica A, a provider writes through replica B, and the notification arrives from A within a
// second; any replica answers the client's requests (no session to stick to).
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { build, CANARY } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('subscribed on replica A, written through replica B: the notification arrives', async (t) => {
    const url = await freshDatabase(t, base);
    const replica = async () => {
      const h = await build(t, { env: { DATABASE_URL: url } });
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      return { h, origin: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}` };
    };
    const a = await replica();
    const b = await replica();
    const machine = await a.h.enroll('mac-a');
    const token = await a.h.canvasToken('canvas-1', 'mac-a');
    const connect = async (origin: string) => {
      const client = new Client({ name: 'replica-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${origin}/api/rfs/canvas-1/mcp`), { requestInit: { headers: a.h.bearer(token) } }),
      );
      t.teardown(() => client.close());
      return client;
    };
    const onA = await connect(a.origin);
    const updated: string[] = [];
    onA.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri));
    await onA.subscribeResource({ uri: 'registry://skill/huabu-access' });
    const waitFor = async (uri: string, ms: number) => {
      const until = performance.now() + ms;
      while (!updated.includes(uri)) {
        if (performance.now() > until) return false;
        await new Promise((r) => setTimeout(r, 20));
      }
      return true;
    };
    // The client opens its stream after initializing: a write through A shows it is open.
    for (let i = 0; !(await waitFor('registry://resources/warm-up', 200)) && i < 20; i++) await a.h.put('huabu', CANARY.huabu, 'warm-up');
    t.ok(updated.includes('registry://resources/warm-up'), 'the stream on A is open');

    const started = performance.now();
    t.equal((await b.h.put('mac-a', machine, 'written-on-b')).statusCode, 201);
    t.ok(await waitFor('registry://resources/written-on-b', 1000), 'the change written through B is told on A within a second');
    t.ok(performance.now() - started < 1000, `${Math.round(performance.now() - started)} ms`);

    // Requests are answered by any replica: B reads what A's client sees.
    const onB = await connect(b.origin);
    const read = await onB.readResource({ uri: 'registry://resources/written-on-b' });
    t.match(read.contents, [{ uri: 'registry://resources/written-on-b', mimeType: 'text/markdown', text: /written-on-b/ }]);
  });
}
