// RFS over the Model Context Protocol (docs/mcp.md): `/api/rfs/:canvasId/mcp`, MCP's Streamable HTTP
// transport served by the official SDK. The canvas token is checked exactly as on the other RFS routes,
// and the `Origin` header against the registry's own, before any JSON-RPC is read (refusals in our
// envelope). The server is stateless, so any replica answers any request: one SDK server answers every POST
// of the process over `ExchangeTransport`, and each GET stream has an SDK server of its own
// (docs/decisions/mcp.md). Resources are the records the canvas may read and the host's
// guides; tools are the hosted capabilities the caller's grant admits, invoked through the same
// invocation service as `POST /resources/:id/invoke`. The GET stream carries the resource notifications
// the change feed drives, and closes when its credential stops holding.
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { finished } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
  type RequestId,
  type Resource,
} from '@modelcontextprotocol/sdk/types.js';
import { actorOf, type Principal } from '../credentials/principal.js';
import { AppError, type ErrorCode } from '../errors.js';
import { HOST_SKILLS, hostSkill } from '../host/skills.js';
import { protect, requireUrlCanvas } from '../http/auth.js';
import { EXPENSIVE_MCP_READS } from '../http/expensive-work.js';
import { renderError } from '../http/error-handler.js';
import { answer, errors, API_VERSION } from '../http/openapi.js';
import { GRANT_HEADER } from '../invocation/grants.js';
import { asInvocationAnswer, invocationError } from '../invocation/invocation-errors.js';
import type { InvocationCaller, InvocationService } from '../invocation/invocation-service.js';
import { visibleToMachine, type ChangeFeed } from '../registry/events.js';
import { guidanceOfV2, represent, toV2 } from '../registry/resource-versions.js';
import type { StoredResource } from '../schemas/resource.js';
import { CanvasId } from '../schemas/common.js';
import type { RouteDeps } from './deps.js';
import { feedReader } from './feed-reader.js';
import { contextOf, ExchangeTransport, type ExchangeAnswer } from './mcp-exchange.js';
import { THREAD_HEADER } from './invoke.js';
import { FIND_TOOL, FIND_TOOL_NAME, findResources, listPage } from './mcp-find.js';
import { machineScope } from './rfs.js';

export const RESOURCE_URI = 'registry://resources/';
export const SKILL_URI = 'registry://skill/';
const MARKDOWN = 'text/markdown';
/** MCP's code for a resource that does not exist (or that this canvas may not read). */
const RESOURCE_NOT_FOUND = -32002;

export interface McpRouteOptions extends RouteDeps {
  events: ChangeFeed;
  invocations: InvocationService;
}

type CanvasPrincipal = Extract<Principal, { kind: 'canvas' }>;

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A JSON-RPC error answer of the transport (the SDK's, past our checks). */
const JsonRpcError = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    error: Type.Object({ code: Type.Integer(), message: Type.String() }, { additionalProperties: true }),
    id: Type.Union([Type.String(), Type.Number(), Type.Null()]),
  },
  { additionalProperties: false, description: 'A JSON-RPC error of the MCP transport.' },
);
/** A JSON-RPC error response of the transport, with the example of what it sends. */
const rpcError = (code: number, message: string) => ({
  ...JsonRpcError,
  'x-examples': { 'json-rpc': { summary: 'JSON-RPC error', value: { jsonrpc: '2.0', error: { code, message }, id: null } } },
});

/** Our envelope (refused before the transport) or the transport's JSON-RPC error, each with its example. */
const envelopeOrRpc = (code: ErrorCode, rpc: ReturnType<typeof rpcError>) => {
  const envelope = Object.values(errors(code))[0]!;
  return Object.assign(
    Type.Union([envelope, JsonRpcError], { description: `\`${code}\` in this service's envelope, or a JSON-RPC error.` }),
    {
      'x-examples': { ...envelope['x-examples'], ...rpc['x-examples'] },
    },
  );
};

