// The capability snapshot (docs/capability-projection.md) as the API shows it: components, edges, alias bindings and
// diagnostics, with the content digest that is also its ETag. Leaf module.
import Type, { type Static } from 'typebox';

export const COMPONENT_KINDS = ['resource', 'agent', 'provider'] as const;
export type ComponentKind = (typeof COMPONENT_KINDS)[number];
export const EDGE_KINDS = ['publishes', 'selects', 'placed-on', 'requires'] as const;
export const DIAGNOSTIC_CODES = {
  error: ['duplicate_resource_name', 'unresolved_reference', 'cross_machine_reference', 'alias_collision', 'missing_required_resource'],
  warning: ['alias_shadows_component', 'unknown_variable', 'unresolved_hosted_capability', 'context_budget_exceeded'],
} as const;
export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)['error' | 'warning'][number];

const KindSchema = Type.Union([Type.Literal('resource'), Type.Literal('agent'), Type.Literal('provider')]);

const ComponentId = Type.String({
  description:
    'Component ID, namespaced by kind: `resource:<resourceId>`, `agent:<profileId>`, `provider:huabu` (the host) or `provider:<machineId>`.',
  examples: ['resource:web-search'],
});

export const ContextEstimate = Type.Object(
  {
    alwaysLoadedTokens: Type.Integer({
      minimum: 0,
      description: 'Tokens of the names and descriptions of the effective resources: what the agent holds from its start.',
    }),
    onActivationTokens: Type.Integer({
      minimum: 0,
      description: "Tokens of their bodies (instructions, or a record v2's source content and owner notes): what it reads on use.",
    }),
  },
  {
    additionalProperties: false,
    title: 'ContextEstimate',
    description:
      "An agent's effective resources (the host's required defaults, then its selection, as a launch resolves them) counted with gpt-tokenizer's o200k_base encoding; a text past 8,000 characters is counted on its first 8,000 and scaled by its length.",
  },
);
export type ContextEstimate = Static<typeof ContextEstimate>;

export const Component = Type.Object(
  {
    id: ComponentId,
    kind: { ...KindSchema, description: 'What the component is.' },
    name: Type.String({ description: "Display name: a resource's name, an agent's alias, a provider's ID." }),
    description: Type.String({ description: 'One line about the component.' }),
    tags: Type.Array(Type.String(), {
      description:
        'Sorted facts: resources `provider:<id>` and `required`; agents `launch:<kind>` and `machine:<agentletId>`; providers `host` or `machine`, and `revoked` or `not-enrolled`.',
    }),
    aliases: Type.Array(Type.String(), { description: "Aliases bound to the component (an agent's alias)." }),
    contextEstimate: Type.Optional(ContextEstimate),
  },
  { additionalProperties: false, title: 'CapabilityComponent' },
);
export type Component = Static<typeof Component>;

export const Edge = Type.Object(
  {
    kind: Type.Union([Type.Literal('publishes'), Type.Literal('selects'), Type.Literal('placed-on'), Type.Literal('requires')], {
      description:
        '`publishes` provider→resource, `selects` agent→resource, `placed-on` agent→provider (machine), `requires` host→required default.',
    }),
    from: ComponentId,
    to: ComponentId,
  },
  { additionalProperties: false, title: 'CapabilityEdge' },
);
export type Edge = Static<typeof Edge>;

export const AliasBinding = Type.Object(
  { alias: Type.String({ description: 'The alias as written.' }), component: ComponentId },
  { additionalProperties: false, title: 'CapabilityAlias', description: 'A profile alias bound to its canonical agent component.' },
);
export type AliasBinding = Static<typeof AliasBinding>;

export const Diagnostic = Type.Object(
  {
    severity: Type.Union([Type.Literal('error'), Type.Literal('warning')]),
    code: Type.Union(
      [
        Type.Literal('duplicate_resource_name'),
        Type.Literal('unresolved_reference'),
        Type.Literal('cross_machine_reference'),
        Type.Literal('alias_collision'),
        Type.Literal('missing_required_resource'),
        Type.Literal('alias_shadows_component'),
        Type.Literal('unknown_variable'),
        Type.Literal('unresolved_hosted_capability'),
        Type.Literal('context_budget_exceeded'),
      ],
      {
        description:
          "Errors: `duplicate_resource_name`, `unresolved_reference`, `cross_machine_reference`, `alias_collision`, `missing_required_resource`. Warnings: `alias_shadows_component`, `unknown_variable`, `unresolved_hosted_capability` (a hosted capability without a record of the host's), `context_budget_exceeded` (an agent's always-loaded tokens above `CONTEXT_BUDGET_TOKENS`).",
      },
    ),
    message: Type.String(),
    components: Type.Array(ComponentId, {
      description:
        'The components concerned, sorted. An unresolved or missing reference names the ID it expected (`resource:<id>`), which is not a component.',
    }),
  },
  { additionalProperties: false, title: 'CapabilityDiagnostic' },
);
export type Diagnostic = Static<typeof Diagnostic>;

export const CapabilitySnapshot = Type.Object(
  {
    digest: Type.String({
      description:
        'SHA-256 (hex) of the canonical serialization of the whole snapshot (components, edges, aliases, diagnostics); the ETag. A `?kind=` view carries the digest of the whole snapshot.',
    }),
    components: Type.Array(Component, { description: 'Sorted by id.' }),
    edges: Type.Array(Edge, { description: 'Sorted by from, kind, to.' }),
    aliases: Type.Array(AliasBinding, { description: 'Sorted by alias (ignoring case), then as written, then component.' }),
    diagnostics: Type.Array(Diagnostic, { description: 'Errors first, then by code, components and message.' }),
  },
  { additionalProperties: false, title: 'CapabilitySnapshot' },
);
export type CapabilitySnapshot = Static<typeof CapabilitySnapshot>;

export const CapabilityQuery = Type.Object(
  {
    kind: Type.Optional({
      ...KindSchema,
      description:
        'Narrow to components of this kind, the edges with either end of this kind, the aliases bound to them, and the diagnostics naming at least one ID of this kind.',
    }),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('dot'), Type.Literal('svg')], {
        description: '`json` (default), `dot` (Graphviz source, `text/vnd.graphviz`) or `svg` (the graph rendered, `image/svg+xml`).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CapabilityQuery = Static<typeof CapabilityQuery>;
