// The capability projection core: every diagnostic from a minimal state that triggers it and a near miss
// that does not, stable ordering, the digest, the selection checks launch and profile saves use, and DOT
// escaping checked by rendering it.
import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { instance } from '@viz-js/viz';
import {
  assertNoErrors,
  diagnosticsFor,
  diagnosticsIndex,
  registryDiagnostics,
  selectionConflicts,
  type SnapshotInput,
} from '../../src/capabilities/diagnostics.js';
import { escapeDotLabel, snapshotToDot } from '../../src/capabilities/dot.js';
import { unknownVariables } from '../../src/capabilities/rules.js';
import { buildSnapshot, narrowSnapshot, serializeSnapshot } from '../../src/capabilities/snapshot.js';
import type { Diagnostic } from '../../src/schemas/capability.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import type { AgentResource } from '../../src/schemas/resource.js';
import { profileRecord } from '../helpers/profiles.js';

// The DOT the test fixture renders to, committed. `TAP_SNAPSHOT=1` rewrites it; review the diff before committing.
// A file of its own rather than a tap snapshot: a snapshot's key names the test file's path, and this file
// runs both as TypeScript (test/) and compiled (dist/test/, as `npm test` runs it).
const FIXTURE_DOT = path.join('test', 'fixtures', 'capabilities', 'fixture.dot');

function resource(id: string, provider: string, name = `Name of ${id}`, instructions = `Use ${id} via $HUABU_RFS_URL.`): AgentResource {
  return { schemaVersion: 1, id, provider, name, description: `About ${id}.`, instructions };
}

const profile = (id: string, agentletId: string, resourceIds: string[] = [], alias = `Alias of ${id}`): AgentProfile =>
  profileRecord(id, { agentletId, resourceIds, alias });

function state(fields: Partial<SnapshotInput> = {}): SnapshotInput {
  return { resources: [], profiles: [], machines: [], requiredResourceIds: [], ...fields };
}

const codes = (input: SnapshotInput) => buildSnapshot(input).diagnostics.map((d) => [d.code, d.components]);

t.test('duplicate_resource_name: two resources an agent could see together share a name', (t) => {
  t.same(
    codes(state({ resources: [resource('a', 'huabu', 'Search'), resource('b', 'huabu', ' search ')] })),
    [['duplicate_resource_name', ['resource:a', 'resource:b']]],
    'both huabu, ignoring case and surrounding space',
  );
  t.same(
    codes(state({ resources: [resource('a', 'huabu', 'Search'), resource('b', 'mac-a', 'SEARCH')] })),
    [['duplicate_resource_name', ['resource:a', 'resource:b']]],
    'huabu and a machine',
  );
  t.same(
    codes(state({ resources: [resource('a', 'mac-a', 'Search'), resource('b', 'mac-a', 'search')] })),
    [['duplicate_resource_name', ['resource:a', 'resource:b']]],
    'the same machine',
  );
  t.same(
    codes(state({ resources: [resource('a', 'mac-a', 'Search'), resource('b', 'mac-b', 'Search')] })),
    [],
    'near miss: two different machines',
  );
  t.same(
    codes(state({ resources: [resource('a', 'huabu', 'Search'), resource('b', 'huabu', 'Search engine')] })),
    [],
    'near miss: different names',
  );
  t.same(
    codes(state({ resources: [resource('a', 'huabu', 'Se arch'), resource('b', 'huabu', 'Search')] })),
    [],
    'near miss: inner space counts',
  );

  const snapshot = buildSnapshot(
    state({
      resources: [
        resource('h1', 'huabu', 'Tool'),
        resource('h2', 'huabu', 'tool'),
        resource('m1', 'mac-a', 'TOOL'),
        resource('n1', 'mac-b', 'Other'),
      ],
    }),
  );
  t.same(
    snapshot.diagnostics.map((d) => d.components),
    [
      ['resource:h1', 'resource:h2'],
      ['resource:h1', 'resource:h2', 'resource:m1'],
    ],
    'one diagnostic for what every agent sees, one per machine that adds a namesake',
  );
  t.match(snapshot.diagnostics[1]!.message, /an agent on mac-a sees them together/);
  t.end();
});

t.test('unresolved_reference: a profile selects an ID nobody registered', (t) => {
  const r = resource('tool', 'huabu');
  t.same(codes(state({ resources: [r], profiles: [profile('p1', 'mac-a', ['tool', 'gone'])] })), [
    ['unresolved_reference', ['agent:p1', 'resource:gone']],
  ]);
  t.same(codes(state({ resources: [r], profiles: [profile('p1', 'mac-a', ['tool'])] })), [], 'near miss: every ID resolves');
  const manifest: AgentProfile = {
    ...profile('p2', 'mac-a', ['gone']),
    launch: { kind: 'agent-team-manifest', manifestPath: '/m.yaml', harness: 'h' },
  };
  t.same(codes(state({ profiles: [manifest] })), [], 'near miss: a manifest-backed profile selects nothing in this phase');
  t.end();
});

