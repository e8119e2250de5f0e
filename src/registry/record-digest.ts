// A record's content digest and its revisions, as pure rules (docs/decisions/record-digest.md): the digest
// covers every byte an agent can read through a record, in one canonical form that both stores compute the
// same way (the PostgreSQL store in SQL, src/storage/postgres/migrations.ts `arr_record_digest`); the
// revisions kept per ID follow one retention rule. Framework-free.
import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import type { StoredResource } from '../schemas/resource.js';

import { DIGEST_PATTERN } from '../schemas/common.js';

export { DIGEST_PATTERN };
const DIGEST_RE = new RegExp(DIGEST_PATTERN);

/** The first line of the canonical form: names the form, so a later one can never collide with it. */
export const CANONICAL_FORM_TAG = 'arr-record-digest/1';

/** How many revisions of one ID are kept besides the pinned ones (and the current content). */
export const REVISIONS_KEPT = 20;

/**
 * The agent-readable fields of a stored record in canonical order, absent ones left out: `userContent`
 * only when not empty (a v1 record without it and a v2 record with `''` say the same), `sourceRevision`
 * only for a machine's imported skill that names it.
 */
function canonicalFields(record: StoredResource): [string, string][] {
  const fields: [string, string | undefined][] = [
    ['schemaVersion', String(record.schemaVersion)],
    ['id', record.id],
    ['provider', record.provider],
    ['name', record.name],
    ['displayName', record.displayName],
    ['description', record.schemaVersion === 1 ? record.description : undefined],
    ['instructions', record.schemaVersion === 1 ? record.instructions : undefined],
    ['sourceContent', record.schemaVersion === 2 ? record.sourceContent : undefined],
    ['userContent', record.userContent === '' ? undefined : record.userContent],
    ['sourceRevision', record.schemaVersion === 2 ? record.sourceRevision : undefined],
  ];
  return fields.filter((f): f is [string, string] => f[1] !== undefined);
}

/**
 * The canonical form: the tag line, then per field `<name> <UTF-8 byte length>\n<value>\n`. The length
 * prefix makes it unambiguous whatever the values hold.
 */
export function canonicalForm(record: StoredResource): string {
  let text = `${CANONICAL_FORM_TAG}\n`;
  for (const [name, value] of canonicalFields(record)) text += `${name} ${Buffer.byteLength(value, 'utf8')}\n${value}\n`;
  return text;
}

/** Computes the digest of a record (stores call this once per write; readers use `digestOf`). */
export function computeDigest(record: StoredResource): string {
  return `sha256:${createHash('sha256').update(canonicalForm(record), 'utf8').digest('hex')}`;
}

/** The digest of each stored record object, as its store computed it at the write (or read it from its row). */
const digests = new WeakMap<object, string>();

/** Records `digest` as the digest of the stored record object `record` (a store's write or row). */
export function noteDigest<R extends StoredResource>(record: R, digest: string = computeDigest(record)): R {
  digests.set(record, digest);
  return record;
}

/** The digest of a stored record: the one its store noted, else computed (and kept for that object). */
export function digestOf(record: StoredResource): string {
  const known = digests.get(record);
  if (known !== undefined) return known;
  const digest = computeDigest(record);
  digests.set(record, digest);
  return digest;
}

/** 400 `invalid_input` unless `digest` is `sha256:<64 hex>`. */
export function assertDigest(digest: string, field = '/digest'): void {
  if (!DIGEST_RE.test(digest)) {
    throw new AppError('invalid_input', 'A digest is "sha256:" followed by 64 lowercase hex digits.', { field });
  }
}

/** One kept revision of a record: its content exactly as it was, and when it became the record's content. */
export interface ResourceRevision {
  id: string;
  digest: string;
  provider: string;
  createdAt: string;
  /** Orders revisions of one ID, newest highest (ties of `createdAt` cannot reorder them). */
  seq: number;
  record: StoredResource;
}

/** A pin held on a revision: by a workload (`workload:<canvasId>/<threadId>`) or a profile (`profile:<id>`). */
export interface RevisionHold {
  holder: string;
  id: string;
  digest: string;
}

export const workloadHolder = (canvasId: string, threadId: string): string => `workload:${canvasId}/${threadId}`;
export const profileHolder = (profileId: string): string => `profile:${profileId}`;

/** One line of `GET /resources/:id/revisions`. */
export interface RevisionSummary {
  digest: string;
  provider: string;
  createdAt: string;
}

/** Newest first. */
export function newestFirst<T extends { seq: number }>(revisions: Iterable<T>): T[] {
  return [...revisions].sort((a, b) => b.seq - a.seq);
}

/**
 * The digests of `revisions` (all of one ID) that retention drops: every one beyond the newest
 * REVISIONS_KEPT, unless it is the current content or a stored workload or profile pins it.
 */
export function revisionsToDrop(
  revisions: Iterable<Pick<ResourceRevision, 'digest' | 'seq'>>,
  keep: { current?: string; pinned: ReadonlySet<string> },
): string[] {
  return newestFirst(revisions)
    .slice(REVISIONS_KEPT)
    .filter((r) => r.digest !== keep.current && !keep.pinned.has(r.digest))
    .map((r) => r.digest);
}
