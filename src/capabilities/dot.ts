// The snapshot as a Graphviz `digraph`, built with ts-graphviz (never by string concatenation): one
// cluster per component kind, the edges, and components with an error (red) or warning (orange).
// Every label is escaped so no name or alias can inject DOT syntax.
import { Digraph, Edge as DotEdge, Node, Subgraph, toDot } from 'ts-graphviz';
import type { CapabilitySnapshot, Component, ComponentKind } from '../schemas/capability.js';

/**
 * A label as ts-graphviz should be handed it, so that Graphviz shows exactly `text`. ts-graphviz quotes
 * the value and escapes `"`, but passes backslashes through (Graphviz would read `\N`, `\l`, `\"`, a
 * trailing `\`), and emits any value in which a line starts with `<` and a line ends with `>` as an
 * HTML-like label. Graphviz itself decodes `&...;` entities in plain labels. So, in this order: `&` becomes
 * `&amp;`; every backslash is doubled; newlines become Graphviz's `\n` and other line terminators a
 * numeric entity (so the value is one line for ts-graphviz); a leading `<` becomes `&lt;`.
 */
export function escapeDotLabel(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/\\/g, '\\\\')
    .replace(/\n/g, '\\n')
    .replace(/[\r\u2028\u2029]/g, (c) => `&#${c.charCodeAt(0)};`)
    .replace(/^(\s*)</, '$1&lt;');
}

const CLUSTERS: { kind: ComponentKind; label: string }[] = [
  { kind: 'provider', label: 'Providers' },
  { kind: 'resource', label: 'Resources' },
  { kind: 'agent', label: 'Agents' },
];

const SHAPES: Record<ComponentKind, string> = { provider: 'component', resource: 'box', agent: 'ellipse' };

function label(c: Component): string {
  const plainId = c.id.slice(c.id.indexOf(':') + 1);
  return escapeDotLabel(c.name === plainId ? c.name : `${c.name}\n${plainId}`);
}

function drawnComponents(view: CapabilitySnapshot, whole: CapabilitySnapshot): Map<string, Component> {
  const byId = new Map(whole.components.map((c) => [c.id, c]));
  const drawn = new Map(view.components.map((c) => [c.id, c]));
  for (const e of view.edges) {
    for (const end of [e.from, e.to]) {
      const c = byId.get(end);
      if (c && !drawn.has(end)) drawn.set(end, c);
    }
  }
  return drawn;
}

/** How many nodes the graph of `view` draws. */
export function drawnComponentCount(view: CapabilitySnapshot, whole: CapabilitySnapshot = view): number {
  return drawnComponents(view, whole).size;
}

/**
 * DOT source of `view`. Components at the other end of a kept edge (a `?kind=` view) are drawn too, taken
 * from `whole`, so every edge has both ends.
 */
export function snapshotToDot(view: CapabilitySnapshot, whole: CapabilitySnapshot = view): string {
  const drawn = drawnComponents(view, whole);
  const severity = new Map<string, 'error' | 'warning'>();
  for (const d of view.diagnostics) {
    for (const id of d.components) if (severity.get(id) !== 'error') severity.set(id, d.severity);
  }

  const graph = new Digraph('capabilities', { rankdir: 'LR', fontname: 'Helvetica' });
  graph.attributes.node.set('fontname', 'Helvetica');
  graph.attributes.edge.set('fontname', 'Helvetica');
  graph.attributes.edge.set('fontsize', 10);
  const nodes = new Map<string, Node>();
  for (const { kind, label: clusterLabel } of CLUSTERS) {
    const members = [...drawn.values()].filter((c) => c.kind === kind).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (members.length === 0) continue;
    const cluster = new Subgraph(`cluster_${kind}`, { label: clusterLabel, style: 'rounded', color: 'gray' });
    graph.addSubgraph(cluster);
    for (const c of members) {
      const mark = severity.get(c.id);
      const node = new Node(c.id, {
        label: label(c),
        shape: SHAPES[kind],
        ...(kind === 'resource' ? { style: 'rounded' } : {}),
        ...(mark === 'error' ? { color: 'red', fontcolor: 'red', penwidth: 2 } : mark === 'warning' ? { color: 'orange' } : {}),
      });
      nodes.set(c.id, node);
      cluster.addNode(node);
    }
  }
  for (const e of view.edges) {
    const from = nodes.get(e.from);
    const to = nodes.get(e.to);
    if (!from || !to) continue;
    graph.addEdge(
      new DotEdge([from, to], {
        label: e.kind,
        ...(e.kind === 'requires' ? { style: 'dashed' } : e.kind === 'placed-on' ? { style: 'dotted' } : {}),
      }),
    );
  }
  return toDot(graph) + '\n';
}
