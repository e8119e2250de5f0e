// Diagnostics of the capability projection: the whole-registry list the snapshot shows, and the errors
// that stand in the way of one agent working with one effective set of resources (launch and profile
// saves use these to fail closed). Pure; the caller supplies the records.
import { AppError } from '../errors.js';
import { aliasKey, profileView } from '../profiles/profile-rules.js';
import { visibleOnMachine } from '../registry/visibility.js';
import type { Diagnostic, DiagnosticCode } from '../schemas/capability.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import type { AgentProfile } from '../schemas/profile.js';
import type { StoredResource } from '../schemas/resource.js';
import { guidanceOf, labelOf } from '../registry/resource-versions.js';
import { nameKey, RUNTIME_VARIABLES, unknownVariables } from './rules.js';

/**
 * A stored record of either version. The v1 field names stay optional on v2 records so that callers that
 * build inputs by hand (tests, benchmarks) may spread v1 fields over any record; the projection reads
 * records only through src/registry/resource-versions.ts.
 */
type AgentResource = StoredResource & { description?: string; instructions?: string };

/** What a snapshot is built from: the stores' records and the host's required default IDs. */
export interface SnapshotInput {
  resources: readonly AgentResource[];
  profiles: readonly AgentProfile[];
  machines: readonly { machineId: string; revokedAt?: string | undefined }[];
  requiredResourceIds: readonly string[];
  /** The operator's hosted capability IDs (HOSTED_CAPABILITIES_FILE); absent: none. */
  hostedCapabilityIds?: readonly string[];
  /** CONTEXT_BUDGET_TOKENS: an agent holding more tokens from its start is warned about; absent or 0: no bound. */
  contextBudgetTokens?: number;
}

/** The agent a selection is for: its ID (`agent:<id>`), alias and machine. */
export type SelectionProfile = Pick<AgentProfile, 'id' | 'alias' | 'agentletId'>;

export const HOST_COMPONENT = `provider:${HOST_PROVIDER}`;
export const resourceComponent = (id: string) => `resource:${id}`;
export const agentComponent = (id: string) => `agent:${id}`;
export const providerComponent = (id: string) => `provider:${id}`;

const SEVERITY: Record<DiagnosticCode, Diagnostic['severity']> = {
  duplicate_resource_name: 'error',
  unresolved_reference: 'error',
  cross_machine_reference: 'error',
  alias_collision: 'error',
  missing_required_resource: 'error',
  alias_shadows_component: 'warning',
  unknown_variable: 'warning',
  unresolved_hosted_capability: 'warning',
  context_budget_exceeded: 'warning',
};

export const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function diagnostic(code: DiagnosticCode, message: string, components: Iterable<string>): Diagnostic {
  return { severity: SEVERITY[code], code, message, components: [...new Set(components)].sort(byCodeUnits) };
}

/** Errors first, then code, components, message: a total order, so equal states list equal bytes. */
export function sortDiagnostics(list: Diagnostic[]): Diagnostic[] {
  const key = (d: Diagnostic) => `${d.severity === 'error' ? 0 : 1}\u0000${d.code}\u0000${d.components.join('\u0001')}\u0000${d.message}`;
  return list
    .map((d) => [key(d), d] as const)
    .sort((a, b) => byCodeUnits(a[0], b[0]))
    .map(([, d]) => d);
}

/**
 * Same-named resources that an agent sees together. `hostOnly` when all are the host's (every agent sees
 * them), else `machine` is the one machine whose agents see them.
 */
function duplicateName(unsorted: readonly AgentResource[], machine: string | undefined): Diagnostic {
  const group = [...unsorted].sort((a, b) => byCodeUnits(a.id, b.id));
  const ids = group.map((r) => r.id);
  const where = machine === undefined ? `every agent sees them (all are ${HOST_PROVIDER}'s)` : `an agent on ${machine} sees them together`;
  return diagnostic(
    'duplicate_resource_name',
    `Resources ${ids.join(', ')} share the name ${JSON.stringify(labelOf(group[0]!).trim())} (ignoring case and surrounding space); ${where}.`,
    ids.map(resourceComponent),
  );
}

