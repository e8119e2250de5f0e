// The one place errors become HTTP responses: `{statusCode, code, error, message, details?}` with the
// stable codes of src/errors.ts. Validation and parser errors from Fastify are mapped to those codes;
// anything unexpected is a 500 whose message never leaves the process.
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, STATUS_TEXT, type ErrorCode } from '../errors.js';
import { unknownPropertiesMessage } from '../schemas/unknown-properties.js';
import { LARGE_BODY_BYTES } from './large-bodies.js';

/**
 * Longest path parameter the router accepts. IDs allow 128 characters; anything up to this reaches the
 * route's schema and is a 400 there, beyond it the router's own check answers (also 400, in our envelope).
 */
export const MAX_PARAM_LENGTH = 1024;

interface ErrorBody {
  statusCode: number;
  code: ErrorCode;
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

/** A route that answers its errors in another vocabulary (the codes of the API it mirrors) says how in its config. */
export type ErrorAnswerMapper = (answer: { code: ErrorCode; message: string; details?: Record<string, unknown> }) => {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
};

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Rewrites every error answer of this route (see src/invocation/invocation-errors.ts). */
    errorAnswers?: ErrorAnswerMapper;
  }
}

export function statusText(statusCode: number): string {
  return STATUS_CODES[statusCode] ?? STATUS_TEXT[statusCode] ?? 'Error';
}

function body(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorBody {
  const statusCode = ERROR_CODES[code];
  return { statusCode, code, error: statusText(statusCode), message, ...(details ? { details } : {}) };
}

/** Fastify's own error codes that are the client's fault. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation_failed',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'validation_failed',
  FST_ERR_CTP_INVALID_JSON_BODY: 'validation_failed',
  FST_ERR_VALIDATION: 'validation_failed',
};

/**
 * The code a client error of another origin (a plugin's, Fastify's) answers with, by its status: each code
 * has one status, so a status with no general code of its own is sent as 400 `validation_failed`.
 */
const CODE_OF_STATUS: Readonly<Record<number, ErrorCode>> = {
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  412: 'precondition_failed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
  499: 'cancelled',
};

type ValidationIssue = NonNullable<FastifyError['validation']>[number];

/**
 * A value outside an enum (a union of literals) fails every branch: one "must be equal to constant" per
 * branch, then "must match a schema in anyOf". Those become one issue that lists the allowed values.
 */
function enumIssues(validation: readonly ValidationIssue[]): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const v of validation) {
    if (v.keyword !== 'anyOf') {
      out.push(v);
      continue;
    }
    const branches = out.filter((o) => o.instancePath === v.instancePath && o.keyword === 'const');
    const allowed = branches.map(
      (o) => (o.params as { allowedValue?: unknown; const?: unknown })?.allowedValue ?? (o.params as { const?: unknown })?.const,
    );
    if (branches.length === 0 || allowed.some((a) => a === undefined)) {
      out.push(v);
      continue;
    }
    for (const b of branches) out.splice(out.indexOf(b), 1);
    out.push({ ...v, message: `must be one of: ${allowed.map((a) => String(a)).join(', ')}` });
  }
  return out;
}

function toBody(err: FastifyError | AppError | Error): ErrorBody {
  if (err instanceof AppError) return body(err.code, err.message, err.details);
  // Work cancelled because its client went away: nobody reads this answer, and the registry is not at fault.
  if (err.name === 'AbortError') return body('cancelled', 'The client went away before the answer; the work was cancelled.');
  const fe = err as FastifyError;
  if (fe.validation) {
    const issues = enumIssues(fe.validation)
      .filter((v) => v.keyword !== 'boolean')
      .map((v) => {
        const extra = (v.params as { additionalProperties?: string[] })?.additionalProperties;
        const field = `${fe.validationContext ?? 'body'}${v.instancePath || ''}`;
        return { field, message: extra ? unknownPropertiesMessage(extra) : (v.message ?? 'is invalid') };
      });
    const first = issues[0];
    return body('validation_failed', first ? `${first.field} ${first.message}` : 'The request is invalid.', { issues });
  }
  if (err instanceof SyntaxError && /forbidden prototype property/.test(err.message)) {
    return body('validation_failed', 'The request body holds a forbidden property (`__proto__`, or `constructor.prototype`).');
  }
  if (err instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return body('validation_failed', 'The request body is not valid JSON.');
  }
  const mapped = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return body(mapped, fe.message);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return body(CODE_OF_STATUS[fe.statusCode] ?? 'validation_failed', fe.message);
  }
  return body('internal_error', 'An internal error occurred; it has been logged.');
}

/** The answer `err` gets on `request`'s route: ours, in the route's own vocabulary when it has one. */
export function renderError(err: FastifyError | AppError | Error, request: FastifyRequest): ErrorBody {
  const out = toBody(err);
  const mapper = request.routeOptions?.config?.errorAnswers;
  if (!mapper) return out;
  const mapped = mapper(out);
  return body(mapped.code, mapped.message, mapped.details);
}

