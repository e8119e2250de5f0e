// A row an older version stored with a NUL (a profile's customData or metadata.cliId, before they were
// refused) no longer stops the start: the service starts, serves every profile, and the log names the row
// (table and ID), never its values.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { build } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { aliasKey, profileRevision } from '../../src/profiles/profile-rules.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import { profileRecord } from '../helpers/profiles.js';

const base = postgresOrSkip(t);

const profile = (id: string, alias: string, extra: Partial<AgentProfile> = {}): AgentProfile => profileRecord(id, { alias, ...extra });

if (base) {
  t.test('a profile row holding a NUL: the start names it and serves every profile', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.close();
    const rows = [
      profile('prf-good', 'Good'),
      profile('prf-nul-data', 'Data', { customData: { note: 'SECRETISH\u0000VALUE', 'k\u0000': 1 } }),
      profile('prf-nul-cli', 'Cli', { metadata: { cliId: 'claude\u0000code' } }),
    ];
    // As an older version wrote them: the record as JSON text, a NUL escaped inside it.
    for (const p of rows) {
      await queryOnce(url, 'INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4::json)', [
        p.id,
        aliasKey(p.alias),
        profileRevision(p),
        JSON.stringify(p),
      ]);
    }
    const h = await build(t, { env: { DATABASE_URL: url } });
    const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
    t.equal(list.statusCode, 200);
    t.same(
      (list.json().profiles as AgentProfile[]).map((p) => p.id),
      ['prf-good', 'prf-nul-cli', 'prf-nul-data'],
      'every profile is served',
    );
    const created = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: { alias: 'New', agentletId: 'mac-a', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'agent' } },
    });
    t.equal(created.statusCode, 201, 'and writes work');
    const log = await readFile(h.logFile, 'utf8');
    const lines = log.split('\n').filter((l) => l.includes('prf-nul-'));
    t.match(lines.join('\n'), /profiles/, 'the log names the table');
    t.ok(
      lines.some((l) => l.includes('prf-nul-data')),
      'and the row with customData',
    );
    t.ok(
      lines.some((l) => l.includes('prf-nul-cli')),
      'and the row with metadata.cliId',
    );
    t.notMatch(log, /SECRETISH|claude\\u0000code/, 'never the values');
    t.notOk(
      log.split('\n').some((l) => l.includes('prf-good') && /control|unreadable/i.test(l)),
      'a good row is not named',
    );
  });

  t.test('a profile row without a readable alias keeps its key and is named; the start goes on', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.close();
    await queryOnce(url, 'INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4::json)', [
      'prf-no-alias',
      'old-key',
      'r1',
      JSON.stringify({ schemaVersion: 2, id: 'prf-no-alias' }),
    ]);
    const messages: string[] = [];
    const store = await PostgresStore.open({ databaseUrl: url, log: (_level, message) => messages.push(message) });
    t.teardown(() => store.close());
    t.match(messages.join('\n'), /table profiles, row prf-no-alias: its record has no readable alias/);
    const keys = await queryOnce<{ alias_key: string }>(url, 'SELECT alias_key FROM profiles');
    t.same(keys, [{ alias_key: 'old-key' }], 'its key is left as it was');
  });
}