function unresolvedReference(profile: SelectionProfile, id: string): Diagnostic {
  return diagnostic(
    'unresolved_reference',
    `Agent ${profile.id} (${JSON.stringify(profile.alias)}) selects ${id}, which no provider has registered.`,
    [agentComponent(profile.id), resourceComponent(id)],
  );
}

function crossMachineReference(profile: SelectionProfile, record: AgentResource): Diagnostic {
  return diagnostic(
    'cross_machine_reference',
    `Agent ${profile.id} (${JSON.stringify(profile.alias)}) on ${profile.agentletId} selects ${record.id}, which belongs to machine ${record.provider}; it cannot see it.`,
    [agentComponent(profile.id), resourceComponent(record.id)],
  );
}

function missingRequired(id: string): Diagnostic {
  return diagnostic('missing_required_resource', `Required default ${id} is not registered; every launch needs it.`, [
    HOST_COMPONENT,
    resourceComponent(id),
  ]);
}

function requiredOnMachine(record: AgentResource): Diagnostic {
  return diagnostic(
    'cross_machine_reference',
    `Required default ${record.id} belongs to machine ${record.provider}, not ${HOST_PROVIDER}; agents on other machines cannot see it.`,
    [HOST_COMPONENT, resourceComponent(record.id)],
  );
}

function aliasCollision(unsorted: readonly SelectionProfile[]): Diagnostic {
  const group = [...unsorted].sort((a, b) => byCodeUnits(a.id, b.id));
  const ids = group.map((p) => p.id);
  return diagnostic(
    'alias_collision',
    `Agents ${ids.join(', ')} share the alias ${JSON.stringify(group[0]!.alias)} (aliases ignore case); the alias no longer names one agent.`,
    ids.map(agentComponent),
  );
}

/** Groups of same-named resources, by name key; only groups of two or more. */
function nameGroups(resources: readonly AgentResource[]): AgentResource[][] {
  const groups = new Map<string, AgentResource[]>();
  for (const r of resources) {
    const key = nameKey(labelOf(r));
    const group = groups.get(key);
    if (group) group.push(r);
    else groups.set(key, [r]);
  }
  return [...groups.values()].filter((g) => g.length > 1);
}

/** The profiles the snapshot shows, as the API shows them (manifest-backed select nothing). */
export function profileViews(profiles: readonly AgentProfile[]): AgentProfile[] {
  return profiles.map(profileView);
}

/** Every diagnostic of the whole registry, sorted. */
export function registryDiagnostics(input: SnapshotInput): Diagnostic[] {
  const out: Diagnostic[] = [];
  const resources = new Map(input.resources.map((r) => [r.id, r]));
  const required = new Set(input.requiredResourceIds);
  const profiles = profileViews(input.profiles);

  for (const group of nameGroups(input.resources)) {
    const host = group.filter((r) => r.provider === HOST_PROVIDER);
    if (host.length > 1) out.push(duplicateName(host, undefined));
    const machines = [...new Set(group.filter((r) => r.provider !== HOST_PROVIDER).map((r) => r.provider))];
    for (const machine of machines) {
      const seen = group.filter((r) => visibleOnMachine(r.provider, machine));
      if (seen.length > 1) out.push(duplicateName(seen, machine));
    }
  }

  for (const id of input.requiredResourceIds) {
    const record = resources.get(id);
    if (!record) out.push(missingRequired(id));
    else if (record.provider !== HOST_PROVIDER) out.push(requiredOnMachine(record));
  }

  const byAlias = new Map<string, AgentProfile[]>();
  const shadowable = new Map<string, string>();
  for (const r of input.resources) shadowable.set(r.id.toLowerCase(), resourceComponent(r.id));
  for (const p of profiles) shadowable.set(p.id.toLowerCase(), agentComponent(p.id));
  for (const profile of profiles) {
    const key = aliasKey(profile.alias);
    const namesakes = byAlias.get(key);
    if (namesakes) namesakes.push(profile);
    else byAlias.set(key, [profile]);
    // Required defaults are checked once, above; a profile is answerable for what it selects itself.
    for (const id of profile.resourceIds) {
      if (required.has(id)) continue;
      const record = resources.get(id);
      if (!record) out.push(unresolvedReference(profile, id));
      else if (!visibleOnMachine(record.provider, profile.agentletId)) out.push(crossMachineReference(profile, record));
    }
    const shadowed = shadowable.get(profile.alias.trim().toLowerCase());
    if (shadowed !== undefined && shadowed !== agentComponent(profile.id)) {
      out.push(
        diagnostic(
          'alias_shadows_component',
          `The alias ${JSON.stringify(profile.alias)} of agent ${profile.id} equals the ID of ${shadowed}; a reference by that name is ambiguous.`,
          [agentComponent(profile.id), shadowed],
        ),
      );
    }
  }
  for (const group of byAlias.values()) if (group.length > 1) out.push(aliasCollision(group));

  for (const r of input.resources) {
    for (const name of unknownVariables(guidanceOf(r))) {
      out.push(
        diagnostic(
          'unknown_variable',
          `The instructions of ${r.id} name $${name}, which is not a runtime variable (${RUNTIME_VARIABLES.map((v) => `$${v}`).join(', ')}); an agent will not find it set.`,
          [resourceComponent(r.id)],
        ),
      );
    }
  }
  out.push(...hostedCapabilityDiagnostics(resources, input.hostedCapabilityIds ?? []));
  return sortDiagnostics(out);
}

