// The Agent Team registry file (`DATA_DIR/agent-team/registry.json`) and its ordered migration steps, in
// the shapes upstream's Agent Team store writes and reads (microsoft/Huabu,
// external/agenetes/packages/agent-team/src/store.ts; docs/decisions/registry-file-versions.md):
//   v1  {schemaVersion: 1, state: {roots, members, deployments?, configs?}}   discovery file with deployments
//   v2  {schemaVersion: 2, state: {roots, members, profiles?, configs?}}      profiles embed their `setupLog`
//   v3  {schemaVersion: 3, state: {roots, members, profiles?, configs?}}      setup logs live in JSONL files
//   v4  {schemaVersion: 4, state: {roots, members, profiles, configs}}        current; profiles are Profile v2
// Every state key the steps do not rewrite (Agent Team `roots`, `members`, `configs`, anything unknown) and
// every top-level key other than `schemaVersion`/`state` is carried unchanged through every step.
import { Compile } from 'typebox/compile';
import { StoredAgentProfile } from '../schemas/profile.js';
import { isJsonObject, MigrationError, upgradeProfile, type JsonObject } from './profile-v1.js';

export const REGISTRY_FILE_VERSION = 4;
/** Upstream keeps the last 200 setup-log entries of a profile (store.ts `SETUP_LOG_LIMIT`). */
export const SETUP_LOG_LIMIT = 200;

/** One line of a profile's setup log, as upstream's store validates and writes it. */
export interface SetupLogEntry {
  receivedAt: number;
  phase: string;
  status: 'started' | 'completed';
  message: string;
}

/** What a step produces besides the document: setup logs leaving the file for their JSONL files. */
export interface MigrationOutput {
  /** Profile ID → its setup log (already capped to the last SETUP_LOG_LIMIT entries). */
  setupLogs: Map<string, SetupLogEntry[]>;
}

export interface MigrationStep {
  from: number;
  to: number;
  /** One line for the migrate command's report. */
  describe: string;
  up(doc: JsonObject, out?: MigrationOutput): JsonObject;
}

/** The shape each version must have, as the refusal names it. */
export const EXPECTED_SHAPE: Readonly<Record<number, string>> = {
  1: '{schemaVersion: 1, state: {roots: [...], members: [...], deployments?: [...], configs?: [...]}}',
  2: '{schemaVersion: 2, state: {roots: [...], members: [...], profiles?: [profile with setupLog?, ...], configs?: [...]}}',
  3: '{schemaVersion: 3, state: {roots: [...], members: [...], profiles?: [...], configs?: [...]}}',
  4: '{schemaVersion: 4, state: {roots: [...], members: [...], profiles: [...], configs: [...]}}',
};

/**
 * The `state` of a file declaring `version`, checked for that version's real shape (as upstream's
 * `parseRegistryFile` checks it): `roots` and `members` lists, and the profile list and `configs` lists
 * when present. v4 files written by this service before it wrote `roots`/`members` are accepted without them.
 */
function stateOf(doc: JsonObject, version: number): JsonObject {
  const refuse = (found: string) =>
    new MigrationError(`is not a registry file v${version}: expected ${EXPECTED_SHAPE[version]}, but ${found}`);
  if (!isJsonObject(doc.state)) throw refuse('it has no `state` object');
  const state = doc.state;
  const listKey = version === 1 ? 'deployments' : 'profiles';
  for (const key of ['roots', 'members']) {
    if (version === REGISTRY_FILE_VERSION && state[key] === undefined) continue;
    if (!Array.isArray(state[key])) throw refuse(`state.${key} is ${state[key] === undefined ? 'missing' : 'not a list'}`);
  }
  for (const key of [listKey, 'configs']) {
    if (state[key] !== undefined && !Array.isArray(state[key])) throw refuse(`state.${key} is not a list`);
  }
  if (version !== 1 && state.deployments !== undefined) throw refuse('it holds `state.deployments` (a v1 key)');
  return state;
}

function withVersion(doc: JsonObject, version: number, state: JsonObject): JsonObject {
  const { schemaVersion: _v, state: _s, ...top } = doc;
  return { schemaVersion: version, ...top, state };
}

const nonBlank = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';
const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

