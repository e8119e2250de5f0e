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
  /** Profile fields the operation set (same rules as `effects`). */
  profileEffects?: ProfileEffect[];
  /** A create of unknown outcome: its profile may exist after the restart under an ID nobody saw (found by its tag). */
  profileCreate?: ProfileView;
  /** A launch: the thread it realizes or repeats, and (acknowledged) the answer's exact bytes. */
  launch?: LaunchEffect;
}

/** The fields of an Agent Profile the model follows. `tag` is the creating operation's (in customData). */
export interface ProfileView {
  id: string;
  alias: string;
  agentletId: string;
  workingDirPath: string;
  command: string;
  resourceIds: string[];
  tag: string | undefined;
}

export const PROFILE_FIELDS = ['exists', 'alias', 'resourceIds', 'agentletId', 'workingDirPath', 'command', 'tag'] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];

/** One field of one profile set to a value (JSON text; `exists` is "present" or "absent"). */
export interface ProfileEffect {
  id: string;
  field: ProfileField;
  value: string;
}

export function profileFieldValue(p: ProfileView | undefined, field: ProfileField): string {
  if (field === 'exists') return p ? 'present' : 'absent';
  return p ? (JSON.stringify(p[field]) ?? 'undefined') : 'absent';
}

/** Every field of a created profile (a create writes them all). */
export function createEffects(p: ProfileView): ProfileEffect[] {
  return PROFILE_FIELDS.map((field) => ({ id: p.id, field, value: profileFieldValue(p, field) }));
}

export interface LaunchEffect {
  canvasId: string;
  threadId: string;
  profileId: string;
  /** The 201/200 answer as received. */
  answer?: string;
}

export const threadKey = (canvasId: string, threadId: string) => `${canvasId}/${threadId}`;

