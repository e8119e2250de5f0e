// The crash test's checker on small hand-written histories: what it accepts and what it reports.
import t from 'tap';
import {
  canonicalJson,
  checkProfiles,
  checkRound,
  checkWorkloads,
  createEffects,
  WorkloadLedger,
  type Content,
  type Effect,
  type IdState,
  type OpRecord,
  type Outcome,
  type ProfileEffect,
  type ProfileView,
  type RoundHistory,
} from './model.js';

const rec = (provider: string, name: string): Content => ({ provider, name, description: 'd', instructions: 'i' });
let seq = 0;

/** An operation of provider `by` over [inv, cmp]; acknowledged and rejected ones observe their owner. */
function op(
  outcome: Outcome,
  inv: number,
  cmp: number | undefined,
  by: string,
  effects: [string, IdState][],
  observed: [string, string | null][] = [],
): OpRecord {
  const list: Effect[] = effects.map(([id, after]) => ({ id, after, by }));
  return {
    seq: seq++,
    kind: 'test',
    writer: 0,
    provider: by,
    label: `op ${seq}`,
    inv,
    cmp: outcome === 'unknown' ? undefined : cmp,
    outcome,
    effects: outcome === 'rejected' ? [] : list,
    observations: [
      ...(outcome === 'acknowledged' ? list.map((e) => ({ id: e.id, owner: by, inv, cmp: cmp!, source: 'ack' })) : []),
      ...observed.map(([id, owner]) => ({ id, owner, inv, cmp: cmp!, source: 'rejection' })),
    ],
  };
}

function history(start: [string, IdState][], ops: OpRecord[], end: [string, IdState][]): RoundHistory {
  return { round: 1, start: { states: new Map(start), inv: 0, cmp: 1 }, ops, end: { states: new Map(end), inv: 1000, cmp: 1001 } };
}

const kinds = (h: RoundHistory) => checkRound(h).map((v) => v.kind);
const a1 = rec('m1', 'a1');
const a2 = rec('m1', 'a2');
const b1 = rec('m2', 'b1');

t.test('an acknowledged write must survive; an older state is a lost write', (t) => {
  const ops = [op('acknowledged', 10, 20, 'm1', [['x', a1]]), op('acknowledged', 30, 40, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a2]])), []);
  t.same(kinds(history([], ops, [['x', a1]])), ['lost-acknowledged-write'], 'a1 was certainly overwritten by a2');
  t.same(kinds(history([], ops, [])), ['lost-acknowledged-write', 'owner-changed-without-withdrawal']);
  t.end();
});

t.test('overlapping acknowledged writes may land in either order', (t) => {
  const ops = [op('acknowledged', 10, 40, 'm1', [['x', a1]]), op('acknowledged', 20, 30, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a1]])), []);
  t.same(kinds(history([], ops, [['x', a2]])), []);
  t.end();
});

t.test('an unknown-outcome write may or may not have happened', (t) => {
  const ops = [op('acknowledged', 10, 20, 'm1', [['x', a1]]), op('unknown', 30, undefined, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a1]])), []);
  t.same(kinds(history([], ops, [['x', a2]])), []);
  t.same(kinds(history([], [op('unknown', 30, undefined, 'm1', [['x', a2]])], [])), [], 'nothing acknowledged: the start state is fine');
  t.end();
});

t.test('an acknowledged withdrawal stays withdrawn unless a later write could have re-registered', (t) => {
  const withdraw = op('acknowledged', 10, 20, 'm1', [['x', null]]);
  t.same(kinds(history([['x', a1]], [withdraw], [])), []);
  t.same(kinds(history([['x', a1]], [withdraw], [['x', a1]])), ['lost-acknowledged-write']);
  t.same(kinds(history([['x', a1]], [withdraw, op('unknown', 30, undefined, 'm1', [['x', a2]])], [['x', a2]])), []);
  t.end();
});

t.test('a change nobody asked for is reported', (t) => {
  t.same(kinds(history([['x', a1]], [], [['x', a2]])), ['unexpected-change']);
  t.end();
});

t.test("a record leaves its owner only through the owner's withdrawal", (t) => {
  // m2 was told "held by m1" (409), yet after the restart x is free, and m1 never withdrew it.
  const refused = op('rejected', 10, 20, 'm2', [['x', b1]], [['x', 'm1']]);
  const unknownCreate = op('unknown', 5, undefined, 'm1', [['x', a1]]);
  t.same(kinds(history([], [unknownCreate, refused], [])), ['owner-changed-without-withdrawal']);
  const unknownWithdraw = op('unknown', 25, undefined, 'm1', [['x', null]]);
  t.same(kinds(history([], [unknownCreate, refused, unknownWithdraw], [])), [], 'a withdrawal that may have happened explains it');
  const earlierWithdraw = op('acknowledged', 1, 4, 'm1', [['x', null]]);
  t.same(
    kinds(history([], [unknownCreate, refused, earlierWithdraw], [])),
    ['owner-changed-without-withdrawal'],
    'a withdrawal certainly before the 409 does not',
  );
  t.end();
});

const profile = (id: string, alias: string, tag = `tag-${id}`): ProfileView => ({
  id,
  alias,
  agentletId: 'm1',
  workingDirPath: '/w',
  command: 'agent',
  resourceIds: [],
  tag,
});

