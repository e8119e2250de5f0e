// The crash test's checker on small hand-written histories: what it accepts and what it reports.
import t from 'tap';
import { checkRound, type Content, type Effect, type IdState, type OpRecord, type Outcome, type RoundHistory } from './model.js';

const rec = (provider: string, name: string): Content => ({ provider, name, description: 'd', instructions: 'i' });
let seq = 0;

/** An operation of provider `by` over [inv, cmp]; acknowledged and rejected ones observe their owner. */
function op(outcome: Outcome, inv: number, cmp: number | undefined, by: string, effects: [string, IdState][], observed: [string, string | null][] = []): OpRecord {
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

t.test('an acknowledged write must survive; an older state is a lost write', async (t) => {
  const ops = [op('acknowledged', 10, 20, 'm1', [['x', a1]]), op('acknowledged', 30, 40, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a2]])), []);
  t.same(kinds(history([], ops, [['x', a1]])), ['lost-acknowledged-write'], 'a1 was certainly overwritten by a2');
  t.same(kinds(history([], ops, [])), ['lost-acknowledged-write', 'owner-changed-without-withdrawal']);
});

t.test('overlapping acknowledged writes may land in either order', async (t) => {
  const ops = [op('acknowledged', 10, 40, 'm1', [['x', a1]]), op('acknowledged', 20, 30, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a1]])), []);
  t.same(kinds(history([], ops, [['x', a2]])), []);
});

t.test('an unknown-outcome write may or may not have happened', async (t) => {
  const ops = [op('acknowledged', 10, 20, 'm1', [['x', a1]]), op('unknown', 30, undefined, 'm1', [['x', a2]])];
  t.same(kinds(history([], ops, [['x', a1]])), []);
  t.same(kinds(history([], ops, [['x', a2]])), []);
  t.same(kinds(history([], [op('unknown', 30, undefined, 'm1', [['x', a2]])], [])), [], 'nothing acknowledged: the start state is fine');
});

t.test('an acknowledged withdrawal stays withdrawn unless a later write could have re-registered', async (t) => {
  const withdraw = op('acknowledged', 10, 20, 'm1', [['x', null]]);
  t.same(kinds(history([['x', a1]], [withdraw], [])), []);
  t.same(kinds(history([['x', a1]], [withdraw], [['x', a1]])), ['lost-acknowledged-write']);
  t.same(kinds(history([['x', a1]], [withdraw, op('unknown', 30, undefined, 'm1', [['x', a2]])], [['x', a2]])), []);
});

t.test('a change nobody asked for is reported', async (t) => {
  t.same(kinds(history([['x', a1]], [], [['x', a2]])), ['unexpected-change']);
});

t.test("a record leaves its owner only through the owner's withdrawal", async (t) => {
  // m2 was told "held by m1" (409), yet after the restart x is free, and m1 never withdrew it.
  const refused = op('rejected', 10, 20, 'm2', [['x', b1]], [['x', 'm1']]);
  const unknownCreate = op('unknown', 5, undefined, 'm1', [['x', a1]]);
  t.same(kinds(history([], [unknownCreate, refused], [])), ['owner-changed-without-withdrawal']);
  const unknownWithdraw = op('unknown', 25, undefined, 'm1', [['x', null]]);
  t.same(kinds(history([], [unknownCreate, refused, unknownWithdraw], [])), [], 'a withdrawal that may have happened explains it');
  const earlierWithdraw = op('acknowledged', 1, 4, 'm1', [['x', null]]);
  t.same(kinds(history([], [unknownCreate, refused, earlierWithdraw], [])), ['owner-changed-without-withdrawal'], 'a withdrawal certainly before the 409 does not');
});
