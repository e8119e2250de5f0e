// The machine's side of its channel, over undici: opens `GET /api/acp/providers/:machineId/channel` and reads
// its Server-Sent Events, and posts each job's answer. Messages name the URL and the machine, never the token.
import { Agent, request } from 'undici';
import type { paths } from '@agent-resource-registry/client';

const CHANNEL = '/api/acp/providers/{machineId}/channel' satisfies keyof paths;
const ANSWER = '/api/acp/providers/{machineId}/jobs/{jobId}' satisfies keyof paths;

/** Three missed heartbeats (the registry sends one every 15 s) and the channel is taken for dead. */
export const CHANNEL_SILENCE_MS = 45_000;

export interface ServerSentEvent {
  event: string;
  id?: string;
  data: string;
}

/** Splits a Server-Sent Events stream into events; comment lines (the heartbeat) are counted, not returned. */
export class EventStreamParser {
  #buffer = '';
  #event: Partial<ServerSentEvent> & { data?: string } = {};

  feed(chunk: string): ServerSentEvent[] {
    this.#buffer += chunk;
    const out: ServerSentEvent[] = [];
    let newline: number;
    while ((newline = this.#buffer.indexOf('\n')) >= 0) {
      const line = this.#buffer.slice(0, newline).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(newline + 1);
      if (line === '') {
        if (this.#event.data !== undefined) {
          out.push({
            event: this.#event.event ?? 'message',
            data: this.#event.data,
            ...(this.#event.id === undefined ? {} : { id: this.#event.id }),
          });
        }
        this.#event = {};
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') this.#event.event = value;
      else if (field === 'id') this.#event.id = value;
      else if (field === 'data') this.#event.data = this.#event.data === undefined ? value : `${this.#event.data}\n${value}`;
    }
    return out;
  }
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
   * it fell silent). Throws `ChannelRefused` when the registry answers anything but 200.
   */
  async *open(token: string, signal: AbortSignal): AsyncGenerator<ServerSentEvent> {
    const res = await request(`${this.#o.registryUrl}${CHANNEL.replace('{machineId}', encodeURIComponent(this.#o.machineId))}`, {
      method: 'GET',
      dispatcher: this.#agent,
      signal,
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    if (res.statusCode !== 200) {
      const text = await res.body.text().catch(() => '');
      let code: string | undefined;
      try {
        const body = JSON.parse(text) as { code?: unknown };
        code = typeof body.code === 'string' ? body.code.slice(0, 64) : undefined;
      } catch {
        code = undefined;
      }
      throw new ChannelRefused(res.statusCode, code, `the registry refused the channel (${res.statusCode}${code ? ` ${code}` : ''})`);
    }
    const parser = new EventStreamParser();
    res.body.setEncoding('utf8');
    for await (const chunk of res.body as AsyncIterable<string>) yield* parser.feed(chunk);
  }

  /** Posts a job's answer; false when the registry no longer waits for it (404 `job_not_found`). */
  async answer(token: string, jobId: string, answer: unknown): Promise<boolean> {
    const url = `${this.#o.registryUrl}${ANSWER.replace('{machineId}', encodeURIComponent(this.#o.machineId)).replace('{jobId}', encodeURIComponent(jobId))}`;
    const res = await request(url, {
      method: 'POST',
      dispatcher: this.#agent,
      signal: AbortSignal.timeout(this.#o.timeoutMs),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(answer),
    });
    await res.body.text().catch(() => '');
    if (res.statusCode === 204) return true;
    if (res.statusCode === 404) return false;
    throw new Error(`the registry refused the answer to job ${jobId} (${res.statusCode})`);
  }
}
