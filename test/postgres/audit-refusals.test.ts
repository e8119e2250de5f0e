// Audit fields on the PostgreSQL store: a NUL or an escape in a path reaches the audit trail cleaned (the
// insert never fails on it), and a burst of anonymous refusals is a summary there too.
import t from 'tap';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('a %00 in the path is stored cleaned; 200 anonymous refusals are two rows', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url, AUTH_FAILURES_PER_MINUTE: '0' } });
    await h.enroll('mac-a');
    const canvas = await h.canvasToken('canvas-1', 'mac-a');
    const raw = 'web%00search%1b%5b2J' + 'y'.repeat(1000);
    const res = await h.app.inject({
      method: 'POST',
      url: `/api/rfs/canvas-1/resources/${raw}/invoke`,
      headers: h.bearer(canvas),
      payload: { schemaVersion: 1, input: {} },
    });
    t.equal(res.statusCode, 403, 'refused for its missing grant');
    for (let i = 0; i < 200; i++) {
      const r = await h.app.inject({
        method: 'PUT',
        url: '/api/acp/providers/mac-a/resources/x',
        remoteAddress: '203.0.113.9',
        headers: h.bearer('arr_machine_' + 'Q'.repeat(43)),
        payload: {},
      });
      t.equal(r.statusCode, 401);
    }
    await h.app.close();
    const rows = await queryOnce<{ actor: string; action: string; object_id: string; details: Record<string, unknown> | null }>(
      url,
      'SELECT actor, action, object_id, details FROM audit_log ORDER BY seq',
    );
    const invoke = rows.find((r) => r.action === 'resource.invoke');
    t.ok(invoke, 'the invocation row was written');
    t.match(invoke!.object_id, /^web\ufffdsearch\ufffd\[2Jy+…\[\+\d+\]$/, 'cleaned and cut');
    t.ok(invoke!.object_id.length <= 512);
    const anonymous = rows.filter((r) => r.actor === 'anonymous');
    t.equal(anonymous.length, 2, 'the first refusal and the summary');
    t.match(anonymous[1]!.details, { client: '203.0.113.9', unauthorized: 199 });
  });
}
