// The rules upstream's Agent Team store applies when it reads `agent-team/registry.json` (microsoft/Huabu,
// external/agenetes/packages/agent-team/src/store.ts `parseRegistryFile`, read at commit
// 032d50a1ba8c3009455f856e29b8047f89f871a1), restated here so a test can check that a file this service
// wrote is one upstream reads (moving back). Throws the way upstream would refuse; returns the state
// reduced to the fields upstream keeps.
type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (what: string): never => {
  throw new Error(`upstream would refuse: ${what}`);
};
const text = (v: unknown, label: string): string =>
  typeof v === 'string' && v.trim() !== '' ? v : fail(`${label} must be a non-empty string`);
const num = (v: unknown, label: string): number => (typeof v === 'number' && Number.isFinite(v) ? v : fail(`${label} must be a number`));
const RESOURCE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

function rootRef(v: unknown, label: string) {
  if (!isObject(v)) fail(`${label} must be an object`);
  const o = v as Obj;
  return { machine: text(o.machine, `${label}.machine`), path: text(o.path, `${label}.path`) };
}

function scan(v: unknown, label: string): void {
  if (!isObject(v)) fail(`${label} must be an object`);
  const o = v as Obj;
  if (o.status === 'never_scanned') return;
  if (o.status === 'error') return void (num(o.attemptedAt, label), text(o.message, label));
  if (o.status !== 'success') fail(`${label}.status`);
  num(o.scannedAt, label);
  if (!Array.isArray(o.diagnostics)) fail(`${label}.diagnostics`);
  for (const d of o.diagnostics as unknown[]) {
    if (!isObject(d)) fail(`${label}.diagnostics[]`);
    text((d as Obj).manifestPath, label);
    text((d as Obj).message, label);
    if ((d as Obj).code !== 'invalid_manifest' && (d as Obj).code !== 'manifest_unreadable') fail(`${label}.diagnostics[].code`);
  }
}

function member(v: unknown, i: number) {
  const label = `members[${i}]`;
  if (!isObject(v)) fail(`${label} must be an object`);
  const o = v as Obj;
  for (const k of ['machine', 'manifestPath', 'name', 'description']) text(o[k], `${label}.${k}`);
  if (!Array.isArray(o.harnesses) || !o.harnesses.every((h) => typeof h === 'string')) fail(`${label}.harnesses`);
  if (!Array.isArray(o.env)) fail(`${label}.env`);
  for (const f of o.env as unknown[]) {
    if (!isObject(f)) fail(`${label}.env[]`);
    const field = f as Obj;
    text(field.name, `${label}.env[].name`);
    text(field.description, `${label}.env[].description`);
    if (typeof field.required !== 'boolean' || typeof field.secret !== 'boolean') fail(`${label}.env[] flags`);
    if (field.default !== undefined && (typeof field.default !== 'string' || field.secret === true)) fail(`${label}.env[].default`);
  }
  if (!Array.isArray(o.discoveredBy)) fail(`${label}.discoveredBy`);
  if (o.status !== 'active' && o.status !== 'member_missing') fail(`${label}.status`);
  return {
    machine: o.machine as string,
    manifestPath: o.manifestPath as string,
    status: o.status,
    discoveredBy: (o.discoveredBy as unknown[]).map((r) => rootRef(r, `${label}.discoveredBy[]`)),
  };
}

function preparation(v: unknown, label: string): Obj {
  if (!isObject(v)) return fail(`${label} must be an object`);
  const o = v;
  if (o.status === 'not_prepared' || o.status === 'disabled') return { status: 'not_prepared' };
  if (o.status === 'setting_up')
    return { status: 'setting_up', operationId: text(o.operationId, label), startedAt: num(o.startedAt, label) };
  if (o.status === 'ready') return { status: 'ready', completedAt: num(o.completedAt, label) };
  if (o.status === 'error') {
    if (!isObject(o.error)) fail(`${label}.error`);
    const e = o.error as Obj;
    return { status: 'error', failedAt: num(o.failedAt, label), error: { code: text(e.code, label), message: text(e.message, label) } };
  }
  return fail(`${label}.status`);
}

