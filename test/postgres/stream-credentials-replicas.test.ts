// A canvas's event stream with two replicas on one PostgreSQL database: a revocation made through the other
// replica is not told to the one holding the stream, which finds it at its next full re-check of the
// credential (CREDENTIAL_RECHECK_MS, shortened here) and closes the stream.
import t from 'tap';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { SseClient } from '../helpers/sse.js';
import { listen } from '../helpers/sockets.js';

const RECHECK_MS = 200;

const base = postgresOrSkip(t);
if (base) {
  t.test("a canvas stream on replica A closes at A's next re-check after a revocation through B", async (t) => {
    const url = await freshDatabase(t, base);
    const replica = async () => {
      const h = await build(t, { env: { DATABASE_URL: url }, credentialRecheckMs: RECHECK_MS });
      return { h, origin: await listen(h.app) };
    };
    const a = await replica();
    const b = await replica();
    await a.h.enroll('mac-a');
    const first = await a.h.canvasToken('canvas-1', 'mac-a');
    const second = await a.h.canvasToken('canvas-2', 'mac-a');

    const byCanvas = await SseClient.open(a.origin, '/api/rfs/canvas-1/events', a.h.bearer(first));
    t.teardown(() => byCanvas.close());
    t.equal(byCanvas.status, 200);
    let started = performance.now();
    t.equal(
      (
        await b.h.app.inject({
          method: 'POST',
          url: '/api/acp/canvas-tokens/revoke',
          headers: b.h.owner,
          payload: { canvasId: 'canvas-1' },
        })
      ).statusCode,
      200,
    );
    await byCanvas.waitFor(() => byCanvas.closed, 5_000);
    t.ok(
      performance.now() - started < RECHECK_MS * 2 + 1000,
      `closed ${Math.round(performance.now() - started)} ms after the revocation through B`,
    );

    const byMachine = await SseClient.open(a.origin, '/api/rfs/canvas-2/events', a.h.bearer(second));
    t.teardown(() => byMachine.close());
    t.equal(byMachine.status, 200);
    started = performance.now();
    t.equal((await b.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: b.h.owner })).statusCode, 204);
    await b.h.enroll('mac-a');
    await byMachine.waitFor(() => byMachine.closed, 5_000);
    t.ok(
      performance.now() - started < RECHECK_MS * 2 + 1000,
      `closed ${Math.round(performance.now() - started)} ms after the machine was revoked and enrolled again through B`,
    );
  });
}