const MCP_DOC =
  "MCP's Streamable HTTP transport (docs/mcp.md), stateless: any replica answers any request, no `Mcp-Session-Id`. Needs the canvas token (`Authorization: Bearer $AGENTLET_TOKEN`); the hosted capabilities are tools when the thread's grant (`X-Huabu-Resource-Grant: $HUABU_RESOURCE_GRANT`) and thread (`X-Huabu-Thread-Id: $HUABU_THREAD_ID`) come with it. A browser's `Origin` other than this registry's is 403 `forbidden`. Refusals before JSON-RPC (401, 403, 429) are in this service's envelope; the transport's own (400, 404, 405, 406, 415) are JSON-RPC errors.";

/** A request of a batch that reads records (the kind EXPENSIVE_MCP_READS counts). */
const isRead = (message: unknown) =>
  typeof message === 'object' &&
  message !== null &&
  'id' in message &&
  'method' in message &&
  (message.method === 'resources/read' || message.method === 'resources/list');

/** Whether a POST's body holds enough reads to count as expensive work. */
export function manyReads(body: unknown): boolean {
  return Array.isArray(body) && body.filter(isRead).length >= EXPENSIVE_MCP_READS;
}

export const mcpRoutes: FastifyPluginCallbackTypebox<McpRouteOptions> = (
  app,
  { registry, pages, config, events, invocations, expensive, threads },
  done,
) => {
  const ownOrigin = new URL(config.publicBaseUrl).origin;
  protect(app, [app.requireCanvas], ['canvasToken']);
  requireUrlCanvas(app);
  // MCP's DNS-rebinding rule: a browser page of another origin must not reach this server. No Origin (an agent's
  // HTTP client) is fine.
  app.addHook('onRequest', (request, _reply, done) => {
    const origin = header(request, 'origin');
    if (origin !== undefined && origin !== ownOrigin)
      throw new AppError('forbidden', "The request's Origin is not this registry's; MCP is not served to other origins.");
    done();
  });

  // One validator for every request's server: the SDK's default builds an Ajv instance per server, which was
  // most of a read's cost (it serves elicitation, which this server never asks for).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  /** Tool calls in flight in this process, so a `notifications/cancelled` (its own POST) can abort its call. */
  const inFlight = new Map<string, AbortController>();
  /** The streams open on this app, ended when it closes. */
  const streams = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const end of streams) end();
    done();
  });

  const resourceOf = (record: StoredResource): Resource => {
    const v1 = represent(record, 1) as { description: string };
    return {
      uri: `${RESOURCE_URI}${record.id}`,
      name: record.id,
      title: record.displayName ?? record.name,
      description: v1.description,
      mimeType: MARKDOWN,
    };
  };

  /** The caller of one request, as the handlers need it. */
  interface Caller {
    request: FastifyRequest;
    principal: CanvasPrincipal;
    invocation: InvocationCaller;
    grant: string | undefined;
  }
  const callerOf = (request: FastifyRequest): Caller => {
    const principal = request.principal as CanvasPrincipal;
    return {
      request,
      principal,
      invocation: {
        tokenCanvasId: principal.canvasId,
        tokenMachineId: principal.agentletId,
        canvasId: principal.canvasId,
        threadId: header(request, THREAD_HEADER),
      },
      grant: header(request, GRANT_HEADER),
    };
  };
  // A call is found by everything that made it: the canvas token's actor, the grant, the thread and the request
  // ID. A cancel that does not bring the call's grant finds nothing (another thread on the canvas could name
  // the thread and guess the ID; it cannot bring the grant).
  const callKey = (caller: Caller, requestId: RequestId) =>
    JSON.stringify([actorOf(caller.principal), caller.grant ?? null, caller.invocation.threadId ?? null, requestId]);

  /** The pins the caller's thread reads at (`X-Huabu-Thread-Id`), if it names a launched thread of this canvas and machine. */
  const pinsOf = (caller: Caller) =>
    threads.pinsOf(caller.principal.canvasId, caller.principal.agentletId, caller.invocation.threadId || undefined);

  /** The record or guide `uri` names, when the caller's canvas on its machine may read it (a launched thread: as pinned). */
  const read = async (uri: string, caller: Caller): Promise<string> => {
    const machineId = caller.principal.agentletId;
    if (uri.startsWith(RESOURCE_URI)) {
      const id = uri.slice(RESOURCE_URI.length);
      let record = await registry.getVisibleOnMachine(id, machineId).catch(() => undefined);
      const pins = await pinsOf(caller);
      if (pins) {
        record = await threads.contentFor(id, record, machineId, pins).catch((err: unknown) => {
          if (err instanceof AppError && err.code === 'resource_withdrawn') {
            throw new McpError(RESOURCE_NOT_FOUND, err.message, { uri, code: err.code });
          }
          throw err;
        });
      }
      if (record) return guidanceOfV2(toV2(record));
    } else if (uri.startsWith(SKILL_URI)) {
      const skill = hostSkill(uri.slice(SKILL_URI.length));
      if (skill) return skill.markdown;
    }
    throw new McpError(RESOURCE_NOT_FOUND, 'Resource not found', { uri });
  };

  const newServer = () =>
    new Server(
      { name: 'agent-resource-registry', version: API_VERSION },
      { capabilities: { resources: { subscribe: true, listChanged: true }, tools: {} }, jsonSchemaValidator },
    );

  // One SDK server answers every POST of this process; each request brings its caller (`contextOf`).
  const exchanges = new ExchangeTransport<Caller>(
    (caller, requestId) => inFlight.get(callKey(caller, requestId))?.abort(),
    config.mcpAnswerBytes,
  );
  const server = newServer();
  const callerIn = (extra: Parameters<Parameters<typeof server.setRequestHandler>[1]>[1]) => contextOf<Caller>(extra);

  const scopeOf = (principal: CanvasPrincipal) => machineScope(principal.canvasId, principal.agentletId);
  // Pages of the records in the order of `GET <rfs>/resources?limit=` (provider, id); the host's guides on the
  // first. A launched thread is served the records it pinned as pinned (withdrawn pins left out).
  server.setRequestHandler(ListResourcesRequestSchema, async ({ params }, extra) => {
    const caller = callerIn(extra).context;
    const page = await listPage(pages, scopeOf(caller.principal), params?.cursor);
    const pins = await pinsOf(caller);
    const records = pins ? await threads.listFor(page.records, caller.principal.agentletId, pins) : page.records;
    return {
      resources: [
        ...records.map(resourceOf),
        ...(params?.cursor === undefined
          ? HOST_SKILLS.map((s) => ({
              uri: `${SKILL_URI}${s.name}`,
              name: s.name,
              title: s.title,
              description: s.summary,
              mimeType: MARKDOWN,
            }))
          : []),
      ],
      ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async ({ params }, extra) => ({
    contents: [{ uri: params.uri, mimeType: MARKDOWN, text: await read(params.uri, callerIn(extra).context) }],
  }));
  // The notification stream sends `resources/updated` for every record this canvas may read
  // (docs/decisions/mcp.md): a subscription checks that the canvas may read what it names, and holds no state.
  server.setRequestHandler(SubscribeRequestSchema, async ({ params }, extra) => {
    await read(params.uri, callerIn(extra).context);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, () => ({}));

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const { grant, invocation } = callerIn(extra).context;
    const granted = await invocations.granted(grant, invocation);
    const records = await Promise.all(granted.map((c) => registry.get(c.id).catch(() => undefined)));
    return {
      tools: [
        FIND_TOOL,
        ...granted.flatMap((capability, i) => {
          const record = records[i];
          if (!record) return [];
          const { uri: _u, mimeType: _m, ...about } = resourceOf(record);
          return [{ ...about, inputSchema: capability.inputSchema as { type: 'object' } }];
        }),
      ],
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
    const { context: caller, requestId, hangUp } = callerIn(extra);
    const { request, principal, invocation, grant } = caller;
    if (params.name === FIND_TOOL_NAME) {
      return findResources(pages, scopeOf(principal), params.arguments ?? {}, (record) => {
        const { uri, name, title, description } = resourceOf(record);
        return { id: name, title: title!, description: description!, uri };
      });
    }
    const ctx = invocations.begin(params.name, invocation);
    const actor = actorOf(principal);
    const key = callKey(caller, requestId);
    const aborted = new AbortController();
    inFlight.set(key, aborted);
    try {
      const capability = await invocations.authorize(ctx, grant, invocation);
      const outcome = await invocations.invoke(
        ctx,
        capability,
        params.arguments ?? {},
        AbortSignal.any([aborted.signal, extra.signal, hangUp()]),
      );
      if ('cancelled' in outcome) throw invocationError('client_disconnected', 'The call was cancelled; it was aborted.');
      await invocations.finish(ctx, 'ok', actor);
      return toolResult(outcome.output);
    } catch (err) {
      // The answer `/invoke` would give, in upstream's taxonomy: never a vendor body, header or key.
      const answer = asInvocationAnswer(renderError(err as Error, request));
      if (answer.code === 'internal_error') request.log.error({ err }, 'MCP tool call failed');
      const reason = answer.details?.reason;
      await invocations.finish(ctx, answer.code, actor, typeof reason === 'string' ? reason : undefined);
      return {
        isError: true,
        content: [{ type: 'text', text: `${answer.code}: ${answer.message}` }],
        structuredContent: { code: answer.code, message: answer.message, ...(answer.details ? { details: answer.details } : {}) },
      } satisfies CallToolResult;
    } finally {
      if (inFlight.get(key) === aborted) inFlight.delete(key);
    }
  });
  app.addHook('onClose', async () => {
    await server.close();
  });

  /** Writes an exchange's answer as it is: JSON, or no body. */
  const write = (reply: FastifyReply, answer: ExchangeAnswer) => {
    reply.hijack();
    if (answer.body === undefined) return void reply.raw.writeHead(answer.status, { 'content-length': '0' }).end();
    reply.raw
      .writeHead(answer.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(answer.body)) })
      .end(answer.body);
  };

  /** A POST, answered whole by the process's server: a hang-up before the answer aborts its calls. */
  async function answerPost(request: FastifyRequest, reply: FastifyReply) {
    // The hang-up signal is made only when a call asks for it (most requests are reads): it is aborted at
    // once if the client has hung up already, or when it does.
    let hangUp: AbortController | undefined;
    const onClose = () => {
      if (!reply.raw.writableFinished) hangUp!.abort();
    };
    const signal = () => {
      if (!hangUp) {
        hangUp = new AbortController();
        if (reply.raw.destroyed) hangUp.abort();
        else reply.raw.once('close', onClose);
      }
      return hangUp.signal;
    };
    const answer = async () => {
      try {
        const answer = await exchanges.post(
          { accept: header(request, 'accept'), version: header(request, 'mcp-protocol-version') },
          request.body,
          callerOf(request),
          signal,
        );
        if (reply.raw.destroyed) reply.hijack();
        else write(reply, answer);
      } finally {
        reply.raw.off('close', onClose);
      }
    };
    // A batch of many reads is expensive work until its answer is written out: a client that does not read
    // its answers holds its credential's share, and its next batches are refused (429) before anything is built.
    if (!manyReads(request.body)) return answer();
    await expensive.run(request, async () => {
      await answer();
      await finished(reply.raw).catch(() => undefined);
    });
  }

  /** The GET stream: a server of its own on the SDK's transport, told of the stream's end. */
  async function answerStream(request: FastifyRequest, reply: FastifyReply, follow: (server: Server, end: () => void) => () => void) {
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    reply.hijack();
    let stop = () => {};
    const end = () => {
      stop();
      stop = () => {};
      streams.delete(end);
      void server.close();
      // A stream ends with its socket: the client reconnects (and is asked for its credential again).
      if (!reply.raw.writableEnded) reply.raw.destroy();
    };
    streams.add(end);
    reply.raw.once('close', end);
    stop = follow(server, end);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  }

  const routeSchema = (operationId: string, summary: string, description: string, ok: Record<number, unknown>) => ({
    tags: ['rfs'],
    operationId,
    summary,
    description: `${description} ${MCP_DOC}`,
    params: Type.Object({ canvasId: CanvasId }),
    headers: Type.Object({
      'x-huabu-resource-grant': Type.Optional(Type.String({ description: 'The resource grant (`$HUABU_RESOURCE_GRANT`): the tools.' })),
      'x-huabu-thread-id': Type.Optional(Type.String({ description: 'The calling thread (`$HUABU_THREAD_ID`).' })),
    }),
    response: {
      ...ok,
      400: envelopeOrRpc('validation_failed', rpcError(-32700, 'Parse error: Invalid JSON')),
      404: rpcError(-32001, 'Session not found'),
      405: rpcError(-32000, 'Method not allowed.'),
      406: rpcError(-32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'),
      415: envelopeOrRpc('unsupported_media_type', rpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json')),
    },
  });

  app.post(
    '/mcp',
    {
      config: { writesNoEvents: true },
      schema: {
        ...routeSchema(
          'mcpRequest',
          'Send MCP JSON-RPC messages',
          'A JSON-RPC request, notification or response (or a batch); send `Accept: application/json, text/event-stream`. Requests are answered as JSON; notifications with 202.',
          {
            200: answer(Type.Unknown(), 'The JSON-RPC answer.', {
              jsonrpc: '2.0',
              id: 1,
              result: {
                resources: [
                  {
                    uri: 'registry://resources/web-search',
                    name: 'web-search',
                    title: 'Web search',
                    description: 'Searches the public web and answers titles, links and snippets.',
                    mimeType: 'text/markdown',
                  },
                ],
              },
            }),
            202: Type.Null({ description: 'A notification or response, accepted.' }),
          },
        ),
        body: Type.Unknown({
          description: 'A JSON-RPC message or batch (MCP).',
          examples: [{ jsonrpc: '2.0', id: 1, method: 'resources/list', params: {} }],
        }),
      },
    },
    (request, reply) => answerPost(request, reply),
  );

  app.get(
    '/mcp',
    {
      schema: routeSchema(
        'mcpStream',
        'Follow MCP notifications (Server-Sent Events)',
        "The server's stream (`Accept: text/event-stream`): `notifications/resources/list_changed` and `notifications/resources/updated` for the records this canvas may read, within a second of their change on any replica. It closes once the canvas token stops holding.",
        { 200: { description: 'The stream.', content: { 'text/event-stream': { schema: Type.String() } } } },
      ),
    },
    (request, reply) =>
      answerStream(request, reply, (server, end) => {
        const machineId = (request.principal as CanvasPrincipal).agentletId;
        let ended = false;
        const reader = feedReader(
          events,
          events.head(),
          () => ended,
          async (page) => {
            const changed = new Set(page.filter((e) => visibleToMachine(e, machineId)).map((e) => e.subject.id));
            if (changed.size === 0) return true;
            await server.sendResourceListChanged();
            for (const id of changed) await server.sendResourceUpdated({ uri: `${RESOURCE_URI}${id}` });
            return true;
          },
          (err) => {
            request.log.warn({ err }, 'MCP notification stream ended');
            end();
          },
        );
        const unsubscribe = events.onPublished(() => void reader.read());
        // The credential is held to the same rules for as long as the stream is open.
        const unwatch = app.watchCredential(request, (why) => {
          request.log.info({ why }, 'MCP stream closed: its credential no longer holds');
          end();
        });
        return () => {
          ended = true;
          unsubscribe();
          unwatch();
        };
      }),
  );

  app.delete(
    '/mcp',
    {
      schema: routeSchema('mcpEnd', 'End an MCP session', 'Stateless: there is no session to end; answered 200.', {
        200: Type.Null({ description: 'Ended.' }),
      }),
    },
    (request, reply) => write(reply, exchanges.delete({ version: header(request, 'mcp-protocol-version') })),
  );
  server.connect(exchanges).then(() => done(), done);
};

/** A capability's result as MCP tool content: an image (a `data:image/...;base64,` `src`) as image content. */
export function toolResult(output: unknown): CallToolResult {
  const record = typeof output === 'object' && output !== null && !Array.isArray(output) ? (output as Record<string, unknown>) : undefined;
  const image = typeof record?.src === 'string' ? /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})$/.exec(record.src) : null;
  if (record && image) {
    const { src: _src, ...rest } = record;
    return {
      content: [
        { type: 'image', mimeType: image[1]!, data: image[2]! },
        { type: 'text', text: JSON.stringify(rest) },
      ],
      structuredContent: rest,
    };
  }
  return { content: [{ type: 'text', text: JSON.stringify(output) }], ...(record ? { structuredContent: record } : {}) };
}
