// The snapshot as a Graphviz `digraph`: one cluster per component kind, the edges, and components with an
// error (red) or warning (orange). Every ID and label goes through `quote` (after `escapeDotLabel`), so no
// name or alias can inject DOT syntax. Written directly as text, in one pass: linear in the snapshot's size
// (milliseconds for 10k resources + 10k profiles); the layout is pinned by the DOT tests' expected output.
import type { CapabilitySnapshot, Component, ComponentKind } from '../schemas/capability.js';
import { minNodeWidth, wrapLabel } from './label-fit.js';

/**
 * A label's text made safe for a DOT quoted string, so that Graphviz shows exactly `text`. Graphviz reads
 * backslash escapes (`\N`, `\l`, `\"`, a trailing `\`) and decodes `&...;` entities in plain labels. So, in
 * this order: `&` becomes `&amp;`; every backslash is doubled; newlines become Graphviz's `\n` and other line
 * terminators a numeric entity (the value stays on one line); a leading `<` becomes `&lt;` (so no tool that
 * re-emits the label unquoted can take it for an HTML-like one). `quote` then escapes the quotes.
 */
export function escapeDotLabel(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/\\/g, '\\\\')
    .replace(/\n/g, '\\n')
    .replace(/[\r\u2028\u2029]/g, (c) => `&#${c.charCodeAt(0)};`)
    .replace(/^(\s*)</, '$1&lt;');
}

/**
 * A DOT quoted string of text already escaped by `escapeDotLabel` (or a constant): every `"` escaped. As
 * escapeDotLabel has doubled every backslash, a name ending in `\` followed by `"` cannot end the string early.
 */
function quote(escaped: string): string {
  return `"${escaped.replace(/"/g, '\\"')}"`;
}

/** A component ID as a DOT quoted string (IDs are slugs; escaped all the same). */
function quoteId(id: string): string {
  return quote(escapeDotLabel(id));
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

/** Node font size (Graphviz's default). */
const NODE_FONT_SIZE = 14;

/**
 * For the SVG: the label wrapped (name, then ID, each in short lines; cut with "…" past a few lines), a
 * tooltip with the full text when anything was cut, and a minimum width the label fits in (label-fit.ts).
 */
function fittedNode(c: Component): { label: string; tooltip?: string; width: number } {
  const plainId = c.id.slice(c.id.indexOf(':') + 1);
  const name = wrapLabel(c.name);
  const id = c.name === plainId ? { lines: [], cut: false } : wrapLabel(plainId);
  const lines = [...name.lines, ...id.lines];
  const full = c.name === plainId ? c.name : `${c.name}\n${plainId}`;
  return {
    label: escapeDotLabel(lines.join('\n')),
    ...(name.cut || id.cut ? { tooltip: escapeDotLabel(full) } : {}),
    width: minNodeWidth(lines, NODE_FONT_SIZE, SHAPES[c.kind] as 'box' | 'ellipse' | 'component'),
  };
}

export interface DotOptions {
  /** Fit labels for the SVG renderer (wrapped, with a minimum width); `?format=dot` is emitted without. */
  fitLabels?: boolean;
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
export function snapshotToDot(view: CapabilitySnapshot, whole: CapabilitySnapshot = view, options: DotOptions = {}): string {
  const drawn = drawnComponents(view, whole);
  const severity = new Map<string, 'error' | 'warning'>();
  for (const d of view.diagnostics) {
    for (const id of d.components) if (severity.get(id) !== 'error') severity.set(id, d.severity);
  }

  const out: string[] = ['digraph "capabilities" {', '  rankdir = "LR";', '  fontname = "Helvetica";'];
  out.push('  edge [', '    fontname = "Helvetica";', '    fontsize = 10;', '  ];', '  node [', '    fontname = "Helvetica";', '  ];');
  for (const { kind, label: clusterLabel } of CLUSTERS) {
    const members = [...drawn.values()].filter((c) => c.kind === kind).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (members.length === 0) continue;
    out.push(
      `  subgraph ${quote(`cluster_${kind}`)} {`,
      `    label = ${quote(clusterLabel)};`,
      '    style = "rounded";',
      '    color = "gray";',
    );
    for (const c of members) {
      const mark = severity.get(c.id);
      if (options.fitLabels) {
        const fitted = fittedNode(c);
        out.push(
          `    ${quoteId(c.id)} [`,
          `      label = ${quote(fitted.label)};`,
          `      shape = ${quote(SHAPES[kind])};`,
          `      width = ${fitted.width};`,
        );
        if (fitted.tooltip !== undefined) out.push(`      tooltip = ${quote(fitted.tooltip)};`);
      } else {
        out.push(`    ${quoteId(c.id)} [`, `      label = ${quote(label(c))};`, `      shape = ${quote(SHAPES[kind])};`);
      }
      if (kind === 'resource') out.push('      style = "rounded";');
      if (mark === 'error') out.push('      color = "red";', '      fontcolor = "red";', '      penwidth = 2;');
      else if (mark === 'warning') out.push('      color = "orange";');
      out.push('    ];');
    }
    out.push('  }');
  }
  for (const e of view.edges) {
    if (!drawn.has(e.from) || !drawn.has(e.to)) continue;
    out.push(`  ${quoteId(e.from)} -> ${quoteId(e.to)} [`, `    label = ${quote(e.kind)};`);
    if (e.kind === 'requires') out.push('    style = "dashed";');
    else if (e.kind === 'placed-on') out.push('    style = "dotted";');
    out.push('  ];');
  }
  out.push('}');
  return out.join('\n') + '\n';
}
