// Model-based test: random command sequences (register, replace, withdraw, reconcile, create/patch profile,
// launch) run against the real app and against a small in-memory model of the rules (ownership,
// placement, same-name clashes, first realization); every answer must
// match the model, and the catalogue must equal the model at the end of every sequence.
// MODEL_RUNS sequences (default 1000), FUZZ_SEED to reproduce. Each sequence works in its own namespace
// (ID prefix, machines, canvas) of one shared app, so sequences are independent.
import t from 'tap';
import fc from 'fast-check';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { build, type TestApp } from '../helpers/build.js';

const RUNS = Number(process.env.MODEL_RUNS ?? 1000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);

type Provider = 'huabu' | 'mA' | 'mB';
interface Model {
  resources: Map<string, { provider: Provider; name: string }>;
  profiles: { id: string; machine: 'mA' | 'mB'; selection: string[] }[];
  threads: Map<string, { profile: number; resourceIds: string[] }>;
}
interface Real {
  h: TestApp;
  ns: string;
  tokens: Record<Provider, string>;
  machineIds: Record<'mA' | 'mB', string>;
}

const POOL = ['alpha', 'beta', 'gamma', 'delta'];

function providerPath(r: Real, p: Provider): string {
  return p === 'huabu' ? 'huabu' : r.machineIds[p];
}

const visible = (provider: Provider, machine: 'mA' | 'mB') => provider === 'huabu' || provider === machine;
const nameKey = (name: string) => name.trim().toLowerCase();

/** Placement: every ID registered and eligible for the machine. */
function resolve(m: Model, machine: 'mA' | 'mB', ids: string[]): 201 | 422 {
  for (const id of ids) {
    const rec = m.resources.get(id);
    if (!rec || !visible(rec.provider, machine)) return 422;
  }
  return 201;
}

/** A profile may not select two resources with one name (no required defaults in this test). */
function selectionClash(m: Model, ids: string[]): boolean {
  const keys = ids.map((id) => nameKey(m.resources.get(id)!.name));
  return new Set(keys).size < keys.length;
}

/** A launch is refused when a name of its effective set is shared by two resources the agent can see. */
function launchClash(m: Model, machine: 'mA' | 'mB', ids: string[]): boolean {
  const keys = new Set(ids.map((id) => nameKey(m.resources.get(id)!.name)));
  const seen = [...m.resources.values()].filter((r) => visible(r.provider, machine) && keys.has(nameKey(r.name)));
  return seen.length > keys.size;
}

abstract class Cmd implements fc.AsyncCommand<Model, Real> {
  check(_m: Readonly<Model>): boolean {
    return true;
  }
  abstract run(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

class Register extends Cmd {
  constructor(
    readonly p: Provider,
    readonly id: string,
    readonly name: string,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const held = m.resources.get(this.id);
    const expected = held && held.provider !== this.p ? 409 : !held ? 201 : 200;
    const res = await r.h.put(providerPath(r, this.p), r.tokens[this.p], `${r.ns}-${this.id}`, { name: this.name });
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}: ${res.body}`);
    if (expected !== 409) m.resources.set(this.id, { provider: this.p, name: this.name });
  }
  toString() {
    return `register(${this.p}, ${this.id}, ${this.name})`;
  }
}

class Withdraw extends Cmd {
  constructor(
    readonly p: Provider,
    readonly id: string,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const held = m.resources.get(this.id);
    const expected = !held ? 404 : held.provider !== this.p ? 409 : 204;
    const res = await r.h.app.inject({
      method: 'DELETE',
      url: `/api/acp/providers/${providerPath(r, this.p)}/resources/${r.ns}-${this.id}`,
      headers: r.h.bearer(r.tokens[this.p]),
    });
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}`);
    if (expected === 204) m.resources.delete(this.id);
  }
  toString() {
    return `withdraw(${this.p}, ${this.id})`;
  }
}

