// MCP's Streamable HTTP POST and DELETE, answered whole (JSON, 202 or a JSON-RPC error), for one SDK server that
// serves every request of the process (docs/decisions/mcp.md). It is the SDK's `Transport` interface: the
// messages of each POST are checked by the SDK's own schemas and rules (Accept, protocol version, batch size,
// one initialization), handed to the server under IDs unique in the process, and their answers collected
// under the client's IDs again; so clients that send the same request ID at once never share an answer.
// An answer is bounded: once a POST's answers hold `answerBytes`, its later reads are JSON-RPC errors.
// Each request carries its caller's context to the handlers (`contextOf`); a hang-up aborts the exchange's
// signal. Notifications and responses are accepted with 202; `notifications/cancelled` goes to `cancelled`
// with its sender's context, since the SDK hands notification handlers no caller.
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';

/** What an exchange's answer is: an HTTP status and, unless 202 or an empty 200, a JSON body. */
export interface ExchangeAnswer {
  status: number;
  body?: string;
}

/** What a request handler learns of the request it serves. */
export interface ExchangeRequest<C> {
  context: C;
  /** The request's ID as its client sent it. */
  requestId: RequestId;
  /** A signal aborted when the client hangs up before its answer (made when first asked for). */
  hangUp: () => AbortSignal;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** The caller's context of the request a handler serves. */
export function contextOf<C>(extra: Extra): ExchangeRequest<C> {
  return extra.authInfo?.extra?.exchange as ExchangeRequest<C>;
}

/** A checked message that is a request (the SDK's schema tells a request by its `id` and `method`). */
const isRequest = (message: JSONRPCMessage): message is JSONRPCRequest => 'id' in message && 'method' in message;
/** The SDK's test, asked only of a message whose method is `initialize` (a failed parse costs as much as a read). */
const isInitialization = (message: JSONRPCMessage) =>
  'method' in message && message.method === 'initialize' && isInitializeRequest(message);

const refusal = (status: number, code: number, message: string): ExchangeAnswer => ({
  status,
  body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
});

/** The SDK's answer to a request whose `Mcp-Protocol-Version` it does not speak, or undefined. */
function versionRefusal(version: string | undefined): ExchangeAnswer | undefined {
  if (version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  const supported = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
  return refusal(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${supported})`);
}

/** The JSON-RPC code of a read refused because its batch's answer reached the byte budget. */
export const ANSWER_TOO_LARGE = -32003;
/** The requests whose answers the byte budget refuses: reads, which may be large and cost nothing to repeat. */
const BUDGETED = new Set(['resources/read', 'resources/list']);

interface Pending {
  /** Each request's answer, serialized, in the order of the requests. */
  answers: string[];
  /** The bytes of the answers so far. */
  bytes: number;
  left: number;
  settle: (answer: ExchangeAnswer) => void;
}

export class ExchangeTransport<C> implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  #next = 0;
  /** The requests the server is answering: their exchange, their place in it, and the client's ID. */
  readonly #inFlight = new Map<number, { pending: Pending; index: number; clientId: RequestId; method: string }>();

  /**
   * `answerBytes`: once a POST's answers hold this many bytes, its later reads are answered ANSWER_TOO_LARGE
   * (the first answer is always kept, so one read is answered whatever its size).
   */
  constructor(
    private readonly cancelled: (context: C, requestId: RequestId) => void,
    private readonly answerBytes: number,
  ) {}

  start(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    for (const { pending } of this.#inFlight.values()) pending.settle(refusal(503, -32000, 'The server is shutting down.'));
    this.#inFlight.clear();
    this.onclose?.();
    return Promise.resolve();
  }

  /** The server's messages: an answer goes to its exchange; notifications and requests have no stream here. */
  send(message: JSONRPCMessage): Promise<void> {
    const id = 'id' in message && !('method' in message) ? (message.id as number) : undefined;
    const entry = id === undefined ? undefined : this.#inFlight.get(id);
    if (!entry) return Promise.resolve();
    this.#inFlight.delete(id!);
    const { pending, index, clientId, method } = entry;
    const refused = pending.bytes >= this.answerBytes && BUDGETED.has(method);
    const answer = JSON.stringify(refused ? this.#tooLarge(clientId) : { ...message, id: clientId });
    pending.bytes += Buffer.byteLength(answer);
    pending.answers[index] = answer;
    if (--pending.left === 0) {
      const { answers } = pending;
      pending.settle({ status: 200, body: answers.length === 1 ? answers[0] : `[${answers.join(',')}]` });
    }
    return Promise.resolve();
  }

  #tooLarge(id: RequestId): JSONRPCMessage {
    const message = `The answer to this request's batch reached ${this.answerBytes} bytes (MCP_ANSWER_BYTES); this read was not answered. Send it again in a request of its own or a smaller batch.`;
    return { jsonrpc: '2.0', id, error: { code: ANSWER_TOO_LARGE, message, data: { limitBytes: this.answerBytes } } };
  }

  /** A POST: its `Accept` and `Mcp-Protocol-Version` headers, its parsed body, its caller and hang-up signal. */
  post(headers: { accept?: string; version?: string }, body: unknown, context: C, hangUp: () => AbortSignal): Promise<ExchangeAnswer> {
    if (!headers.accept?.includes('application/json') || !headers.accept.includes('text/event-stream'))
      return Promise.resolve(refusal(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'));
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE)
      return Promise.resolve(refusal(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`));
    const messages: JSONRPCMessage[] = [];
    for (const raw of Array.isArray(body) ? body : [body]) {
      const parsed = JSONRPCMessageSchema.safeParse(raw);
      if (!parsed.success) return Promise.resolve(refusal(400, -32700, 'Parse error: Invalid JSON-RPC message'));
      messages.push(parsed.data);
    }
    if (messages.some(isInitialization)) {
      if (messages.length > 1) return Promise.resolve(refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed'));
    } else {
      const refused = versionRefusal(headers.version);
      if (refused) return Promise.resolve(refused);
    }

    const requests = messages.filter(isRequest);
    return new Promise<ExchangeAnswer>((settle) => {
      const pending: Pending = { answers: [], bytes: 0, left: requests.length, settle };
      for (const message of messages) {
        if (!isRequest(message)) {
          if ('method' in message && message.method === 'notifications/cancelled') {
            const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
            if (requestId !== undefined) this.cancelled(context, requestId);
          } else this.onmessage?.(message);
          continue;
        }
        const id = ++this.#next;
        this.#inFlight.set(id, { pending, index: pending.answers.length, clientId: message.id, method: message.method });
        pending.answers.push('');
        const exchange: ExchangeRequest<C> = { context, requestId: message.id, hangUp };
        this.onmessage?.({ ...message, id }, { authInfo: { token: '', clientId: '', scopes: [], extra: { exchange } } });
      }
      if (requests.length === 0) settle({ status: 202 });
    });
  }

  /** A DELETE: a stateless server has no session to end. */
  delete(headers: { version?: string }): ExchangeAnswer {
    return versionRefusal(headers.version) ?? { status: 200 };
  }
}