t.test("cross_machine_reference: a profile selects another machine's resource", (t) => {
  t.same(codes(state({ resources: [resource('tool', 'mac-b')], profiles: [profile('p1', 'mac-a', ['tool'])] })), [
    ['cross_machine_reference', ['agent:p1', 'resource:tool']],
  ]);
  t.same(
    codes(state({ resources: [resource('tool', 'mac-a'), resource('web', 'huabu')], profiles: [profile('p1', 'mac-a', ['tool', 'web'])] })),
    [],
    'near miss: its own machine and the host',
  );
  t.same(
    codes(state({ resources: [resource('req', 'mac-b')], requiredResourceIds: ['req'] })),
    [['cross_machine_reference', ['provider:huabu', 'resource:req']]],
    'a required default held by a machine',
  );
  t.end();
});

t.test('alias_collision: two profiles share an alias ignoring case', (t) => {
  t.same(codes(state({ profiles: [profile('p1', 'mac-a', [], 'Reviewer'), profile('p2', 'mac-b', [], 'reviewer')] })), [
    ['alias_collision', ['agent:p1', 'agent:p2']],
  ]);
  t.same(codes(state({ profiles: [profile('p1', 'mac-a', [], 'Reviewer'), profile('p2', 'mac-b', [], 'Reviewer 2')] })), [], 'near miss');
  t.end();
});

t.test('missing_required_resource: a required default is not registered', (t) => {
  t.same(codes(state({ requiredResourceIds: ['huabu-access'] })), [
    ['missing_required_resource', ['provider:huabu', 'resource:huabu-access']],
  ]);
  t.same(
    codes(state({ resources: [resource('huabu-access', 'huabu')], requiredResourceIds: ['huabu-access'] })),
    [],
    'near miss: registered by the host',
  );
  t.end();
});

t.test('alias_shadows_component: an alias equal to a resource or profile ID (warning)', (t) => {
  const snapshot = buildSnapshot(
    state({
      resources: [resource('web-search', 'huabu')],
      profiles: [profile('p1', 'mac-a', [], 'Web-Search'), profile('p2', 'mac-a', [], 'p1')],
    }),
  );
  t.same(
    snapshot.diagnostics.map((d) => [d.severity, d.code, d.components]),
    [
      ['warning', 'alias_shadows_component', ['agent:p1', 'agent:p2']],
      ['warning', 'alias_shadows_component', ['agent:p1', 'resource:web-search']],
    ],
  );
  t.same(
    codes(state({ resources: [resource('web-search', 'huabu')], profiles: [profile('p1', 'mac-a', [], 'Web search bot')] })),
    [],
    'near miss',
  );
  t.end();
});

t.test('unknown_variable: instructions name a $VARIABLE outside the runtime set (warning)', (t) => {
  const snapshot = buildSnapshot(state({ resources: [resource('tool', 'huabu', 'Tool', 'cd $HOME && curl ${HUABU_RFS_URLS}/x')] }));
  t.same(
    snapshot.diagnostics.map((d) => [d.severity, d.code, d.components]),
    [
      ['warning', 'unknown_variable', ['resource:tool']],
      ['warning', 'unknown_variable', ['resource:tool']],
    ],
  );
  t.match(snapshot.diagnostics[0]!.message, /\$HOME/);
  const fine =
    'Read $HUABU_RFS_URL/resources (or over MCP at $HUABU_MCP_URL) with $AGENTLET_TOKEN in ${AGENT_RESOURCE_DIR}; thread $HUABU_THREAD_ID, grant $HUABU_RESOURCE_GRANT. Costs $5. Set $foo to your name; \\$LITERAL; pid $$';
  t.same(
    codes(state({ resources: [resource('tool', 'huabu', 'Tool', fine)] })),
    [],
    'near miss: runtime variables, money, lower-case placeholders, escapes',
  );
  t.same(unknownVariables(fine), []);
  t.same(
    unknownVariables('$huabu_rfs_url and $Agentlet_Token and $my_var and $X1 and ${PATH:-/bin}'),
    ['Agentlet_Token', 'PATH', 'X1', 'huabu_rfs_url'],
    'wrong-case runtime names are reported',
  );
  t.end();
});

