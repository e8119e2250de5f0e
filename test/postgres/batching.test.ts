// Group commit in the PostgreSQL store: concurrent registrations share one transaction and one
// change notification, each still gets its own answer (created, replaced, unchanged, 409), a database error
// in one of them fails that one alone, and a replica SIGKILLed in the middle of batches loses nothing it
// acknowledged.
import t, { type Test } from 'tap';
import pg from 'pg';
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../src/errors.js';
import { CHANGES_CHANNEL } from '../../src/storage/postgres/migrations.js';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import type { BatchInfo } from '../../src/storage/durable-document.js';
import { build, CANARY, testEnv } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { killAllServers, startServer } from '../crash/server-process.js';
import { resource } from '../helpers/storage-contract.js';

/** A store on `url` whose batches are recorded, closed in teardown. */
async function observedStore(t: { teardown(fn: () => unknown): void }, url: string, options: { maxBatch?: number } = {}) {
  const batches: BatchInfo[] = [];
  const store = await PostgresStore.open({ databaseUrl: url, ...options, observeBatch: (b) => batches.push(b) });
  t.teardown(() => store.close());
  return { store, batches };
}

const base = postgresOrSkip(t);
if (base) {
  t.test('concurrent registrations share batch transactions and notifications; each gets its own outcome', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url);
    await store.putResource(resource('huabu', 'held-by-huabu'));
    await store.putResource(resource('huabu', 'same'));
    await store.putResource(resource('huabu', 'to-replace'));
    batches.length = 0;

    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    t.teardown(() => listener.end());
    let notifications = 0;
    listener.on('notification', (m) => {
      if (m.payload === 'resources') notifications++;
    });
    await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
    const before = store.resourcesRevision();

    const news = Array.from({ length: 40 }, (_, i) => store.putResource(resource('huabu', `new-${i}`)));
    const conflict = store.putResource(resource('bm0', 'held-by-huabu')).then(
      () => 'stored',
      (err: unknown) => (err instanceof AppError ? err.code : String(err)),
    );
    const same = store.putResource(resource('huabu', 'same'));
    const replaced = store.putResource(resource('huabu', 'to-replace', 'A new name'));
    t.same(await Promise.all(news), Array(40).fill('created'), 'every new ID: created');
    t.equal(await conflict, 'resource_conflict', "another provider's ID: 409, alone");
    t.equal(await same, 'unchanged');
    t.equal(await replaced, 'replaced');
    t.not(store.resourcesRevision(), before, 'the revision moved with the commits');

    const ops = batches.reduce((n, b) => n + b.operations, 0);
    t.equal(ops, 43, 'every operation went through a batch');
    t.ok(batches.every((b) => b.ok && b.label === 'postgres'));
    t.ok(batches.length < 43 && batches.some((b) => b.operations > 1), `batched: ${batches.map((b) => b.operations).join(', ')}`);
    await sleep(200);
    t.ok(
      notifications >= 1 && notifications <= batches.length,
      `${notifications} notifications for 43 registrations in ${batches.length} batches`,
    );

    const rows = await queryOnce<{ id: string; provider: string; name: string }>(
      url,
      'SELECT id, provider, name FROM resources ORDER BY id',
    );
    t.equal(rows.length, 43, '40 new + 3 seeded');
    t.equal(rows.find((r) => r.id === 'held-by-huabu')?.provider, 'huabu', 'the held record is untouched');
    t.equal(rows.find((r) => r.id === 'to-replace')?.name, 'A new name');
  });

  t.test('a database error in one registration fails it alone; the rest of its batch is stored', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url);
    await store.putResource(resource('huabu', 'warm-up'));
    // A NUL character is valid JSON but not valid PostgreSQL text: the statement fails and aborts the batch.
    const puts = Array.from({ length: 20 }, (_, i) =>
      store.putResource(i === 7 ? { ...resource('huabu', 'bad'), description: 'bad \u0000 byte' } : resource('huabu', `ok-${i}`)).then(
        (outcome) => ({ ok: true, outcome }),
        (err: unknown) => ({ ok: false, outcome: err instanceof AppError ? err.code : 'database error' }),
      ),
    );
    const results = await Promise.all(puts);
    t.same(results[7], { ok: false, outcome: 'database error' }, 'the bad one fails');
    t.ok(
      results.every((r, i) => i === 7 || (r.ok && r.outcome === 'created')),
      'the others are created',
    );
    t.ok(
      batches.some((b) => !b.ok && b.operations > 1),
      'they shared the batch that rolled back',
    );
    const rows = await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id LIKE 'ok-%'`);
    t.equal(rows.length, 19, 'all 19 stored');
    const before = store.resourcesRevision();
    t.equal(await store.putResource(resource('huabu', 'after')), 'created', 'the store keeps working');
    t.not(store.resourcesRevision(), before);
  });

  t.test('audit entries are batched with registrations and every one is stored', async (t) => {
    const url = await freshDatabase(t, base);
    const store = await PostgresStore.open({ databaseUrl: url });
    t.teardown(() => store.close());
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        Promise.all([
          store.putResource(resource('huabu', `a-${i}`)),
          store.appendAudit([
            { at: new Date(0).toISOString(), actor: 'provider:huabu', action: 'resource.register', id: `a-${i}`, outcome: 'created' },
          ]),
        ]),
      ),
    );
    const rows = await queryOnce<{ n: string }>(url, `SELECT count(*) AS n FROM audit_log WHERE object_id LIKE 'a-%'`);
    t.equal(Number(rows[0]!.n), 30);
  });

  /** Counts the statements the store's connections send (every pg client's query, observed from outside). */
  function countStatements(t: Pick<Test, 'teardown'>): string[] {
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0];
      sent.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    t.teardown(() => {
      pg.Client.prototype.query = query;
    });
    return sent;
  }

  t.test('a batch of registrations and audit appends costs a bounded number of statements, not one per operation', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url);
    await store.putResource(resource('huabu', 'held-by-huabu'));
    await store.putResource(resource('huabu', 'same'));
    batches.length = 0;
    const sent = countStatements(t);
    const audit = (id: string) =>
      store.appendAudit([{ at: new Date(0).toISOString(), actor: 'provider:huabu', action: 'resource.register', id, outcome: 'created' }]);
    // A first registration opens a batch; the 60 operations behind it queue for the next ones.
    const first = store.putResource(resource('huabu', 'first'));
    const ops = [
      ...Array.from({ length: 28 }, (_, i) => store.putResource(resource(i % 2 ? 'huabu' : 'bm0', `n-${i}`))),
      store.putResource(resource('bm0', 'held-by-huabu')).catch((err: unknown) => (err instanceof AppError ? err.code : String(err))),
      store.putResource(resource('huabu', 'same')),
      ...Array.from({ length: 30 }, (_, i) => audit(`n-${i}`)),
    ];
    const outcomes = await Promise.all([first, ...ops]);
    t.same(outcomes.slice(0, 29), Array(29).fill('created'));
    t.same(outcomes.slice(29, 31), ['resource_conflict', 'unchanged']);
    // The change log's reads (once per notification, not per operation) are not the batch's statements.
    const inBatches = sent.filter((s) => !/^\s*(LISTEN|SELECT 1)\b/.test(s) && !/\bFROM events\b/.test(s));
    const total = batches.reduce((n, b) => n + b.operations, 0);
    t.equal(total, 61, 'every operation went through a batch');
    t.ok(batches.every((b) => b.ok));
    // Per batch: BEGIN, the registrations as one statement, the holders of the IDs that wrote nothing as
    // one more, the audit entries as one, COMMIT. One statement per operation would be 61 and more.
    t.ok(inBatches.length <= batches.length * 5, `${inBatches.length} statements for ${total} operations in ${batches.length} batches`);
    const rows = await queryOnce<{ n: string }>(url, `SELECT count(*) AS n FROM audit_log WHERE object_id LIKE 'n-%'`);
    t.equal(Number(rows[0]!.n), 30, 'every audit entry is stored');
  });

  t.test('a provider PUT costs one transaction, its audit row inside it, and no read-back for the answer', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    t.equal((await h.put('huabu', CANARY.huabu, 'web')).statusCode, 201);
    const custom = await h.app.inject({
      method: 'PATCH',
      url: '/api/acp/resources/web',
      headers: h.owner,
      payload: { displayName: 'Web (mine)', userContent: 'Prefer the docs.' },
    });
    t.equal(custom.statusCode, 200);
    const sent = countStatements(t);
    const cases: [string, Record<string, string>, number, string][] = [
      ['fresh', {}, 201, 'created'],
      ['web', { name: 'Renamed' }, 200, 'replaced'],
      ['web', { name: 'Renamed' }, 200, 'unchanged'],
    ];
    for (const [id, fields, status, outcome] of cases) {
      sent.length = 0;
      const res = await h.put('huabu', CANARY.huabu, id, fields);
      const statements = sent.filter((s) => !/^\s*(LISTEN|SELECT 1)\b/.test(s));
      t.equal(res.statusCode, status, `${id} ${outcome}: ${status}`);
      t.equal(statements.filter((s) => s === 'COMMIT').length, 1, `${id} ${outcome}: one COMMIT (${statements.length} statements)`);
      t.equal(statements.filter((s) => s === 'BEGIN').length, 1, `${id} ${outcome}: one transaction`);
      t.equal(statements.filter((s) => /INSERT INTO audit_log/.test(s)).length, 1, `${id} ${outcome}: the audit row is written inside it`);
      t.notOk(
        statements.some((s) => /WHERE id = \$1\b/.test(s)),
        `${id} ${outcome}: no read-back of the record`,
      );
      const stored = await h.app.inject({ url: `/api/acp/resources/${id}`, headers: h.owner });
      t.equal(res.body, stored.body, `${id} ${outcome}: the answer is the record as stored, byte for byte`);
    }
    const v2 = await h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources/web',
      headers: h.huabu,
      payload: { schemaVersion: 2, name: 'Web v2', sourceContent: '# Web\nSearch the web.' },
    });
    t.equal(v2.statusCode, 200);
    t.match(
      v2.json(),
      { schemaVersion: 2, name: 'Web v2', displayName: 'Web (mine)', userContent: 'Prefer the docs.' },
      "the owner's fields are in the answer",
    );
    t.equal(
      v2.body,
      (await h.app.inject({ url: '/api/acp/resources/web?schemaVersion=2', headers: h.owner })).body,
      'as stored, byte for byte',
    );
    const audit = await queryOnce<{ object_id: string; outcome: string }>(
      url,
      `SELECT object_id, outcome FROM audit_log WHERE action = 'resource.register' ORDER BY at, object_id`,
    );
    t.same(
      audit.map((a) => [a.object_id, a.outcome]).filter(([id]) => id === 'fresh'),
      [['fresh', 'created']],
    );
    t.same(
      audit.filter((a) => a.object_id === 'web').map((a) => a.outcome),
      ['created', 'replaced', 'unchanged', 'replaced'],
    );
  });

  t.test('a reconcile costs one transaction, its audit rows inside it', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
    const rec = (id: string, name = `Name ${id}`) => ({
      schemaVersion: 1,
      id,
      name,
      description: `About ${id}.`,
      instructions: `Use ${id}.`,
    });
    const reconcile = (resources: unknown[]) =>
      h.app.inject({ method: 'PUT', url: '/api/acp/providers/huabu/resources', headers: h.huabu, payload: { resources } });
    t.equal((await reconcile([rec('a'), rec('b'), rec('c')])).statusCode, 200);
    const sent = countStatements(t);
    const res = await reconcile([rec('a', 'Renamed'), rec('b'), rec('d')]);
    const statements = sent.filter((s) => !/^\s*(LISTEN|SELECT 1)\b/.test(s));
    t.match(res.json(), { created: ['d'], replaced: ['a'], unchanged: ['b'], withdrawn: ['c'] });
    t.equal(statements.filter((s) => s === 'COMMIT').length, 1, `one COMMIT (${statements.length} statements)`);
    t.equal(statements.filter((s) => s === 'BEGIN').length, 1, 'one transaction');
    const audit = await queryOnce<{ object_id: string; outcome: string }>(
      url,
      `SELECT object_id, outcome FROM audit_log WHERE action = 'resource.reconcile' ORDER BY seq`,
    );
    t.same(
      audit.map((a) => `${a.object_id} ${a.outcome}`),
      ['a created', 'b created', 'c created', 'd created', 'a replaced', 'c withdrawn'],
    );
  });

  t.test(
    'a registration (or reconcile) whose audit row cannot be written is not stored; the others beside it are, each with its row',
    async (t) => {
      const url = await freshDatabase(t, base);
      const h = await build(t, { env: { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
      t.equal((await h.put('huabu', CANARY.huabu, 'warm-up')).statusCode, 201);
      // The database refuses the audit row of one ID (a stand-in for any failure of the audit insert).
      await queryOnce(
        url,
        `CREATE FUNCTION refuse_doomed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.object_id = 'doomed' THEN RAISE EXCEPTION 'audit row refused'; END IF; RETURN NEW; END $$`,
      );
      await queryOnce(url, 'CREATE TRIGGER refuse_doomed BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_doomed()');
      const ids = Array.from({ length: 12 }, (_, i) => (i === 5 ? 'doomed' : `ok-${i}`));
      const answers = await Promise.all(ids.map((id) => h.put('huabu', CANARY.huabu, id)));
      t.equal(answers[5]!.statusCode, 500, 'the registration whose audit row failed is not acknowledged');
      t.ok(
        answers.every((a, i) => i === 5 || a.statusCode === 201),
        'the others are created',
      );
      const stored = (await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id <> 'warm-up' ORDER BY id`)).map((r) => r.id);
      const audited = (
        await queryOnce<{ object_id: string }>(
          url,
          `SELECT object_id FROM audit_log WHERE action = 'resource.register' AND outcome = 'created' AND object_id <> 'warm-up' ORDER BY object_id`,
        )
      ).map((r) => r.object_id);
      t.notOk(stored.includes('doomed'), 'it is not stored');
      t.same(stored, audited, 'a resource row exists exactly where its audit row does');
      t.equal(stored.length, 11);
      const reconcile = await h.app.inject({
        method: 'PUT',
        url: '/api/acp/providers/huabu/resources',
        headers: h.huabu,
        payload: {
          resources: ['ok-0', 'doomed'].map((id) => ({
            schemaVersion: 1,
            id,
            name: id,
            description: `About ${id}.`,
            instructions: `Use ${id}.`,
          })),
        },
      });
      t.equal(reconcile.statusCode, 500, 'a reconcile whose audit rows fail is not acknowledged');
      const after = (await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id <> 'warm-up' ORDER BY id`)).map((r) => r.id);
      t.same(after, stored, 'and changed nothing (no withdrawal, no doomed row)');
    },
  );

  t.test('when a batch rolls back, each registration runs again alone with its own audit row', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url);
    await store.putResource(resource('huabu', 'same'));
    batches.length = 0;
    const by = { at: new Date(0).toISOString(), actor: 'provider:huabu', action: 'resource.register' };
    const first = store.registerResource(resource('huabu', 'opens-a-batch'), by);
    // A NUL byte fails the upsert of the whole batch; the fallback runs each registration in its own transaction.
    const regs = [
      ...Array.from({ length: 8 }, (_, i) => resource('huabu', `r-${i}`)),
      { ...resource('huabu', 'bad'), description: 'bad \u0000 byte' },
      resource('huabu', 'same'),
      resource('bm0', 'same'),
    ].map((r) =>
      store.registerResource(r, { ...by, actor: `provider:${r.provider}` }).then(
        (x) => x.outcome,
        (err: unknown) => (err instanceof AppError ? err.code : 'database error'),
      ),
    );
    await first;
    t.same(await Promise.all(regs), [...Array(8).fill('created'), 'database error', 'unchanged', 'resource_conflict']);
    t.ok(
      batches.some((b) => !b.ok && b.operations > 1),
      `they shared a batch that rolled back: ${batches.map((b) => `${b.operations}${b.ok ? '' : '!'}`).join(', ')}`,
    );
    const audit = await queryOnce<{ object_id: string; outcome: string }>(
      url,
      `SELECT object_id, outcome FROM audit_log WHERE object_id <> 'opens-a-batch' ORDER BY object_id`,
    );
    t.same(
      audit.map((a) => `${a.object_id} ${a.outcome}`),
      [...Array.from({ length: 8 }, (_, i) => `r-${i} created`), 'same unchanged'],
      'one row per registration stored, none for a failure or a refusal',
    );
    const rows = await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id LIKE 'r-%' OR id = 'bad'`);
    t.equal(rows.length, 8);
  });

  t.test('registrations of one ID in one batch keep their arrival order and their own outcomes', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url);
    await store.putResource(resource('huabu', 'warm-up'));
    batches.length = 0;
    const settle = (p: Promise<unknown>) => p.catch((err: unknown) => (err instanceof AppError ? err.code : String(err)));
    const first = store.putResource(resource('huabu', 'opens-a-batch'));
    const ops = [
      store.putResource(resource('huabu', 'dup', 'First')),
      store.putResource(resource('huabu', 'dup', 'Second')),
      store.putResource(resource('huabu', 'dup', 'Second')),
      settle(store.putResource(resource('bm0', 'dup', 'Taken?'))),
      store.putResource(resource('huabu', 'dup', 'Third')),
      store.putResource(resource('bm0', 'other')),
      settle(store.putResource(resource('huabu', 'other'))),
      store.putResource(resource('bm0', 'other', 'Renamed')),
    ];
    await first;
    t.same(await Promise.all(ops), [
      'created',
      'replaced',
      'unchanged',
      'resource_conflict',
      'replaced',
      'created',
      'resource_conflict',
      'replaced',
    ]);
    t.ok(
      batches.some((b) => b.operations >= ops.length),
      `one batch held them all: ${batches.map((b) => b.operations).join(', ')}`,
    );
    t.ok(
      batches.every((b) => b.ok),
      'and committed as one (no fallback to one transaction per operation)',
    );
    const rows = await queryOnce<{ id: string; provider: string; name: string }>(
      url,
      `SELECT id, provider, name FROM resources WHERE id IN ('dup', 'other') ORDER BY id`,
    );
    t.same(
      rows,
      [
        { id: 'dup', provider: 'huabu', name: 'Third' },
        { id: 'other', provider: 'bm0', name: 'Renamed' },
      ],
      'the last write of each ID is the one stored',
    );
  });

  t.test('a later batch never overtakes an earlier one still running its statements: writes of one ID keep arrival order', async (t) => {
    const url = await freshDatabase(t, base);
    const { store, batches } = await observedStore(t, url, { maxBatch: 2 });
    await store.putResource(resource('huabu', 'blocker'));
    // Another session holds the row lock of `blocker`, so a batch writing it stalls inside its statements.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    t.teardown(() => other.end());
    await other.query('BEGIN');
    await other.query(`SELECT 1 FROM resources WHERE id = 'blocker' FOR UPDATE`);
    const opener = store.putResource(resource('huabu', 'opens-a-batch'));
    // Batches of two: `blocker` then the first write of `hot` (ID order; not reached while `blocker`
    // waits), then the second write of `hot` alone in the batch after.
    const stalled = store.putResource(resource('huabu', 'blocker', 'Renamed'));
    const first = store.putResource(resource('huabu', 'hot', 'First'));
    const second = store.putResource(resource('huabu', 'hot', 'Second'));
    await opener;
    await sleep(400);
    const meanwhile = await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id = 'hot'`);
    await other.query('COMMIT');
    t.same(await Promise.all([stalled, first, second]), ['replaced', 'created', 'replaced'], 'each write answered in arrival order');
    t.same(meanwhile, [], 'nothing behind the stalled batch committed while it waited');
    const rows = await queryOnce<{ name: string }>(url, `SELECT name FROM resources WHERE id = 'hot'`);
    t.equal(rows[0]?.name, 'Second', 'the later write is the one stored');
    t.ok(batches.every((b) => b.ok));
  });

  t.test('close waits for queued registrations to commit', async (t) => {
    const url = await freshDatabase(t, base);
    const store = await PostgresStore.open({ databaseUrl: url });
    const puts = Array.from({ length: 25 }, (_, i) => store.putResource(resource('huabu', `c-${i}`)));
    await store.close();
    t.same(await Promise.all(puts), Array(25).fill('created'));
    const rows = await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id LIKE 'c-%'`);
    t.equal(rows.length, 25);
  });

  t.test('a replica SIGKILLed while 32 writers keep batches in flight loses nothing it acknowledged', async (t) => {
    t.teardown(killAllServers);
    const url = await freshDatabase(t, base);
    const env = { ...testEnv('/nonexistent-data-dir', { DATABASE_URL: url, RATE_LIMIT_WRITES_PER_MINUTE: '0' }) };
    for (const round of [0, 1]) {
      const server = await startServer(env, 60_000); // generous: the suite shares the machine
      const acknowledged: string[] = [];
      let stop = false;
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const id = `k${round}-${w}-${i}`;
          const res = await request(`${server.origin}/api/acp/providers/huabu/resources/${id}`, {
            method: 'PUT',
            headers: { authorization: `Bearer ${CANARY.huabu}`, 'content-type': 'application/json' },
            body: JSON.stringify({ schemaVersion: 1, name: `Name of ${id}`, description: `About ${id}.`, instructions: `Use ${id}.` }),
          }).catch(() => undefined);
          if (!res) return; // the connection died with the process
          await res.body.text().catch(() => undefined);
          if (res.statusCode === 201) acknowledged.push(id);
        }
      };
      const writers = Promise.all(Array.from({ length: 32 }, (_, w) => writer(w)));
      while (acknowledged.length < 150 + round * 70) await sleep(2);
      const metrics = await request(`${server.origin}/metrics`).then((r) => r.body.text());
      await server.kill();
      stop = true;
      await writers;
      const sum = Number(/registry_store_batch_operations_sum\{file="postgres"\} (\d+)/.exec(metrics)?.[1]);
      const count = Number(/registry_store_batch_operations_count\{file="postgres"\} (\d+)/.exec(metrics)?.[1]);
      t.ok(count > 0 && sum / count > 1, `round ${round}: batches of ${(sum / count).toFixed(1)} operations on average before the kill`);
      const stored = new Set(
        (await queryOnce<{ id: string }>(url, `SELECT id FROM resources WHERE id LIKE $1`, [`k${round}-%`])).map((r) => r.id),
      );
      const lost = acknowledged.filter((id) => !stored.has(id));
      t.same(lost, [], `round ${round}: all ${acknowledged.length} acknowledged registrations are stored (${stored.size} in all)`);
    }
  });
}