function profile(v: unknown, i: number): Obj {
  const label = `profiles[${i}]`;
  if (!isObject(v)) return fail(`${label} must be an object`);
  const o = v;
  const alias = text(o.alias, `${label}.alias`);
  if (alias.trim() !== alias) fail(`${label}.alias cannot have surrounding whitespace`);
  const legacy = o.schemaVersion === undefined;
  if (!legacy && o.schemaVersion !== 2) fail(`${label}.schemaVersion is unsupported`);
  const ids = legacy ? [] : o.resourceIds;
  if (
    !Array.isArray(ids) ||
    ids.length > 64 ||
    new Set(ids).size !== ids.length ||
    !ids.every((id) => typeof id === 'string' && id.length <= 128 && RESOURCE_ID.test(id))
  ) {
    fail(`${label}.resourceIds`);
  }
  if (!isObject(o.launch)) fail(`${label}.launch must be an object`);
  if (o.customData !== undefined && !isObject(o.customData)) fail(`${label}.customData must be an object`);
  const launch = o.launch as Obj;
  const base: Obj = {
    schemaVersion: 2,
    id: text(o.id, `${label}.id`),
    alias,
    agentletId: text(o.agentletId, `${label}.agentletId`),
    workingDirPath: text(o.workingDirPath, `${label}.workingDirPath`),
    resourceIds: ids,
    ...(o.customData === undefined ? {} : { customData: JSON.parse(JSON.stringify(o.customData)) }),
  };
  if (launch.kind === 'agent-team-manifest') {
    return {
      ...base,
      launch: { kind: 'agent-team-manifest', manifestPath: text(launch.manifestPath, label), harness: text(launch.harness, label) },
      preparation: preparation(o.preparation, `${label}.preparation`),
    };
  }
  if (launch.kind !== 'acp-command') fail(`${label}.launch.kind`);
  let metadata: Obj | undefined;
  if (o.metadata !== undefined) {
    if (!isObject(o.metadata)) fail(`${label}.metadata must be an object`);
    const cliId = (o.metadata as Obj).cliId;
    if (cliId !== undefined && typeof cliId !== 'string') fail(`${label}.metadata.cliId`);
    metadata = cliId === undefined ? {} : { cliId };
  }
  return {
    ...base,
    launch: { kind: 'acp-command', command: text(launch.command, label) },
    ...(metadata === undefined ? {} : { metadata }),
  };
}

export function parseAsUpstream(file: unknown): { roots: unknown[]; members: unknown[]; profiles: Obj[]; configs: unknown[] } {
  if (!isObject(file) || !isObject(file.state)) return fail('Unsupported or invalid Agent Team registry schema');
  if (![1, 2, 3, 4].includes(file.schemaVersion as number)) fail('Unsupported or invalid Agent Team registry schema');
  const state = file.state;
  const v1 = file.schemaVersion === 1;
  const listKey = v1 ? 'deployments' : 'profiles';
  if (!Array.isArray(state.roots) || !Array.isArray(state.members)) fail('Invalid Agent Team registry state (roots/members)');
  for (const k of [listKey, 'configs'])
    if (state[k] !== undefined && !Array.isArray(state[k])) fail(`Invalid Agent Team registry state (${k})`);
  if (v1) fail('this helper checks files this service writes (v4), not v1');
  const roots = (state.roots as unknown[]).map((r, i) => {
    const ref = rootRef(r, `roots[${i}]`);
    scan((r as Obj).scan, `roots[${i}].scan`);
    return ref;
  });
  const members = (state.members as unknown[]).map(member);
  const profiles = ((state.profiles ?? []) as unknown[]).map(profile);
  const configs = ((state.configs ?? []) as unknown[]).map((c, i) => {
    if (!isObject(c) || !isObject(c.values)) return fail(`configs[${i}]`);
    const o = c;
    for (const value of Object.values(o.values as Obj)) if (typeof value !== 'string') fail(`configs[${i}].values`);
    return { machine: text(o.machine, `configs[${i}]`), manifestPath: text(o.manifestPath, `configs[${i}]`) };
  });
  const key = (a: string, b: string) => JSON.stringify([a, b]);
  const unique = (keys: string[], what: string) => new Set(keys).size === keys.length || fail(`duplicate ${what}`);
  const rootKeys = new Set(roots.map((r) => key(r.machine, r.path)));
  unique(
    roots.map((r) => key(r.machine, r.path)),
    'root identity',
  );
  const memberKeys = new Set(members.map((m) => key(m.machine, m.manifestPath)));
  unique(
    members.map((m) => key(m.machine, m.manifestPath)),
    'member identity',
  );
  unique(
    profiles.map((p) => p.id as string),
    'profile id',
  );
  for (const p of profiles) {
    const l = p.launch as Obj;
    if (l.kind === 'agent-team-manifest' && !memberKeys.has(key(p.agentletId as string, l.manifestPath as string)))
      fail('profile references an unknown member');
  }
  unique(
    configs.map((c) => key(c.machine, c.manifestPath)),
    'member config identity',
  );
  for (const c of configs) if (!memberKeys.has(key(c.machine, c.manifestPath))) fail('config references an unknown member');
  for (const m of members) {
    unique(
      m.discoveredBy.map((r) => key(r.machine, r.path)),
      'discovery provenance',
    );
    if (m.discoveredBy.some((r) => !rootKeys.has(key(r.machine, r.path)))) fail('member references an unknown root');
    if ((m.discoveredBy.length === 0) !== (m.status === 'member_missing')) fail('member status does not match discovery provenance');
  }
  return { roots: state.roots as unknown[], members: state.members as unknown[], profiles, configs: (state.configs ?? []) as unknown[] };
}
