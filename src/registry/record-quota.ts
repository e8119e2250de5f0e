// The record quota of a machine: how many records it may hold and how many bytes of text they may carry,
// counted over what the provider writes (never the owner's customization). One rule for every path that
// creates or grows a machine's records (a provider's put and reconcile, an agent's receipt, an owner's
// skill import): a change is refused only when it leaves the machine over a bound AND grows that measure, so a
// same-size replacement at the limit passes and a withdrawal always frees. The host provider has none
// (docs/decisions/record-quotas.md). Framework-free.
import { AppError } from '../errors.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { StoredResource } from '../schemas/resource.js';

export interface RecordQuota {
  /** Records one machine may hold; 0: no bound. */
  maxRecords: number;
  /** UTF-8 bytes of the provider's text fields over all its records; 0: no bound. */
  maxBytes: number;
}

/**
 * What a provider holds: its records, and the UTF-8 bytes of their provider-written text (`recordBytes`)
 * plus its pinned history (`heldHistoryBytes`, also given on its own as `pinnedBytes`).
 */
export interface RecordUsage {
  count: number;
  bytes: number;
  pinnedBytes: number;
}

export const NO_USAGE: RecordUsage = Object.freeze({ count: 0, bytes: 0, pinnedBytes: 0 });

/**
 * The bytes a record counts: its ID and the text fields its provider writes (name, description and
 * instructions in v1; name and sourceContent in v2), in UTF-8. The owner's `displayName` and `userContent`
 * are not the machine's to spend. A database store computes the same sum in SQL (`octet_length`); the
 * storage contract checks the two agree.
 */
export function recordBytes(record: StoredResource): number {
  return providerTexts(record).reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0);
}

/** The texts a record's provider wrote, the ones `recordBytes` counts. */
function providerTexts(record: StoredResource): string[] {
  return record.schemaVersion === 2
    ? [record.id, record.name, record.sourceContent]
    : [record.id, record.name, record.description, record.instructions];
}

/**
 * The bytes of `provider`'s pinned history: the revisions some workload or profile holds, which retention
 * may not drop, each distinct provider text of an ID counted once and none that is the text its current
 * record carries (an owner's note changes the digest, not what the machine wrote). Added to `usage.bytes`
 * by both stores; PostgreSQL computes the same in SQL.
 */
export function heldHistoryBytes(
  provider: string,
  held: Iterable<{ id: string; records: Iterable<StoredResource> }>,
  current: (id: string) => StoredResource | undefined,
): number {
  let bytes = 0;
  for (const { id, records } of held) {
    const seen = new Set<string>();
    const now = current(id);
    if (now?.provider === provider) seen.add(JSON.stringify(providerTexts(now)));
    for (const record of records) {
      if (record.provider !== provider) continue;
      const text = JSON.stringify(providerTexts(record));
      if (seen.has(text)) continue;
      seen.add(text);
      bytes += recordBytes(record);
    }
  }
  return bytes;
}

/** The usage of exactly `records` beside `pinnedBytes` of pinned history. */
export function usageOf(records: Iterable<StoredResource>, pinnedBytes = 0): RecordUsage {
  let count = 0;
  let bytes = pinnedBytes;
  for (const r of records) {
    count++;
    bytes += recordBytes(r);
  }
  return { count, bytes, pinnedBytes };
}

/** The usage after putting `record` over `existing` (the provider's own record of that ID, or none). */
export function usageAfterPut(before: RecordUsage, existing: StoredResource | undefined, record: StoredResource): RecordUsage {
  if (existing === undefined) return { ...before, count: before.count + 1, bytes: before.bytes + recordBytes(record) };
  return { ...before, bytes: before.bytes - recordBytes(existing) + recordBytes(record) };
}

/** Whether the quota applies to `provider`: every machine, never the host. */
export function hasQuota(provider: string, quota: RecordQuota): boolean {
  return provider !== HOST_PROVIDER && (quota.maxRecords > 0 || quota.maxBytes > 0);
}

/**
 * 409 `record_quota_exceeded` when the change from `before` to `after` leaves `provider` over a bound and
 * grows that measure; nothing is written then.
 */
export function assertWithinQuota(provider: string, before: RecordUsage, after: RecordUsage, quota: RecordQuota): void {
  if (!hasQuota(provider, quota)) return;
  const overCount = quota.maxRecords > 0 && after.count > quota.maxRecords && after.count > before.count;
  const overBytes = quota.maxBytes > 0 && after.bytes > quota.maxBytes && after.bytes > before.bytes;
  if (!overCount && !overBytes) return;
  const what = overCount
    ? `${after.count} records (at most ${quota.maxRecords})`
    : `${after.bytes} bytes of record text (at most ${quota.maxBytes})`;
  throw new AppError(
    'record_quota_exceeded',
    `Machine ${provider} would hold ${what}; nothing was changed. Withdraw records it no longer needs, or ask the operator to raise RECORDS_PER_MACHINE / RECORD_BYTES_PER_MACHINE.`,
    {
      provider,
      limit: overCount ? 'records' : 'bytes',
      records: { held: before.count, after: after.count, max: quota.maxRecords },
      bytes: { held: before.bytes, after: after.bytes, max: quota.maxBytes },
    },
  );
}
