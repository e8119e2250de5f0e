// The rules a resource record is held to beyond its schema, for the provider that writes it: its `provider`
// field, an invisible or bidi character in its name, and the IDs that belong to the host alone. One list of
// problems that every write (register, reconcile) refuses with and `POST /resources/validate` reports, so
// validate says valid exactly when the write is accepted. Pure; framework-free.
import { HOST_PROVIDER } from './common.js';
import { hasInvisible } from '../text/look-alike.js';

export interface RecordProblem {
  code: 'validation_failed' | 'forbidden';
  /** JSON pointer of the field concerned. */
  field: string;
  message: string;
  details?: Record<string, unknown>;
}

/** REQUIRED_RESOURCE_IDS when unset: Huabu's own records, which every agent gets. */
export const DEFAULT_REQUIRED_RESOURCE_IDS: readonly string[] = ['huabu-access', 'local-resource-management'];

/** The IDs only the host may hold: the required defaults and the hosted capabilities'. */
export interface ReservedIds {
  required: readonly string[];
  hosted: readonly string[];
}

/** What may not be held by a machine among `ids`: a required default ID's or a hosted capability's (403). */
export function reservedIdProblems(provider: string, ids: readonly string[], reserved: ReservedIds, field = '/id'): RecordProblem[] {
  if (provider === HOST_PROVIDER) return [];
  const problems: RecordProblem[] = [];
  const required = ids.filter((id) => reserved.required.includes(id));
  if (required.length > 0) {
    problems.push({
      code: 'forbidden',
      field,
      message: `${required.join(', ')} ${required.length === 1 ? 'is a required default ID; it belongs' : 'are required default IDs; they belong'} to the host alone.`,
      details: { ids: required },
    });
  }
  const hosted = ids.filter((id) => reserved.hosted.includes(id));
  if (hosted.length > 0) {
    problems.push({
      code: 'forbidden',
      field,
      message: `${hosted.join(', ')} ${hosted.length === 1 ? 'is a hosted capability ID; it belongs' : 'are hosted capability IDs; they belong'} to the host alone.`,
      details: { ids: hosted },
    });
  }
  return problems;
}

/** What a record written by `provider` breaks of the rules its schema cannot say (`at`: where it is in the body). */
export function recordProblems(provider: string, body: { provider?: unknown; name?: unknown }, at = ''): RecordProblem[] {
  const problems: RecordProblem[] = [];
  if (body.provider !== undefined && body.provider !== provider) {
    problems.push({
      code: 'validation_failed',
      field: `${at}/provider`,
      message: `Body provider ${String(body.provider)} does not match the caller's provider ${provider}.`,
    });
  }
  if (typeof body.name === 'string' && hasInvisible(body.name)) {
    problems.push({
      code: 'validation_failed',
      field: `${at}/name`,
      message: 'The name holds an invisible or bidirectional-control character.',
    });
  }
  return problems;
}
