// The capability snapshot: one read-only, sorted view over everything the registry knows (resources,
// agents, providers, the host's required defaults), its diagnostics, and a content digest. Two snapshots
// of the same state are byte-identical, whatever order the records came in. Pure; no I/O.
import { createHash } from 'node:crypto';
import { profileView } from '../profiles/profile-rules.js';
import type { AliasBinding, CapabilitySnapshot, Component, ComponentKind, Diagnostic, Edge } from '../schemas/capability.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import { labelOf, summaryOf } from '../registry/resource-versions.js';
import {
  agentComponent,
  byCodeUnits,
  HOST_COMPONENT,
  providerComponent,
  contextBudgetExceeded,
  registryDiagnostics,
  resourceComponent,
  sortDiagnostics,
  type SnapshotInput,
} from './diagnostics.js';
import { contextEstimate } from './context-estimate.js';
import { effectiveResourceIds } from '../workloads/workload-service.js';

export type { SnapshotInput } from './diagnostics.js';

function sortedBy<T>(list: readonly T[], key: (item: T) => string): T[] {
  return [...list].sort((a, b) => byCodeUnits(key(a), key(b)));
}

const edgeOrder = (a: Edge, b: Edge) => byCodeUnits(a.from, b.from) || byCodeUnits(a.kind, b.kind) || byCodeUnits(a.to, b.to);

// Every object below is built with its keys in one fixed order, so JSON.stringify is canonical.
function component(id: string, kind: ComponentKind, name: string, description: string, tags: string[], aliases: string[] = []): Component {
  return { id, kind, name, description, tags: [...new Set(tags)].sort(byCodeUnits), aliases: [...aliases].sort(byCodeUnits) };
}

function edge(kind: Edge['kind'], from: string, to: string): Edge {
  return { kind, from, to };
}

/** SHA-256 (hex) of the canonical serialization of everything but the digest. */
export function snapshotDigest(parts: Omit<CapabilitySnapshot, 'digest'>): string {
  const { components, edges, aliases, diagnostics } = parts;
  return createHash('sha256').update(JSON.stringify({ components, edges, aliases, diagnostics })).digest('hex');
}

export function buildSnapshot(input: SnapshotInput): CapabilitySnapshot {
  const resources = sortedBy(input.resources, (r) => r.id);
  const profiles = sortedBy(input.profiles.map(profileView), (p) => p.id);
  const machines = sortedBy(input.machines, (m) => m.machineId);
  const required = new Set(input.requiredResourceIds);
  const known = new Set(resources.map((r) => r.id));

  const components: Component[] = [component(HOST_COMPONENT, 'provider', HOST_PROVIDER, 'The host application.', ['host'])];
  const enrolled = new Set<string>();
  for (const m of machines) {
    if (m.machineId === HOST_PROVIDER) continue;
    enrolled.add(m.machineId);
    components.push(
      component(
        providerComponent(m.machineId),
        'provider',
        m.machineId,
        m.revokedAt ? 'Agentlet machine (credential revoked).' : 'Agentlet machine.',
        ['machine', ...(m.revokedAt ? ['revoked'] : [])],
      ),
    );
  }
  // Providers named by records but not enrolled (withdrawn enrollment data, migrated profiles) still
  // appear, so every edge has both ends.
  const named = new Set([...resources.map((r) => r.provider), ...profiles.map((p) => p.agentletId)]);
  for (const id of [...named].sort(byCodeUnits)) {
    if (id === HOST_PROVIDER || enrolled.has(id)) continue;
    components.push(component(providerComponent(id), 'provider', id, 'Agentlet machine (not enrolled).', ['machine', 'not-enrolled']));
  }

  const edges: Edge[] = [];
  for (const r of resources) {
    components.push(
      component(resourceComponent(r.id), 'resource', labelOf(r), summaryOf(r), [
        `provider:${r.provider}`,
        ...(required.has(r.id) ? ['required'] : []),
      ]),
    );
    edges.push(edge('publishes', providerComponent(r.provider), resourceComponent(r.id)));
  }
  for (const id of new Set(input.requiredResourceIds))
    if (known.has(id)) edges.push(edge('requires', HOST_COMPONENT, resourceComponent(id)));

  const aliases: AliasBinding[] = [];
  const byId = new Map(resources.map((r) => [r.id, r]));
  const budget = input.contextBudgetTokens ?? 0;
  const overBudget: Diagnostic[] = [];
  for (const p of profiles) {
    const id = agentComponent(p.id);
    // What a launch of the profile would give the agent, as far as it resolves (what does not is diagnosed).
    const effective = effectiveResourceIds(input.requiredResourceIds, p.resourceIds).flatMap((rid) => byId.get(rid) ?? []);
    const estimate = contextEstimate(effective);
    if (budget > 0 && estimate.alwaysLoadedTokens > budget) overBudget.push(contextBudgetExceeded(p, estimate.alwaysLoadedTokens, budget));
    components.push({
      ...component(
        id,
        'agent',
        p.alias,
        `${p.launch.kind} agent on ${p.agentletId}, in ${p.workingDirPath}.`,
        [`launch:${p.launch.kind}`, `machine:${p.agentletId}`],
        [p.alias],
      ),
      contextEstimate: estimate,
    });
    aliases.push({ alias: p.alias, component: id });
    edges.push(edge('placed-on', id, providerComponent(p.agentletId)));
    for (const rid of new Set(p.resourceIds)) if (known.has(rid)) edges.push(edge('selects', id, resourceComponent(rid)));
  }

  const parts = {
    components: sortedBy(components, (c) => c.id),
    edges: edges.sort(edgeOrder), // unique by construction
    // Reading order ignoring case (the look-alike key would file `manager` under `rn`).
    aliases: aliases.sort(
      (a, b) =>
        byCodeUnits(a.alias.toLowerCase(), b.alias.toLowerCase()) || byCodeUnits(a.alias, b.alias) || byCodeUnits(a.component, b.component),
    ),
    diagnostics: sortDiagnostics([...registryDiagnostics({ ...input, resources, profiles, machines }), ...overBudget]),
  };
  return { digest: snapshotDigest(parts), ...parts };
}

const kindOf = (componentId: string) => componentId.slice(0, componentId.indexOf(':'));

/**
 * The view `?kind=` asks for: components of `kind`; edges with either end of `kind`; aliases bound to a
 * kept component; diagnostics naming at least one ID of `kind` (by its namespace, so a missing
 * `resource:<id>` counts as a resource). The digest stays the whole snapshot's.
 */
export function narrowSnapshot(snapshot: CapabilitySnapshot, kind: ComponentKind | undefined): CapabilitySnapshot {
  if (kind === undefined) return snapshot;
  const ofKind = (id: string) => kindOf(id) === kind;
  return {
    digest: snapshot.digest,
    components: snapshot.components.filter((c) => c.kind === kind),
    edges: snapshot.edges.filter((e) => ofKind(e.from) || ofKind(e.to)),
    aliases: snapshot.aliases.filter((a) => ofKind(a.component)),
    diagnostics: snapshot.diagnostics.filter((d: Diagnostic) => d.components.some(ofKind)),
  };
}

/** The JSON body: the snapshot serialized with its fixed key order. */
export function serializeSnapshot(snapshot: CapabilitySnapshot): string {
  return JSON.stringify({
    digest: snapshot.digest,
    components: snapshot.components,
    edges: snapshot.edges,
    aliases: snapshot.aliases,
    diagnostics: snapshot.diagnostics,
  });
}
