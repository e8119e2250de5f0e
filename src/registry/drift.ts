// Drift of pinned launches (docs/profiles-and-launching.md, "Drift"): what an agent reads of a record as one
// text (the drift report diffs it), the owner's report of a workload's pins against the records now, and
// which `workload.drifted` events one write of a pinned record appends (both stores plan them here; the
// PostgreSQL store's trigger follows the same rule in SQL, src/storage/postgres/migrations.ts). Framework-free.
import { createTwoFilesPatch } from 'diff';
import type { StoredResource } from '../schemas/resource.js';
import type { WorkloadRecord } from '../schemas/workload.js';
import type { EventDraft } from './events.js';
import { digestOf, type ResourceRevision } from './record-digest.js';
import { guidanceOfV2, toV2 } from './resource-versions.js';

/** Most `workload.drifted` events one write of one record appends one by one; the rest are summarized in one. */
export const DRIFT_EVENTS_PER_WRITE = 10;

/** The largest diff a drift report carries per pin (UTF-8 bytes); a longer one is cut at a line and flagged. */
export const DIFF_MAX_BYTES = 64 * 1024;

/** Most changed lines the diff looks for: past it, only the first DIFF_HEAD_BYTES of each text are compared. */
const DIFF_MAX_EDIT_LENGTH = 1000;
const DIFF_HEAD_BYTES = 16 * 1024;

/**
 * Everything an agent reads of a record, as one text: the name it is shown by, its provider, an imported
 * skill's folder revision (its files, which the agent reads from the machine), and the whole guidance (the
 * provider's content, then the owner's notes) exactly as MCP `resources/read` serves it.
 */
export function agentVisibleText(record: StoredResource): string {
  const v2 = toV2(record);
  const head = [
    `name: ${v2.name}`,
    ...(v2.displayName !== undefined ? [`displayName: ${v2.displayName}`] : []),
    `provider: ${v2.provider}`,
    ...(v2.sourceRevision !== undefined ? [`sourceRevision: ${v2.sourceRevision}`] : []),
  ];
  return `${head.join('\n')}\n\n${guidanceOfV2(v2)}\n`;
}

export type DriftState = 'same' | 'changed' | 'withdrawn';

export interface PinDrift {
  id: string;
  pinned: string;
  current?: string;
  state: DriftState;
  diff?: string;
  diffTruncated?: true;
}

/** `text` cut to at most `max` UTF-8 bytes, at the end of a line. */
function headOf(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const head = Buffer.from(text).subarray(0, max).toString('utf8');
  const end = head.lastIndexOf('\n');
  return end > 0 ? head.slice(0, end + 1) : '';
}

/**
 * The unified diff of what the agent reads at the pin and now. Bounded: at most DIFF_MAX_EDIT_LENGTH changed
 * lines are searched for (past it, the heads of the two texts are compared) and at most DIFF_MAX_BYTES are
 * returned, cut at a line; `truncated` says either happened.
 */
export function driftDiff(id: string, pinned: ResourceRevision, current: StoredResource): { diff: string; truncated: boolean } {
  const names = [`${id}@${pinned.digest}`, `${id}@${digestOf(current)}`] as const;
  const [before, after] = [agentVisibleText(pinned.record), agentVisibleText(current)];
  const options = {
    context: 3,
    maxEditLength: DIFF_MAX_EDIT_LENGTH,
    headerOptions: { includeIndex: false, includeUnderline: false, includeFileHeaders: true },
  };
  let truncated = false;
  let diff = createTwoFilesPatch(names[0], names[1], before, after, undefined, undefined, options);
  if (diff === undefined) {
    truncated = true;
    diff =
      createTwoFilesPatch(
        names[0],
        names[1],
        headOf(before, DIFF_HEAD_BYTES),
        headOf(after, DIFF_HEAD_BYTES),
        undefined,
        undefined,
        options,
      ) ?? `--- ${names[0]}\n+++ ${names[1]}\n`;
  }
  const cut = headOf(diff, DIFF_MAX_BYTES);
  return { diff: cut, truncated: truncated || cut.length < diff.length };
}

/** What the drift report reads: the records now and the kept revisions. */
export interface DriftSource {
  getResource(id: string): Promise<StoredResource | undefined>;
  getRevision(id: string, digest: string): Promise<ResourceRevision | undefined>;
}

/** Each pin of `workload` against the record now, in pin order; a workload realized before pins has none. */
export async function driftReport(source: DriftSource, workload: WorkloadRecord): Promise<{ pins: PinDrift[] }> {
  const pins: PinDrift[] = [];
  for (const { id, digest: pinned } of workload.spec.resourcePins ?? []) {
    const record = await source.getResource(id);
    if (record === undefined) {
      pins.push({ id, pinned, state: 'withdrawn' });
      continue;
    }
    const current = digestOf(record);
    if (current === pinned) {
      pins.push({ id, pinned, current, state: 'same' });
      continue;
    }
    const revision = await source.getRevision(id, pinned);
    // Retention keeps every pinned revision; without it the change is still reported, with no diff.
    const shown = revision && driftDiff(id, revision, record);
    pins.push({
      id,
      pinned,
      current,
      state: 'changed',
      ...(shown ? { diff: shown.diff } : {}),
      ...(shown?.truncated ? { diffTruncated: true } : {}),
    });
  }
  return { pins };
}

/** What a store knows of one pin of a record: its holder, the pinned digest, and the digest it was last told of. */
export interface DriftCandidate {
  holder: string;
  pinned: string;
  told?: string;
}

/** The digest a withdrawal is told as (no digest has this form). */
export const WITHDRAWN = 'withdrawn';

const WORKLOAD_HOLDER = 'workload:';

/**
 * The drift events one write of record `id` appends, and the notices to keep: a workload that pins `id` at a
 * digest other than `current` (undefined: withdrawn) is told, unless it was last told of this very digest
 * (coalescing: a record that flaps back and forth tells each workload once per digest). At most
 * DRIFT_EVENTS_PER_WRITE, in holder order; the rest are counted in one summary about the record and stay
 * untold (a later write may tell them). Profile holds are not workloads and are never told.
 */
export function planDrift(
  id: string,
  provider: string,
  current: string | undefined,
  candidates: Iterable<DriftCandidate>,
): { drafts: EventDraft[]; told: { holder: string; told: string }[] } {
  const now = current ?? WITHDRAWN;
  const affected = [...candidates]
    .filter((c) => c.holder.startsWith(WORKLOAD_HOLDER) && c.pinned !== current && c.told !== now)
    .sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
  const told = affected.slice(0, DRIFT_EVENTS_PER_WRITE);
  const at = current === undefined ? {} : { current };
  const drafts: EventDraft[] = told.map((c) => ({
    type: 'workload.drifted',
    subject: { kind: 'workload', id: c.holder.slice(WORKLOAD_HOLDER.length) },
    detail: { resourceId: id, provider, pinned: c.pinned, ...at },
  }));
  const more = affected.length - told.length;
  if (more > 0) {
    drafts.push({
      type: 'workload.drifted',
      subject: { kind: 'resource', id, provider },
      detail: { resourceId: id, provider, ...at, more },
    });
  }
  return { drafts, told: told.map((c) => ({ holder: c.holder, told: now })) };
}
