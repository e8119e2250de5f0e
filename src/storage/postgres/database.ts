// The PostgreSQL store's way into its database: the pool, one query, one transaction, and the guard every
// store operation runs under, which maps a lost or refused connection to 503 `storage_unavailable`. The
// aggregates (resources, profiles, machines, workloads, audit) each take one of these.
import pg from 'pg';
import { AppError } from '../../errors.js';
import { isUnavailable, storageUnavailable } from './pg-errors.js';

export type Queryable = Pick<pg.PoolClient, 'query'>;

/** How often a conditional write is retried when the row it read changed under it (optimistic loop). */
export const MAX_ATTEMPTS = 20;

/** Longest a readiness probe waits for the database before answering "not ready". */
const READINESS_TIMEOUT_MS = 2_000;

export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === constraint;
}

export type PoolLog = (level: 'warn' | 'info', message: string, err?: unknown) => void;

/**
 * The pool of one store, and the backend process IDs of its connections (a change notification from one of
 * them is this store's own commit, already counted).
 */
export function openPool(options: { databaseUrl: string; poolSize?: number }, log: PoolLog): { pool: pg.Pool; ownBackends: Set<number> } {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: 'agent-resource-registry',
  });
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on('error', (err) => log('warn', 'an idle database connection failed', err));
  const ownBackends = new Set<number>();
  pool.on('connect', (client) => {
    // The pool listens for errors only while a client is idle: a connection lost while checked out (a
    // crash or failover mid-transaction) emits `error` with no listener, which would end the process. The
    // query in flight fails on its own (503); this listener only keeps the error from being unhandled.
    client.on('error', (err) => log('warn', 'a database connection in use failed', err));
    const pid = (client as pg.PoolClient & { processID?: number }).processID;
    if (typeof pid === 'number') {
      ownBackends.add(pid);
      client.once('end', () => ownBackends.delete(pid));
    }
  });
  return { pool, ownBackends };
}

export class PgDatabase {
  #closed = false;

  constructor(private readonly pool: pg.Pool) {}

  get closed(): boolean {
    return this.#closed;
  }

  /** Refuses every operation from now on (503); the pool is ended by `end`. */
  markClosed(): void {
    this.#closed = true;
  }

  end(): Promise<void> {
    return this.pool.end();
  }

  /** Runs one store operation, mapping a lost or refused database connection to 503. */
  async guard<T>(op: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new AppError('storage_unavailable', 'The registry is shutting down; nothing was changed. Retry later.');
    try {
      return await op();
    } catch (err) {
      if (isUnavailable(err)) throw storageUnavailable(err);
      throw err;
    }
  }

  /** A pooled connection; any failure to get one (refused, not accepting, timed out) is 503. */
  async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw storageUnavailable(err);
    }
  }

  async query<R extends pg.QueryResultRow>(sql: string | pg.QueryConfig, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    const client = await this.connect();
    let failed: unknown;
    try {
      return await client.query<R>(typeof sql === 'string' ? { text: sql, values: params } : sql);
    } catch (err) {
      failed = err;
      throw err;
    } finally {
      // A connection that failed is not handed out again.
      client.release(failed !== undefined && isUnavailable(failed) ? (failed as Error) : undefined);
    }
  }

  /** `query` on any pooled connection, for the helpers that also run inside a transaction. */
  readonly pooled: Queryable = {
    query: ((sql: string | pg.QueryConfig, params?: unknown[]) => this.query(sql, params)) as Queryable['query'],
  };

  /**
   * One transaction on one pooled client: COMMIT before returning, ROLLBACK on any error. `begin` opens it
   * (statements without parameters, sent in one round trip).
   */
  async transaction<T>(work: (client: Queryable) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const client = await this.connect();
    let broken = false;
    try {
      await client.query(begin);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** One round trip to the database, bounded so a hung connection attempt answers "no" in time. */
  async isAvailable(): Promise<boolean> {
    if (this.#closed) return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), READINESS_TIMEOUT_MS);
    });
    const probe = this.query('SELECT 1').then(
      () => true,
      () => false,
    );
    try {
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
