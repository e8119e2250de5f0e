// Kept pages with two replicas on one PostgreSQL database: a page replica A keeps is dropped when the
// notification of replica B's commit arrives, as A's whole views are; B's own page shows its write at once.
import t from 'tap';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test("a page kept on replica A shows replica B's write once its notification arrives", async (t) => {
    const url = await freshDatabase(t, base);
    const a = await build(t, { env: { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    const b = await build(t, { env: { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    const token = await a.enroll('agentlet-a');
    for (const id of ['notes-b', 'notes-c', 'notes-d']) t.equal((await a.put('agentlet-a', token, id)).statusCode, 201);
    const page = async (h: typeof a) => {
      const res = await h.app.inject({ method: 'GET', url: '/api/acp/resources?limit=2', headers: h.owner });
      return { ids: res.json<{ resources: { id: string }[] }>().resources.map((r) => r.id), etag: res.headers.etag };
    };
    const before = await page(a);
    t.same(before.ids, ['notes-b', 'notes-c']);
    t.same(await page(a), before, 'kept: the same page again');

    t.equal((await b.put('agentlet-a', token, 'notes-a')).statusCode, 201);
    t.same((await page(b)).ids, ['notes-a', 'notes-b'], "the writing replica's page shows its write at once");
    const deadline = Date.now() + 10_000;
    let after = await page(a);
    while (after.ids[0] !== 'notes-a' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await page(a);
    }
    t.same(after.ids, ['notes-a', 'notes-b'], "the other replica's page once the notification arrives");
    t.not(after.etag, before.etag);
  });
}
