// Look-alike alias keys on PostgreSQL: profiles.alias_key is computed by code, so rows keyed under the old rule
// (lower case only) are re-keyed at start under the look-alike rule; afterwards a look-alike alias is 409.
import t from 'tap';
import { PostgresStore } from '../../src/storage/postgres/postgres-store.js';
import { aliasKey, profileRevision } from '../../src/profiles/profile-rules.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';
import { profileRecord } from '../helpers/profiles.js';

const base = postgresOrSkip(t);

const profile = (id: string, alias: string): AgentProfile => profileRecord(id, { alias });

if (base) {
  t.test('rows keyed under the old rule are re-keyed at start; look-alikes then clash', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.close();
    // As the previous version wrote them: alias_key = alias.toLowerCase().
    const rows = [profile('prf-a', 'Ｗriter'), profile('prf-b', 'Reviewer'), profile('prf-c', 'Rеviewer' /* Cyrillic е */)];
    for (const p of rows) {
      await queryOnce(url, 'INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4)', [
        p.id,
        p.alias.toLowerCase(),
        profileRevision(p),
        JSON.stringify(p),
      ]);
    }
    const messages: string[] = [];
    const store = await PostgresStore.open({ databaseUrl: url, log: (_level, message) => messages.push(message) });
    t.teardown(() => store.close());
    const keys = Object.fromEntries(
      (await queryOnce<{ id: string; alias_key: string }>(url, 'SELECT id, alias_key FROM profiles')).map((r) => [r.id, r.alias_key]),
    );
    t.equal(keys['prf-a'], aliasKey('Writer'), 'the full-width alias is re-keyed');
    t.equal(keys['prf-b'], aliasKey('Reviewer'));
    t.equal(keys['prf-c'], 'rеviewer', 'the clashing look-alike keeps its old key (the service still starts)');
    t.match(messages.join('\n'), /prf-c[^\n]*prf-b/, 'and is named in the log with the profile it clashes with');
    const clash = await store.createProfile(profile('prf-d', 'ＷＲＩＴＥＲ')).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    t.equal(clash?.code, 'alias_conflict', 'a new look-alike of a re-keyed alias is refused');
  });

  t.test('rows keyed under the earlier look-alike rule: Unicode look-alikes kept and named, no longer merged ones freed', async (t) => {
    const url = await freshDatabase(t, base);
    const first = await PostgresStore.open({ databaseUrl: url });
    await first.close();
    // As the previous version keyed them (the `confusables` package's skeleton, lower-cased): Café and Cafe
    // shared a key, Ivan and Іvan (Cyrillic І) did not, nor did Modern and Modem.
    const rows: Array<[AgentProfile, string]> = [
      [profile('prf-1', 'Ivan'), 'ivan'],
      [profile('prf-2', '\u0406van'), 'lvan'],
      [profile('prf-3', 'Modern'), 'modern'],
      [profile('prf-4', 'Modem'), 'modem'],
      [profile('prf-5', 'Café'), 'cafe'],
    ];
    for (const [p, key] of rows) {
      await queryOnce(url, 'INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4)', [
        p.id,
        key,
        profileRevision(p),
        JSON.stringify(p),
      ]);
    }
    const messages: string[] = [];
    const store = await PostgresStore.open({ databaseUrl: url, log: (_level, message) => messages.push(message) });
    t.teardown(() => store.close());
    t.same(
      (await store.listProfiles()).map((e) => e.profile.id),
      ['prf-1', 'prf-2', 'prf-3', 'prf-4', 'prf-5'],
      'every row kept',
    );
    const log = messages.join('\n');
    t.match(log, /prf-1[^\n]*prf-2|prf-2[^\n]*prf-1/, 'the Ivan pair is named in the log');
    t.match(log, /prf-3[^\n]*prf-4|prf-4[^\n]*prf-3/, 'the Modern/Modem pair is named in the log');
    const refused = async (p: AgentProfile) =>
      store.createProfile(p).then(
        () => 'stored',
        (e: { code?: string }) => e.code,
      );
    t.equal(await refused(profile('prf-6', 'IVAN')), 'alias_conflict', 'a new look-alike of either is refused');
    t.equal(await refused(profile('prf-7', 'MODEM')), 'alias_conflict');
    t.equal(await refused(profile('prf-8', 'Cafe')), 'stored', 'Cafe, merged with Café by the earlier rule, is free now');
    const kept = await store.updateProfile('prf-1', { workingDirPath: '/elsewhere' });
    t.equal(kept.changed, true, 'a namesake that kept its old key can still be changed without renaming it');
    const renamed = await store.updateProfile('prf-2', { alias: 'Ivan the second' });
    t.equal(renamed.profile.alias, 'Ivan the second', 'and renamed');
  });
}
