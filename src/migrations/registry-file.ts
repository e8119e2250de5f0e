// The Agent Team registry file (`DATA_DIR/agent-team/registry.json`) and its ordered migration steps.
// Shapes (DESIGN-NOTES.md, "Registry file versions"):
//   v1  {schemaVersion: 1, profiles: [v1 profile...], roots, members, configs, ...}      flat, no `state`
//   v2  {schemaVersion: 2, state: {profiles: {<id>: v1 profile without id}, ...}}        keyed by id
//   v3  {schemaVersion: 3, state: {profiles: [v1 or v2 profile...], ...}}                 list again
//   v4  {schemaVersion: 4, state: {profiles: [v2 profile...], ...}}                       current
// Every state key other than `profiles` (Agent Team `roots`, `members`, `configs`, anything unknown) and
// every top-level key other than `schemaVersion`/`state` is carried unchanged through every step.
import { Compile } from 'typebox/compile';
import { StoredAgentProfile } from '../schemas/profile.js';
import { isJsonObject, MigrationError, upgradeProfile, type JsonObject } from './profile-v1.js';

export const REGISTRY_FILE_VERSION = 4;

export interface MigrationStep {
  from: number;
  to: number;
  /** One line for the migrate command's report. */
  describe: string;
  up(doc: JsonObject): JsonObject;
}

function stateOf(doc: JsonObject, version: number): JsonObject {
  if (!isJsonObject(doc.state)) throw new MigrationError(`a v${version} registry file must hold a \`state\` object`);
  return doc.state;
}

function withVersion(doc: JsonObject, version: number, state: JsonObject): JsonObject {
  const { schemaVersion: _v, state: _s, ...top } = doc;
  return { schemaVersion: version, ...top, state };
}

/** v1 → v2: move everything under `state` and key the profiles by their id. */
const v1ToV2: MigrationStep = {
  from: 1,
  to: 2,
  describe: 'v1 → v2: wrap the top-level keys in `state`; key profiles by id',
  up(doc) {
    const { schemaVersion: _v, profiles = [], ...rest } = doc;
    if (!Array.isArray(profiles)) throw new MigrationError('a v1 registry file must hold a `profiles` array');
    const keyed: JsonObject = {};
    profiles.forEach((p: unknown, i) => {
      if (!isJsonObject(p) || typeof p.id !== 'string') throw new MigrationError(`profiles[${i}] has no string id`);
      const { id, ...record } = p;
      if (Object.hasOwn(keyed, id)) throw new MigrationError(`profile ${id} appears twice`);
      keyed[id] = record;
    });
    return { schemaVersion: 2, state: { ...rest, profiles: keyed } };
  },
};

/** v2 → v3: profiles become a list again, each carrying its id. */
const v2ToV3: MigrationStep = {
  from: 2,
  to: 3,
  describe: 'v2 → v3: profiles keyed by id become a list',
  up(doc) {
    const state = stateOf(doc, 2);
    const keyed = state.profiles ?? {};
    if (!isJsonObject(keyed)) throw new MigrationError('a v2 registry file must hold `state.profiles` as an object keyed by id');
    const profiles = Object.entries(keyed).map(([id, p]) => {
      if (!isJsonObject(p)) throw new MigrationError(`profile ${id} is not a JSON object`);
      return { id, ...p };
    });
    return withVersion(doc, 3, { ...state, profiles });
  },
};

/** v3 → v4: every profile becomes Profile v2 (v1 records get `resourceIds: []`). */
const v3ToV4: MigrationStep = {
  from: 3,
  to: 4,
  describe: 'v3 → v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []',
  up(doc) {
    const state = stateOf(doc, 3);
    return withVersion(doc, 4, { ...state, profiles: upgradeProfiles(state.profiles).profiles });
  },
};

export const REGISTRY_FILE_STEPS: readonly MigrationStep[] = [v1ToV2, v2ToV3, v3ToV4];