/** A profile operation over [inv, cmp]. */
function pop(
  outcome: Outcome,
  inv: number,
  cmp: number | undefined,
  profileEffects: ProfileEffect[],
  extra: Partial<OpRecord> = {},
): OpRecord {
  return { ...op(outcome, inv, cmp, 'owner', []), profileEffects: outcome === 'rejected' ? [] : profileEffects, ...extra };
}
const alias = (id: string, value: string): ProfileEffect => ({ id, field: 'alias', value: JSON.stringify(value) });
const gone = (id: string): ProfileEffect => ({ id, field: 'exists', value: 'absent' });

function profileHistory(start: ProfileView[], ops: OpRecord[], end: ProfileView[]): RoundHistory {
  const h = history([], ops, []);
  h.start.profiles = new Map(start.map((p) => [p.id, p]));
  h.end.profiles = new Map(end.map((p) => [p.id, p]));
  return h;
}
const profileKinds = (h: RoundHistory) => checkProfiles(h).map((v) => v.kind);

t.test('profiles: acknowledged creates, patches and deletes are reflected field by field', (t) => {
  const created = profile('prf-a', 'A');
  const create = pop('acknowledged', 10, 20, createEffects(created));
  const patch = pop('acknowledged', 30, 40, [alias('prf-a', 'B')]);
  t.same(profileKinds(profileHistory([], [create, patch], [{ ...created, alias: 'B' }])), []);
  t.same(profileKinds(profileHistory([], [create, patch], [created])), ['lost-acknowledged-write'], 'the patch was lost');
  t.same(profileKinds(profileHistory([], [create, patch], [])), ['lost-acknowledged-write'], 'the create was lost');
  const unknownPatch = pop('unknown', 50, undefined, [alias('prf-a', 'C')]);
  t.same(
    profileKinds(profileHistory([], [create, patch, unknownPatch], [{ ...created, alias: 'C' }])),
    [],
    'an unknown patch may have landed',
  );
  t.same(profileKinds(profileHistory([], [create, patch, unknownPatch], [{ ...created, alias: 'B' }])), [], 'or not');
  t.same(
    profileKinds(profileHistory([created], [], [{ ...created, workingDirPath: '/x' }])),
    ['unexpected-change'],
    'fields nobody wrote stay',
  );
  t.end();
});

t.test('profiles: an acknowledged delete stays deleted; an unknown create may appear, as sent', (t) => {
  const a = profile('prf-a', 'A');
  const del = pop('acknowledged', 10, 20, [gone('prf-a')]);
  t.same(profileKinds(profileHistory([a], [del], [])), []);
  t.same(profileKinds(profileHistory([a], [del], [a])), ['lost-acknowledged-write']);
  const { id: _id, ...sent } = profile('', 'N', 'tag-n');
  const unknownCreate = pop('unknown', 10, undefined, [], { profileCreate: { id: '', ...sent } });
  t.same(profileKinds(profileHistory([], [unknownCreate], [profile('prf-n', 'N', 'tag-n')])), []);
  t.same(profileKinds(profileHistory([], [unknownCreate], [profile('prf-n', 'Other', 'tag-n')])), ['unexpected-change'], 'not as sent');
  t.same(profileKinds(profileHistory([], [], [profile('prf-x', 'X')])), ['unexpected-change'], 'nobody created it');
  t.same(profileKinds(profileHistory([a, profile('prf-b', 'a')], [], [a, profile('prf-b', 'a')])), ['alias-not-unique']);
  t.end();
});

t.test('workloads: the first realization is the only record, across rounds', (t) => {
  const record = { canvasId: 'c', threadId: 't', realizedAt: '1', spec: { binding: { profileId: 'p' } } };
  const answer = JSON.stringify(record);
  const launch = (outcome: Outcome, text?: string) =>
    ({
      ...op(outcome, 10, 20, 'owner', []),
      launch: { canvasId: 'c', threadId: 't', profileId: 'p', ...(text ? { answer: text } : {}) },
    }) as OpRecord;
  const round = (
    ops: OpRecord[],
    end: Record<string, unknown> | undefined,
    served = end ? JSON.stringify(end) : undefined,
  ): RoundHistory => {
    const h = history([], ops, []);
    h.end.workloads = new Map(end ? [['c/t', canonicalJson(end)]] : []);
    h.end.servedWorkloads = new Map(served ? [['c/t', served]] : []);
    return h;
  };
  const kindsOf = (h: RoundHistory, ledger = new WorkloadLedger()) => checkWorkloads(h, ledger).map((v) => v.kind);
  t.same(kindsOf(round([launch('acknowledged', answer)], record)), []);
  t.same(kindsOf(round([launch('acknowledged', answer)], undefined)), ['lost-acknowledged-write', 'lost-acknowledged-write']);
  t.same(kindsOf(round([launch('acknowledged', answer)], { ...record, realizedAt: '2' })), [
    'workload-differs-from-answer',
    'workload-changed',
  ]);
  t.same(kindsOf(round([launch('unknown')], record)), [], 'an unknown launch may have realized it');
  t.same(kindsOf(round([], record)), ['unexpected-change'], 'nobody launched it');
  const ledger = new WorkloadLedger();
  t.same(kindsOf(round([launch('acknowledged', answer)], record), ledger), []);
  t.same(
    kindsOf(round([launch('unknown')], { ...record, realizedAt: '2' }), ledger),
    ['workload-changed'],
    'a later round cannot realize it again',
  );
  t.same(
    kindsOf(round([launch('acknowledged', JSON.stringify({ ...record, realizedAt: '3' }))], record), ledger),
    ['workload-changed'],
    'nor answer another record',
  );
  t.end();
});
