// A draft over a committed map (src/storage/overlay-map.ts): reads fall through, writes stay in the draft,
// and a grouped map answers one group's changes alone, as the whole list of changes has them.
import t from 'tap';
import fc from 'fast-check';
import { OverlayMap } from '../../src/storage/overlay-map.js';

const groupOf = (key: string) => key.slice(0, key.indexOf(' '));

t.test("a group's changes are those of its keys, removals as undefined, whatever the other groups did", (t) => {
  const base = new Map([
    ['pdf a', 1],
    ['pdf b', 2],
    ['pdf-split a', 3],
  ]);
  const draft = new OverlayMap(base, groupOf);
  draft.set('pdf c', 4);
  draft.delete('pdf a');
  draft.set('pdf-split b', 5);
  draft.delete('pdf-split a');
  draft.delete('csv z'); // not there: no change
  t.same(draft.changesIn('pdf'), [
    ['pdf c', 4],
    ['pdf a', undefined],
  ]);
  t.same(
    draft.changesIn('pdf-split'),
    [
      ['pdf-split b', 5],
      ['pdf-split a', undefined],
    ],
    'an ID that starts with another ID is a group of its own',
  );
  t.same(draft.changesIn('csv'), [], 'a removal of a missing key changes nothing');
  draft.set('pdf a', 9);
  t.same(
    draft.changesIn('pdf'),
    [
      ['pdf c', 4],
      ['pdf a', 9],
    ],
    'the last change of a key counts, once',
  );
  t.same(
    [...base],
    [
      ['pdf a', 1],
      ['pdf b', 2],
      ['pdf-split a', 3],
    ],
    'the committed map is untouched',
  );
  t.end();
});

t.test('every group together answers exactly what changes() answers', (t) => {
  const op = fc.record({ group: fc.constantFrom('a', 'ab', 'b'), k: fc.nat(3), del: fc.boolean(), v: fc.nat(9) });
  fc.assert(
    fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
      const draft = new OverlayMap(
        new Map([
          ['a 0', 0],
          ['ab 1', 1],
          ['b 2', 2],
        ]),
        groupOf,
      );
      for (const o of ops) {
        const key = `${o.group} ${o.k}`;
        if (o.del) draft.delete(key);
        else draft.set(key, o.v);
      }
      const byGroup = ['a', 'ab', 'b'].flatMap((g) => draft.changesIn(g));
      const sort = (xs: [string, number | undefined][]) => xs.map((x) => JSON.stringify(x)).sort();
      return JSON.stringify(sort(byGroup)) === JSON.stringify(sort(draft.changes()));
    }),
  );
  t.pass('held');
  t.end();
});