/** Profile v1 → v2 over a list; also applied to v4 files, where a record without schemaVersion reads as v1. */
export function upgradeProfiles(list: unknown = []): { profiles: JsonObject[]; upgradedIds: string[] } {
  if (!Array.isArray(list)) throw new MigrationError('`state.profiles` is not a list');
  const upgradedIds: string[] = [];
  const profiles = list.map((p: unknown, i) => {
    const { record, upgraded } = upgradeProfile(p, `profiles[${i}]`);
    if (upgraded) upgradedIds.push(String(record.id));
    return record;
  });
  return { profiles, upgradedIds };
}

/** The file's version: an integer 1..4. A newer or unknown one stops here. */
export function fileVersion(doc: unknown): number {
  if (!isJsonObject(doc)) throw new MigrationError('is not a JSON object');
  const v = doc.schemaVersion;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new MigrationError('has no integer schemaVersion');
  if (v > REGISTRY_FILE_VERSION) {
    throw new MigrationError(`has schemaVersion ${v}, newer than this version of the service understands (${REGISTRY_FILE_VERSION})`);
  }
  if (v < 1) throw new MigrationError(`has unknown schemaVersion ${v}`);
  return v;
}

export interface MigrationResult {
  from: number;
  doc: JsonObject;
  /** Descriptions of the file steps applied, in order. */
  steps: string[];
  /** IDs of profiles rewritten from v1 to v2 (in any step). */
  upgradedIds: string[];
}

/** Runs every step from the document's version to v4, then the profile step. Pure. */
export function migrateRegistryDocument(input: unknown): MigrationResult {
  const from = fileVersion(input);
  let doc = input as JsonObject;
  const steps: string[] = [];
  const upgradedIds: string[] = [];
  for (const step of REGISTRY_FILE_STEPS) {
    if (step.from !== fileVersion(doc)) continue;
    if (step.to === REGISTRY_FILE_VERSION) {
      // Report the v1 records this step rewrites.
      const listed = stateOf(doc, step.from).profiles;
      upgradedIds.push(...upgradeProfiles(listed).upgradedIds);
    }
    doc = step.up(doc);
    steps.push(step.describe);
  }
  const state = stateOf(doc, REGISTRY_FILE_VERSION);
  const { profiles, upgradedIds: late } = upgradeProfiles(state.profiles);
  if (late.length > 0) {
    upgradedIds.push(...late);
    steps.push('v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []');
    doc = { ...doc, state: { ...state, profiles } };
  }
  validateRegistryDocument(doc);
  return { from, doc, steps, upgradedIds };
}

const checkProfile = Compile(StoredAgentProfile);

/** The end of every migration: the document must satisfy the current schema, or nothing is written. */
export function validateRegistryDocument(doc: JsonObject): void {
  const state = stateOf(doc, REGISTRY_FILE_VERSION);
  const profiles = state.profiles ?? [];
  if (!Array.isArray(profiles)) throw new MigrationError('`state.profiles` is not a list');
  const ids = new Set<string>();
  profiles.forEach((p: unknown, i) => {
    if (!checkProfile.Check(p)) {
      const errs = [...checkProfile.Errors(p)];
      const first = errs.find((e) => e.keyword !== 'boolean' && e.keyword !== 'anyOf') ?? errs[0];
      const id = isJsonObject(p) && typeof p.id === 'string' ? ` (${p.id})` : '';
      const why = first ? `${first.instancePath || '/'} ${first.message}` : 'does not match the schema';
      throw new MigrationError(`profiles[${i}]${id} is not a valid AgentProfile v2: ${why}`);
    }
    const id = (p as { id: string }).id;
    if (ids.has(id)) throw new MigrationError(`profile ${id} appears twice`);
    ids.add(id);
  });
}

/** How v4 files are written (by the migration and by the store alike). */
export function serializeRegistryDocument(doc: JsonObject): string {
  return JSON.stringify(doc, null, 2) + '\n';
}