/** Paths Fastify rejects before routing; their default messages would echo the path (which may hold a token). */
const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_MAX_PARAM_LENGTH: `A path parameter is longer than ${MAX_PARAM_LENGTH} characters.`,
  FST_ERR_BAD_URL: 'The path is not a valid URL.',
};

/**
 * Fastify's `frameworkErrors` option: errors raised before routing (an over-long path parameter, a bad
 * URL, an async constraint) rendered as ours, without echoing the path.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message = FRAMEWORK_MESSAGES[err.code];
  const out = message ? body('validation_failed', message) : toBody(err);
  request.log.info({ code: out.code, statusCode: out.statusCode, cause: err.code }, 'request rejected before routing');
  void reply.code(out.statusCode).send(out);
}

/**
 * Fastify's `clientErrorHandler`: the HTTP parser refused the request (malformed request line or header,
 * headers too large, request timeout). Writes our envelope on the raw socket, then closes it.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const out =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? body('request_timeout', 'The request took too long to arrive.')
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? body('headers_too_large', 'The request headers are larger than the server accepts.')
        : body('validation_failed', 'The request is not well-formed HTTP.');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const json = JSON.stringify(out);
  socket.end(
    `HTTP/1.1 ${out.statusCode} ${out.error}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
}

/**
 * Fastify's JSON parser, with one difference: a body that is valid JSON but holds `__proto__` (or
 * `constructor.prototype`) is refused as such, where Fastify's parser calls it "not valid JSON".
 */
function installJsonParser(app: FastifyInstance): void {
  // Fastify's default JSON parser is the callback form of a body parser: it answers through `done` and
  // returns nothing (its type also admits the promise form, which it never takes).
  const parse = app.getDefaultJsonParser('error', 'error') as (
    request: FastifyRequest,
    body: string,
    done: (err: Error | null, body?: unknown) => void,
  ) => void;
  app.removeContentTypeParser('application/json');
  const parseText = (request: FastifyRequest, text: string, done: (err: Error | null, body?: unknown) => void) =>
    parse(request, text, (err, value) => {
      if (!err) return done(null, value);
      try {
        JSON.parse(text);
      } catch {
        return done(err, undefined);
      }
      done(new SyntaxError('Object contains forbidden prototype property'), undefined);
    });
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, bytes: Buffer, done) => {
    if (bytes.length < LARGE_BODY_BYTES) return parseText(request, bytes.toString('utf8'), done);
    // A large body (a machine's whole set, megabytes) is decoded, parsed and then validated in event-loop
    // turns of their own, so that reads are answered between them.
    void (async () => {
      await nextTurn();
      const text = bytes.toString('utf8');
      await nextTurn();
      parseText(request, text, (err, value) => {
        if (err) return done(err, undefined);
        void nextTurn().then(() => done(null, value));
      });
    })();
  });
}

/** A route URL (`/api/acp/resources/:id`, `/docs/static/*`) as a regular expression over concrete paths. */
function routePattern(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`);
}

export function installErrorHandling(app: FastifyInstance): void {
  installJsonParser(app);
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const out = renderError(err, request);
    if (out.code === 'cancelled' && err.name === 'AbortError') request.log.info('the client went away; its work was cancelled');
    else if (out.statusCode >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ code: out.code, statusCode: out.statusCode }, 'request rejected');
    if (out.statusCode === 401) reply.header('www-authenticate', 'Bearer');
    const retryAfter = out.details?.retryAfterSeconds;
    if ((out.statusCode === 429 || out.statusCode === 503) && typeof retryAfter === 'number' && !reply.hasHeader('retry-after'))
      reply.header('retry-after', String(retryAfter));
    void reply.code(out.statusCode).send(out);
  });
  const routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  app.addHook('onRoute', (route) => {
    const entry = routes.get(route.url) ?? { pattern: routePattern(route.url), methods: new Set<string>() };
    for (const m of [route.method].flat()) entry.methods.add(m);
    routes.set(route.url, entry);
  });
  app.setNotFoundHandler((request, reply) => {
    // A path some route serves, with another method: 405 and the methods it does serve.
    const urlPath = request.url.split('?')[0]!;
    const allowed = new Set<string>();
    for (const { pattern, methods } of routes.values()) if (pattern.test(urlPath)) for (const m of methods) allowed.add(m);
    if (allowed.size > 0 && !allowed.has(request.method)) {
      const allow = [...allowed].sort().join(', ');
      void reply
        .code(405)
        .header('allow', allow)
        .send(
          body('method_not_allowed', `${request.method} is not served on this path; it serves ${allow}.`, { allow: [...allowed].sort() }),
        );
      return;
    }
    void reply.code(404).send(body('not_found', `No route for ${request.method} on this path.`));
  });
}