t.test('snapshot: components, edges and aliases as the contract describes', (t) => {
  const snapshot = buildSnapshot(
    state({
      resources: [resource('huabu-access', 'huabu', 'Huabu access'), resource('git', 'mac-a', 'Git')],
      profiles: [profile('p1', 'mac-a', ['git'], 'Reviewer')],
      machines: [{ machineId: 'mac-a' }, { machineId: 'mac-old', revokedAt: '2026-01-01T00:00:00.000Z' }],
      requiredResourceIds: ['huabu-access'],
    }),
  );
  t.same(
    snapshot.components.map((c) => [c.id, c.kind, c.name, c.tags, c.aliases]),
    [
      ['agent:p1', 'agent', 'Reviewer', ['launch:acp-command', 'machine:mac-a'], ['Reviewer']],
      ['provider:huabu', 'provider', 'huabu', ['host'], []],
      ['provider:mac-a', 'provider', 'mac-a', ['machine'], []],
      ['provider:mac-old', 'provider', 'mac-old', ['machine', 'revoked'], []],
      ['resource:git', 'resource', 'Git', ['provider:mac-a'], []],
      ['resource:huabu-access', 'resource', 'Huabu access', ['provider:huabu', 'required'], []],
    ],
  );
  t.same(snapshot.edges, [
    { kind: 'placed-on', from: 'agent:p1', to: 'provider:mac-a' },
    { kind: 'selects', from: 'agent:p1', to: 'resource:git' },
    { kind: 'publishes', from: 'provider:huabu', to: 'resource:huabu-access' },
    { kind: 'requires', from: 'provider:huabu', to: 'resource:huabu-access' },
    { kind: 'publishes', from: 'provider:mac-a', to: 'resource:git' },
  ]);
  t.same(snapshot.aliases, [{ alias: 'Reviewer', component: 'agent:p1' }]);
  t.same(snapshot.diagnostics, []);
  t.match(snapshot.digest, /^[0-9a-f]{64}$/);
  t.end();
});

t.test('snapshot: byte-identical whatever the insertion order', (t) => {
  const input = state({
    resources: [resource('b', 'huabu', 'Same'), resource('a', 'mac-a', 'same'), resource('c', 'mac-b', 'C', '$HOME $PATH')],
    profiles: [
      profile('p2', 'mac-b', ['c', 'gone', 'b'], 'Twin'),
      profile('p1', 'mac-a', ['a', 'b'], 'twin'),
      profile('p3', 'mac-a', [], 'c'),
    ],
    machines: [{ machineId: 'mac-b' }, { machineId: 'mac-a' }],
    requiredResourceIds: ['b', 'missing'],
  });
  const reversed: SnapshotInput = {
    resources: [...input.resources].reverse(),
    profiles: [...input.profiles].reverse().map((p) => ({ ...p, resourceIds: [...p.resourceIds].reverse() })),
    machines: [...input.machines].reverse(),
    requiredResourceIds: input.requiredResourceIds,
  };
  const first = serializeSnapshot(buildSnapshot(input));
  t.equal(serializeSnapshot(buildSnapshot(reversed)), first);
  t.equal(serializeSnapshot(buildSnapshot(input)), first, 'and on a second build');
  for (const kind of ['resource', 'agent', 'provider'] as const) {
    t.equal(
      serializeSnapshot(narrowSnapshot(buildSnapshot(reversed), kind)),
      serializeSnapshot(narrowSnapshot(buildSnapshot(input), kind)),
      `?kind=${kind}`,
    );
  }
  t.equal(snapshotToDot(buildSnapshot(reversed)), snapshotToDot(buildSnapshot(input)), 'and the DOT');
  t.end();
});

t.test('digest: changes when anything visible changes, and only then', (t) => {
  const base = state({
    resources: [resource('tool', 'huabu', 'Tool'), resource('git', 'mac-a', 'Git')],
    profiles: [profile('p1', 'mac-a', ['git', 'tool'], 'Reviewer')],
    machines: [{ machineId: 'mac-a' }],
    requiredResourceIds: ['tool'],
  });
  const digest = (input: SnapshotInput) => buildSnapshot(input).digest;
  const d0 = digest(base);
  const p1 = base.profiles[0]!;
  const changes: Record<string, SnapshotInput> = {
    'a resource name': { ...base, resources: [resource('tool', 'huabu', 'Tool 2'), base.resources[1]!] },
    'a resource description': { ...base, resources: [{ ...base.resources[0]!, description: 'Other.' }, base.resources[1]!] },
    'a new resource': { ...base, resources: [...base.resources, resource('new', 'huabu')] },
    'a withdrawn resource': { ...base, resources: [base.resources[0]!] },
    'a provider': { ...base, resources: [resource('tool', 'mac-a', 'Tool'), base.resources[1]!] },
    'a selection': { ...base, profiles: [{ ...p1, resourceIds: ['git'] }] },
    'an alias': { ...base, profiles: [{ ...p1, alias: 'Writer' }] },
    'a machine placement': { ...base, profiles: [{ ...p1, agentletId: 'mac-b', resourceIds: [] }] },
    'a working directory (in the description)': { ...base, profiles: [{ ...p1, workingDirPath: '/elsewhere' }] },
    'an enrolled machine': { ...base, machines: [...base.machines, { machineId: 'mac-z' }] },
    'a revocation': { ...base, machines: [{ machineId: 'mac-a', revokedAt: '2026-01-01T00:00:00.000Z' }] },
    'the required defaults': { ...base, requiredResourceIds: [] },
    'a diagnostic only (instructions gain $HOME)': {
      ...base,
      resources: [resource('tool', 'huabu', 'Tool', 'Use $HOME.'), base.resources[1]!],
    },
  };
  for (const [what, input] of Object.entries(changes)) t.not(digest(input), d0, `changes with ${what}`);
  const same: Record<string, SnapshotInput> = {
    'other input order': { ...base, resources: [...base.resources].reverse() },
    'instructions that raise nothing new': {
      ...base,
      resources: [resource('tool', 'huabu', 'Tool', 'Other words, $HUABU_RFS_URL.'), base.resources[1]!],
    },
    'a launch command (not shown)': { ...base, profiles: [{ ...p1, launch: { kind: 'acp-command', command: 'other-agent' } }] },
    'customData (not shown)': { ...base, profiles: [{ ...p1, customData: { color: 'teal' } }] },
    'an enrollment date (not shown)': {
      ...base,
      machines: [{ machineId: 'mac-a', enrolledAt: '2026-02-02T00:00:00.000Z' } as { machineId: string }],
    },
  };
  for (const [what, input] of Object.entries(same)) t.equal(digest(input), d0, `stays with ${what}`);
  t.end();
});

