// Replays the calls upstream Huabu makes against this service, over a real socket on a JSON store: the
// Settings pages' agent-resource and profile calls as the UI's client sends them, the Huabu server's launch
// and token calls, and the RFS calls the host skills tell an agent to make. Each call and the shape its
// caller reads live in test/fixtures/huabu-replay/*.json, transcribed from upstream's client code and zod
// schemas (each fixture names its upstream files and commits; README.md there lists them). The sequence
// runs twice: with HUABU_COMPAT=1 every answer must be exactly what upstream's code reads (status and
// shape); without it the always-on parts must hold and reads keep answering v1 unless asked for v2.
import t, { type Test } from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { build, CANARY, DATA_ROOT, recordIssuedToken, type TestApp } from '../helpers/build.js';
import { startHostedEndpoint, type HostedEndpoint } from '../helpers/hosted-endpoint.js';
import { capabilitiesFile, SEARCH_KEY } from '../helpers/invocation-world.js';
import { listen } from '../helpers/sockets.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = { [key: string]: Json };
interface Expectation {
  status: number | number[];
  /** The shape the caller's code reads, as a JSON Schema; `null`: no body at all. */
  reads?: Schema | null;
  /** What this service promises on top of upstream's shape (docs/moving-from-huabu.md), checked in both modes. */
  contract?: Schema | null;
  /** A text answer (the skills' Markdown): its media type and the calls it must name. */
  text?: { contentType: string; mentions: string[] };
}
interface Fixture {
  name: string;
  description: string;
  source: { repo: string; path: string; commit: string; what: string }[];
  caller: 'owner' | 'huabu' | 'canvas';
  request: { base: 'acp' | 'rfs'; method: string; path: string; headers?: Record<string, string>; json?: Json };
  response: Expectation;
  /** How the answer differs without HUABU_COMPAT; `replayWith.query` reaches upstream's shape anyway. */
  withoutCompat?: Partial<Expectation> & { replayWith?: { query: string }; note?: string };
}

const FIXTURES = path.join('test', 'fixtures', 'huabu-replay');
const shapes = (JSON.parse(readFileSync(path.join(FIXTURES, 'shapes.json'), 'utf8')) as { shapes: Record<string, Schema> }).shapes;
const fixtures = new Map<string, Fixture>(
  readdirSync(FIXTURES)
    .filter((f) => f.endsWith('.json') && f !== 'shapes.json')
    .map((f) => {
      const fixture = JSON.parse(readFileSync(path.join(FIXTURES, f), 'utf8')) as Fixture;
      return [fixture.name, fixture];
    }),
);

const MACHINE = 'mac-1';
const CANVAS = 'canvas-replay';
const THREAD = 'thread-replay';

class MissingVar extends Error {}

/** Expands `{"$shape": name}`, `{"$var": name}` and `{{name}}` inside strings. */
function resolve(value: Json, vars: Record<string, Json | undefined>): Json {
  if (typeof value === 'string') {
    return value.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
      const v = vars[name];
      if (v === undefined) throw new MissingVar(name);
      return String(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, vars));
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && typeof value.$shape === 'string') {
      const shape = shapes[value.$shape];
      if (!shape) throw new Error(`unknown shape ${value.$shape}`);
      return resolve(shape, vars);
    }
    if (keys.length === 1 && typeof value.$var === 'string') {
      const v = vars[value.$var];
      if (v === undefined) throw new MissingVar(value.$var);
      return v;
    }
    return Object.fromEntries(keys.map((k) => [k, resolve(value[k]!, vars)]));
  }
  return value;
}

/** Schema errors as short lines (instance path, message), or [] when the value has the shape. */
function shapeErrors(schema: Schema, value: unknown): string[] {
  const check = Compile(schema as never);
  if (check.Check(value)) return [];
  return [...check.Errors(value)]
    .map((e) => {
      const { instancePath, keyword, message } = e as { instancePath: string; keyword: string; message: string };
      // `additionalProperties: false` reports each extra key twice; one line says it.
      return keyword === 'boolean' ? '' : `${instancePath || '/'}: ${message}`;
    })
    .filter(Boolean)
    .slice(0, 8);
}

interface Answer {
  status: number;
  contentType: string;
  text: string;
  body: unknown;
}

interface Replay {
  origin: string;
  compat: boolean;
  vars: Record<string, Json | undefined>;
}

/** Sends one call as upstream's client does (JSON body and Content-Type only when there is a body). */
async function send(r: Replay, fixture: Fixture, query?: string): Promise<Answer> {
  const req = fixture.request;
  const base = req.base === 'acp' ? '/api/acp' : `/api/rfs/${CANVAS}`;
  const url = `${r.origin}${base}${resolve(req.path, r.vars) as string}${query ? `?${query}` : ''}`;
  const token =
    fixture.caller === 'owner' ? CANARY.owner : fixture.caller === 'huabu' ? CANARY.huabu : (r.vars.token as string | undefined);
  if (!token) throw new MissingVar('token');
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    ...(resolve(req.headers ?? {}, r.vars) as Record<string, string>),
  };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(resolve(req.json, r.vars));
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method: req.method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, body: parsed };
}

