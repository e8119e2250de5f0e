// Test helper for the PostgreSQL store: the server named by DATABASE_URL (started by
// scripts/ci/start-postgres.sh in CI), and one fresh database per test file with a random name, dropped in
// teardown. Without DATABASE_URL the PostgreSQL tests skip, except under CI, where they fail.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';

export const DATABASE_URL = process.env.DATABASE_URL || undefined;

type Tap = Pick<Test, 'test' | 'fail' | 'teardown'>;

/**
 * The server's URL, or undefined after skipping (or failing under CI) with a clear message: call first in
 * every PostgreSQL test file and stop when it returns undefined.
 */
export function postgresOrSkip(t: Tap): string | undefined {
  if (DATABASE_URL) return DATABASE_URL;
  if (process.env.CI) {
    t.fail('CI is set but DATABASE_URL is not: .ci/run starts a private PostgreSQL (scripts/ci/start-postgres.sh) and exports it');
  } else {
    void t.test('PostgreSQL tests', { skip: 'DATABASE_URL is not set (source scripts/ci/start-postgres.sh to run them)' }, () => undefined);
  }
  return undefined;
}

/** The URL of `base` with another database name. */
export function withDatabase(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Creates an empty database with a random name; drops it (closing any session left) in teardown. */
export async function freshDatabase(t: Pick<Tap, 'teardown'>, base: string): Promise<string> {
  const name = `arr_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });
  return withDatabase(base, name);
}

/** Runs one query on its own connection (for checks from outside the store). */
export async function queryOnce<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(sql, params)).rows;
  } finally {
    await c.end();
  }
}
