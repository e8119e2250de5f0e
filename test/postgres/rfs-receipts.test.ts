// The PostgreSQL store under what agents record over RFS and what the host seeds: a local receipt
// registers, replaces (the owner's customization kept), refuses and withdraws with its audit rows; the old
// v1 seed is upgraded to v2 at start with the owner's fields kept. Runs when DATABASE_URL is set.
import t from 'tap';
import { HUABU_RESOURCES } from '../../src/host/huabu.js';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { sansDigest } from '../helpers/digest.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('local receipts on PostgreSQL: record, replace with the owner fields kept, refuse, remove; audited', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url, REQUIRED_RESOURCE_IDS: 'huabu-access' } });
    const b = await h.enroll('agentlet-b');
    await h.enroll('agentlet-a');
    t.equal((await h.put('agentlet-b', b, 'b-tool')).statusCode, 201);
    const headers = h.bearer(await h.canvasToken('canvas-x', 'agentlet-a'));
    const post = (payload: object) => h.app.inject({ method: 'POST', url: '/api/rfs/canvas-x/resources/local/receipts', headers, payload });
    const body = { id: 'deck', kind: 'skill', name: 'Deck', sourceContent: 'Builds decks.', entrypoint: 'skills/deck/SKILL.md' };

    t.equal((await post(body)).statusCode, 200);
    await h.app.inject({
      method: 'PATCH',
      url: '/api/acp/resources/deck',
      headers: h.owner,
      payload: { userContent: 'Company template.' },
    });
    const again = await post({ ...body, sourceContent: 'Builds decks, v2.' });
    t.same(sansDigest(again.json()), {
      resource: {
        schemaVersion: 2,
        id: 'deck',
        name: 'Deck',
        provider: 'agentlet-a',
        sourceContent: 'Builds decks, v2.',
        userContent: 'Company template.',
      },
    });
    t.equal((await post({ ...body, id: 'b-tool' })).statusCode, 409);
    t.equal((await post({ ...body, id: 'huabu-access' })).statusCode, 403);
    t.same((await h.app.inject({ method: 'DELETE', url: '/api/rfs/canvas-x/resources/local/receipts/deck', headers })).json(), {
      removed: true,
    });
    t.equal((await h.app.inject({ url: '/api/acp/resources/deck', headers: h.owner })).statusCode, 404);

    const rows = await queryOnce<{ actor: string; action: string; object_id: string; outcome: string }>(
      url,
      "SELECT actor, action, object_id, outcome FROM audit_log WHERE action LIKE 'receipt.%' ORDER BY seq",
    );
    t.same(
      rows.map((r) => [r.actor, r.action, r.object_id, r.outcome]),
      [
        ['canvas:canvas-x@agentlet-a', 'receipt.record', 'deck', 'created'],
        ['canvas:canvas-x@agentlet-a', 'receipt.record', 'deck', 'replaced'],
        ['canvas:canvas-x@agentlet-a', 'receipt.record', 'b-tool', 'resource_conflict'],
        ['canvas:canvas-x@agentlet-a', 'receipt.record', 'huabu-access', 'forbidden'],
        ['canvas:canvas-x@agentlet-a', 'receipt.remove', 'deck', 'withdrawn'],
      ],
      'every change and refusal has its audit row',
    );
  });

  t.test('the v1 seed on PostgreSQL is upgraded to v2 at start; the owner fields stay', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await build(t, { env: { DATABASE_URL: url } });
    await first.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources/local-resource-management',
      headers: first.huabu,
      payload: {
        schemaVersion: 1,
        name: 'Local resource management',
        description: 'Installed resources.',
        instructions: 'Look in $AGENT_RESOURCE_DIR.',
      },
    });
    await first.app.inject({
      method: 'PATCH',
      url: '/api/acp/resources/local-resource-management',
      headers: first.owner,
      payload: { displayName: 'Local', userContent: 'Ask first.' },
    });
    await first.app.close();

    const h = await build(t, { env: { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'true' } });
    const seeded = HUABU_RESOURCES.find((r) => r.id === 'local-resource-management') as { sourceContent: string };
    t.same(
      sansDigest((await h.app.inject({ url: '/api/acp/resources/local-resource-management?schemaVersion=2', headers: h.owner })).json()),
      {
        schemaVersion: 2,
        id: 'local-resource-management',
        name: 'Local resource management',
        displayName: 'Local',
        provider: 'huabu',
        sourceContent: seeded.sourceContent,
        userContent: 'Ask first.',
      },
    );
  });
}
