// How database failures surface: a lost, refused or overloaded connection is 503 `storage_unavailable`
// (the message says nothing about the database); the cause stays in the process log.
import { AppError } from '../../errors.js';

/** SQLSTATE classes that mean "the database is not there right now": connection, resources, operator, system. */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58']);
const CLIENT_SIDE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable|Cannot use a pool after calling end/i;

export function isUnavailable(err: unknown): boolean {
  if (err instanceof AppError || !(err instanceof Error)) return false;
  const e = err as Error & { code?: unknown; severity?: unknown; errno?: unknown; syscall?: unknown };
  if (typeof e.severity === 'string') return typeof e.code === 'string' && UNAVAILABLE_CLASSES.has(e.code.slice(0, 2));
  if (e.syscall !== undefined || e.errno !== undefined) return true; // ECONNREFUSED, ECONNRESET, EPIPE...
  return CLIENT_SIDE.test(e.message);
}

export function storageUnavailable(cause: unknown): AppError {
  return new AppError(
    'storage_unavailable',
    'The registry cannot reach its database; a change in flight may not have been stored. Retry later.',
    undefined,
    { cause },
  );
}

/** The database could not be reached at start; the message names no host, user or password. */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    const code = (cause as { code?: unknown })?.code;
    super(
      `Cannot connect to the database named by DATABASE_URL${typeof code === 'string' ? ` (${code})` : ''}; check that it is running and reachable.`,
      { cause },
    );
    this.name = 'DatabaseUnavailableError';
  }
}
