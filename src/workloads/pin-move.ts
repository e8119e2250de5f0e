// Moving one pin of a workload (docs/decisions/pin-moves.md): the owner approves the content a record has
// now for a thread launched with an earlier one. The rule both stores apply, atomically with the write:
// `from` must be the workload's pin of the ID now, `to` the record's digest now. Framework-free.
import { AppError } from '../errors.js';
import type { WorkloadRecord } from '../schemas/workload.js';

export interface PinMove {
  canvasId: string;
  threadId: string;
  /** The pinned resource's ID. */
  id: string;
  /** The pin the owner saw (the workload's pin of `id` now). */
  from: string;
  /** The content the owner approves (the record's digest now). */
  to: string;
}

/** The audit action of a pin move; its entry's `id` is `<canvasId>/<threadId>`, `details` the resource and both digests. */
export const PIN_MOVE_ACTION = 'workload.repin';

/**
 * Throws unless `move` may be applied to `workload` now, `currentDigest` being the record's digest now
 * (`undefined`: withdrawn). 409 `pin_conflict` when the workload does not pin `id` at `from` (an ID it does
 * not pin at all included: `details.pinned` is then `null`); 409 `pin_stale` when `to` is not the record's
 * digest now (a withdrawn record included: `details.current` is then `null`). A move to the pin it already
 * has is allowed (it changes nothing but is audited).
 */
export function checkPinMove(workload: WorkloadRecord, move: PinMove, currentDigest: string | undefined): void {
  const pinned = workload.spec.resourcePins?.find((p) => p.id === move.id)?.digest;
  if (pinned !== move.from) {
    throw new AppError(
      'pin_conflict',
      pinned === undefined
        ? `Thread ${move.threadId} of canvas ${move.canvasId} does not pin resource ${move.id}; nothing was changed.`
        : `Thread ${move.threadId} of canvas ${move.canvasId} pins resource ${move.id} at another digest than \`from\` (it was moved since, or \`from\` is wrong); nothing was changed.`,
      { id: move.id, pinned: pinned ?? null },
    );
  }
  if (currentDigest !== move.to) {
    throw new AppError(
      'pin_stale',
      currentDigest === undefined
        ? `Resource ${move.id} was withdrawn; a pin can only move to the record's content now. Nothing was changed.`
        : `Resource ${move.id} no longer has the content \`to\` names (it changed since); read it again. Nothing was changed.`,
      { id: move.id, current: currentDigest ?? null },
    );
  }
}

/** The workload's pins with the pin of `move.id` at `move.to`, in the same order. */
export function movedPins(workload: WorkloadRecord, move: PinMove): { id: string; digest: string }[] {
  return (workload.spec.resourcePins ?? []).map((p) => (p.id === move.id ? { id: p.id, digest: move.to } : p));
}
