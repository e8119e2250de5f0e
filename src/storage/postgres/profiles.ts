// The PostgreSQL store's profiles and the Agent Team state beside them. The rules are
// src/profiles/profile-rules.ts; here the alias rule is a unique index on a key computed by code, and If-Match
// and expectedRevision are one conditional write on the revision column, retried when the row moved.
import type pg from 'pg';
import { AppError } from '../../errors.js';
import { aliasKey, planDelete, planUpdate, profileRevision, type ProfileChanges } from '../../profiles/profile-rules.js';
import type { ProfileEntry } from '../../registry/store.js';
import type { AgentProfile } from '../../schemas/profile.js';
import { findControlCharacter } from '../../text/control-characters.js';
import { isUniqueViolation, MAX_ATTEMPTS, type PgDatabase, type PoolLog, type Queryable } from './database.js';

/**
 * `profiles.alias_key` is computed by code (`aliasKey`); when the rule changes (it became a look-alike
 * skeleton), rows written under the old rule are re-keyed here at start, in one transaction under the
 * migration advisory lock's neighbour (a transaction-level advisory lock), so replicas starting together
 * do it once. A row whose new key clashes with another's keeps its old key (the service starts; the
 * capability projection reports the `alias_collision`; a write that keeps its alias keeps that key) and is
 * named in the log with the profile it clashes with.
 *
 * The records are read as their stored JSON text and parsed here, not with `record->>'alias'`: an older
 * version stored profiles with a NUL (`\u0000`) in customData or metadata, which PostgreSQL's JSON operators
 * cannot turn into text, and one such row failed every replica's start. Such a row is reported
 * (`withControlCharacters`: it is served as stored, and a change to it is held to today's rules); a row
 * whose alias cannot be read at all (`unreadable`) keeps its key.
 */
export async function rekeyAliases(
  client: pg.PoolClient,
): Promise<{ updated: number; clashing: Array<{ id: string; with: string }>; unreadable: string[]; withControlCharacters: string[] }> {
  await client.query('BEGIN');
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('arr_rekey_aliases'))");
    const { rows: stored } = await client.query<{ id: string; record: string; alias_key: string }>(
      'SELECT id, record::text AS record, alias_key FROM profiles ORDER BY id COLLATE "C" FOR UPDATE',
    );
    const unreadable: string[] = [];
    const withControlCharacters: string[] = [];
    const rows: { id: string; alias: string; alias_key: string }[] = [];
    for (const row of stored) {
      let record: unknown;
      try {
        record = JSON.parse(row.record);
      } catch {
        record = undefined;
      }
      const alias = (record as { alias?: unknown } | undefined)?.alias;
      if (typeof alias !== 'string') {
        unreadable.push(row.id);
        continue;
      }
      if (findControlCharacter(record) !== undefined) withControlCharacters.push(row.id);
      rows.push({ id: row.id, alias, alias_key: row.alias_key });
    }
    const stale = rows.filter((r) => aliasKey(r.alias) !== r.alias_key);
    // Key -> the profile holding it (a row whose alias cannot be read holds the key it has).
    const taken = new Map(
      [...stored.filter((r) => unreadable.includes(r.id)), ...rows.filter((r) => !stale.includes(r))].map((r) => [r.alias_key, r.id]),
    );
    let updated = 0;
    const clashing: Array<{ id: string; with: string }> = [];
    // Park the stale rows on keys no alias can have (a control character), so a row may move onto a key
    // another stale row is leaving.
    if (stale.length > 0) {
      await client.query('UPDATE profiles SET alias_key = chr(1) || id WHERE id = ANY($1::text[])', [stale.map((r) => r.id)]);
    }
    for (const row of stale) {
      const key = aliasKey(row.alias);
      const holder = taken.get(key);
      if (holder !== undefined) {
        // Back on its old key when that is still free, else it stays parked (unique, never matching).
        if (!taken.has(row.alias_key)) {
          await client.query('UPDATE profiles SET alias_key = $2 WHERE id = $1', [row.id, row.alias_key]);
          taken.set(row.alias_key, row.id);
        }
        clashing.push({ id: row.id, with: holder });
        continue;
      }
      await client.query('UPDATE profiles SET alias_key = $2 WHERE id = $1', [row.id, key]);
      taken.set(key, row.id);
      updated++;
    }
    await client.query('COMMIT');
    return { updated, clashing, unreadable, withControlCharacters };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** Re-keys the aliases at open (`rekeyAliases`) and says in the log what it did and what it left as stored. */
export async function rekeyAliasesAtOpen(client: pg.PoolClient, log: PoolLog): Promise<void> {
  const rekeyed = await rekeyAliases(client);
  if (rekeyed.updated > 0 || rekeyed.clashing.length > 0) {
    const clashes = rekeyed.clashing.map((c) => `${c.id} (clashes with ${c.with})`).join(', ');
    log(
      'warn',
      `re-keyed ${rekeyed.updated} profile aliases under the current alias rule${clashes ? `; kept the old key of ${clashes}: both are kept, new look-alikes are refused (rename one)` : ''}`,
    );
  }
  // IDs only: the values may be anything an older version accepted, secrets included.
  for (const id of rekeyed.withControlCharacters) {
    log(
      'warn',
      `table profiles, row ${id}: holds a control character an older version accepted (customData or metadata); served as stored; replace its customData or metadata to clear it`,
    );
  }
  for (const id of rekeyed.unreadable) {
    log('warn', `table profiles, row ${id}: its record has no readable alias; left as stored (its alias key is unchanged)`);
  }
}