t.test('narrowing by kind keeps the components of that kind and what touches them', (t) => {
  const snapshot = buildSnapshot(
    state({
      resources: [resource('tool', 'huabu', 'Tool'), resource('tool-2', 'mac-a', 'tool')],
      profiles: [profile('p1', 'mac-a', ['tool'], 'Reviewer'), profile('p2', 'mac-b', [], 'reviewer')],
    }),
  );
  const agents = narrowSnapshot(snapshot, 'agent');
  t.same(
    agents.components.map((c) => c.id),
    ['agent:p1', 'agent:p2'],
  );
  t.same(
    agents.edges.map((e) => e.kind),
    ['placed-on', 'selects', 'placed-on'],
  );
  t.same(
    agents.aliases.map((a) => a.component),
    ['agent:p1', 'agent:p2'],
  );
  t.same(
    agents.diagnostics.map((d) => d.code),
    ['alias_collision'],
  );
  t.equal(agents.digest, snapshot.digest, "the digest stays the whole snapshot's");
  const resources = narrowSnapshot(snapshot, 'resource');
  t.same(
    resources.diagnostics.map((d) => d.code),
    ['duplicate_resource_name'],
  );
  t.same(resources.aliases, []);
  t.same(
    resources.edges.map((e) => `${e.from} ${e.kind} ${e.to}`),
    ['agent:p1 selects resource:tool', 'provider:huabu publishes resource:tool', 'provider:mac-a publishes resource:tool-2'],
  );
  const dot = snapshotToDot(resources, snapshot);
  t.match(dot, /"agent:p1"/, 'the DOT of a view draws the other end of its edges');
  t.end();
});