/** An agent whose effective resources' names and descriptions pass the budget: it holds them from its start. */
export function contextBudgetExceeded(profile: SelectionProfile, alwaysLoadedTokens: number, budget: number): Diagnostic {
  return diagnostic(
    'context_budget_exceeded',
    `Agent ${profile.id} (${profile.alias}) holds about ${alwaysLoadedTokens} tokens of resource names and descriptions from its start, more than CONTEXT_BUDGET_TOKENS (${budget}); select fewer resources, or let it find them (find_resources).`,
    [agentComponent(profile.id)],
  );
}

/** A hosted capability needs a record of the host's: without one, its invocations answer 404. */
function hostedCapabilityDiagnostics(resources: ReadonlyMap<string, AgentResource>, ids: readonly string[]): Diagnostic[] {
  return ids.flatMap((id) => {
    const record = resources.get(id);
    if (record?.provider === HOST_PROVIDER) return [];
    const why = record
      ? `its record belongs to machine ${record.provider}, and only ${HOST_PROVIDER}'s records can be hosted`
      : 'no record of that ID is registered';
    return [
      diagnostic('unresolved_hosted_capability', `The operator hosts capability ${id}, but ${why}; invoking it answers 404.`, [
        resourceComponent(id),
      ]),
    ];
  });
}

/**
 * What `diagnosticsFor` looks records up in: resources by ID and by name key, profiles by alias key. Built
 * in one pass over the records, so a caller that keeps it while the records hold (the capability projection
 * keeps one per store state) answers each launch with work proportional to the effective set, not to the
 * registry.
 */
