// One dedicated connection per replica that LISTENs for the change notifications the database's triggers
// send on every committed write. A lost connection is reconnected with backoff; the loss and the
// reconnect are both reported as "anything may have changed" (onChange(undefined)), so caches built
// while notifications could not arrive are dropped.
import pg from 'pg';
import { CHANGES_CHANNEL } from './migrations.js';

export class ChangeListener {
  #client: pg.Client | undefined;
  #connected = false;
  #closed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #backoffMs = 100;

  constructor(
    private readonly databaseUrl: string,
    /** `processId`: the backend that made the change. */
    private readonly onChange: (table: string | undefined, processId?: number) => void,
    private readonly log: (level: 'warn' | 'info', message: string, err?: unknown) => void,
  ) {}

  /** True while notifications are being received. */
  get connected(): boolean {
    return this.#connected;
  }

  /** The first connection; throws when it fails (the start fails). Later losses reconnect on their own. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'agent-resource-registry-listener',
      connectionTimeoutMillis: 5_000,
    });
    this.#client = client;
    // Until LISTEN is established, failures are the caller's (start throws; a reconnect retries).
    let established = false;
    const onLost = (err?: unknown) => {
      if (!established) return;
      established = false;
      this.#connected = false;
      this.onChange(undefined);
      if (this.#closed) return;
      this.log('warn', 'lost the database change listener; reconnecting (caches are bypassed meanwhile)', err);
      this.#scheduleReconnect();
    };
    client.on('notification', (message) => this.onChange(message.payload ?? undefined, message.processId));
    client.on('error', (err) => onLost(err));
    client.on('end', () => onLost());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    established = true;
    this.#connected = true;
    this.#backoffMs = 100;
    this.onChange(undefined); // anything committed before LISTEN took effect
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer) return;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, 2_000);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#connect().then(
        () => this.log('info', 'database change listener reconnected'),
        () => this.#scheduleReconnect(),
      );
    }, delay);
    this.#retryTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#connected = false;
    await this.#client?.end().catch(() => undefined);
  }
}
