// The machine's side of its channel, over undici: opens `GET /api/acp/providers/:machineId/channel` and reads
// its Server-Sent Events. No message is read past MAX_RESPONSE_BYTES, the bound on any answer of the registry's;
// a job's answer is posted through the registry client (registry-client.ts), under the same bound. Messages name
// the URL and the machine, never the token.
import { Agent, request } from 'undici';
import type { paths } from '@agent-resource-registry/client';
import { MAX_RESPONSE_BYTES } from './registry-client.js';

const CHANNEL = '/api/acp/providers/{machineId}/channel' satisfies keyof paths;

/** Three missed heartbeats (the registry sends one every 15 s) and the channel is taken for dead. */
export const CHANNEL_SILENCE_MS = 45_000;

export interface ServerSentEvent {
  event: string;
  id?: string;
  data: string;
}

/** A channel message (one line, or one event's data) longer than the bound: the stream is not read further. */
export class ChannelMessageTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`the registry sent a channel message larger than ${maxBytes / (1024 * 1024)} MiB, more than any message it sends`);
    this.name = 'ChannelMessageTooLarge';
  }
}

/**
 * Splits a Server-Sent Events stream into events; comment lines (the heartbeat) are skipped. It holds at most
 * `maxBytes` of one event (its data lines and the line being read): past that it throws ChannelMessageTooLarge.
 */
export class EventStreamParser {
  readonly #maxBytes: number;
  /** The line being read, in the pieces received so far. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #event: Partial<ServerSentEvent> & { data?: string } = {};
  /** Bytes of the event's data lines held so far. */
  #eventBytes = 0;

  constructor(maxBytes: number = MAX_RESPONSE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  feed(chunk: Buffer | string): ServerSentEvent[] {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const out: ServerSentEvent[] = [];
    let start = 0;
    let newline: number;
    // Split on the LF byte: it never occurs inside a UTF-8 sequence, so a line is decoded whole.
    while ((newline = bytes.indexOf(0x0a, start)) >= 0) {
      const piece = bytes.subarray(start, newline);
      start = newline + 1;
      this.#hold(piece.length);
      const whole = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#line(whole.toString('utf8').replace(/\r$/, ''), whole.length, out);
    }
    if (start < bytes.length) {
      const rest = bytes.subarray(start);
      this.#hold(rest.length);
      this.#pending.push(rest);
      this.#pendingBytes += rest.length;
    }
    return out;
  }

  #hold(more: number): void {
    if (this.#eventBytes + this.#pendingBytes + more > this.#maxBytes) throw new ChannelMessageTooLarge(this.#maxBytes);
  }

  #line(line: string, size: number, out: ServerSentEvent[]): void {
    if (line === '') {
      if (this.#event.data !== undefined) {
        out.push({
          event: this.#event.event ?? 'message',
          data: this.#event.data,
          ...(this.#event.id === undefined ? {} : { id: this.#event.id }),
        });
      }
      this.#event = {};
      this.#eventBytes = 0;
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') this.#event.event = value;
    else if (field === 'id') this.#event.id = value;
    else if (field === 'data') {
      this.#event.data = this.#event.data === undefined ? value : `${this.#event.data}\n${value}`;
      this.#eventBytes += size;
    }
  }
}

/** The body as text, or undefined once it passes `maxBytes` (reading stops there and the stream is destroyed). */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The registry refused the channel: its status and code (401, 403: the token; others: the registry). */
export class ChannelRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'ChannelRefused';
  }
}

export interface ChannelClientOptions {
  registryUrl: string;
  machineId: string;
  timeoutMs: number;
}

export class ChannelClient {
  readonly #o: ChannelClientOptions;
  readonly #agent: Agent;

  constructor(options: ChannelClientOptions) {
    this.#o = options;
    this.#agent = new Agent({
      connect: { timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: CHANNEL_SILENCE_MS,
    });
  }

  async close(): Promise<void> {
    await this.#agent.destroy();
  }

  /**
   * Opens the channel and yields its events until it ends (the registry closed it, the signal aborted, or
   * it fell silent). Throws `ChannelRefused` when the registry answers anything but 200, and
   * `ChannelMessageTooLarge` (having dropped the connection) when a message passes the bound.
   */
  async *open(token: string, signal: AbortSignal): AsyncGenerator<ServerSentEvent> {
    const res = await request(`${this.#o.registryUrl}${CHANNEL.replace('{machineId}', encodeURIComponent(this.#o.machineId))}`, {
      method: 'GET',
      dispatcher: this.#agent,
      signal,
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    if (res.statusCode !== 200) {
      const text = (await readBounded(res.body, MAX_RESPONSE_BYTES).catch(() => undefined)) ?? '';
      let code: string | undefined;
      try {
        const body = JSON.parse(text) as { code?: unknown };
        code = typeof body.code === 'string' ? body.code.slice(0, 64) : undefined;
      } catch {
        code = undefined;
      }
      throw new ChannelRefused(res.statusCode, code, `the registry refused the channel (${res.statusCode}${code ? ` ${code}` : ''})`);
    }
    const parser = new EventStreamParser(MAX_RESPONSE_BYTES);
    // A message past the bound throws out of this loop, which destroys the body: the connection is dropped.
    for await (const chunk of res.body as AsyncIterable<Buffer>) yield* parser.feed(chunk);
  }
}
