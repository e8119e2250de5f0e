// Issue 14, item 8 on PostgreSQL: profiles.alias_key is computed by code, so rows keyed under the old rule
// (lower case only) are re-keyed at start under the look-alike rule; afterwards a look-alike alias is 409.
import t from 'tap';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { aliasKey, profileRevision } from '../../src/profiles/profile-rules.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';

const base = postgresOrSkip(t);

function profile(id: string, alias: string): AgentProfile {
  return { schemaVersion: 2, id, alias, agentletId: 'mac-a', workingDirPath: '/w', resourceIds: [], launch: { kind: 'acp-command', command: 'agent' } };
}

if (base) {
  t.test('rows keyed under the old rule are re-keyed at start; look-alikes then clash', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.close();
    // As the previous version wrote them: alias_key = alias.toLowerCase().
    const rows = [profile('prf-a', 'Ｗriter'), profile('prf-b', 'Reviewer'), profile('prf-c', 'Rеviewer' /* Cyrillic е */)];
    for (const p of rows) {
      await queryOnce(url, 'INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4)', [p.id, p.alias.toLowerCase(), profileRevision(p), JSON.stringify(p)]);
    }
    const messages: string[] = [];
    const store = await PostgresStore.open({ databaseUrl: url, log: (_level, message) => messages.push(message) });
    t.teardown(() => store.close());
    const keys = Object.fromEntries((await queryOnce<{ id: string; alias_key: string }>(url, 'SELECT id, alias_key FROM profiles')).map((r) => [r.id, r.alias_key]));
    t.equal(keys['prf-a'], aliasKey('Writer'), 'the full-width alias is re-keyed');
    t.equal(keys['prf-b'], 'reviewer');
    t.equal(keys['prf-c'], 'rеviewer', 'the clashing look-alike keeps its old key (the service still starts)');
    t.match(messages.join('\n'), /prf-c/, 'and is named in the log');
    const clash = await store.createProfile(profile('prf-d', 'ＷＲＩＴＥＲ')).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    t.equal(clash?.code, 'alias_conflict', 'a new look-alike of a re-keyed alias is refused');
  });
}
