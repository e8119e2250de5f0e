// The one place errors become HTTP responses: `{statusCode, code, error, message, details?}` with the
// stable codes of src/errors.ts. Validation and parser errors from Fastify are mapped to those codes;
// anything unexpected is a 500 whose message never leaves the process.
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, type ErrorCode } from '../errors.js';

interface ErrorBody {
  statusCode: number;
  code: ErrorCode;
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

function body(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorBody {
  const statusCode = ERROR_CODES[code];
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? 'Error', message, ...(details ? { details } : {}) };
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
    const allowed = branches.map((o) => (o.params as { allowedValue?: unknown; const?: unknown })?.allowedValue ?? (o.params as { const?: unknown })?.const);
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
  const fe = err as FastifyError;
  if (fe.validation) {
    const issues = enumIssues(fe.validation)
      .filter((v) => v.keyword !== 'boolean')
      .map((v) => {
        const extra = (v.params as { additionalProperties?: string[] })?.additionalProperties;
        const field = `${fe.validationContext ?? 'body'}${v.instancePath || ''}`;
        return { field, message: extra ? `${v.message}: ${extra.join(', ')}` : (v.message ?? 'is invalid') };
      });
    const first = issues[0];
    return body('validation_failed', first ? `${first.field} ${first.message}` : 'The request is invalid.', { issues });
  }
  if (err instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return body('validation_failed', 'The request body is not valid JSON.');
  }
  const mapped = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return body(mapped, fe.message);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { statusCode: fe.statusCode, code: 'validation_failed', error: STATUS_CODES[fe.statusCode] ?? 'Error', message: fe.message };
  }
  return body('internal_error', 'An internal error occurred; it has been logged.');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const out = toBody(err);
    if (out.statusCode >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ code: out.code, statusCode: out.statusCode }, 'request rejected');
    if (out.statusCode === 401) reply.header('www-authenticate', 'Bearer');
    void reply.code(out.statusCode).send(out);
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(body('not_found', `No route for ${request.method} on this path.`));
  });
}