t.test('diagnosticsFor: the errors that stand in the way of one agent and one effective set', (t) => {
  const base = state({
    resources: [
      resource('huabu-access', 'huabu', 'Huabu access'),
      resource('search', 'huabu', 'Search'),
      resource('search-local', 'mac-a', 'search'),
      resource('search-b', 'mac-b', 'Search'),
      resource('git', 'mac-a', 'Git'),
      resource('other', 'mac-b', 'Other'),
    ],
    profiles: [profile('p1', 'mac-a', ['git'], 'Reviewer'), profile('p9', 'mac-c', [], 'Writer')],
    requiredResourceIds: ['huabu-access'],
  });
  const forSelection = (p: AgentProfile, effectiveResourceIds: string[], input = base) =>
    diagnosticsFor(input, { profile: p, effectiveResourceIds }).map((d) => [d.code, d.components]);
  const p1 = base.profiles[0]!;
  t.same(forSelection(p1, ['huabu-access', 'git']), [], 'a clean selection has no error');
  t.same(
    forSelection(p1, ['huabu-access', 'git', 'search']),
    [['duplicate_resource_name', ['resource:search', 'resource:search-local']]],
    "a selected resource whose namesake the agent also sees (its machine's)",
  );
  const p9 = base.profiles[1]!;
  t.same(forSelection(p9, ['huabu-access', 'search']), [], 'near miss: on mac-c the namesakes of mac-a and mac-b are out of sight');
  t.same(forSelection(p1, ['huabu-access', 'gone', 'other']), [
    ['cross_machine_reference', ['agent:p1', 'resource:other']],
    ['unresolved_reference', ['agent:p1', 'resource:gone']],
  ]);
  t.same(
    forSelection(p1, ['huabu-access', 'git'], { ...base, requiredResourceIds: ['huabu-access', 'local-resource-management'] }),
    [],
    "near miss: an unregistered required default outside this effective set is not this selection's error",
  );
  t.same(
    forSelection(p1, ['huabu-access', 'local-resource-management', 'git'], {
      ...base,
      requiredResourceIds: ['huabu-access', 'local-resource-management'],
    }),
    [['missing_required_resource', ['provider:huabu', 'resource:local-resource-management']]],
  );
  t.same(
    forSelection({ ...p1, alias: 'WRITER' }, ['huabu-access']),
    [['alias_collision', ['agent:p1', 'agent:p9']]],
    'another profile holds the alias',
  );
  t.same(forSelection(p9, ['huabu-access']), [], 'near miss: its own alias');
  const warnOnly = { ...base, resources: [...base.resources, resource('odd', 'huabu', 'Odd', 'Use $HOME')] };
  t.same(forSelection(p1, ['huabu-access', 'odd'], warnOnly), [], 'warnings never stop a launch');

  const snapshot = buildSnapshot({ ...base, profiles: [{ ...p1, resourceIds: ['git', 'search'] }] });
  const inSnapshot = diagnosticsFor(base, { profile: p1, effectiveResourceIds: ['huabu-access', 'git', 'search'] });
  for (const d of inSnapshot)
    t.ok(
      snapshot.diagnostics.some((s) => JSON.stringify(s) === JSON.stringify(d)),
      `${d.code} is the snapshot's own diagnostic`,
    );

  // A kept index (what the projection holds per store state) answers every selection as the records do.
  const index = diagnosticsIndex(base);
  const selections: [AgentProfile, string[]][] = [
    [p1, ['huabu-access', 'git']],
    [p1, ['huabu-access', 'git', 'search']],
    [p9, ['huabu-access', 'search']],
    [p1, ['huabu-access', 'gone', 'other']],
    [{ ...p1, alias: 'WRITER' }, ['huabu-access']],
    [{ ...p1, agentletId: 'mac-b' }, ['huabu-access', 'search', 'git', 'search']],
  ];
  for (const [profile, effectiveResourceIds] of selections) {
    t.same(
      diagnosticsFor(index, { profile, effectiveResourceIds }),
      diagnosticsFor(base, { profile, effectiveResourceIds }),
      `index: ${profile.id} ${effectiveResourceIds.join(',')}`,
    );
  }
  t.end();
});

t.test('selectionConflicts: what a profile save refuses', (t) => {
  const input = {
    resources: [
      resource('huabu-access', 'huabu', 'Access'),
      resource('access-copy', 'mac-a', 'access'),
      resource('a', 'huabu', 'Tool'),
      resource('b', 'mac-a', 'TOOL'),
      resource('c', 'mac-b', 'Tool'),
    ],
    requiredResourceIds: ['huabu-access'],
  };
  const who = { id: 'p1', alias: 'Reviewer', agentletId: 'mac-a' };
  t.same(
    selectionConflicts(input, who, ['a', 'b']).map((d) => d.components),
    [['resource:a', 'resource:b']],
    'two selected namesakes',
  );
  t.same(
    selectionConflicts(input, who, ['access-copy']).map((d) => d.components),
    [['resource:access-copy', 'resource:huabu-access']],
    'a selected namesake of a required default',
  );
  t.same(selectionConflicts(input, who, ['a']), [], 'near miss: only one of the namesakes is selected');
  t.same(selectionConflicts(input, { ...who, agentletId: 'mac-b' }, ['a', 'c']).length, 1);
  t.same(selectionConflicts(input, who, []), [], 'nothing selected');
  t.end();
});

// What a user reads in the snapshot and in a refused launch or profile save: every diagnostic's text names
// what is wrong and whom it concerns, so each message is pinned whole.

const RUNTIME_LIST = '$AGENTLET_TOKEN, $AGENT_RESOURCE_DIR, $HUABU_MCP_URL, $HUABU_RESOURCE_GRANT, $HUABU_RFS_URL, $HUABU_THREAD_ID';
const diag = (severity: Diagnostic['severity'], code: Diagnostic['code'], message: string, components: string[]): Diagnostic => ({
  severity,
  code,
  message,
  components,
});

