// The crash test's writers draw operations from this table. Each kind plans one request from the writer's
// seeded RNG and states its model effects: what an acknowledged answer proves it did, and what it might
// have done when its outcome is unknown. Adding a kind of write (profile edits, launches) is one entry here.
import type { Content, Effect } from './model.js';

export type Rng = () => number;

export interface PlannedRequest {
  method: 'PUT' | 'DELETE' | 'POST' | 'PATCH';
  path: string;
  body?: unknown;
}

export interface PlannedOp {
  request: PlannedRequest;
  /** Effects proven by a 2xx answer; throws when the answer does not fit the request. */
  acknowledged(status: number, body: unknown): Effect[];
  /** Everything the operation might have done when its outcome is unknown. */
  possible(): Effect[];
}

export interface PlanContext {
  rng: Rng;
  provider: string;
  /** Unique tag of this operation (round, writer, sequence), written into every record it sends. */
  tag: string;
  pool: IdPool;
}

export interface OperationKind {
  name: string;
  weight: number;
  plan(ctx: PlanContext): PlannedOp;
}

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;

/** The resource IDs the writers fight over: a few of each provider's own, and some everyone wants. */
export class IdPool {
  readonly own = new Map<string, string[]>();
  readonly shared: string[];
  constructor(readonly providers: readonly string[], ownPerProvider = 3, sharedCount = 6) {
    providers.forEach((p, i) => this.own.set(p, Array.from({ length: ownPerProvider }, (_, k) => `p${i}-tool-${k}`)));
    this.shared = Array.from({ length: sharedCount }, (_, k) => `shared-${k}`);
  }

  get all(): string[] {
    return [...[...this.own.values()].flat(), ...this.shared];
  }

  ownOf(provider: string): string[] {
    return this.own.get(provider) ?? [];
  }

  /** Mostly the provider's own or a shared ID; now and then another provider's own ID (a deliberate conflict). */
  pickId(rng: Rng, provider: string): string {
    const r = rng();
    if (r < 0.45) return pick(rng, this.ownOf(provider));
    if (r < 0.9) return pick(rng, this.shared);
    return pick(rng, this.all);
  }
}

const resourcePath = (provider: string, id?: string) => `/api/acp/providers/${provider}/resources${id ? `/${id}` : ''}`;

export function contentFor(provider: string, id: string, tag: string): Content {
  return { provider, name: `${id} ${tag}`, description: `Crash-test record ${tag}.`, instructions: `Use ${id} via $HUABU_RFS_URL (${tag}).` };
}

/** A record as the request body carries it: the provider is the path's. */
const toBody = (id: string, { provider: _provider, ...fields }: Content) => ({ schemaVersion: 1, id, ...fields });

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** PUT of one record: 201 created or 200 replaced, answering the record as sent. */
function putOne(provider: string, id: string, tag: string): PlannedOp {
  const content = contentFor(provider, id, tag);
  const effects = (): Effect[] => [{ id, after: content, by: provider }];
  return {
    request: { method: 'PUT', path: resourcePath(provider, id), body: toBody(id, content) },
    acknowledged(status, answer) {
      expect(status === 200 || status === 201, `status ${status}`);
      const a = answer as Record<string, unknown>;
      const sent: Record<string, unknown> = { schemaVersion: 1, id, ...content };
      expect(Object.keys(sent).every((k) => a[k] === sent[k]) && Object.keys(a).length === Object.keys(sent).length, `answer ${JSON.stringify(answer)} is not the record sent`);
      return effects();
    },
    possible: effects,
  };
}

export const OPERATION_KINDS: readonly OperationKind[] = [
  {
    name: 'register',
    weight: 6,
    plan: ({ rng, provider, tag, pool }) => putOne(provider, pool.pickId(rng, provider), tag),
  },
  {
    name: 'replace',
    weight: 3,
    plan: ({ rng, provider, tag, pool }) => putOne(provider, pick(rng, pool.ownOf(provider)), tag),
  },
  {
    name: 'withdraw',
    weight: 3,
    plan: ({ rng, provider, pool }) => {
      const id = pool.pickId(rng, provider);
      const effect: Effect = { id, after: null, by: provider };
      return {
        request: { method: 'DELETE', path: resourcePath(provider, id) },
        acknowledged(status) {
          expect(status === 204, `status ${status}`);
          return [effect];
        },
        possible: () => [effect],
      };
    },
  },
  {
    name: 'reconcile',
    weight: 1.5,
    plan: ({ rng, provider, tag, pool }) => {
      // The provider's whole set: some of its own IDs and, half of the time, shared ones (likely conflicts).
      const listed = pool.ownOf(provider).filter(() => rng() < 0.6);
      if (rng() < 0.5) for (const id of pool.shared) if (rng() < 0.25) listed.push(id);
      const entries = new Map(listed.map((id) => [id, contentFor(provider, id, tag)]));
      const sets = (): Effect[] => [...entries].map(([id, after]) => ({ id, after, by: provider }));
      return {
        request: {
          method: 'PUT',
          path: resourcePath(provider),
          body: { resources: [...entries].map(([id, c]) => toBody(id, c)) },
        },
        acknowledged(status, answer) {
          expect(status === 200, `status ${status}`);
          const r = answer as { dryRun: boolean; created: string[]; replaced: string[]; unchanged: string[]; withdrawn: string[] };
          expect(r.dryRun === false, 'dryRun is not false');
          const kept = [...r.created, ...r.replaced, ...r.unchanged].sort();
          expect(JSON.stringify(kept) === JSON.stringify([...entries.keys()].sort()), `kept ${kept.join(',')} is not the listed set`);
          expect(r.withdrawn.every((id) => !entries.has(id)), 'withdrew a listed ID');
          return [...sets(), ...r.withdrawn.map((id): Effect => ({ id, after: null, by: provider }))];
        },
        // Any ID of the pool left out might have been the provider's and so withdrawn.
        possible: () => [...sets(), ...pool.all.filter((id) => !entries.has(id)).map((id): Effect => ({ id, after: null, by: provider }))],
      };
    },
  },
];

export function chooseKind(rng: Rng, kinds: readonly OperationKind[] = OPERATION_KINDS): OperationKind {
  const total = kinds.reduce((sum, k) => sum + k.weight, 0);
  let r = rng() * total;
  for (const kind of kinds) if ((r -= kind.weight) < 0) return kind;
  return kinds[kinds.length - 1]!;
}
