// The conversions between record v1 and v2 as pure functions, and the capability projection over records
// of both versions (labels `displayName ?? name`, duplicate names across versions).
import t from 'tap';
import { buildSnapshot } from '../src/capabilities/snapshot.js';
import { applyCustomization, toV1, toV2, v2ToV1, withOwnerFields } from '../src/registry/resource-versions.js';
import { carryOwnerFields } from '../src/registry/ownership.js';
import type { AgentResource, AgentResourceV2 } from '../src/schemas/resource.js';

const v1: AgentResource = {
  schemaVersion: 1,
  id: 'pdf',
  name: ' PDF ',
  provider: 'mac-a',
  description: ' Split PDFs. ',
  instructions: 'Run it.\n',
};
const v2: AgentResourceV2 = {
  schemaVersion: 2,
  id: 'web',
  name: 'Web',
  provider: 'huabu',
  sourceContent: '\n# Web search\nAsk the host.',
  userContent: '',
};

t.test("v1 → v2 is upstream's migrateLegacyResource; v1 reads back exactly", (t) => {
  t.same(toV2(v1), {
    schemaVersion: 2,
    id: 'pdf',
    name: 'PDF',
    provider: 'mac-a',
    sourceContent: 'Split PDFs.\n\nRun it.',
    userContent: '',
  });
  t.same(toV1(v1), v1, 'exact, surrounding space included');
  const custom = withOwnerFields(v1, { displayName: 'Splitter', userContent: 'Ask first.' });
  t.same(toV1(custom), v1, "the owner's fields never change the v1 representation of a v1 record");
  t.same(toV2(custom), {
    schemaVersion: 2,
    id: 'pdf',
    name: 'PDF',
    displayName: 'Splitter',
    provider: 'mac-a',
    sourceContent: 'Split PDFs.\n\nRun it.',
    userContent: 'Ask first.',
  });
  t.same(Object.keys(toV2(custom)), ['schemaVersion', 'id', 'name', 'displayName', 'provider', 'sourceContent', 'userContent']);
  t.end();
});

t.test('v2 → v1: first non-empty line, the whole guidance, owner content under a heading', (t) => {
  t.same(v2ToV1(v2), {
    schemaVersion: 1,
    id: 'web',
    name: 'Web',
    provider: 'huabu',
    description: '# Web search',
    instructions: '\n# Web search\nAsk the host.',
  });
  const owned = v2ToV1({ ...v2, userContent: 'Prefer primary sources.' });
  t.equal(owned.instructions, '\n# Web search\nAsk the host.\n\n## Instructions from the owner\n\nPrefer primary sources.');
  t.equal(toV1(v2).schemaVersion, 1);
  t.end();
});

t.test('v2 → v1 at the bounds: never past v1, never a split surrogate pair, always a pointer to the rest', (t) => {
  const emoji = '😀';
  const big: AgentResourceV2 = { ...v2, sourceContent: `${emoji.repeat(400)}\n${'b'.repeat(99_000)}`, userContent: 'u'.repeat(20_000) };
  const out = v2ToV1(big);
  t.ok(out.description.length <= 512);
  t.ok(out.description.endsWith('…'));
  t.notMatch(out.description, /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/, 'no lone high surrogate');
  t.ok(out.instructions.length <= 4000);
  t.match(
    out.instructions,
    /of 119\d\d\d characters of guidance\. Read all of it with GET \$HUABU_RFS_URL\/resources\/web\?schemaVersion=2/,
  );
  const exact: AgentResourceV2 = { ...v2, sourceContent: 'x'.repeat(4000) };
  t.equal(v2ToV1(exact).instructions, 'x'.repeat(4000), 'exactly at the bound: kept whole');
  t.match(v2ToV1({ ...v2, sourceContent: 'x'.repeat(4001) }).instructions, /Shortened/, 'one past: shortened with the note');
  t.end();
});

t.test("the owner's fields: carried over a provider's write, patched, cleared", (t) => {
  const existing = withOwnerFields(v2, { displayName: 'Search', userContent: 'Be brief.' });
  const incoming: AgentResource = { schemaVersion: 1, id: 'web', name: 'Web', provider: 'huabu', description: 'd', instructions: 'i' };
  t.same(carryOwnerFields(existing, incoming), { ...incoming, displayName: 'Search', userContent: 'Be brief.' }, 'kept across versions');
  t.same(carryOwnerFields({ ...existing, provider: 'other' }, incoming), incoming, "never another provider's customization");
  const cleared = applyCustomization(existing, { displayName: null, userContent: '' });
  t.same(cleared, { record: v2, changed: true });
  t.same(applyCustomization(v2, { userContent: '' }).changed, false);
  const v1Cleared = applyCustomization(withOwnerFields(v1, { userContent: 'x' }), { userContent: '' }).record;
  t.same(v1Cleared, v1, 'a v1 record with no customization has no owner keys');
  t.end();
});

t.test('capability projection: labels are displayName ?? name; duplicate names span both versions', (t) => {
  const a = withOwnerFields(v2, { displayName: 'Search', userContent: '' });
  const b: AgentResource = {
    schemaVersion: 1,
    id: 'search',
    name: 'search',
    provider: 'huabu',
    description: 'Old search.',
    instructions: 'Use it.',
  };
  const input = { resources: [a, b], profiles: [], machines: [], requiredResourceIds: [] };
  const snap = buildSnapshot(input);
  t.match(
    snap.components.find((c) => c.id === 'resource:web'),
    { name: 'Search', description: '# Web search' },
  );
  t.same(
    snap.diagnostics.map((d) => [d.code, d.components]),
    [['duplicate_resource_name', ['resource:search', 'resource:web']]],
  );
  const near = buildSnapshot({ ...input, resources: [v2, b] });
  t.same(
    near.diagnostics.map((d) => d.code),
    [],
    'near miss: without the displayName the names differ',
  );
  const vars = buildSnapshot({ ...input, resources: [{ ...v2, userContent: 'Read $NOT_A_VARIABLE.' }] });
  t.same(
    vars.diagnostics.map((d) => d.code),
    ['unknown_variable'],
    "the owner's content is guidance an agent reads too",
  );
  t.end();
});