function requireText(record: JsonObject, key: string, where: string): string {
  const value = record[key];
  if (!nonBlank(value)) throw new MigrationError(`${where}.${key} must be a non-empty string`);
  return value;
}

/**
 * A deployment's `setup` as a profile's `preparation`, normalized as upstream's `parsePreparation` does:
 * `disabled` becomes `not_prepared`, and only the fields of the status are kept.
 */
function preparationOf(value: unknown, where: string): JsonObject {
  if (!isJsonObject(value)) throw new MigrationError(`${where} must be an object`);
  switch (value.status) {
    case 'not_prepared':
    case 'disabled':
      return { status: 'not_prepared' };
    case 'setting_up':
      if (!finite(value.startedAt)) throw new MigrationError(`${where}.startedAt must be a number`);
      return { status: 'setting_up', operationId: requireText(value, 'operationId', where), startedAt: value.startedAt };
    case 'ready':
      if (!finite(value.completedAt)) throw new MigrationError(`${where}.completedAt must be a number`);
      return { status: 'ready', completedAt: value.completedAt };
    case 'error': {
      if (!finite(value.failedAt)) throw new MigrationError(`${where}.failedAt must be a number`);
      if (!isJsonObject(value.error)) throw new MigrationError(`${where}.error must be an object`);
      const error = {
        code: requireText(value.error, 'code', `${where}.error`),
        message: requireText(value.error, 'message', `${where}.error`),
      };
      return { status: 'error', failedAt: value.failedAt, error };
    }
    default:
      throw new MigrationError(`${where}.status must be not_prepared, disabled, setting_up, ready or error`);
  }
}

/** A v1 deployment as the manifest-backed Profile v2 upstream's `migrateDeployment` makes of it. */
function profileOfDeployment(value: unknown, index: number): JsonObject {
  const where = `state.deployments[${index}]`;
  if (!isJsonObject(value)) throw new MigrationError(`${where} must be an object`);
  const profile: JsonObject = {
    schemaVersion: 2,
    id: requireText(value, 'id', where),
    alias: requireText(value, 'alias', where),
    agentletId: requireText(value, 'machine', where),
    workingDirPath: requireText(value, 'workingDirPath', where),
    resourceIds: [],
    launch: {
      kind: 'agent-team-manifest',
      manifestPath: requireText(value, 'manifestPath', where),
      harness: requireText(value, 'harness', where),
    },
    preparation: preparationOf(value.setup, `${where}.setup`),
  };
  // A v2 profile embeds its setup log; the next step moves it out.
  if (value.setupLog !== undefined) profile.setupLog = value.setupLog;
  return profile;
}

const SETUP_PHASES = new Set([
  'validating_manifest',
  'preparing_workspace',
  'installing_tools',
  'installing_skills',
  'placing_prompt',
  'copying_files',
  'running_custom_setup',
]);

/** Upstream's `parseSetupLog`: every entry checked and reduced to its four fields. */
export function parseSetupLog(value: unknown, where: string): SetupLogEntry[] {
  if (!Array.isArray(value)) throw new MigrationError(`${where} must be a list`);
  return value.map((entry: unknown, i) => {
    const at = `${where}[${i}]`;
    if (!isJsonObject(entry)) throw new MigrationError(`${at} must be an object`);
    if (!finite(entry.receivedAt)) throw new MigrationError(`${at}.receivedAt must be a number`);
    if (typeof entry.phase !== 'string' || !SETUP_PHASES.has(entry.phase)) {
      throw new MigrationError(`${at}.phase must be one of ${[...SETUP_PHASES].join(', ')}`);
    }
    if (entry.status !== 'started' && entry.status !== 'completed') throw new MigrationError(`${at}.status must be started or completed`);
    return { receivedAt: entry.receivedAt, phase: entry.phase, status: entry.status, message: requireText(entry, 'message', at) };
  });
}

/** Profiles without their embedded `setupLog`, which goes to `out` (the last SETUP_LOG_LIMIT entries). */
function takeSetupLogs(list: unknown[], out: MigrationOutput | undefined): unknown[] {
  return list.map((p, i) => {
    if (!isJsonObject(p) || p.setupLog === undefined) return p;
    const { setupLog, ...profile } = p;
    const entries = parseSetupLog(setupLog, `state.profiles[${i}].setupLog`);
    if (typeof profile.id === 'string') out?.setupLogs.set(profile.id, entries.slice(-SETUP_LOG_LIMIT));
    return profile;
  });
}

