// A provider's set of records made ready before the resources document's turn: each record as it will be
// stored (carrying the owner's fields of the record it replaces), frozen, with its digest and its change
// events' check computed, a slice at a time, so reads are answered between slices. The turn that commits
// the set reuses a prepared record only while the record it replaces is still the one it was prepared
// against; any other is made in the turn as before.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { carryOwnerFields } from '../registry/ownership.js';
import { digestOf } from '../registry/record-digest.js';
import type { StoredResource } from '../schemas/resource.js';
import { recordCheck } from './event-log.js';

/** Records prepared in one turn of the event loop. */
const SLICE = 100;

interface Prepared {
  /** The record it replaces, as it was when prepared (undefined: none). */
  base: StoredResource | undefined;
  record: StoredResource;
}

export class PreparedRecords {
  private constructor(private readonly byIncoming: Map<StoredResource, Prepared>) {}

  /** `incoming` prepared against `current` (the committed records), yielding between slices. */
  static async of(current: (id: string) => StoredResource | undefined, incoming: readonly StoredResource[]): Promise<PreparedRecords> {
    const byIncoming = new Map<StoredResource, Prepared>();
    for (let i = 0; i < incoming.length; i++) {
      if (i > 0 && i % SLICE === 0) await nextTurn();
      const one = incoming[i]!;
      const base = current(one.id);
      const record = Object.freeze(carryOwnerFields(base, { ...one }));
      digestOf(record);
      recordCheck(record);
      byIncoming.set(one, { base, record });
    }
    return new PreparedRecords(byIncoming);
  }

  /** The record to store for `incoming`, replacing `base`: the prepared one while `base` is unchanged. */
  recordFor(base: StoredResource | undefined, incoming: StoredResource): StoredResource {
    const prepared = this.byIncoming.get(incoming);
    return prepared && prepared.base === base ? prepared.record : carryOwnerFields(base, { ...incoming });
  }
}
