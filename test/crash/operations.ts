// The crash test's writers draw operations from this table. Each kind plans one request from the writer's
// seeded RNG and states its model effects: what an acknowledged answer proves it did, and what it might
// have done when its outcome is unknown. Resource writes (registrations, replacements, withdrawals,
// reconciles), Agent Profile writes (create, PATCH with and without If-Match, delete) and launches.
import { createEffects, type Content, type Effect, type LaunchEffect, type ProfileEffect, type ProfileView } from './model.js';

export type Rng = () => number;

export interface PlannedRequest {
  method: 'PUT' | 'DELETE' | 'POST' | 'PATCH';
  path: string;
  body?: unknown;
  /** Sent with the owner token (profiles, launches) instead of the provider's. */
  asOwner?: boolean;
  headers?: Record<string, string>;
}

/** What an operation did (or might have done), by part of the model. */
export interface OpEffects {
  resources?: Effect[];
  profiles?: ProfileEffect[];
  /** Unknown-outcome creates only: the profile that may exist under an ID nobody saw. */
  profileCreate?: ProfileView;
  launch?: LaunchEffect;
}

export interface PlannedOp {
  /** The kind's name, when the plan turned into another kind of operation. */
  kind?: string;
  request: PlannedRequest;
  /** Effects proven by a 2xx answer (`text` is its exact bytes); throws when the answer does not fit the request. */
  acknowledged(status: number, body: unknown, text: string): OpEffects;
  /** Everything the operation might have done when its outcome is unknown. */
  possible(): OpEffects;
}

/** A read the plan may make first (the ETag for If-Match); not part of the history. */
export type Reader = (path: string) => Promise<{ status: number; etag: string | undefined }>;

export interface PlanContext {
  rng: Rng;
  provider: string;
  /** Unique tag of this operation (round, writer, sequence), written into every record it sends. */
  tag: string;
  pool: IdPool;
  profiles: ProfilePool;
  threads: ThreadPool;
  read: Reader;
}

export interface OperationKind {
  name: string;
  weight: number;
  plan(ctx: PlanContext): PlannedOp | Promise<PlannedOp>;
}

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;

/** The host provider: its resources are eligible for every machine's profiles. */
export const HOST = 'huabu';
/** Registered by the host before the first round and never changed (a reconcile of the host lists them as they are). */
export const FIXED_RESOURCE_IDS = ['crash-required', 'crash-fixed-0', 'crash-fixed-1'] as const;
/** The launch's required default (REQUIRED_RESOURCE_IDS of the crash server). */
export const REQUIRED_RESOURCE_ID = FIXED_RESOURCE_IDS[0];

/** The resource IDs the writers fight over: a few of each provider's own, and some everyone wants. */
export class IdPool {
  readonly own = new Map<string, string[]>();
  readonly shared: string[];
  constructor(
    readonly providers: readonly string[],
    ownPerProvider = 3,
    sharedCount = 6,
  ) {
    providers.forEach((p, i) =>
      this.own.set(
        p,
        Array.from({ length: ownPerProvider }, (_, k) => `p${i}-tool-${k}`),
      ),
    );
    this.shared = Array.from({ length: sharedCount }, (_, k) => `shared-${k}`);
  }

  /** The IDs a provider's reconcile always lists unchanged. */
  fixedOf(provider: string): readonly string[] {
    return provider === HOST ? FIXED_RESOURCE_IDS : [];
  }