async function readProfile(db: Queryable, id: string): Promise<ProfileEntry | undefined> {
  const { rows } = await db.query<{ record: AgentProfile; revision: string }>('SELECT record, revision FROM profiles WHERE id = $1', [id]);
  return rows[0] && { profile: rows[0].record, revision: rows[0].revision };
}

const changingTooOften = (what: string) =>
  new AppError('storage_unavailable', `${what} changing too often to store this change; retry later.`);

export class PgProfiles {
  constructor(private readonly db: PgDatabase) {}

  list(): Promise<readonly ProfileEntry[]> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<{ record: AgentProfile; revision: string }>(
        'SELECT record, revision FROM profiles ORDER BY id COLLATE "C"',
      );
      return rows.map((r) => ({ profile: r.record, revision: r.revision }));
    });
  }

  get(id: string): Promise<ProfileEntry | undefined> {
    return this.db.guard(() => readProfile(this.db.pooled, id));
  }

  teamState(): Promise<{ members: unknown; configs: unknown }> {
    return this.db.guard(async () => {
      const { rows } = await this.db.query<{ key: string; value: unknown }>(
        "SELECT key, value FROM registry_state WHERE key IN ('members', 'configs')",
      );
      const byKey = new Map(rows.map((r) => [r.key, r.value]));
      return { members: byKey.get('members'), configs: byKey.get('configs') };
    });
  }

  create(profile: AgentProfile): Promise<ProfileEntry> {
    return this.db.guard(async () => {
      const revision = profileRevision(profile);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        try {
          await this.db.query('INSERT INTO profiles (id, alias_key, revision, record) VALUES ($1, $2, $3, $4::json)', [
            profile.id,
            aliasKey(profile.alias),
            revision,
            JSON.stringify(profile),
          ]);
          return { profile, revision };
        } catch (err) {
          if (isUniqueViolation(err, 'profiles_pkey')) throw new AppError('internal_error', `Profile ID ${profile.id} was assigned twice.`);
          if (!isUniqueViolation(err, 'profiles_alias_key_idx')) throw err;
          await this.#throwAliasConflict(profile.alias);
        }
      }
      throw changingTooOften('Profiles are');
    });
  }

  update(
    id: string,
    changes: ProfileChanges,
    expectedRevisions?: readonly string[],
    expectedRevision?: number,
  ): Promise<ProfileEntry & { changed: boolean }> {
    return this.db.guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await readProfile(this.db.pooled, id);
        // Existence, If-Match, expectedRevision and kind, in the order a client expects; the alias rule is
        // the unique index.
        const { next, changed } = planUpdate([], current?.profile, id, changes, expectedRevisions, expectedRevision);
        if (!changed) return { ...current!, changed: false };
        const revision = profileRevision(next);
        try {
          // Written only if the row is still the revision the checks ran on (its digest covers the integer
          // revision): If-Match and expectedRevision in the same step. An
          // unchanged alias keeps its stored key (a namesake from an earlier alias rule keeps its old one).
          const key = next.alias === current!.profile.alias ? null : aliasKey(next.alias);
          const { rowCount } = await this.db.query(
            'UPDATE profiles SET alias_key = COALESCE($3, alias_key), revision = $4, record = $5::json WHERE id = $1 AND revision = $2',
            [id, current!.revision, key, revision, JSON.stringify(next)],
          );
          if (rowCount) return { profile: next, revision, changed: true };
        } catch (err) {
          if (!isUniqueViolation(err, 'profiles_alias_key_idx')) throw err;
          await this.#throwAliasConflict(next.alias);
        }
      }
      throw changingTooOften(`Profile ${id} is`);
    });
  }

  delete(id: string, expectedRevisions?: readonly string[]): Promise<void> {
    return this.db.guard(async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await readProfile(this.db.pooled, id);
        planDelete(current?.profile, id, expectedRevisions);
        const { rowCount } = await this.db.query('DELETE FROM profiles WHERE id = $1 AND revision = $2', [id, current!.revision]);
        if (rowCount) return;
      }
      throw changingTooOften(`Profile ${id} is`);
    });
  }

  /** Throws 409 naming the profile that holds `alias`; returns when none does any more (retry). */
  async #throwAliasConflict(alias: string): Promise<void> {
    const { rows } = await this.db.query<{ id: string }>('SELECT id FROM profiles WHERE alias_key = $1', [aliasKey(alias)]);
    if (rows[0]) {
      throw new AppError(
        'alias_conflict',
        `Alias ${JSON.stringify(alias)} is already used by profile ${rows[0].id} (aliases ignore case).`,
        {
          field: '/alias',
          id: rows[0].id,
        },
      );
    }
  }
}