t.test('registry diagnostics: each names what is wrong and whom, errors first, in one order whatever the input order', (t) => {
  // The records in no particular order (the snapshot sorts its input; the diagnostics must not rely on it).
  const input = {
    resources: [
      resource('h2', 'huabu', 'Tool'),
      resource('h1', 'huabu', ' tool'),
      resource('m1', 'mac-a', 'TOOL'),
      resource('req-m', 'mac-b', 'Req'),
      resource('var', 'huabu', 'Var', 'cd $HOME; $PATH'),
      resource('hosted-m', 'mac-a', 'Hosted m'),
    ],
    profiles: [
      profile('p2', 'mac-a', ['gone', 'req-m', 'req-missing'], 'Twin'),
      profile('p1', 'mac-b', ['m1'], 'twin'),
      profile('p3', 'mac-a', [], 'H1'),
      profile('p4', 'mac-a', [], 'P4'),
      profile('p50', 'mac-a', ['aa-gone']),
      profile('p5', 'mac-a', ['zz-gone']),
    ],
    machines: [],
    requiredResourceIds: ['req-missing', 'req-m'],
    hostedCapabilityIds: ['hosted-m', 'hosted-none', 'h1'],
  };
  const expected = [
    diag('error', 'alias_collision', 'Agents p1, p2 share the alias "twin" (aliases ignore case); the alias no longer names one agent.', [
      'agent:p1',
      'agent:p2',
    ]),
    diag('error', 'cross_machine_reference', 'Agent p1 ("twin") on mac-b selects m1, which belongs to machine mac-a; it cannot see it.', [
      'agent:p1',
      'resource:m1',
    ]),
    diag(
      'error',
      'cross_machine_reference',
      'Required default req-m belongs to machine mac-b, not huabu; agents on other machines cannot see it.',
      ['provider:huabu', 'resource:req-m'],
    ),
    diag(
      'error',
      'duplicate_resource_name',
      'Resources h1, h2 share the name "tool" (ignoring case and surrounding space); every agent sees them (all are huabu\'s).',
      ['resource:h1', 'resource:h2'],
    ),
    diag(
      'error',
      'duplicate_resource_name',
      'Resources h1, h2, m1 share the name "tool" (ignoring case and surrounding space); an agent on mac-a sees them together.',
      ['resource:h1', 'resource:h2', 'resource:m1'],
    ),
    diag('error', 'missing_required_resource', 'Required default req-missing is not registered; every launch needs it.', [
      'provider:huabu',
      'resource:req-missing',
    ]),
    diag('error', 'unresolved_reference', 'Agent p2 ("Twin") selects gone, which no provider has registered.', [
      'agent:p2',
      'resource:gone',
    ]),
    // p5 before p50: components compare one by one (agent:p5 < agent:p50), not as one run-together string.
    diag('error', 'unresolved_reference', 'Agent p5 ("Alias of p5") selects zz-gone, which no provider has registered.', [
      'agent:p5',
      'resource:zz-gone',
    ]),
    diag('error', 'unresolved_reference', 'Agent p50 ("Alias of p50") selects aa-gone, which no provider has registered.', [
      'agent:p50',
      'resource:aa-gone',
    ]),
    diag(
      'warning',
      'alias_shadows_component',
      'The alias "H1" of agent p3 equals the ID of resource:h1; a reference by that name is ambiguous.',
      ['agent:p3', 'resource:h1'],
    ),
    diag(
      'warning',
      'unknown_variable',
      `The instructions of var name $HOME, which is not a runtime variable (${RUNTIME_LIST}); an agent will not find it set.`,
      ['resource:var'],
    ),
    diag(
      'warning',
      'unknown_variable',
      `The instructions of var name $PATH, which is not a runtime variable (${RUNTIME_LIST}); an agent will not find it set.`,
      ['resource:var'],
    ),
    diag(
      'warning',
      'unresolved_hosted_capability',
      "The operator hosts capability hosted-m, but its record belongs to machine mac-a, and only huabu's records can be hosted; invoking it answers 404.",
      ['resource:hosted-m'],
    ),
    diag(
      'warning',
      'unresolved_hosted_capability',
      'The operator hosts capability hosted-none, but no record of that ID is registered; invoking it answers 404.',
      ['resource:hosted-none'],
    ),
  ];
  t.strictSame(registryDiagnostics(input), expected);
  const reversed = {
    ...input,
    resources: [...input.resources].reverse(),
    profiles: [...input.profiles].reverse(),
    requiredResourceIds: [...input.requiredResourceIds].reverse(),
  };
  t.strictSame(registryDiagnostics(reversed), expected, 'the same list from the records in reverse order');
  // p4's alias is its own ID: nothing else answers to that name, so nothing is ambiguous.
  t.strictSame(
    registryDiagnostics({ ...input, hostedCapabilityIds: undefined }).filter((d) => d.code === 'unresolved_hosted_capability'),
    [],
    'no hosted capabilities, no such warning',
  );
  t.end();
});

