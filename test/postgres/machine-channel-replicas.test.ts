// The machine channel with two replicas on one PostgreSQL database (docs/decisions/machine-channel.md): a
// machine's channel lives on the replica it connected to. The other replica shows it `disconnected` and
// answers its jobs 503 `agentlet_unavailable` (the recorded limit), and a revoke or rotation made through
// the other replica ends the channel at the holder's next heartbeat.
import t from 'tap';
import { request } from 'undici';
import { build, recordIssuedToken, type TestApp } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { listen } from '../helpers/sockets.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('a channel held by replica A: B answers 503 for its jobs, and a revoke through B ends it on A', async (t) => {
    const url = await freshDatabase(t, base);
    const replica = async () => {
      const h = await build(t, { env: { DATABASE_URL: url }, channelHeartbeatMs: 100 });
      return { h, origin: await listen(h.app) };
    };
    const a = await replica();
    const b = await replica();
    const token = await a.h.enroll('mac-a');
    recordIssuedToken(token);
    const status = async (h: TestApp) =>
      ((await h.app.inject({ url: '/api/acp/machines', headers: h.owner })).json().machines as { machineId: string; status: string }[])[0]
        ?.status;

    const channel = await request(`${a.origin}/api/acp/providers/mac-a/channel`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(channel.statusCode, 200);
    channel.body.setEncoding('utf8');
    const ended = (async () => {
      let text = '';
      for await (const chunk of channel.body as AsyncIterable<string>) text += chunk;
      return text;
    })();
    for (let i = 0; i < 100 && (await status(a.h)) !== 'connected'; i++) await new Promise((r) => setTimeout(r, 10));
    t.equal(await status(a.h), 'connected', 'connected on the replica holding the channel');
    t.equal(await status(b.h), 'disconnected', 'disconnected on the other one');
    const viaB = await b.h.app.inject({
      method: 'POST',
      url: '/api/acp/machines/mac-a/jobs',
      headers: b.h.owner,
      payload: { type: 'ping' },
    });
    t.equal(viaB.statusCode, 503);
    t.equal(viaB.json().code, 'agentlet_unavailable', 'a job asked of the other replica does not reach the machine');

    const started = Date.now();
    const revoked = await b.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: b.h.owner });
    t.equal(revoked.statusCode, 204);
    await ended;
    t.ok(Date.now() - started < 5_000, `the channel on A ended within a few heartbeats of a revoke through B (${Date.now() - started} ms)`);
    t.equal(await status(a.h), 'disconnected');
  });
}
