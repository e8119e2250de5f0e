// The capability projection over the live stores: builds the snapshot from the current records and the
// host's required defaults, and serves it as JSON, DOT or SVG. Rendered bodies are cached per snapshot
// digest (a changed state drops them, and concurrent requests for one body share its rendering); SVG is
// rendered in-process by Graphviz compiled to WebAssembly, in a worker started on the first SVG request.
// Framework-free.
import { AppError } from '../errors.js';
import type { CapabilitySnapshot, ComponentKind } from '../schemas/capability.js';
import type { RegistryStore } from '../registry/store.js';
import { diagnosticsFor, diagnosticsIndex, type DiagnosticsIndex, type SelectionProfile, type SnapshotInput } from './diagnostics.js';
import { drawnComponentCount, snapshotToDot } from './dot.js';
import { buildSnapshot, narrowSnapshot, serializeSnapshot } from './snapshot.js';
import { SvgRenderer } from './svg-renderer.js';

/** Graphviz `dot` layout grows much faster than linearly: about 15 s for 1500 components here. */
export const MAX_SVG_COMPONENTS = 800;
/** Edges cost the layout as much as components do: 798 components and 9.5k edges took 146 s. */
export const MAX_SVG_EDGES = 1500;

export type CapabilityFormat = 'json' | 'dot' | 'svg';

export interface RenderedView {
  /** The whole snapshot's digest (the ETag). */
  digest: string;
  body: string;
}

export type ProjectionStore = Pick<RegistryStore, 'listResources' | 'listProfiles' | 'listMachines'>;

export class CapabilityProjection {
  #digest: string | undefined;
  #bodies = new Map<string, { body: Promise<string>; waiters: number; controller: AbortController }>();
  readonly #svg = new SvgRenderer();

  constructor(
    private readonly store: ProjectionStore,
    private readonly requiredResourceIds: readonly string[],
    private readonly hostedCapabilityIds: readonly string[] = [],
    private readonly contextBudgetTokens = 0,
  ) {}

  /**
   * The last input and its diagnostics index, kept while the store returns the very same lists (the JSON
   * store returns one frozen list per revision of each file; a store that builds new lists on every call
   * gets a new input and index every time, which is correct, only slower).
   */
  #last: { lists: readonly unknown[]; input: SnapshotInput; index?: DiagnosticsIndex } | undefined;

  /** The records a snapshot is built from, read now. */
  async input(): Promise<SnapshotInput> {
    return (await this.#current()).input;
  }

  async #current(): Promise<{ input: SnapshotInput; index?: DiagnosticsIndex }> {
    const lists = await Promise.all([this.store.listResources(), this.store.listProfiles(), this.store.listMachines()]);
    const last = this.#last;
    if (last && lists.every((list, i) => list === last.lists[i])) return last;
    const [resources, entries, machines] = lists;
    const input = {
      resources,
      profiles: entries.map((e) => e.profile),
      machines,
      requiredResourceIds: this.requiredResourceIds,
      hostedCapabilityIds: this.hostedCapabilityIds,
      contextBudgetTokens: this.contextBudgetTokens,
    };
    this.#last = { lists, input };
    return this.#last;
  }

  async snapshot(): Promise<CapabilitySnapshot> {
    return buildSnapshot(await this.input());
  }

  /** The error diagnostics that stand in the way of `profile` working with `effectiveResourceIds`, now. */
  async diagnosticsFor(profile: SelectionProfile, effectiveResourceIds: readonly string[]) {
    const current = await this.#current();
    current.index ??= diagnosticsIndex(current.input);
    return diagnosticsFor(current.index, { profile, effectiveResourceIds });
  }

  /**
   * The current snapshot (or its `kind` view) in `format`; bodies are reused while the digest holds, and
   * concurrent requests for one body share its rendering. `signal` is the caller going away: the caller
   * stops waiting at once, and a rendering nobody waits for any more is cancelled.
   */
  async render(kind: ComponentKind | undefined, format: CapabilityFormat, signal?: AbortSignal): Promise<RenderedView> {
    const whole = await this.snapshot();
    if (whole.digest !== this.#digest) {
      this.#digest = whole.digest;
      this.#bodies.clear();
    }
    const key = `${kind ?? '*'}:${format}`;
    let entry = this.#bodies.get(key);
    if (entry === undefined) {
      const controller = new AbortController();
      const created = { body: this.#build(whole, kind, format, controller.signal), waiters: 0, controller };
      entry = created;
      this.#bodies.set(key, created);
      // A failed body is not kept: the next request tries again.
      created.body.catch(() => {
        if (this.#bodies.get(key) === created) this.#bodies.delete(key);
      });
    }
    const shared = entry;
    shared.waiters++;
    try {
      if (!signal) return { digest: whole.digest, body: await shared.body };
      let onAbort!: () => void;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(Object.assign(new Error('The client went away.'), { name: 'AbortError' }));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        return { digest: whole.digest, body: await Promise.race([shared.body, aborted]) };
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    } finally {
      shared.waiters--;
      if (shared.waiters === 0 && signal?.aborted) {
        shared.controller.abort();
        if (this.#bodies.get(key) === shared) this.#bodies.delete(key);
      }
    }
  }

  /** Stops the SVG worker, if it was started. */
  close(): Promise<void> {
    return this.#svg.close();
  }

  async #build(whole: CapabilitySnapshot, kind: ComponentKind | undefined, format: CapabilityFormat, signal: AbortSignal): Promise<string> {
    const view = narrowSnapshot(whole, kind);
    if (format === 'json') return serializeSnapshot(view);
    if (format === 'dot') return snapshotToDot(view, whole);
    const drawn = drawnComponentCount(view, whole);
    if (drawn > MAX_SVG_COMPONENTS) {
      throw new AppError(
        'payload_too_large',
        `The graph has ${drawn} components; SVG is rendered for at most ${MAX_SVG_COMPONENTS}. Narrow it with ?kind= or take ?format=dot.`,
        { components: drawn, limit: MAX_SVG_COMPONENTS },
      );
    }
    if (view.edges.length > MAX_SVG_EDGES) {
      throw new AppError(
        'payload_too_large',
        `The graph has ${view.edges.length} edges; SVG is rendered for at most ${MAX_SVG_EDGES}. Narrow it with ?kind= or take ?format=dot.`,
        { edges: view.edges.length, limit: MAX_SVG_EDGES },
      );
    }
    return this.#svg.render(snapshotToDot(view, whole, { fitLabels: true }), { signal });
  }
}