/** v1 → v2: deployments become manifest-backed profiles; `configs` defaults to `[]`. */
const v1ToV2: MigrationStep = {
  from: 1,
  to: 2,
  describe: 'v1 → v2: deployments become manifest-backed profiles (machine → agentletId, setup → preparation)',
  up(doc) {
    const { deployments = [], ...state } = stateOf(doc, 1);
    const profiles = (deployments as unknown[]).map(profileOfDeployment);
    return withVersion(doc, 2, { ...state, profiles, configs: state.configs ?? [] });
  },
};

/** v2 → v3: the setup log embedded in each profile moves to its JSONL file beside the registry file. */
const v2ToV3: MigrationStep = {
  from: 2,
  to: 3,
  describe: 'v2 → v3: embedded setup logs move to agent-team/<profile id>.setup.jsonl',
  up(doc, out) {
    const state = stateOf(doc, 2);
    return withVersion(doc, 3, { ...state, profiles: takeSetupLogs((state.profiles ?? []) as unknown[], out) });
  },
};

/** v3 → v4: every profile becomes Profile v2 (v1 records get `resourceIds: []`). */
const v3ToV4: MigrationStep = {
  from: 3,
  to: 4,
  describe: 'v3 → v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []',
  up(doc, out) {
    const state = stateOf(doc, 3);
    // Upstream moves a setup log out of any file older than v4.
    const profiles = takeSetupLogs((state.profiles ?? []) as unknown[], out);
    return withVersion(doc, 4, { ...state, profiles: upgradeProfiles(profiles).profiles });
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
  /** Setup logs that leave the file, by profile ID, for `agent-team/<id>.setup.jsonl`. */
  setupLogs: Map<string, SetupLogEntry[]>;
}

/** Runs every step from the document's version to v4, then the profile step. Pure. */
export function migrateRegistryDocument(input: unknown): MigrationResult {
  const from = fileVersion(input);
  let doc = input as JsonObject;
  const steps: string[] = [];
  const upgradedIds: string[] = [];
  const out: MigrationOutput = { setupLogs: new Map() };
  for (const step of REGISTRY_FILE_STEPS) {
    if (step.from !== fileVersion(doc)) continue;
    if (step.to === REGISTRY_FILE_VERSION) {
      // Report the v1 records (no schemaVersion) this step rewrites.
      for (const p of (stateOf(doc, step.from).profiles ?? []) as unknown[]) {
        if (isJsonObject(p) && !('schemaVersion' in p)) upgradedIds.push(String(p.id));
      }
    }
    doc = step.up(doc, out);
    steps.push(step.describe);
  }
  const state = stateOf(doc, REGISTRY_FILE_VERSION);
  const { profiles, upgradedIds: late } = upgradeProfiles(state.profiles ?? []);
  if (late.length > 0) {
    upgradedIds.push(...late);
    steps.push('v4: profiles v1 (no schemaVersion) become v2 with resourceIds: []');
    doc = { ...doc, state: { ...state, profiles } };
  }
  validateRegistryDocument(doc);
  return { from, doc, steps, upgradedIds, setupLogs: out.setupLogs };
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

/**
 * How v4 files are written (by the migration and by the store alike): with `roots`, `members` and
 * `configs` lists always present, because upstream's store refuses a file without `roots` and `members`.
 */
export function serializeRegistryDocument(doc: JsonObject): string {
  const state = isJsonObject(doc.state) ? doc.state : {};
  const complete = { ...doc, state: { roots: [], members: [], ...state, configs: state.configs ?? [] } };
  return JSON.stringify(complete, null, 2) + '\n';
}

/** The JSONL content upstream's store writes for a setup log: one entry a line, `''` when empty. */
export function serializeSetupLog(entries: readonly SetupLogEntry[]): string {
  const lines = entries.map((e) => JSON.stringify(e)).join('\n');
  return lines === '' ? '' : `${lines}\n`;
}

/** `<encodeURIComponent(id)>.setup.jsonl`, beside registry.json, as upstream names it. */
export function setupLogFileName(profileId: string): string {
  return `${encodeURIComponent(profileId)}.setup.jsonl`;
}