export interface DiagnosticsIndex {
  readonly kind: 'diagnostics-index';
  readonly requiredResourceIds: ReadonlySet<string>;
  readonly resources: ReadonlyMap<string, AgentResource>;
  /** Resources of every provider by `nameKey`, in input order. */
  readonly byName: ReadonlyMap<string, readonly AgentResource[]>;
  /** Profiles by `aliasKey`, in input order. */
  readonly byAlias: ReadonlyMap<string, readonly SelectionProfile[]>;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export function diagnosticsIndex(input: Pick<SnapshotInput, 'resources' | 'profiles' | 'requiredResourceIds'>): DiagnosticsIndex {
  const resources = new Map<string, AgentResource>();
  const byName = new Map<string, AgentResource[]>();
  for (const r of input.resources) {
    resources.set(r.id, r);
    pushTo(byName, nameKey(labelOf(r)), r);
  }
  const byAlias = new Map<string, SelectionProfile[]>();
  for (const p of input.profiles) pushTo(byAlias, aliasKey(p.alias), p);
  return { kind: 'diagnostics-index', requiredResourceIds: new Set(input.requiredResourceIds), resources, byName, byAlias };
}

const isIndex = (v: SnapshotInput | DiagnosticsIndex): v is DiagnosticsIndex => (v as DiagnosticsIndex).kind === 'diagnostics-index';

/**
 * The error diagnostics that stand in the way of `profile` working with `effectiveResourceIds` (required
 * defaults and its selection, as launch computes them), judged from the profile's machine:
 * - a required default that is missing, or that belongs to a machine other than the profile's;
 * - a selected ID that does not resolve, or belongs to another machine;
 * - a name shared by an effective resource and any other resource the agent can see (the host's and its
 *   machine's records: exactly what the agent's catalogue lists);
 * - another profile sharing the profile's alias (ignoring case).
 * Each is the same diagnostic the snapshot lists for the stored state. Warnings never stop anything.
 * `input` is the records, or an index of them (`diagnosticsIndex`) kept while they hold.
 */
export function diagnosticsFor(
  input: SnapshotInput | DiagnosticsIndex,
  selection: { profile: SelectionProfile; effectiveResourceIds: readonly string[] },
): Diagnostic[] {
  const index = isIndex(input) ? input : diagnosticsIndex(input);
  const { profile, effectiveResourceIds } = selection;
  const out: Diagnostic[] = [];
  const required = index.requiredResourceIds;
  const resources = index.resources;
  const sees = (r: AgentResource) => visibleOnMachine(r.provider, profile.agentletId);

  const effectiveKeys = new Set<string>();
  for (const id of new Set(effectiveResourceIds)) {
    const record = resources.get(id);
    if (required.has(id)) {
      if (!record) out.push(missingRequired(id));
      else if (!sees(record)) out.push(requiredOnMachine(record));
    } else if (!record) out.push(unresolvedReference(profile, id));
    else if (!sees(record)) out.push(crossMachineReference(profile, record));
    if (record && sees(record)) effectiveKeys.add(nameKey(labelOf(record)));
  }
  // Every resource the agent sees under an effective resource's name: a clash when there are two or more.
  for (const key of effectiveKeys) {
    const group = (index.byName.get(key) ?? []).filter(sees);
    if (group.length < 2) continue;
    const machineOwn = group.some((r) => r.provider !== HOST_PROVIDER);
    out.push(duplicateName(group, machineOwn ? profile.agentletId : undefined));
  }

  const namesakes = (index.byAlias.get(aliasKey(profile.alias)) ?? []).filter((p) => p.id !== profile.id);
  if (namesakes.length > 0) out.push(aliasCollision([profile, ...namesakes]));
  return sortDiagnostics(out);
}

/**
 * The `duplicate_resource_name` errors a profile save must refuse: two resources of the would-be
 * effective set (required defaults and `selected`) share a name, and at least one of them is selected.
 * A clash among required defaults alone is the host's to fix; it does not block saving (launch refuses).
 */
export function selectionConflicts(
  input: Pick<SnapshotInput, 'resources' | 'requiredResourceIds'>,
  profile: SelectionProfile,
  selected: readonly string[],
): Diagnostic[] {
  if (selected.length === 0) return [];
  const effective = [...new Set([...input.requiredResourceIds, ...selected])];
  const inEffective = new Set(effective.map(resourceComponent));
  const inSelected = new Set(selected.map(resourceComponent));
  return diagnosticsFor({ ...input, profiles: [], machines: [] }, { profile, effectiveResourceIds: effective }).filter(
    (d) =>
      d.code === 'duplicate_resource_name' &&
      d.components.filter((c) => inEffective.has(c)).length > 1 &&
      d.components.some((c) => inSelected.has(c)),
  );
}

/** 422 `capability_diagnostics_failed` carrying the diagnostics in `details.diagnostics`; none: no-op. */
export function assertNoErrors(diagnostics: readonly Diagnostic[], what: string, details: Record<string, unknown> = {}): void {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length === 0) return;
  throw new AppError('capability_diagnostics_failed', `${what}: ${errors.map((d) => d.message).join(' ')}`, {
    ...details,
    diagnostics: errors,
  });
}
