// The crash test's history checker (in the spirit of etcd's robustness tests): a small model that, for each
// resource ID, derives the set of states the history of one round allows after a kill and a restart, and
// checks the recovered state against it. Sound and simple: acknowledged operations are linearized inside
// their [invoke, complete] interval; an operation of unknown outcome may have happened at any moment after
// it was invoked, or not at all, so any state it could have produced is accepted.

/** The content of one record, as the model compares it. */
export interface Content {
  provider: string;
  name: string;
  description: string;
  instructions: string;
}

/** One ID's state: its record, or null when absent. */
export type IdState = Content | null;

/** A change of one ID made by provider `by`: set to a record, or withdrawn (`after: null`). */
export interface Effect {
  id: string;
  after: IdState;
  by: string;
}

/** What a response proved about an ID's owner (null: absent) at some moment within [inv, cmp]. */
export interface Observation {
  id: string;
  owner: string | null;
  inv: number;
  cmp: number;
  source: string;
}

export type Outcome = 'acknowledged' | 'rejected' | 'unknown';

export interface OpRecord {
  seq: number;
  kind: string;
  writer: number;
  provider: string;
  /** `METHOD path`, for messages. */
  label: string;
  inv: number;
  /** Completion time; undefined when the outcome is unknown. */
  cmp: number | undefined;
  outcome: Outcome;
  status?: number;
  error?: string;
  /** Acknowledged: what it did. Unknown: what it might have done. Rejected: nothing. */
  effects: Effect[];
  observations: Observation[];
}

export interface Snapshot {
  states: Map<string, IdState>;
  /** When the snapshot was read: no operation of the round was in flight then. */
  inv: number;
  cmp: number;
}

export interface RoundHistory {
  round: number;
  start: Snapshot;
  ops: OpRecord[];
  end: Snapshot;
}

export type ViolationKind =
  | 'lost-acknowledged-write'
  | 'unexpected-change'
  | 'owner-changed-without-withdrawal'
  | 'bad-response'
  | 'file-does-not-parse'
  | 'temp-file-left'
  | 'served-differs-from-disk'
  | 'machine-token-failed';

export interface Violation {
  kind: ViolationKind;
  round: number;
  id?: string;
  message: string;
}

export function sameState(a: IdState, b: IdState): boolean {
  if (a === null || b === null) return a === b;
  return a.provider === b.provider && a.name === b.name && a.description === b.description && a.instructions === b.instructions;
}

export function describeState(s: IdState | undefined): string {
  return s ? `${s.provider}:"${s.name}"` : 'absent';
}

const describeOp = (op: OpRecord) =>
  `#${op.seq} ${op.label} by ${op.provider} (${op.outcome}${op.status ? ` ${op.status}` : ''}, ${op.inv.toFixed(1)}–${op.cmp?.toFixed(1) ?? '?'} ms)`;

/** Checks one round: every ID's recovered state must be one the history allows, and owners change only through withdrawal. */
export function checkRound(h: RoundHistory): Violation[] {
  const violations: Violation[] = [];
  const ids = new Set([...h.start.states.keys(), ...h.end.states.keys(), ...h.ops.flatMap((op) => op.effects.map((e) => e.id))]);
  const acked = h.ops.filter((op) => op.outcome === 'acknowledged');
  const unknown = h.ops.filter((op) => op.outcome === 'unknown');

  // A provider can withdraw an ID only if it could own it at some point of the round.
  const couldOwn = (provider: string, id: string) =>
    h.start.states.get(id)?.provider === provider ||
    h.ops.some((op) => op.outcome !== 'rejected' && op.effects.some((e) => e.id === id && e.after?.provider === provider));

  for (const id of [...ids].sort()) {
    const start = h.start.states.get(id) ?? null;
    const end = h.end.states.get(id) ?? null;
    const writers = acked.flatMap((op) => op.effects.filter((e) => e.id === id).map((effect) => ({ op, effect })));
    const candidates: IdState[] = [];
    // No acknowledged write: the start state survives (unless an unknown op changed it, below).
    if (writers.length === 0) candidates.push(start);
    // An acknowledged write may be the last one unless another one certainly came after it.
    for (const w of writers) {
      const superseded = writers.some((o) => o.op !== w.op && o.op.inv > w.op.cmp!);
      if (!superseded) candidates.push(w.effect.after);
    }
    // An unknown-outcome operation may have happened last.
    for (const op of unknown) {
      for (const e of op.effects) {
        if (e.id !== id) continue;
        if (e.after === null && !couldOwn(e.by, id)) continue;
        candidates.push(e.after);
      }
    }
    if (!candidates.some((c) => sameState(c, end))) {
      const latest = writers.filter((w) => !writers.some((o) => o.op !== w.op && o.op.inv > w.op.cmp!));
      violations.push({
        kind: writers.length > 0 ? 'lost-acknowledged-write' : 'unexpected-change',
        round: h.round,
        id,
        message:
          `${id}: recovered ${describeState(end)}, but the history allows only ` +
          `[${candidates.map(describeState).join(', ')}]` +
          (latest.length > 0 ? `; last acknowledged: ${latest.map((w) => `${describeOp(w.op)} → ${describeState(w.effect.after)}`).join('; ')}` : ''),
      });
    }
  }

  violations.push(...checkOwnership(h));
  return violations;
}

/**
 * A record leaves its owner only through that owner's withdrawal: whenever an observation certainly before
 * another sees owner p and the later one sees anyone else (or nothing), some withdrawal of the ID by p
 * (acknowledged, or of unknown outcome) must fit between them.
 */
function checkOwnership(h: RoundHistory): Violation[] {
  const violations: Violation[] = [];
  const byId = new Map<string, Observation[]>();
  const add = (o: Observation) => (byId.get(o.id) ?? byId.set(o.id, []).get(o.id)!).push(o);
  const snapshotObs = (s: Snapshot, source: string, id: string): Observation => ({ id, owner: s.states.get(id)?.provider ?? null, inv: s.inv, cmp: s.cmp, source });
  for (const op of h.ops) for (const o of op.observations) add(o);
  for (const id of new Set([...byId.keys(), ...h.start.states.keys(), ...h.end.states.keys()])) {
    add(snapshotObs(h.start, 'state at round start', id));
    add(snapshotObs(h.end, 'state after restart', id));
  }
  const withdrawals = h.ops.flatMap((op) =>
    op.outcome === 'rejected' ? [] : op.effects.filter((e) => e.after === null).map((e) => ({ op, id: e.id, by: e.by })),
  );
  for (const [id, observations] of byId) {
    const broken = observations
      .filter((first) => first.owner !== null)
      .flatMap((first) => observations.filter((later) => later.owner !== first.owner && first.cmp < later.inv).map((later) => ({ first, later })))
      .find(({ first, later }) =>
        !withdrawals.some((w) => w.id === id && w.by === first.owner && w.op.inv < later.cmp && (w.op.outcome === 'unknown' || w.op.cmp! > first.inv)),
      );
    if (broken) {
      const { first, later } = broken;
      violations.push({
        kind: 'owner-changed-without-withdrawal',
        round: h.round,
        id,
        message: `${id}: owned by ${first.owner} (${first.source}) and later ${later.owner ?? 'absent'} (${later.source}), with no withdrawal by ${first.owner} in between`,
      });
    }
  }
  return violations;
}
