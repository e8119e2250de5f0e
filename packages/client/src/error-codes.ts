// Every stable `code` the registry answers with in its error envelope, and the HTTP status it comes with.
// Generated from the server's list (src/errors.ts) by `npm run generate`; `npm test` fails when it is out of date.

export const ERROR_CODES = {
  validation_failed: 400,
  invalid_input: 400,
  unsupported_version: 400,
  invalid_cursor: 400,
  search_too_broad: 400,
  unauthorized: 401,
  forbidden: 403,
  resource_not_found: 404,
  profile_not_found: 404,
  workload_not_found: 404,
  machine_not_found: 404,
  not_found: 404,
  skill_not_found: 404,
  job_not_found: 404,
  allowlist_entry_not_found: 404,
  revision_not_found: 404,
  resource_conflict: 409,
  alias_conflict: 409,
  invalid_profile_kind: 409,
  profile_conflict: 409,
  workload_already_realized: 409,
  pin_conflict: 409,
  pin_stale: 409,
  machine_exists: 409,
  source_changed: 409,
  resource_not_manageable: 409,
  record_quota_exceeded: 409,
  method_not_allowed: 405,
  request_timeout: 408,
  cursor_expired: 410,
  resource_withdrawn: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  secret_detected: 422,
  unresolved_resource_ids: 422,
  resource_not_eligible: 422,
  capability_diagnostics_failed: 422,
  unknown_pinned_revision: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  headers_too_large: 431,
  cancelled: 499,
  internal_error: 500,
  provider_failure: 502,
  agentlet_job_failed: 502,
  not_ready: 503,
  storage_unavailable: 503,
  overloaded: 503,
  unavailable: 503,
  agentlet_unavailable: 503,
  agentlet_busy: 503,
  timeout: 504,
  agentlet_timeout: 504,
} as const;

/** A stable error code of the registry, e.g. `resource_conflict`. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether `value` is one of the registry's stable error codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
