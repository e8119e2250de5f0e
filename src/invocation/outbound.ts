// The outbound call to a hosted capability's endpoint, with a gateway's discipline: one request (a POST of
// the agent's input as JSON, or a built-in adapter's vendor request; never retried: it may not be idempotent), a per-capability deadline, a bound on
// the answer's size read as it streams in and on its nesting, redirects not followed, and cancellation passed downstream (the
// caller's AbortSignal aborts the request when the agent hangs up). Whatever goes wrong, the result names
// only a reason: the endpoint's body and headers never travel further. Framework-free.
// undici is loaded on the first call: most deployments host no capability, and loading it costs about a
// third of the server's start-up CPU (start-up).
import type { Agent, request as undiciRequest } from 'undici';

/** JSON answers nested deeper than this are refused: serializing them would overflow the stack. */
export const MAX_OUTPUT_DEPTH = 128;

export type OutboundResult =
  | { ok: true; output: unknown; outputBytes: number }
  | {
      ok: false;
      /**
       * `credential_echoed` and `unexpected_answer` (a built-in adapter's vendor answered JSON of another
       * shape) are the caller's own verdicts on an answer (see InvocationService).
       */
      reason:
        | 'timeout'
        | 'cancelled'
        | 'unreachable'
        | 'status'
        | 'not_json'
        | 'output_too_large'
        | 'output_too_deep'
        | 'credential_echoed'
        | 'unexpected_answer';
      status?: number;
    };

export interface OutboundCall {
  endpoint: URL;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** JSON; none for GET. */
  body: string | undefined;
  timeoutMs: number;
  maxOutputBytes: number;
  /** Aborted when the agent hangs up. */
  signal: AbortSignal;
}

/** True when `value` holds arrays or objects nested more than `max` levels; iterative, so any depth is safe. */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node))
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

export class OutboundClient {
  #undici: Promise<{ agent: Agent; request: typeof undiciRequest }> | undefined;

  #client() {
    this.#undici ??= import('undici').then(({ Agent, request }) => ({
      agent: new Agent({ keepAliveTimeout: 10_000, connections: 128 }),
      request,
    }));
    return this.#undici;
  }

  async call(call: OutboundCall): Promise<OutboundResult> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error('deadline'));
    }, call.timeoutMs);
    const onCancel = () => controller.abort(new Error('cancelled'));
    if (call.signal.aborted) onCancel();
    else call.signal.addEventListener('abort', onCancel, { once: true });
    const failed = (reason: Exclude<OutboundResult, { ok: true }>['reason'], status?: number): OutboundResult =>
      timedOut
        ? { ok: false, reason: 'timeout' }
        : call.signal.aborted
          ? { ok: false, reason: 'cancelled' }
          : { ok: false, reason, ...(status ? { status } : {}) };
    try {
      const { agent, request } = await this.#client();
      const response = await request(call.endpoint, {
        method: call.method,
        dispatcher: agent,
        headers: {
          ...call.headers,
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
          accept: 'application/json',
        },
        body: call.body,
        signal: controller.signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
      });
      const { statusCode, headers, body } = response;
      // Destroying the body early (refusing it) must not surface as an unhandled stream error.
      body.on('error', () => undefined);
      if (statusCode < 200 || statusCode > 299) {
        body.destroy();
        return failed('status', statusCode);
      }
      const declared = Number(headers['content-length']);
      if (Number.isFinite(declared) && declared > call.maxOutputBytes) {
        body.destroy();
        return failed('output_too_large');
      }
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of body) {
        bytes += (chunk as Buffer).length;
        if (bytes > call.maxOutputBytes) {
          body.destroy();
          return failed('output_too_large');
        }
        chunks.push(chunk as Buffer);
      }
      let output: unknown;
      try {
        output = JSON.parse(Buffer.concat(chunks, bytes).toString('utf8'));
      } catch {
        return failed('not_json');
      }
      return nestedDeeperThan(output, MAX_OUTPUT_DEPTH) ? failed('output_too_deep') : { ok: true, output, outputBytes: bytes };
    } catch {
      return failed('unreachable');
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onCancel);
    }
  }

  async close(): Promise<void> {
    if (this.#undici) await (await this.#undici).agent.close();
  }
}