/** JSON with object keys sorted at every level: equal records, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export interface Snapshot {
  states: Map<string, IdState>;
  /** The acp-command profiles by ID (absent in hand-written histories: none). */
  profiles?: Map<string, ProfileView>;
  /** Every workload record on disk, canonical JSON by `canvas/thread`. */
  workloads?: Map<string, string>;
  /** GET /api/acp/workloads/:canvasId/:threadId bytes of the threads acknowledged in the round. */
  servedWorkloads?: Map<string, string>;
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
  | 'machine-token-failed'
  | 'alias-not-unique'
  | 'workload-changed'
  | 'workload-differs-from-answer'
  | 'launch-audit-differs';

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
          (latest.length > 0
            ? `; last acknowledged: ${latest.map((w) => `${describeOp(w.op)} → ${describeState(w.effect.after)}`).join('; ')}`
            : ''),
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
  const snapshotObs = (s: Snapshot, source: string, id: string): Observation => ({
    id,
    owner: s.states.get(id)?.provider ?? null,
    inv: s.inv,
    cmp: s.cmp,
    source,
  });
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
      .flatMap((first) =>
        observations.filter((later) => later.owner !== first.owner && first.cmp < later.inv).map((later) => ({ first, later })),
      )
      .find(
        ({ first, later }) =>
          !withdrawals.some(
            (w) => w.id === id && w.by === first.owner && w.op.inv < later.cmp && (w.op.outcome === 'unknown' || w.op.cmp! > first.inv),
          ),
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

/**
 * The values a register (one field of one record) may hold after the round: the start value when no
 * acknowledged write touched it, every acknowledged write no other acknowledged write certainly followed,
 * and every write of unknown outcome.
 */
function allowedValues<V>(start: V, acked: { op: OpRecord; value: V }[], unknown: { value: V }[]): V[] {
  const candidates: V[] = [];
  if (acked.length === 0) candidates.push(start);
  for (const w of acked) if (!acked.some((o) => o.op !== w.op && o.op.inv > w.op.cmp!)) candidates.push(w.value);
  for (const w of unknown) candidates.push(w.value);
  return candidates;
}

/**
 * Agent Profiles, field by field (a linearizable history projected on one field is one of that field's
 * register): an acknowledged create, PATCH or delete must be reflected unless a later acknowledged one,
 * or one of unknown outcome, could have changed the field again. A profile nobody knew at the start and
 * no acknowledged create returned must be an unknown-outcome create's, exactly as sent. Aliases stay
 * unique ignoring case.
 */
export function checkProfiles(h: RoundHistory): Violation[] {
  const violations: Violation[] = [];
  const start = h.start.profiles ?? new Map<string, ProfileView>();
  const end = h.end.profiles ?? new Map<string, ProfileView>();
  const acked = h.ops.filter((op) => op.outcome === 'acknowledged');
  const unknown = h.ops.filter((op) => op.outcome === 'unknown');
  const effectsOf = (op: OpRecord, id: string, field: ProfileField) =>
    (op.profileEffects ?? []).filter((e) => e.id === id && e.field === field).map((e) => ({ op, value: e.value }));
  const ackedCreates = new Set(
    acked.flatMap((op) => (op.profileEffects ?? []).filter((e) => e.field === 'exists' && e.value === 'present').map((e) => e.id)),
  );
  const ids = new Set([...start.keys(), ...end.keys(), ...h.ops.flatMap((op) => (op.profileEffects ?? []).map((e) => e.id))]);

  for (const id of [...ids].sort()) {
    const after = end.get(id);
    if (!start.has(id) && !ackedCreates.has(id)) {
      if (!after) continue;
      const creator = unknown.find((op) => op.profileCreate && op.profileCreate.tag === after.tag);
      const expected = creator?.profileCreate && { ...creator.profileCreate, id };
      if (!expected || PROFILE_FIELDS.some((f) => profileFieldValue(expected, f) !== profileFieldValue(after, f))) {
        violations.push({
          kind: 'unexpected-change',
          round: h.round,
          id,
          message: `profile ${id} (alias ${JSON.stringify(after.alias)}, tag ${after.tag}) appeared, but ${creator ? `differs from its unacknowledged create ${describeOp(creator)}` : 'no create of this round could have made it'}`,
        });
      }
      continue;
    }
    for (const field of PROFILE_FIELDS) {
      if (field !== 'exists' && !after) continue;
      const ackedWrites = acked.flatMap((op) => effectsOf(op, id, field));
      const candidates = allowedValues(
        profileFieldValue(start.get(id), field),
        ackedWrites,
        unknown.flatMap((op) => effectsOf(op, id, field)),
      );
      const value = profileFieldValue(after, field);
      if (!candidates.includes(value)) {
        const latest = ackedWrites.filter((w) => !ackedWrites.some((o) => o.op !== w.op && o.op.inv > w.op.cmp!));
        violations.push({
          kind: ackedWrites.length > 0 ? 'lost-acknowledged-write' : 'unexpected-change',
          round: h.round,
          id,
          message:
            `profile ${id} ${field}: recovered ${value}, but the history allows only [${candidates.join(', ')}]` +
            (latest.length > 0 ? `; last acknowledged: ${latest.map((w) => `${describeOp(w.op)} → ${w.value}`).join('; ')}` : ''),
        });
      }
    }
  }

  const byAlias = new Map<string, string>();
  for (const p of end.values()) {
    const key = p.alias.toLowerCase();
    const other = byAlias.get(key);
    if (other)
      violations.push({
        kind: 'alias-not-unique',
        round: h.round,
        id: p.id,
        message: `profiles ${other} and ${p.id} share the alias ${JSON.stringify(p.alias)} (ignoring case)`,
      });
    byAlias.set(key, p.id);
  }
  return violations;
}

/** Every workload record ever seen, by thread, across rounds and restarts: the first realization wins. */
export class WorkloadLedger {
  readonly records = new Map<string, { json: string; source: string }>();
}

/**
 * Workloads: every acknowledged launch (201, or 200 for a repeat) answered the one record of its thread,
 * which is then on disk and served byte-for-byte as answered; a thread never has two different records
 * over the whole history; a record nobody asked for never appears.
 */
export function checkWorkloads(h: RoundHistory, ledger: WorkloadLedger): Violation[] {
  const violations: Violation[] = [];
  const end = h.end.workloads ?? new Map<string, string>();
  const served = h.end.servedWorkloads ?? new Map<string, string>();
  const launches = h.ops.filter((op) => op.launch && op.outcome !== 'rejected');
  for (const op of launches) {
    if (op.outcome !== 'acknowledged') continue;
    const { canvasId, threadId, answer } = op.launch!;
    const key = threadKey(canvasId, threadId);
    const json = canonicalJson(JSON.parse(answer!));
    const known = ledger.records.get(key);
    if (known && known.json !== json) {
      violations.push({
        kind: 'workload-changed',
        round: h.round,
        id: key,
        message: `${key}: ${describeOp(op)} answered ${json}, but ${known.source} had ${known.json}`,
      });
      continue;
    }
    if (!known) ledger.records.set(key, { json, source: `round ${h.round} ${describeOp(op)}` });
    const bytes = served.get(key);
    if (bytes !== answer) {
      violations.push({
        kind: end.has(key) ? 'workload-differs-from-answer' : 'lost-acknowledged-write',
        round: h.round,
        id: key,
        message: `${key}: ${describeOp(op)} answered ${answer}; after the restart GET answers ${bytes ?? 'nothing'}`,
      });
    }
  }
  for (const [key, { json, source }] of ledger.records) {
    const now = end.get(key);
    if (now === json) continue;
    violations.push({
      kind: now === undefined ? 'lost-acknowledged-write' : 'workload-changed',
      round: h.round,
      id: key,
      message: `${key}: ${source} had ${json}; after the restart ${now ?? 'the record is gone'}`,
    });
  }
  for (const [key, json] of end) {
    if (ledger.records.has(key)) continue;
    const record = JSON.parse(json) as { spec?: { binding?: { profileId?: string } } };
    const asked = launches.some(
      (op) => threadKey(op.launch!.canvasId, op.launch!.threadId) === key && op.launch!.profileId === record.spec?.binding?.profileId,
    );
    if (!asked && !(h.start.workloads?.get(key) === json)) {
      violations.push({
        kind: 'unexpected-change',
        round: h.round,
        id: key,
        message: `${key}: a record appeared that no launch of the round asked for: ${json}`,
      });
    }
    ledger.records.set(key, { json, source: `the state after round ${h.round}` });
  }
  return violations;
}
