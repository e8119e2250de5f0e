// How hosted-capability invocation answers a failure: with the codes of upstream Huabu's hosted-capability
// taxonomy (`forbidden`, `invalid_input`, `quota_exceeded`, `timeout`, `provider_failure`, `unavailable`,
// `cancelled`, `unsupported_version`, `internal_error`, `resource_not_found`), and this service's finer
// reason in `details.reason`. The one table below maps every reason to its code; the domain raises errors
// by reason, and the HTTP error handler passes whatever else fails on the route (body parsing, schema
// validation, storage) through `asInvocationAnswer`. Framework-free.
import { AppError, ERROR_CODES, type ErrorCode } from '../errors.js';

/** Every finer reason an invocation can fail for, and the upstream code it is answered with. */
export const INVOCATION_REASONS = {
  // The grant and its scope: all `forbidden`, as upstream answers every grant refusal.
  grant_invalid: 'forbidden',
  grant_expired: 'forbidden',
  scope_mismatch: 'forbidden',
  thread_required: 'forbidden',
  thread_mismatch: 'forbidden',
  resource_not_granted: 'forbidden',
  not_hosted: 'resource_not_found',
  // The request.
  validation_failed: 'invalid_input',
  payload_too_large: 'invalid_input',
  unsupported_media_type: 'invalid_input',
  // Per-grant concurrency and rate, and the per-credential limits every route has.
  rate_limited: 'quota_exceeded',
  // The call.
  invocation_timeout: 'timeout',
  invocation_failed: 'provider_failure',
  client_disconnected: 'cancelled',
  // The service itself.
  storage_unavailable: 'unavailable',
  not_ready: 'unavailable',
  overloaded: 'unavailable',
  internal_error: 'internal_error',
} as const satisfies Record<string, ErrorCode>;

export type InvocationReason = keyof typeof INVOCATION_REASONS;
export type InvocationCode = (typeof INVOCATION_REASONS)[InvocationReason] | 'unsupported_version';

/** Every code the invoke route can answer with, in the order the OpenAPI document lists them. */
export const INVOCATION_ANSWER_CODES = [
  'unauthorized',
  'forbidden',
  'resource_not_found',
  'invalid_input',
  'unsupported_version',
  'secret_detected',
  'quota_exceeded',
  'cancelled',
  'internal_error',
  'provider_failure',
  'unavailable',
  'timeout',
] as const satisfies readonly ErrorCode[];

/**
 * Codes answered as they are: upstream's own, a missing or unknown canvas token (401 `unauthorized`, as on
 * every route: it is the token, not the grant, that is refused) and a secret in a text field (422
 * `secret_detected`, as everywhere else).
 */
const ANSWERED_AS_IS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(INVOCATION_ANSWER_CODES);

/** An invocation failure for `reason`, carrying its upstream code and `details.reason`. */
export function invocationError(reason: InvocationReason, message: string, details?: Record<string, unknown>): AppError {
  return new AppError(INVOCATION_REASONS[reason], message, { reason, ...details });
}

export interface ErrorAnswer {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

const isReason = (code: string): code is InvocationReason => Object.hasOwn(INVOCATION_REASONS, code);

/** The envelope's version field is the one input check upstream answers apart. */
function namesSchemaVersion(details: Record<string, unknown> | undefined): boolean {
  const issues = details?.issues;
  return Array.isArray(issues) && issues.some((i) => (i as { field?: unknown })?.field === 'body/schemaVersion');
}

/**
 * An error answer of the invoke route in upstream's taxonomy: a code of ours becomes the reason, and the code
 * the table (or, for a code it does not name, the status class) says. Answers already in the taxonomy pass.
 */
export function asInvocationAnswer(answer: ErrorAnswer): ErrorAnswer {
  if (ANSWERED_AS_IS.has(answer.code)) return answer;
  const fallback: InvocationReason = ERROR_CODES[answer.code] >= 500 ? 'internal_error' : 'validation_failed';
  let code: ErrorCode = INVOCATION_REASONS[isReason(answer.code) ? answer.code : fallback];
  if (answer.code === 'validation_failed' && namesSchemaVersion(answer.details)) code = 'unsupported_version';
  // A finer reason the error already had stays, as its `cause`.
  const { reason: cause, ...facts } = answer.details ?? {};
  return { code, message: answer.message, details: { reason: answer.code, ...(cause === undefined ? {} : { cause }), ...facts } };
}
