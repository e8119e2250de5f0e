// What an error of each stable code looks like, for the OpenAPI document's examples (Swagger UI shows them
// under each operation's error responses). Typed by every code of src/errors.ts, so a new code cannot be
// documented without its example. `errors()` (src/http/openapi.ts) builds the envelope around these: the
// status and reason phrase come from the code, so an example always carries the status it is sent with.
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import type { ErrorBody } from '../schemas/common.js';
import { statusText } from './error-handler.js';

interface ErrorExample {
  message: string;
  details?: Record<string, unknown>;
}

const EXAMPLES: Record<ErrorCode, ErrorExample> = {
  validation_failed: {
    message: 'body must not have additional properties: description',
    details: { issues: [{ field: 'body', message: 'must not have additional properties: description' }] },
  },
  invalid_input: { message: 'rootPath must be an absolute path.', details: { field: 'rootPath' } },
  unsupported_version: { message: 'schemaVersion 3 is not supported; send 1.', details: { reason: 'schema_version' } },
  invalid_cursor: { message: 'The cursor is not one this list gave this caller for this query; start the walk again without it.' },
  search_too_broad: { message: 'The search matched too much to rank in time; add a word.' },
  unauthorized: { message: 'A valid bearer token is required.' },
  forbidden: { message: 'This token may not use this route.' },
  resource_not_found: { message: 'No resource with ID pdf-grep.', details: { id: 'pdf-grep' } },
  profile_not_found: { message: 'No profile with ID prf-k7m2q9x4b8n3c5vd.', details: { id: 'prf-k7m2q9x4b8n3c5vd' } },
  workload_not_found: {
    message: 'No workload for canvas canvas-42, thread thread-1.',
    details: { canvasId: 'canvas-42', threadId: 'thread-1' },
  },
  revision_not_found: {
    message: `Resource pdf-grep has no revision sha256:${'0'.repeat(64)}.`,
    details: { id: 'pdf-grep', digest: `sha256:${'0'.repeat(64)}` },
  },
  resource_withdrawn: {
    message: 'Resource pdf-grep was withdrawn after this thread was launched with it.',
    details: { id: 'pdf-grep', digest: `sha256:${'3'.repeat(64)}` },
  },
  machine_not_found: { message: 'No enrolled machine agentlet-7f3a.', details: { machineId: 'agentlet-7f3a' } },
  not_found: { message: 'No route for GET on this path.' },
  skill_not_found: { message: 'No host guide named huabu-guide.', details: { name: 'huabu-guide' } },
  job_not_found: {
    message: 'No job 4f0c2a9e of machine agentlet-7f3a is waiting for an answer; it was dropped.',
    details: { machineId: 'agentlet-7f3a', jobId: '4f0c2a9e' },
  },
  allowlist_entry_not_found: {
    message: 'No allowlist entry for fingerprint 3f9a1c0d2b7e4a56.',
    details: { fingerprint: '3f9a1c0d2b7e4a56' },
  },
  resource_conflict: {
    message: 'Resource pdf-grep belongs to provider agentlet-7f3a.',
    details: { id: 'pdf-grep', provider: 'agentlet-7f3a' },
  },
  alias_conflict: {
    message: 'Alias "Reviewer" is already used by profile prf-k7m2q9x4b8n3c5vd (aliases ignore case).',
    details: { alias: 'Reviewer', profileId: 'prf-k7m2q9x4b8n3c5vd' },
  },
  invalid_profile_kind: {
    message: 'Profile prf-k7m2q9x4b8n3c5vd is backed by an agent team manifest; it is read-only here.',
    details: { id: 'prf-k7m2q9x4b8n3c5vd', kind: 'agent-team-manifest' },
  },
  profile_conflict: {
    message: 'Profile prf-k7m2q9x4b8n3c5vd is at revision 4, not 3; nothing was written.',
    details: { id: 'prf-k7m2q9x4b8n3c5vd', expectedRevision: 3, revision: 4 },
  },
  workload_already_realized: {
    message: 'Thread thread-1 of canvas canvas-42 was launched with another profile; a launch is written once.',
    details: { canvasId: 'canvas-42', threadId: 'thread-1' },
  },
  unknown_pinned_revision: {
    message: `Resource pdf-grep has no kept revision sha256:${'0'.repeat(64)} this profile's machine may read; nothing was written.`,
    details: { field: '/resourcePins/pdf-grep', id: 'pdf-grep', digest: `sha256:${'0'.repeat(64)}` },
  },
  pin_conflict: {
    message: 'Thread thread-1 of canvas canvas-42 pins resource pdf-grep at another digest than `from`; nothing was changed.',
    details: { id: 'pdf-grep', pinned: `sha256:${'9'.repeat(64)}` },
  },
  pin_stale: {
    message: 'Resource pdf-grep no longer has the content `to` names (it changed since); read it again. Nothing was changed.',
    details: { id: 'pdf-grep', current: `sha256:${'3'.repeat(64)}` },
  },
  machine_exists: {
    message: 'Machine agentlet-7f3a is already enrolled; revoke it first to issue a new token.',
    details: { machineId: 'agentlet-7f3a' },
  },
  source_changed: {
    message: 'The skill at /home/me/skills/pdf-grep changed since it was scanned; scan it again.',
    details: { sourcePath: '/home/me/skills/pdf-grep' },
  },
  resource_not_manageable: {
    message: 'Resource web-search is not a skill the owner imported; its provider withdraws it.',
    details: { id: 'web-search' },
  },
  record_quota_exceeded: {
    message: 'Machine agentlet-7f3a would hold 501 records; its quota is 500.',
    details: { provider: 'agentlet-7f3a', limit: 500 },
  },
  method_not_allowed: { message: 'PUT is not served on this path; it serves GET, HEAD.', details: { allow: ['GET', 'HEAD'] } },
  request_timeout: { message: 'The request body did not arrive in time.' },
  cursor_expired: {
    message: 'Cursor 0000000000000042 is no longer kept; read the current state and resume from now.',
    details: { cursor: '0000000000000042' },
  },
  precondition_failed: {
    message: 'If-Match "r3" does not match the profile\'s ETag "r4"; nothing was written.',
    details: { etag: '"r4"' },
  },
  payload_too_large: { message: 'The request body is larger than 8388608 bytes.' },
  unsupported_media_type: { message: 'Send the body as application/json.' },
  secret_detected: {
    message: 'sourceContent line 3 holds what looks like a secret (github-pat); remove it.',
    details: { findings: [{ field: 'sourceContent', line: 3, rule: 'github-pat', fingerprint: '3f9a1c0d2b7e4a56' }] },
  },
  unresolved_resource_ids: { message: 'No resource with ID pdf-grep.', details: { ids: ['pdf-grep'] } },
  resource_not_eligible: {
    message: "Resource pdf-grep is provided by machine agentlet-9b2c, not by huabu or the profile's machine agentlet-7f3a.",
    details: { ids: ['pdf-grep'] },
  },
  capability_diagnostics_failed: {
    message: 'Profile Reviewer: resource web-search is required but not in the catalogue.',
    details: {
      diagnostics: [
        {
          severity: 'error',
          code: 'missing_required_resource',
          message: 'resource web-search is required but not in the catalogue',
          components: ['resource:web-search'],
        },
      ],
    },
  },
  rate_limited: { message: 'Too many write requests for this credential; retry in 12 s.', details: { retryAfterSeconds: 12 } },
  quota_exceeded: { message: 'The web search quota is used up; retry later.', details: { reason: 'upstream_quota' } },
  headers_too_large: { message: 'The request headers are larger than 16384 bytes.' },
  cancelled: { message: 'The client went away before the answer; the work was cancelled.' },
  internal_error: { message: 'Internal error.' },
  provider_failure: { message: 'The web search provider answered 500.', details: { reason: 'upstream_status', status: 500 } },
  agentlet_job_failed: {
    message: 'Agentlet agentlet-7f3a could not run the sync job: the resource root is not readable.',
    details: { machineId: 'agentlet-7f3a', agentletCode: 'root_unreadable' },
  },
  not_ready: { message: 'The registry is not ready.' },
  storage_unavailable: { message: 'The registry is shutting down; nothing was changed. Retry later.' },
  overloaded: { message: 'The registry is overloaded; retry shortly.' },
  unavailable: { message: 'The web search provider is not configured.', details: { reason: 'not_configured' } },
  agentlet_unavailable: { message: 'Agentlet agentlet-7f3a is not connected.', details: { machineId: 'agentlet-7f3a' } },
  agentlet_busy: {
    message: 'Agentlet agentlet-7f3a already has 16 jobs in flight; retry when one has finished.',
    details: { machineId: 'agentlet-7f3a' },
  },
  agentlet_timeout: {
    message: 'Agentlet agentlet-7f3a did not answer the sync job within 30000 ms.',
    details: { machineId: 'agentlet-7f3a' },
  },
  timeout: { message: 'The web search provider did not answer within 10000 ms.', details: { reason: 'upstream_timeout' } },
};

/** The error envelope as the service sends it for `code`: its status, reason phrase, message and details. */
export function errorExample(code: ErrorCode): ErrorBody {
  const statusCode = ERROR_CODES[code];
  const { message, details } = EXAMPLES[code];
  return { statusCode, code, error: statusText(statusCode), message, ...(details ? { details } : {}) };
}