t.test("diagnosticsFor: the errors a refused launch names, judged from the agent's machine", (t) => {
  const input = {
    resources: [
      resource('s2', 'huabu', 'Search'),
      resource('s1', 'huabu', 'search'),
      resource('sm', 'mac-a', 'SEARCH'),
      resource('req-m', 'mac-b', 'Req'),
      resource('other', 'mac-b', 'Other'),
      resource('t2', 'huabu', 'tool'),
      resource('t1', 'huabu', 'Tool'),
    ],
    profiles: [profile('p2', 'mac-c', [], 'Writer'), profile('p3', 'mac-d', [], 'WRITER')],
    machines: [],
    requiredResourceIds: ['req-missing', 'req-m'],
  };
  const p1 = { id: 'p1', alias: 'writer', agentletId: 'mac-a' };
  const effective = ['req-missing', 'req-m', 'gone', 'other', 's2', 't1', 'gone'];
  const expected = [
    diag(
      'error',
      'alias_collision',
      'Agents p1, p2, p3 share the alias "writer" (aliases ignore case); the alias no longer names one agent.',
      ['agent:p1', 'agent:p2', 'agent:p3'],
    ),
    diag(
      'error',
      'cross_machine_reference',
      'Agent p1 ("writer") on mac-a selects other, which belongs to machine mac-b; it cannot see it.',
      ['agent:p1', 'resource:other'],
    ),
    diag(
      'error',
      'cross_machine_reference',
      'Required default req-m belongs to machine mac-b, not huabu; agents on other machines cannot see it.',
      ['provider:huabu', 'resource:req-m'],
    ),
    diag(
      'error',
      'duplicate_resource_name',
      'Resources s1, s2, sm share the name "search" (ignoring case and surrounding space); an agent on mac-a sees them together.',
      ['resource:s1', 'resource:s2', 'resource:sm'],
    ),
    diag(
      'error',
      'duplicate_resource_name',
      'Resources t1, t2 share the name "Tool" (ignoring case and surrounding space); every agent sees them (all are huabu\'s).',
      ['resource:t1', 'resource:t2'],
    ),
    diag('error', 'missing_required_resource', 'Required default req-missing is not registered; every launch needs it.', [
      'provider:huabu',
      'resource:req-missing',
    ]),
    diag('error', 'unresolved_reference', 'Agent p1 ("writer") selects gone, which no provider has registered.', [
      'agent:p1',
      'resource:gone',
    ]),
  ];
  t.strictSame(diagnosticsFor(input, { profile: p1, effectiveResourceIds: effective }), expected);
  t.strictSame(
    diagnosticsFor(diagnosticsIndex(input), { profile: p1, effectiveResourceIds: [...effective].reverse() }),
    expected,
    'from a kept index, in any order',
  );
  // Two host records share the name of `other`, which this agent cannot see: its refusal names `other` as
  // another machine's, not as a clash with namesakes it would never see together.
  const namesakes = { ...input, resources: [...input.resources, resource('o1', 'huabu', 'other'), resource('o2', 'huabu', 'OTHER')] };
  t.strictSame(diagnosticsFor(namesakes, { profile: p1, effectiveResourceIds: ['other'] }), [expected[0], expected[1]]);
  // The required default of machine mac-b is no error for an agent on mac-b, which sees it.
  t.strictSame(
    diagnosticsFor(input, { profile: { ...p1, alias: 'Solo', agentletId: 'mac-b' }, effectiveResourceIds: ['req-m', 'other'] }),
    [],
  );

  let refusal: unknown;
  try {
    assertNoErrors(
      [...expected.slice(1, 2), diag('warning', 'unknown_variable', 'Not an error.', ['resource:x']), ...expected.slice(6)],
      'The launch is refused',
      { field: '/resourceIds' },
    );
  } catch (err) {
    refusal = err;
  }
  t.match(refusal, {
    code: 'capability_diagnostics_failed',
    statusCode: 422,
    message:
      'The launch is refused: Agent p1 ("writer") on mac-a selects other, which belongs to machine mac-b; it cannot see it. Agent p1 ("writer") selects gone, which no provider has registered.',
  });
  t.strictSame(
    (refusal as { details: unknown }).details,
    { field: '/resourceIds', diagnostics: [expected[1], expected[6]] },
    "the errors only, beside the caller's details",
  );
  t.doesNotThrow(() => assertNoErrors([diag('warning', 'unknown_variable', 'Not an error.', ['resource:x'])], 'x'), 'warnings alone pass');
  t.end();
});

t.test('DOT escaping: a hostile name cannot inject DOT syntax and survives rendering', async (t) => {
  const hostile = 'evil" ] ; { x -> y [color=red] }\nline two \\N &amp; &#65; back\\slash \\';
  const htmlish = '<b>bold</b>\u2028<i>';
  const snapshot = buildSnapshot(
    state({
      resources: [resource('hostile', 'huabu', hostile), resource('htmlish', 'huabu', htmlish)],
      profiles: [profile('p1', 'mac-a', ['hostile'], '<i>agent</i> \\')],
    }),
  );
  const dot = snapshotToDot(snapshot);
  t.notMatch(dot, /label = </, 'no label is emitted as HTML-like');
  t.equal(escapeDotLabel('a\\b'), 'a\\\\b');
  t.equal(escapeDotLabel(' <x>\n<y>'), ' &lt;x>\\n<y>');

  const viz = await instance();
  const result = viz.render(dot, { format: 'svg' });
  t.equal(result.status, 'success', JSON.stringify(result.errors));
  const svg = result.output!;
  t.equal(svg.match(/class="node"/g)?.length, snapshot.components.length, 'Graphviz draws exactly the components: no injected node');
  t.equal(svg.match(/class="edge"/g)?.length, snapshot.edges.length, 'and exactly the edges');
  const texts = (id: string) => {
    const group = svg.split('<g id=').find((g) => g.includes(`<title>${id}</title>`))!;
    return [...group.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => decodeXml(m[1]!));
  };
  t.same(
    texts('resource:hostile'),
    ['evil" ] ; { x -> y [color=red] }', 'line two \\N &amp; &#65; back\\slash \\', 'hostile'],
    'the name survives, line by line, backslashes included',
  );
  t.same(texts('resource:htmlish'), ['<b>bold</b>\u2028<i>', 'htmlish'], 'an HTML-looking name is shown as text');
  t.same(texts('agent:p1'), ['<i>agent</i> \\', 'p1']);
});