class Reconcile extends Cmd {
  constructor(
    readonly p: Provider,
    readonly ids: string[],
    readonly name: string,
  ) {
    super();
  }
  async run(m: Model, r: Real) {
    const conflict = this.ids.some((id) => m.resources.has(id) && m.resources.get(id)!.provider !== this.p);
    const res = await r.h.app.inject({
      method: 'PUT',
      url: `/api/acp/providers/${providerPath(r, this.p)}/resources`,
      headers: r.h.bearer(r.tokens[this.p]),
      payload: {
        resources: this.ids.map((id) => ({
          schemaVersion: 1,
          id: `${r.ns}-${id}`,
          name: this.name,
          description: `About ${id}.`,
          instructions: `Use ${id} via $HUABU_RFS_URL.`,
        })),
      },
    });
    const expected = conflict ? 409 : 200;
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}: ${res.body}`);
    if (conflict) return;
    // The provider's set in this namespace becomes exactly `ids` (records of other namespaces are the
    // provider's too, and are withdrawn by the real system: check only this namespace).
    for (const [id, rec] of [...m.resources]) if (rec.provider === this.p && !this.ids.includes(id)) m.resources.delete(id);
    for (const id of this.ids) m.resources.set(id, { provider: this.p, name: this.name });
  }
  toString() {
    return `reconcile(${this.p}, [${this.ids}], ${this.name})`;
  }
}

class CreateProfile extends Cmd {
  constructor(
    readonly machine: 'mA' | 'mB',
    readonly selection: string[],
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.profiles.length < 3;
  }
  async run(m: Model, r: Real) {
    const expected =
      resolve(m, this.machine, this.selection) === 201 && selectionClash(m, this.selection)
        ? 422
        : resolve(m, this.machine, this.selection);
    const res = await r.h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: r.h.owner,
      payload: {
        alias: `${r.ns} agent ${m.profiles.length}`,
        agentletId: r.machineIds[this.machine],
        workingDirPath: '/work',
        launch: { kind: 'acp-command', command: 'agent' },
        resourceIds: this.selection.map((id) => `${r.ns}-${id}`),
      },
    });
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}: ${res.body}`);
    if (expected === 201) m.profiles.push({ id: res.json().id, machine: this.machine, selection: this.selection });
  }
  toString() {
    return `createProfile(${this.machine}, [${this.selection}])`;
  }
}