  /**
   * IDs a profile on `agentletId` may select: the host's fixed ones (certain to exist), now and then one
   * the writers fight over (it may be gone or another machine's: a 422 is then a valid answer).
   */
  selection(rng: Rng, agentletId: string): string[] {
    const ids = new Set<string>();
    const n = Math.floor(rng() * 3);
    for (let i = 0; i < n; i++) {
      const r = rng();
      if (r < 0.6) ids.add(pick(rng, FIXED_RESOURCE_IDS.slice(1)));
      else if (r < 0.8) ids.add(pick(rng, this.ownOf(agentletId)));
      else if (r < 0.9) ids.add(pick(rng, this.ownOf(HOST)));
      else ids.add(pick(rng, this.shared));
    }
    return [...ids];
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
  return {
    provider,
    name: `${id} ${tag}`,
    description: `Crash-test record ${tag}.`,
    instructions: `Use ${id} via $HUABU_RFS_URL (${tag}).`,
  };
}

export const fixedContent = (provider: string, id: string) => contentFor(provider, id, 'fixed');

/** A record as the request body carries it: the provider is the path's. */
export const toBody = (id: string, { provider: _provider, ...fields }: Content) => ({ schemaVersion: 1, id, ...fields });

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
      expect(
        Object.keys(sent).every((k) => a[k] === sent[k]) && Object.keys(a).length === Object.keys(sent).length,
        `answer ${JSON.stringify(answer)} is not the record sent`,
      );
      return { resources: effects() };
    },
    possible: () => ({ resources: effects() }),
  };
}

/** A profile the writers may change: known from an acknowledged create or from the recovered state. */
export interface KnownProfile {
  id: string;
  agentletId: string;
  /** Created before the first round and never deleted (launches mostly use these). */
  stable: boolean;
}

/** The acp-command profiles the writers target: IDs are the server's, so this pool follows the history. */
export class ProfilePool {
  readonly known = new Map<string, KnownProfile>();
  constructor(
    readonly machines: readonly string[],
    readonly maxDeletable = 24,
  ) {}

  add(p: KnownProfile): void {
    this.known.set(p.id, p);
  }

  /** After a restart: exactly the profiles the recovered state holds. */
  reset(recovered: Iterable<ProfileView>): void {
    const stable = new Set([...this.known.values()].filter((p) => p.stable).map((p) => p.id));
    this.known.clear();
    for (const p of recovered) this.add({ id: p.id, agentletId: p.agentletId, stable: stable.has(p.id) });
  }

  get deletable(): KnownProfile[] {
    return [...this.known.values()].filter((p) => !p.stable);
  }

  /** Any known profile, or (preferStable) a stable one most of the time. */
  pick(rng: Rng, preferStable = false): KnownProfile | undefined {
    const all = [...this.known.values()];
    const stable = all.filter((p) => p.stable);
    const from = preferStable && stable.length > 0 && rng() < 0.6 ? stable : all;
    return from.length > 0 ? pick(rng, from) : undefined;
  }
}

export interface ThreadSpec {
  canvasId: string;
  threadId: string;
  body: LaunchRequest;
}

interface LaunchRequest {
  profileId: string;
  canvasId: string;
  threadId: string;
  resourceIds?: string[];
  additionalInitialPreamble?: string;
}

/** Threads launched so far (whatever the outcome), for repeated launches. */
export class ThreadPool {
  readonly list: ThreadSpec[] = [];
  constructor(readonly max = 400) {}
  add(spec: ThreadSpec): void {
    this.list.push(spec);
    if (this.list.length > this.max) this.list.shift();
  }
}

export const CANVASES = ['canvas-a', 'canvas-b', 'canvas-c'] as const;
const PROFILE_COMMAND = 'crash-agent --acp';

/** The model's view of a profile as the API or registry.json shows it. */
export function profileViewOf(p: unknown): ProfileView {
  const r = p as {
    id: string;
    alias: string;
    agentletId: string;
    workingDirPath: string;
    launch?: { command?: string };
    resourceIds: string[];
    customData?: { crashTag?: unknown };
  };
  return {
    id: r.id,
    alias: r.alias,
    agentletId: r.agentletId,
    workingDirPath: r.workingDirPath,
    command: r.launch?.command ?? '',
    resourceIds: r.resourceIds,
    tag: typeof r.customData?.crashTag === 'string' ? r.customData.crashTag : undefined,
  };
}

/** Mostly a unique alias; now and then one of a few that clash (409 alias_conflict). */
const aliasFor = (rng: Rng, tag: string) => (rng() < 0.15 ? `Crash agent ${Math.floor(rng() * 6)}` : `Agent ${tag}`);
const profilePath = (id?: string) => `/api/acp/profiles${id ? `/${id}` : ''}`;
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The body POST /api/acp/profiles takes for `view` (the tag rides in customData). */
export function profileCreateBody(view: Omit<ProfileView, 'id'>) {
  return {
    alias: view.alias,
    agentletId: view.agentletId,
    workingDirPath: view.workingDirPath,
    launch: { kind: 'acp-command', command: view.command },
    resourceIds: view.resourceIds,
    customData: { crashTag: view.tag },
  };
}

