// Test helper for the PostgreSQL store: the server named by DATABASE_URL (started by
// scripts/ci/start-postgres.sh in CI), and one fresh database per test file with a random name, dropped in
// teardown. Without DATABASE_URL the PostgreSQL tests skip, except under CI, where they fail.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { freePort } from './sockets.js';

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

/** A PostgreSQL server of one test's own, stopped and started on the same port (see privateCluster). */
export interface PrivateCluster {
  url: string;
  /** `pg_ctl stop -m <mode>`: `immediate` is a crash (no shutdown checkpoint, connections cut). */
  stop(mode: 'immediate' | 'fast'): Promise<void>;
  start(): Promise<void>;
}

/**
 * A second private PostgreSQL for a test that stops and starts its server (an outage must not reach the
 * suites sharing DATABASE_URL's server): a fresh cluster from the binaries start-postgres.sh found
 * (`PG_PRIVATE_BINDIR`, else the newest under /usr/lib/postgresql), on a free loopback port, removed in
 * teardown. Undefined when no binaries are installed.
 */
export async function privateCluster(t: Pick<Tap, 'teardown'>): Promise<PrivateCluster | undefined> {
  const { execFile } = await import('node:child_process');
  const { existsSync, readdirSync } = await import('node:fs');
  const { chown, chmod, mkdtemp, rm } = await import('node:fs/promises');
  const os = await import('node:os');
  const path = await import('node:path');
  const bindir =
    process.env.PG_PRIVATE_BINDIR ??
    (existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort((a, b) => Number(a) - Number(b))
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
          .pop()
      : undefined);
  if (!bindir || !existsSync(path.join(bindir, 'initdb'))) return undefined;
  const root = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', path.join(bindir, cmd), ...args]] : [path.join(bindir, cmd), args];
      execFile(file, argv, { timeout: 120_000 }, (err, _stdout, stderr) =>
        err ? reject(new Error(`${cmd} failed: ${stderr}`)) : resolve(),
      );
    });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'arr-pg-own-'));
  await chmod(dir, 0o755);
  if (root) {
    const { uid, gid } = await import('node:child_process').then(({ execFileSync }) => ({
      uid: Number(execFileSync('id', ['-u', 'postgres']).toString()),
      gid: Number(execFileSync('id', ['-g', 'postgres']).toString()),
    }));
    await chown(dir, uid, gid);
  }
  const port = await freePort();
  const data = path.join(dir, 'data');
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  const start = () =>
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=on`,
      'start',
    ]);
  const stop = (mode: 'immediate' | 'fast') => run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
  await start();
  t.teardown(async () => {
    await stop('fast').catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop, start };
}