function checkAnswer(t: Test, label: string, answer: Answer, expected: Expectation, vars: Replay['vars']): void {
  const statuses = Array.isArray(expected.status) ? expected.status : [expected.status];
  t.ok(statuses.includes(answer.status), `${label}: status ${answer.status}, expected ${statuses.join(' or ')}`, {
    body: answer.text.slice(0, 600),
  });
  if (expected.reads === null) {
    t.equal(answer.text, '', `${label}: no body`);
  } else if (expected.reads) {
    const errors = shapeErrors(resolve(expected.reads, vars) as Schema, answer.body);
    t.same(errors, [], `${label}: the answer has the shape its caller reads`, { body: answer.text.slice(0, 600) });
  }
  if (expected.contract) {
    const errors = shapeErrors(resolve(expected.contract, vars) as Schema, answer.body);
    t.same(errors, [], `${label}: the answer keeps this service's promise`, { body: answer.text.slice(0, 600) });
  }
  if (expected.text) {
    t.match(answer.contentType, new RegExp(expected.text.contentType), `${label}: a text answer`);
    for (const call of expected.text.mentions) t.ok(answer.text.includes(call), `${label}: names ${call}`);
  }
}

/**
 * Replays one fixture in this run's mode and checks the answer; resolves the body in upstream's shape (the
 * explicit-v2 replay without HUABU_COMPAT where the fixture has one), or undefined when the call could not be
 * made because an earlier replay failed to give what it needs.
 */
async function replay(t: Test, r: Replay, name: string, label = name): Promise<unknown> {
  const fixture = fixtures.get(name);
  if (!fixture) throw new Error(`no fixture ${name}`);
  try {
    const expected: Expectation = r.compat ? fixture.response : { ...fixture.response, ...fixture.withoutCompat };
    const answer = await send(r, fixture);
    checkAnswer(t, label, answer, expected, r.vars);
    if (!r.compat && fixture.withoutCompat?.replayWith) {
      const asked = await send(r, fixture, fixture.withoutCompat.replayWith.query);
      checkAnswer(t, `${label} ?${fixture.withoutCompat.replayWith.query}`, asked, fixture.response, r.vars);
      return asked.body;
    }
    return answer.body;
  } catch (err) {
    if (!(err instanceof MissingVar)) throw err;
    t.fail(`${label}: not sent, it needs \`${err.message}\` from an earlier replay that failed`);
    return undefined;
  }
}

const field = (body: unknown, key: string): unknown =>
  body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;

async function world(t: Test, compat: boolean): Promise<{ h: TestApp; endpoint: HostedEndpoint; r: Replay }> {
  const endpoint = await startHostedEndpoint();
  t.teardown(() => endpoint.close());
  const caps = capabilitiesFile(endpoint.origin);
  const capsFile = path.join(DATA_ROOT, `replay-caps-${process.pid}-${compat ? 'compat' : 'plain'}.json`);
  await writeFile(capsFile, JSON.stringify({ ...caps, capabilities: { 'web-search': caps.capabilities['web-search'] } }));
  const h = await build(t, {
    env: {
      SEED_HUABU_RESOURCES: 'true',
      DEFAULT_AGENTLET_ID: MACHINE,
      HOSTED_CAPABILITIES_FILE: capsFile,
      ARR_TEST_SEARCH_KEY: SEARCH_KEY,
      ...(compat ? { HUABU_COMPAT: '1' } : {}),
    },
  });
  const origin = await listen(h.app);
  // The machine Huabu's server runs on, enrolled, with one skill of its own for the owner to customize.
  const machineToken = await h.enroll(MACHINE);
  const published = await h.app.inject({
    method: 'PUT',
    url: `/api/acp/providers/${MACHINE}/resources/slides`,
    headers: h.bearer(machineToken),
    payload: { schemaVersion: 2, name: 'Slides', sourceContent: 'Build slide decks from Markdown outlines with the slides CLI.' },
  });
  if (published.statusCode !== 201) throw new Error(`publish slides: ${published.statusCode} ${published.body}`);
  return { h, endpoint, r: { origin, compat, vars: { machineId: MACHINE, canvasId: CANVAS, threadId: THREAD, resourceId: 'slides' } } };
}

