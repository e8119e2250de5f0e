// Test helper: a real Server-Sent Events client over node:http, and an app listening on a real socket.
import http from 'node:http';
import type { Test } from 'tap';
import { build, type TestApp } from './build.js';
import { listen } from './sockets.js';

export interface Received {
  id: string;
  event: string;
  data: { id: string; type: string; at: string; subject: { kind: string; id: string; provider?: string } };
}

/** A real SSE client: parses `id:`/`event:`/`data:` blocks, remembers the last `id:` as a browser does. */
export class SseClient {
  events: Received[] = [];
  lastEventId: string | undefined;
  comments = 0;
  status = 0;
  closed = false;
  #buffer = '';
  #waiters: (() => void)[] = [];
  #req: http.ClientRequest | undefined;

  static async open(origin: string, pathname: string, headers: Record<string, string>): Promise<SseClient> {
    const client = new SseClient();
    await new Promise<void>((resolve, reject) => {
      client.#req = http.get(`${origin}${pathname}`, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        client.status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => client.#feed(chunk));
        res.on('close', () => {
          client.closed = true;
          client.#wake();
        });
        resolve();
      });
      client.#req.on('error', reject);
    });
    return client;
  }

  #feed(chunk: string): void {
    this.#buffer += chunk;
    let end: number;
    while ((end = this.#buffer.indexOf('\n\n')) >= 0) {
      const block = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments++;
        const colon = line.indexOf(':');
        if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
      }
      if (fields.id !== undefined) this.lastEventId = fields.id;
      if (fields.data !== undefined) this.events.push({ id: fields.id!, event: fields.event!, data: JSON.parse(fields.data) });
    }
    this.#wake();
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  async waitFor(done: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out with ${this.events.length} events (closed: ${this.closed})`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
  }

  close(): void {
    this.#req?.destroy();
  }
}

/** A test app (`build`) listening on a real loopback socket, and its origin. */
export async function buildListening(t: Test, options: Parameters<typeof build>[1] = {}): Promise<{ h: TestApp; origin: string }> {
  const h = await build(t, options);
  return { h, origin: await listen(h.app) };
}