function profileCreate({ rng, tag, pool, profiles }: PlanContext): PlannedOp {
  const agentletId = pick(rng, profiles.machines);
  const view: ProfileView = {
    id: '',
    alias: aliasFor(rng, tag),
    agentletId,
    workingDirPath: `/work/crash/${tag}`,
    command: PROFILE_COMMAND,
    resourceIds: pool.selection(rng, agentletId),
    tag,
  };
  return {
    kind: 'profile-create',
    request: { method: 'POST', path: profilePath(), body: profileCreateBody(view), asOwner: true },
    acknowledged(status, answer) {
      expect(status === 201, `status ${status}`);
      const got = profileViewOf(answer);
      expect(/^prf-[a-z2-7]{16}$/.test(got.id), `assigned ID ${got.id}`);
      expect(sameJson({ ...got, id: '' }, view), `answer ${JSON.stringify(answer)} is not the profile sent`);
      profiles.add({ id: got.id, agentletId, stable: false });
      return { profiles: createEffects(got) };
    },
    possible: () => ({ profileCreate: view }),
  };
}

/** Reads the profile's ETag (for If-Match), or sends a stale one now and then (412 expected). */
async function ifMatch(rng: Rng, read: Reader, id: string): Promise<Record<string, string>> {
  if (rng() < 0.15) return { 'if-match': '"stale-revision"' };
  const got = await read(profilePath(id));
  return got.etag ? { 'if-match': got.etag } : {};
}

async function profileDelete(ctx: PlanContext): Promise<PlannedOp> {
  const { rng, profiles, read } = ctx;
  const deletable = profiles.deletable;
  if (deletable.length === 0) return profileCreate(ctx);
  const { id } = pick(rng, deletable);
  const conditional = rng() < 0.3;
  const headers = conditional ? await ifMatch(rng, read, id) : {};
  const effects = (): ProfileEffect[] => [{ id, field: 'exists', value: 'absent' }];
  return {
    kind: headers['if-match'] ? 'profile-delete-if-match' : 'profile-delete',
    request: { method: 'DELETE', path: profilePath(id), asOwner: true, headers },
    acknowledged(status) {
      expect(status === 204, `status ${status}`);
      return { profiles: effects() };
    },
    possible: () => ({ profiles: effects() }),
  };
}

async function profilePatch(ctx: PlanContext): Promise<PlannedOp> {
  const { rng, tag, pool, profiles, read } = ctx;
  const target = profiles.pick(rng);
  if (!target) return profileCreate(ctx);
  const { id } = target;
  const body: { alias?: string; resourceIds?: string[] } = {};
  const r = rng();
  if (r < 0.7) body.alias = aliasFor(rng, tag);
  if (r >= 0.4) body.resourceIds = pool.selection(rng, target.agentletId);
  const headers = rng() < 0.5 ? await ifMatch(rng, read, id) : {};
  const effects = (): ProfileEffect[] => [
    ...(body.alias !== undefined ? [{ id, field: 'alias' as const, value: JSON.stringify(body.alias) }] : []),
    ...(body.resourceIds !== undefined ? [{ id, field: 'resourceIds' as const, value: JSON.stringify(body.resourceIds) }] : []),
  ];
  return {
    kind: headers['if-match'] ? 'profile-patch-if-match' : 'profile-patch',
    request: { method: 'PATCH', path: profilePath(id), body, asOwner: true, headers },
    acknowledged(status, answer) {
      expect(status === 200, `status ${status}`);
      const got = profileViewOf(answer);
      expect(got.id === id, `answered profile ${got.id}`);
      expect(body.alias === undefined || got.alias === body.alias, `answered alias ${got.alias}`);
      expect(
        body.resourceIds === undefined || sameJson(got.resourceIds, body.resourceIds),
        `answered resourceIds ${JSON.stringify(got.resourceIds)}`,
      );
      return { profiles: effects() };
    },
    possible: () => ({ profiles: effects() }),
  };
}