for (const compat of [true, false]) {
  t.test(`the Huabu UI's and agents' calls, ${compat ? 'with HUABU_COMPAT=1' : 'without HUABU_COMPAT'}`, async (t) => {
    const { h, endpoint, r } = await world(t, compat);

    await t.test('Settings → Agent resources: list, customize, clear the display name', async (t) => {
      const list = await replay(t, r, 'ui-list-resources');
      const ids = ((field(list, 'resources') as { id?: string }[] | undefined) ?? []).map((x) => x.id);
      t.ok(ids.includes('slides') && ids.includes('huabu-access'), "the machine's skill and the host's records are listed", { ids });
      await replay(t, r, 'ui-patch-resource');
      await replay(t, r, 'ui-patch-resource-clear-name');
    });

    await t.test('Settings → External agents: list, create, change, a stale change, a harness profile, delete', async (t) => {
      await replay(t, r, 'ui-list-profiles', 'ui-list-profiles (none yet)');
      const created = await replay(t, r, 'ui-create-profile');
      const id = field(created, 'id');
      if (typeof id === 'string') r.vars.profileId = id;
      // The UI sends the revision it holds; upstream reads a profile without one as revision 0.
      const revision = typeof field(created, 'revision') === 'number' ? (field(created, 'revision') as number) : 0;
      r.vars.revision = revision;
      r.vars.nextRevision = revision + 1;
      r.vars.staleRevision = revision;
      await replay(t, r, 'ui-patch-profile');
      await replay(t, r, 'ui-patch-profile-stale');
      if (typeof id === 'string') {
        const after = await h.app.inject({ url: `/api/acp/profiles/${id}`, headers: h.owner });
        t.equal(after.json().alias, 'Copilot (site)', 'the stale change wrote nothing');
      }
      const listed = await replay(t, r, 'ui-list-profiles', 'ui-list-profiles (one profile)');
      const profiles = (field(listed, 'profiles') as { id?: string }[] | undefined) ?? [];
      t.ok(
        profiles.some((p) => p.id === id),
        'the created profile is listed',
      );

      const harness = await replay(t, r, 'ui-create-harness-profile');
      if (typeof field(harness, 'id') === 'string') r.vars.harnessProfileId = field(harness, 'id') as string;
      await replay(t, r, 'huabu-launch-harness');
      // The agent replays below run on a thread of the command profile: a launch realizes a snapshot of its
      // profile, so deleting the profile afterwards leaves the thread as it is.
      await replay(t, r, 'huabu-launch');

      await replay(t, r, 'ui-delete-profile');
      if (typeof id === 'string') {
        const gone = await h.app.inject({ url: `/api/acp/profiles/${id}`, headers: h.owner });
        t.equal(gone.statusCode, 404, 'the deleted profile is gone');
      }
    });

    await t.test('an agent on the launched thread: skills, profiles, catalogue, a receipt, a hosted call', async (t) => {
      const minted = await replay(t, r, 'huabu-mint-canvas-token');
      if (typeof field(minted, 'token') === 'string') {
        r.vars.token = field(minted, 'token') as string;
        recordIssuedToken(r.vars.token);
      }
      const granted = await replay(t, r, 'huabu-mint-grant');
      if (typeof field(granted, 'grant') === 'string') {
        r.vars.grant = field(granted, 'grant') as string;
        recordIssuedToken(r.vars.grant);
      }
      await replay(t, r, 'agent-skill');
      await replay(t, r, 'agent-skill-local-resource-management');
      const agentProfiles = await replay(t, r, 'agent-profiles');
      const offered = ((field(agentProfiles, 'profiles') as { id?: string }[] | undefined) ?? []).map((p) => p.id);
      t.ok(
        r.vars.harnessProfileId === undefined || offered.includes(r.vars.harnessProfileId as string),
        'the harness profile is offered to agents',
        { offered },
      );

      const before = await replay(t, r, 'agent-resources', 'agent-resources (before the install)');
      const visible = ((field(before, 'resources') as { id?: string }[] | undefined) ?? []).map((x) => x.id);
      t.ok(
        visible.includes('local-resource-management') && visible.includes('slides'),
        "the agent sees the host's records and its machine's",
        { visible },
      );

      await replay(t, r, 'agent-post-receipt');
      const after = await replay(t, r, 'agent-resources', 'agent-resources (after the receipt)');
      const installed = ((field(after, 'resources') as { id?: string; provider?: string }[] | undefined) ?? []).find(
        (x) => x.id === 'example-skill',
      );
      t.equal(installed?.provider, MACHINE, "the receipt's record is in the catalogue under the agent's machine");
      await replay(t, r, 'agent-delete-receipt');
      const owner = await h.app.inject({ url: '/api/acp/resources/example-skill', headers: h.owner });
      t.equal(owner.statusCode, 404, "the removed receipt's record is withdrawn");

      await replay(t, r, 'agent-invoke');
      const reached = endpoint.received.find((x) => x.path === '/ok');
      t.match(reached?.body ?? '', /lichen growth rates/, "the agent's input reached the hosted capability");
    });
  });
}

t.test('every fixture names its upstream source, and every fixture is replayed above', (t) => {
  const replayed = readFileSync(path.join('test', 'http', 'huabu-replay.test.ts'), 'utf8');
  for (const fixture of fixtures.values()) {
    t.ok(fixture.source.length > 0 && fixture.source.every((s) => s.repo && s.path && s.commit), `${fixture.name}: source named`);
    t.ok(replayed.includes(`'${fixture.name}'`), `${fixture.name}: replayed`);
    for (const schema of [fixture.response.reads, fixture.response.contract, fixture.withoutCompat?.reads]) {
      if (schema)
        t.doesNotThrow(() => Compile(resolve(schema, new Proxy({}, { get: () => 'x' })) as never), `${fixture.name}: its schema compiles`);
    }
  }
  t.end();
});
