// The PostgreSQL audit table: a NUL (or any control character) in any field of an entry never makes its
// insert fail (PostgreSQL's text and jsonb hold no NUL), and the table keeps at most AUDIT_MAX_ROWS entries,
// the newest, as the JSON store's audit log keeps a bounded number of rotated files.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { resource } from '../helpers/storage-contract.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runImport } from '../../src/storage/postgres/commands.js';
import { tempDataDir } from '../helpers/build.js';

const base = postgresOrSkip(t);

interface AuditRow {
  seq: string;
  actor: string;
  action: string;
  object_id: string;
  outcome: string;
  details: unknown;
}

if (base) {
  t.test('a NUL or other control character in any audit field never fails the insert', async (t) => {
    const url = await freshDatabase(t, base);
    const store = await PostgresStore.open({ databaseUrl: url });
    t.teardown(() => store.close());
    await store.appendAudit([
      {
        at: '2026-12-01T00:00:00.000Z',
        actor: 'anony\u0000mous',
        action: 'POST /x\u0000y',
        id: 'a\u0000b\u001b[31m',
        outcome: 'unauthorized\u0000',
        details: { 'k\u0000ey': 'v\u0000alue', list: ['x\u0000'], bell: '\u0007ring' },
      },
    ]);
    const registered = await store.registerResource(resource('nul-audit', 'huabu'), {
      at: '2026-12-01T00:00:01.000Z',
      actor: 'huabu\u0000',
      action: 'resource.register',
    });
    t.equal(registered.outcome, 'created', 'a registration whose audit entry holds a NUL is stored');
    const rows = await queryOnce<AuditRow>(url, 'SELECT seq, actor, action, object_id, outcome, details FROM audit_log ORDER BY seq');
    t.equal(rows.length, 2, 'both entries are stored');
    const strings: string[] = [];
    const collect = (v: unknown): void => {
      if (typeof v === 'string') strings.push(v);
      else if (v !== null && typeof v === 'object')
        for (const [k, c] of Object.entries(v)) {
          strings.push(k);
          collect(c);
        }
    };
    collect(rows);
    t.notOk(
      // eslint-disable-next-line no-control-regex -- control characters are what it finds
      strings.some((s) => /[\u0000-\u001f\u007f]/.test(s)),
      'no control character reaches a stored field',
    );
    t.equal(rows[0]!.actor, 'anony\\u0000mous', 'a control character is kept visible, escaped');
    t.equal(rows[0]!.object_id, 'a\\u0000b\\u001b[31m');
    t.same(rows[0]!.details, { 'k\\u0000ey': 'v\\u0000alue', list: ['x\\u0000'], bell: '\\u0007ring' });
    t.equal(rows[1]!.actor, 'huabu\\u0000');
  });

  t.test('a %00 in a refused request path still leaves its audit entries', async (t) => {
    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url } });
    const before = Number((await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM audit_log'))[0]!.n);
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/rfs/canvas-1/resources/a%00b/invoke',
      payload: { schemaVersion: 1, input: {} },
    });
    t.equal(res.statusCode, 401);
    let rows: AuditRow[] = [];
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      rows = await queryOnce<AuditRow>(url, 'SELECT seq, actor, action, object_id, outcome, details FROM audit_log WHERE seq > $1', [
        before,
      ]);
      if (rows.length === 0) await sleep(20);
    }
    t.ok(rows.length > 0, 'the refusal is audited');
    t.notMatch(
      await import('node:fs/promises').then((fs) => fs.readFile(h.logFile, 'utf8')),
      /audit log append failed/,
      'no append failed',
    );
  });

  t.test('the audit table keeps at most auditMaxRows entries, the newest', async (t) => {
    const url = await freshDatabase(t, base);
    const store = await PostgresStore.open({ databaseUrl: url, auditMaxRows: 50 });
    t.teardown(() => store.close());
    for (let i = 0; i < 300; i += 10) {
      await store.appendAudit(
        Array.from({ length: 10 }, (_, k) => ({
          at: '2026-12-01T00:00:00.000Z',
          actor: 'owner',
          action: 'test',
          id: `e-${i + k}`,
          outcome: 'ok',
        })),
      );
    }
    let ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      ids = (await queryOnce<{ object_id: string }>(url, 'SELECT object_id FROM audit_log ORDER BY seq')).map((r) => r.object_id);
      if (ids.length <= 50) break;
      await sleep(25);
    }
    t.ok(ids.length <= 50 && ids.length >= 40, `at most 50 entries kept (${ids.length})`);
    t.equal(ids.at(-1), 'e-299', 'the newest is kept');
    t.notOk(ids.includes('e-0'), 'the oldest is gone');
    t.same(
      ids,
      ids.slice().sort((a, b) => Number(a.slice(2)) - Number(b.slice(2))),
      'what is kept is the newest, in order',
    );
  });

  t.test('an audit table grown past the bound by an older version is trimmed after the start', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.appendAudit(
      Array.from({ length: 120 }, (_, k) => ({
        at: '2026-12-01T00:00:00.000Z',
        actor: 'owner',
        action: 'test',
        id: `o-${k}`,
        outcome: 'ok',
      })),
    );
    await first.close();
    const store = await PostgresStore.open({ databaseUrl: url, auditMaxRows: 20 });
    t.teardown(() => store.close());
    let n = 0;
    for (let i = 0; i < 200; i++) {
      n = Number((await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM audit_log'))[0]!.n);
      if (n <= 20) break;
      await sleep(25);
    }
    t.equal(n, 20);
  });

  t.test('AUDIT_MAX_ROWS: 1,000,000 by default, 0 for no bound, a bad value refused; the app passes it to the store', async (t) => {
    const env = { OWNER_TOKEN: 'o'.repeat(24), HUABU_PROVIDER_TOKEN: 'h'.repeat(24), CANVAS_TOKEN_SECRET: 's'.repeat(24) };
    t.equal(loadConfig(env).auditMaxRows, 1_000_000);
    t.equal(loadConfig({ ...env, AUDIT_MAX_ROWS: '0' }).auditMaxRows, 0);
    t.throws(() => loadConfig({ ...env, AUDIT_MAX_ROWS: '1e6' }), ConfigError);
    t.throws(() => loadConfig({ ...env, AUDIT_MAX_ROWS: '-1' }), /AUDIT_MAX_ROWS/);

    const url = await freshDatabase(t, base);
    const h = await build(t, { env: { DATABASE_URL: url, AUDIT_MAX_ROWS: '5' } });
    for (let i = 0; i < 12; i++) await h.enroll(`mac-${i}`);
    let n = 0;
    for (let i = 0; i < 200; i++) {
      n = Number((await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM audit_log'))[0]!.n);
      if (n <= 5) break;
      await sleep(25);
    }
    t.ok(n <= 5, `the table holds ${n} rows`);
    const newest = await queryOnce<{ object_id: string }>(url, 'SELECT object_id FROM audit_log ORDER BY seq DESC LIMIT 1');
    t.equal(newest[0]?.object_id, 'mac-11', 'the newest entry is kept');
  });

  t.test('npm run import copies audit entries holding a NUL (escaped), and a re-import copies nothing twice', async (t) => {
    const dataDir = await tempDataDir();
    const entries = [
      {
        at: '2026-12-01T00:00:00.000Z',
        actor: 'anonymous',
        action: 'POST /api/rfs/c/resources/a\u0000b/invoke',
        id: 'a\u0000b',
        outcome: 'unauthorized',
      },
      { at: '2026-12-01T00:00:01.000Z', actor: 'owner', action: 'machine.enroll', id: 'mac-a', outcome: 'enrolled' },
    ];
    await writeFile(path.join(dataDir, 'audit.jsonl'), entries.map((e) => JSON.stringify(e) + '\n').join(''));
    const url = await freshDatabase(t, base);
    const err: string[] = [];
    t.equal(
      await runImport(
        ['--data-dir', dataDir],
        url,
        () => undefined,
        (l) => err.push(l),
      ),
      0,
      err.join('\n'),
    );
    const rows = async () => queryOnce<{ object_id: string }>(url, "SELECT object_id FROM audit_log WHERE source = 'import' ORDER BY seq");
    t.same(await rows(), [{ object_id: 'a\\u0000b' }, { object_id: 'mac-a' }]);
    t.equal(
      await runImport(
        ['--data-dir', dataDir],
        url,
        () => undefined,
        (l) => err.push(l),
      ),
      0,
      err.join('\n'),
    );
    t.equal((await rows()).length, 2, 'nothing copied twice');
  });
}