/** A launch of a new thread (on a known profile, mostly a stable one), or a repeat of an earlier one. */
function launch({ rng, tag, pool, profiles, threads }: PlanContext): PlannedOp {
  let spec: ThreadSpec | undefined;
  let repeat = false;
  if (threads.list.length > 0 && rng() < 0.3) {
    repeat = true;
    const earlier = pick(rng, threads.list);
    // Mostly the same request (200 once realized); now and then a different preamble (409 once realized).
    spec = rng() < 0.85 ? earlier : { ...earlier, body: { ...earlier.body, additionalInitialPreamble: `Changed by ${tag}.` } };
  } else {
    const target = profiles.pick(rng, true);
    if (target) {
      const canvasId = pick(rng, CANVASES);
      const threadId = `t-${tag}`;
      const body: LaunchRequest = { profileId: target.id, canvasId, threadId };
      if (rng() < 0.6) body.resourceIds = pool.selection(rng, target.agentletId);
      if (rng() < 0.5) body.additionalInitialPreamble = `Crash thread ${tag}.`;
      spec = { canvasId, threadId, body };
      threads.add(spec);
    }
  }
  // No profile known yet (cannot happen after the setup): launch one that does not exist (404).
  spec ??= { canvasId: CANVASES[0], threadId: `t-${tag}`, body: { profileId: 'prf-none', canvasId: CANVASES[0], threadId: `t-${tag}` } };
  const { canvasId, threadId, body } = spec;
  const effect: LaunchEffect = { canvasId, threadId, profileId: body.profileId };
  return {
    kind: repeat ? 'launch-repeat' : 'launch',
    request: { method: 'POST', path: '/api/acp/launch', body, asOwner: true },
    acknowledged(status, answer, text) {
      expect(status === 201 || status === 200, `status ${status}`);
      const a = answer as { canvasId?: string; threadId?: string; spec?: { binding?: { profileId?: string }; resourceIds?: string[] } };
      expect(a.canvasId === canvasId && a.threadId === threadId, `answered thread ${a.canvasId}/${a.threadId}`);
      expect(a.spec?.binding?.profileId === body.profileId, `answered profile ${a.spec?.binding?.profileId}`);
      if (body.resourceIds) {
        const effective = [...new Set([REQUIRED_RESOURCE_ID, ...body.resourceIds])];
        expect(
          sameJson(a.spec?.resourceIds, effective),
          `answered resourceIds ${JSON.stringify(a.spec?.resourceIds)}, expected ${JSON.stringify(effective)}`,
        );
      }
      return { launch: { ...effect, answer: text } };
    },
    possible: () => ({ launch: effect }),
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
          return { resources: [effect] };
        },
        possible: () => ({ resources: [effect] }),
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
      for (const id of pool.fixedOf(provider)) entries.set(id, fixedContent(provider, id));
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
          expect(
            r.withdrawn.every((id) => !entries.has(id)),
            'withdrew a listed ID',
          );
          return { resources: [...sets(), ...r.withdrawn.map((id): Effect => ({ id, after: null, by: provider }))] };
        },
        // Any ID of the pool left out might have been the provider's and so withdrawn.
        possible: () => ({
          resources: [...sets(), ...pool.all.filter((id) => !entries.has(id)).map((id): Effect => ({ id, after: null, by: provider }))],
        }),
      };
    },
  },
  {
    name: 'profile-create',
    weight: 1,
    // Keep the profile count bounded: a full pool deletes instead.
    plan: (ctx) => (ctx.profiles.deletable.length >= ctx.profiles.maxDeletable ? profileDelete(ctx) : profileCreate(ctx)),
  },
  { name: 'profile-patch', weight: 1.5, plan: profilePatch },
  { name: 'profile-delete', weight: 0.6, plan: profileDelete },
  { name: 'launch', weight: 2, plan: launch },
];

export function chooseKind(rng: Rng, kinds: readonly OperationKind[] = OPERATION_KINDS): OperationKind {
  const total = kinds.reduce((sum, k) => sum + k.weight, 0);
  let r = rng() * total;
  for (const kind of kinds) if ((r -= kind.weight) < 0) return kind;
  return kinds[kinds.length - 1]!;
}