t.test('the DOT of the test fixture', async (t) => {
  // The state test/capabilities/http.test.ts builds over HTTP, with fixed profile IDs.
  const dot = snapshotToDot(
    buildSnapshot(
      state({
        resources: [
          resource('huabu-access', 'huabu', 'Huabu access'),
          resource('local-resource-management', 'huabu', 'Local resource management'),
          resource('web-search', 'huabu', 'Web search'),
          resource('local-git', 'mac-a', 'Git'),
          resource('other-git', 'mac-b', 'Git', 'Run git in $HOME.'),
        ],
        profiles: [
          { ...profile('prf-reviewer', 'mac-a', ['web-search', 'local-git'], 'Reviewer'), workingDirPath: '/home/me/site' },
          { ...profile('prf-writer', 'mac-b', ['other-git'], 'Writer'), workingDirPath: '/home/me/site' },
        ],
        machines: [{ machineId: 'mac-a' }, { machineId: 'mac-b' }],
        requiredResourceIds: ['huabu-access', 'local-resource-management'],
      }),
    ),
  );
  if (process.env.TAP_SNAPSHOT === '1') {
    mkdirSync(path.dirname(FIXTURE_DOT), { recursive: true });
    writeFileSync(FIXTURE_DOT, dot);
  }
  t.equal(dot, readFileSync(FIXTURE_DOT, 'utf8'), `the DOT equals ${FIXTURE_DOT}`);

  // What the DOT means, read back by Graphviz itself: every node in its cluster, every edge with its kind.
  const graph = (await instance()).renderJSON(dot) as {
    objects: { _gvid: number; name: string; label?: string; color?: string; nodes?: number[] }[];
    edges: { tail: number; head: number; label?: string; style?: string }[];
  };
  const byId = new Map(graph.objects.map((o) => [o._gvid, o]));
  const clusters = Object.fromEntries(
    graph.objects.filter((o) => o.name.startsWith('cluster_')).map((c) => [c.label, (c.nodes ?? []).map((n) => byId.get(n)!.name).sort()]),
  );
  t.same(clusters, {
    Providers: ['provider:huabu', 'provider:mac-a', 'provider:mac-b'],
    Resources: [
      'resource:huabu-access',
      'resource:local-git',
      'resource:local-resource-management',
      'resource:other-git',
      'resource:web-search',
    ],
    Agents: ['agent:prf-reviewer', 'agent:prf-writer'],
  });
  const node = (name: string) => graph.objects.find((o) => o.name === name)!;
  t.equal(node('resource:local-git').label, 'Git\\nlocal-git', 'a resource shows its name and its ID');
  t.equal(node('agent:prf-reviewer').label, 'Reviewer\\nprf-reviewer', 'an agent shows its alias and its ID');
  t.equal(node('resource:other-git').color, 'orange', 'the resource with a warning ($HOME) is marked');
  t.equal(node('resource:web-search').color, undefined, 'a clean resource is not');
  const edges = graph.edges.map((e) => `${byId.get(e.tail)!.name} -${e.label}-> ${byId.get(e.head)!.name}`).sort();
  t.same(edges, [
    'agent:prf-reviewer -placed-on-> provider:mac-a',
    'agent:prf-reviewer -selects-> resource:local-git',
    'agent:prf-reviewer -selects-> resource:web-search',
    'agent:prf-writer -placed-on-> provider:mac-b',
    'agent:prf-writer -selects-> resource:other-git',
    'provider:huabu -publishes-> resource:huabu-access',
    'provider:huabu -publishes-> resource:local-resource-management',
    'provider:huabu -publishes-> resource:web-search',
    'provider:huabu -requires-> resource:huabu-access',
    'provider:huabu -requires-> resource:local-resource-management',
    'provider:mac-a -publishes-> resource:local-git',
    'provider:mac-b -publishes-> resource:other-git',
  ]);
  t.same(
    graph.edges.filter((e) => e.label === 'requires').map((e) => e.style),
    ['dashed', 'dashed'],
    'required defaults are drawn dashed',
  );
});

function decodeXml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