class PatchProfile extends Cmd {
  constructor(
    readonly index: number,
    readonly selection: string[],
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.profiles.length > 0;
  }
  async run(m: Model, r: Real) {
    const profile = m.profiles[this.index % m.profiles.length]!;
    const expected = resolve(m, profile.machine, this.selection) === 201 && !selectionClash(m, this.selection) ? 200 : 422;
    const res = await r.h.app.inject({
      method: 'PATCH',
      url: `/api/acp/profiles/${profile.id}`,
      headers: r.h.owner,
      payload: { resourceIds: this.selection.map((id) => `${r.ns}-${id}`) },
    });
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}: ${res.body}`);
    if (expected === 200) profile.selection = this.selection;
  }
  toString() {
    return `patchProfile(${this.index}, [${this.selection}])`;
  }
}

class Launch extends Cmd {
  constructor(
    readonly index: number,
    readonly thread: string,
    readonly override: string[] | undefined,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.profiles.length > 0;
  }
  async run(m: Model, r: Real) {
    const pi = this.index % m.profiles.length;
    const profile = m.profiles[pi]!;
    const stored = m.threads.get(this.thread);
    const effective = this.override ?? profile.selection;
    let expected: number;
    if (stored) {
      const same =
        stored.profile === pi && (this.override === undefined || JSON.stringify(this.override) === JSON.stringify(stored.resourceIds));
      expected = same ? 200 : 409;
    } else {
      expected = resolve(m, profile.machine, effective) === 201 && !launchClash(m, profile.machine, effective) ? 201 : 422;
    }
    const res = await r.h.app.inject({
      method: 'POST',
      url: '/api/acp/launch',
      headers: r.h.owner,
      payload: {
        profileId: profile.id,
        canvasId: r.ns,
        threadId: this.thread,
        ...(this.override ? { resourceIds: this.override.map((id) => `${r.ns}-${id}`) } : {}),
      },
    });
    if (res.statusCode !== expected) throw new Error(`${this}: got ${res.statusCode}, model says ${expected}: ${res.body}`);
    if (expected === 201) {
      m.threads.set(this.thread, { profile: pi, resourceIds: effective });
      const pinned = (res.json().spec.resourceIds as string[]).map((id) => id.slice(r.ns.length + 1));
      if (JSON.stringify(pinned) !== JSON.stringify(effective)) throw new Error(`${this}: pinned ${pinned}, model says ${effective}`);
    }
  }
  toString() {
    return `launch(${this.index}, ${this.thread}, ${this.override ? `[${this.override}]` : 'profile'})`;
  }
}

const provider = fc.constantFrom<Provider>('huabu', 'mA', 'mB');
const machine = fc.constantFrom<'mA' | 'mB'>('mA', 'mB');
const id = fc.constantFrom(...POOL);
const name = fc.constantFrom('One', 'Two');
const subset = fc.subarray(POOL);
const commands = fc.commands(
  [
    fc.tuple(provider, id, name).map(([p, i, n]) => new Register(p, i, n)),
    fc.tuple(provider, id).map(([p, i]) => new Withdraw(p, i)),
    fc.tuple(provider, subset, name).map(([p, ids, n]) => new Reconcile(p, ids, n)),
    fc.tuple(machine, subset).map(([mm, s]) => new CreateProfile(mm, s)),
    fc.tuple(fc.nat(2), subset).map(([i, s]) => new PatchProfile(i, s)),
    fc.tuple(fc.nat(2), fc.constantFrom('t1', 't2'), fc.option(subset, { nil: undefined })).map(([i, th, o]) => new Launch(i, th, o)),
  ],
  { maxCommands: 12 },
);

t.test(`${RUNS} random command sequences agree with the model`, async (t) => {
  t.setTimeout(Math.max(120_000, RUNS * 400));
  // The rules, not the disk, are under test here: a memory-backed DATA_DIR keeps 1000 sequences of
  // durable writes fast (durability has its own tests).
  const dataDir = existsSync('/dev/shm') ? await mkdtemp('/dev/shm/arr-model-') : undefined;
  if (dataDir) t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: '', RATE_LIMIT_WRITES_PER_MINUTE: '0' }, ...(dataDir ? { dataDir } : {}) });
  let run = 0;
  let executed = 0;
  const machineIds = { mA: 'machine-a', mB: 'machine-b' };
  const tokens = { huabu: h.huabu.authorization!.slice(7), mA: await h.enroll(machineIds.mA), mB: await h.enroll(machineIds.mB) };
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      const ns = `r${++run}`;
      const real: Real = { h, ns, tokens, machineIds };
      const model: Model = { resources: new Map(), profiles: [], threads: new Map() };
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      executed += [...cmds].length;
      const catalogue = (await h.app.inject({ url: '/api/acp/resources', headers: h.owner })).json().resources as {
        id: string;
        provider: string;
        name: string;
      }[];
      const mine = catalogue.filter((rec) => rec.id.startsWith(`${ns}-`));
      const expected = [...model.resources]
        .map(([rid, rec]) => ({ id: `${ns}-${rid}`, provider: providerPath(real, rec.provider), name: rec.name }))
        .sort((a, b) => a.id.localeCompare(b.id));
      const actual = mine.map((rec) => ({ id: rec.id, provider: rec.provider, name: rec.name }));
      if (JSON.stringify(actual) !== JSON.stringify(expected))
        throw new Error(`catalogue ${JSON.stringify(actual)} != model ${JSON.stringify(expected)}`);
      // Leave an empty registry to the next sequence, so every sequence costs the same.
      for (const p of ['huabu', 'mA', 'mB'] as const) {
        await h.app.inject({
          method: 'PUT',
          url: `/api/acp/providers/${providerPath(real, p)}/resources`,
          headers: h.bearer(tokens[p]),
          payload: { resources: [] },
        });
      }
      for (const profile of model.profiles)
        await h.app.inject({ method: 'DELETE', url: `/api/acp/profiles/${profile.id}`, headers: h.owner });
    }),
    { numRuns: RUNS, seed: SEED },
  );
  t.pass(`${RUNS} sequences, ${executed} commands (seed ${SEED})`);
});
