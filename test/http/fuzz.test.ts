// Schema-driven fuzzing: from the served OpenAPI document, generate valid and invalid inputs for every
// operation (fast-check, seeded) and send them as each role. No 5xx, only documented statuses, every
// JSON response validates against its documented schema, and Object.prototype is never polluted. Also a
// machine's answers to its jobs over a real channel (deep, odd or broken): no 500 for it or the owner.
// FUZZ_RUNS (default 50; `npm run test:slow` runs 500) cases per operation per role; FUZZ_SEED reproduces a run.
import t from 'tap';
import fc from 'fast-check';
import { Compile } from 'typebox/compile';
import { request } from 'undici';
import { EventStreamParser } from '../../src/agentlet/channel-client.js';
import type { Job } from '../../src/channel/machine-channels.js';
import { build, recordIssuedToken } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

/** The subset of JSON Schema TypeBox emits for this API, as far as the generators read it. */
interface Schema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
}
type Content = Record<string, { schema?: Schema } | undefined>;
/** An operation of the served OpenAPI document, as far as the fuzzer reads it. */
interface Operation {
  responses: Record<string, { content?: Content } | undefined>;
  parameters?: { in: string; name: string; required?: boolean; schema: Schema }[];
  requestBody?: { content?: Content };
}
const RUNS = Number(process.env.FUZZ_RUNS ?? 50);
const SEED = Number(process.env.FUZZ_SEED ?? 20261130);
const MAX_TEXT = 300;
/**
 * The documented 5xx of a machine that is not connected or does not answer (the machine channel): the
 * contract's answer when a job's machine is away, not a fault of the service.
 */
const MACHINE_AWAY = new Set(['agentlet_unavailable', 'agentlet_busy', 'agentlet_timeout']);

function stringArb(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? MAX_TEXT, MAX_TEXT);
  if (!s.pattern) return fc.string({ minLength: min, maxLength: max, unit: 'binary' });
  const re = new RegExp(s.pattern, 'u');
  let base: fc.Arbitrary<string>;
  try {
    base = fc.stringMatching(re);
  } catch {
    // Patterns with look-ahead: generate broadly, keep what matches.
    base = fc.string({ minLength: Math.max(min, 1), maxLength: max, unit: 'grapheme' }).filter((v) => re.test(v));
  }
  return base.filter((v) => [...v].length >= min && [...v].length <= (s.maxLength ?? Infinity));
}

/** Values that satisfy `s` (the subset of JSON Schema TypeBox emits for this API). */
function valid(s: Schema): fc.Arbitrary<unknown> {
  if ('const' in s) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  if (s.anyOf) return fc.oneof(...s.anyOf.map(valid));
  switch (s.type) {
    case 'object': {
      const props = Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, valid(v)]));
      if (Object.keys(props).length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
      return fc.record(props, { requiredKeys: s.required ?? [] });
    }
    case 'array':
      return fc.array(valid(s.items ?? {}), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) });
    case 'string':
      return stringArb(s);
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

const hostile = fc.constantFrom<unknown>(
  JSON.parse('{"__proto__": {"polluted": true}}'),
  { constructor: { prototype: { polluted: true } } },
  'x'.repeat(5000),
  '\u0000\u0007\r',
  [],
  null,
  12,
  { schemaVersion: 1, id: '../../etc/passwd', name: 'n', description: 'd', instructions: 'i' },
  // Deep nesting (customData), a token-shaped unknown property, look-alike and invisible text.
  { customData: JSON.parse('{"a":'.repeat(1000) + '1' + '}'.repeat(1000)) },
  { ['arr_machine_' + 'F'.repeat(43)]: 1, ['ghp_' + 'A1b2'.repeat(9)]: 2 },
  { alias: 'Re\u200Bviewer', name: '\u202Eevil', machineId: 'huabu.' },
  'Ｒｅｖｉｅｗｅｒ',
  // Source content opening with front matter that repeats keys, expands aliases, or is past its bounds.
  { schemaVersion: 2, name: 'n', sourceContent: '---\n{a: &x [1, 2], a: *x, b: [*x, *x, *x]}\n---\nBody' },
  { schemaVersion: 2, name: 'n', sourceContent: `---\n{${Array.from({ length: 3000 }, (_, i) => `${i}: 0`).join(', ')}}\n---\nBody` },
);

/** Values that are probably not valid: valid ones broken in one place, or anything at all. */
function invalid(s: Schema): fc.Arbitrary<unknown> {
  const properties = s.type === 'object' ? s.properties : undefined;
  const broken = properties
    ? valid(s).chain((v) => {
        const obj = v as Record<string, unknown>;
        const keys = Object.keys(properties);
        return fc.oneof(
          fc.constant({ ...obj, unexpectedProperty: true }),
          fc.constantFrom(...keys).map((k) => ({ ...obj, [k]: k in obj ? 'x'.repeat(5000) : 42 })),
          fc.constantFrom(...keys).map((k) => Object.fromEntries(Object.entries(obj).filter(([key]) => key !== k))),
        );
      })
    : fc.jsonValue();
  return fc.oneof(broken, fc.jsonValue({ maxDepth: 3 }), hostile);
}

/** `machineB` is another machine: every machine-A path it is sent to (its channel, its jobs, its records) must refuse it cleanly. */
const ROLES = ['none', 'owner', 'huabu', 'machineA', 'machineB', 'canvasX'] as const;

t.test('fuzz every operation as every role', async (t) => {
  // Every role calls from one address: the per-address bound on failed authentications would answer 429 to
  // all of them after the first 30 refusals (it has its own suite, hardening-audit-refusals).
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0' } });
  const machineA = await h.enroll('agentlet-a');
  const machineB = await h.enroll('agentlet-b');
  const canvasX = await h.canvasToken('canvas-x', 'agentlet-a');
  const tokens: Record<(typeof ROLES)[number], string | undefined> = {
    none: undefined,
    owner: h.owner.authorization!.slice(7),
    huabu: h.huabu.authorization!.slice(7),
    machineA,
    machineB,
    canvasX,
  };
  const spec = (await h.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, Record<string, Operation>> }>();
  const protoKeys = Object.getOwnPropertyNames(Object.prototype).sort();
  let cases = 0;

  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      // A Server-Sent Events stream answered 200 never ends, so an in-process request would wait for ever;
      // the streams are exercised over real sockets (test/events/change-events.test.ts, test/machines/channel.test.ts).
      if (op.responses['200']?.content?.['text/event-stream']) continue;
      const documented = new Set(Object.keys(op.responses).map(Number));
      const validators = new Map<number, ReturnType<typeof Compile>>();
      for (const [status, response] of Object.entries(op.responses)) {
        const schema = response?.content?.['application/json']?.schema;
        if (schema) validators.set(Number(status), Compile(schema));
      }
      const params = op.parameters ?? [];
      const pathArbs = Object.fromEntries(
        params
          .filter((p) => p.in === 'path')
          .map((p) => {
            const own =
              p.name === 'provider'
                ? fc.constantFrom('huabu', 'agentlet-a')
                : p.name === 'canvasId'
                  ? fc.constant('canvas-x')
                  : fc.constant('tool-a');
            // IDs of 101..128 characters (once 414) and longer ones (400 in our envelope).
            const long = fc.integer({ min: 101, max: 700 }).map((n) => 'a'.repeat(n));
            return [
              p.name,
              fc.oneof(
                { arbitrary: own, weight: 3 },
                { arbitrary: valid(p.schema) as fc.Arbitrary<string>, weight: 2 },
                { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
                { arbitrary: long, weight: 1 },
              ),
            ];
          }),
      );
      const queryArbs = Object.fromEntries(
        params.filter((p) => p.in === 'query').map((p) => [p.name, fc.oneof(valid(p.schema), fc.string({ maxLength: 10 }))]),
      );
      const bodySchema = op.requestBody?.content?.['application/json']?.schema;
      const body = bodySchema
        ? fc.oneof({ arbitrary: valid(bodySchema), weight: 3 }, { arbitrary: invalid(bodySchema), weight: 2 })
        : fc.constant(undefined);
      const input = fc.record({ path: fc.record(pathArbs), query: fc.record(queryArbs, { requiredKeys: [] }), body });

      for (const role of ROLES) {
        const failures: string[] = [];
        await fc
          .assert(
            fc.asyncProperty(input, async ({ path: pathValues, query, body: payload }) => {
              cases++;
              const url =
                path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(pathValues[name]))) +
                (Object.keys(query).length
                  ? '?' + new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
                  : '');
              const res = await h.app.inject({
                method: method.toUpperCase() as 'GET',
                url,
                headers: tokens[role] ? { authorization: `Bearer ${tokens[role]}` } : {},
                ...(payload === undefined
                  ? {}
                  : {
                      payload: JSON.stringify(payload),
                      headers: { 'content-type': 'application/json', ...(tokens[role] ? { authorization: `Bearer ${tokens[role]}` } : {}) },
                    }),
              });
              if (res.statusCode === 201 && res.json().token) recordIssuedToken(res.json().token);
              const problem =
                res.statusCode >= 500 && !(documented.has(res.statusCode) && MACHINE_AWAY.has(String(res.json().code)))
                  ? `5xx ${res.statusCode}: ${res.body.slice(0, 200)}`
                  : !documented.has(res.statusCode)
                    ? `undocumented status ${res.statusCode} (${res.body.slice(0, 160)})`
                    : validators.has(res.statusCode) &&
                        /^application\/json/.test(String(res.headers['content-type'])) &&
                        !validators.get(res.statusCode)!.Check(res.json())
                      ? `response does not match its schema for ${res.statusCode}: ${res.body.slice(0, 160)}`
                      : ({} as Record<string, unknown>).polluted !== undefined
                        ? 'Object.prototype polluted'
                        : undefined;
              if (
                !problem &&
                res.statusCode >= 400 &&
                /^application\/json/.test(String(res.headers['content-type'])) &&
                /arr_machine_F|ghp_A1b2/.test(res.body)
              ) {
                failures.push(`${method.toUpperCase()} ${url} as ${role}: a token-shaped property name was echoed`);
              }
              if (problem) failures.push(`${method.toUpperCase()} ${url} as ${role}: ${problem}`);
              return problem === undefined;
            }),
            { numRuns: RUNS, seed: SEED, endOnFailure: true },
          )
          .catch((err: unknown) => {
            // A property that returned false has recorded its problem above; anything else that stopped
            // fast-check (an exception inside the property: a non-JSON body, a rejected inject) is a failure
            // too, never swallowed.
            if (failures.length === 0)
              failures.push(
                `${method.toUpperCase()} ${path} as ${role}: ${err instanceof Error ? err.message.split('\n').slice(0, 6).join(' | ') : String(err)}`,
              );
          });
        t.same(failures.slice(0, 3), [], `${method.toUpperCase()} ${path} as ${role}: ${RUNS} cases`);
      }
    }
  }
  t.same(Object.getOwnPropertyNames(Object.prototype).sort(), protoKeys, 'Object.prototype unchanged');
  t.ok(cases >= RUNS * ROLES.length, `${cases} cases sent (seed ${SEED})`);
});

t.test('fuzz the search and page parameters of both catalogue lists: 200 or a 400 with its code, never a 5xx', async (t) => {
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '0' } });
  const machineA = await h.enroll('agentlet-a');
  for (const id of ['web-search', 'web-fetch', 'image-tool', 'react-tool']) await h.put('agentlet-a', machineA, id);
  const canvasX = await h.canvasToken('canvas-x', 'agentlet-a');
  const hostile = fc.constantFrom(
    "'; DROP TABLE resources; --",
    '(.*)+[a-',
    'a & b | !c <-> d:* \\',
    'web\u0000\u0007\u001bsearch',
    '%_ ** ?? $$ \'" `',
    'x'.repeat(10_000),
    'web '.repeat(9),
    'ǅ 日本語 🙂',
  );
  const q = fc.oneof(hostile, fc.string({ maxLength: 300, unit: 'binary' }), fc.constantFrom('web', 'web sear', 'serch'));
  const limit = fc.oneof(fc.integer({ min: -5, max: 600 }), fc.constantFrom('abc', '1.5', '', '1e2', '0x10'));
  const cursor = fc.oneof(fc.string({ maxLength: 80 }), fc.constant('e30.AAAA'));
  const input = fc.record({ q, limit, cursor }, { requiredKeys: [] });
  const failures: string[] = [];
  for (const [base, token] of [
    ['/api/acp/resources', h.owner.authorization!.slice(7)],
    ['/api/rfs/canvas-x/resources', canvasX],
  ] as const) {
    await fc
      .assert(
        fc.asyncProperty(input, async (query) => {
          const url = `${base}?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
          const res = await h.app.inject({ url, headers: h.bearer(token) });
          const code = res.statusCode === 400 ? String(res.json().code) : '';
          const ok = res.statusCode === 200 || ['validation_failed', 'invalid_cursor', 'search_too_broad'].includes(code);
          if (!ok) failures.push(`${url.slice(0, 120)}: ${res.statusCode} ${res.body.slice(0, 160)}`);
          return ok;
        }),
        { numRuns: RUNS * 2, seed: SEED },
      )
      .catch(() => undefined);
  }
  t.same(failures.slice(0, 3), []);
});

t.test("fuzz a machine's answers to its jobs: whatever it posts, neither it nor the owner gets a 500", async (t) => {
  // Answers the route refuses leave their job to time out: a short timeout keeps the run short.
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '0', AUTH_FAILURES_PER_MINUTE: '0', AGENTLET_JOB_TIMEOUT_MS: '300' } });
  const url = await listen(h.app);
  const token = await h.enroll('agentlet-a');
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const channel = await request(`${url}/api/acp/providers/agentlet-a/channel`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  t.equal(channel.statusCode, 200);
  channel.body.setEncoding('utf8');
  const parser = new EventStreamParser();
  const jobs: Job[] = [];
  let wake: (() => void) | undefined;
  void (async () => {
    try {
      for await (const chunk of channel.body as AsyncIterable<string>) {
        for (const e of parser.feed(chunk)) if (e.event === 'job') jobs.push(JSON.parse(e.data) as Job);
        wake?.();
      }
    } catch {
      // closed at the end
    }
  })();
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const answers = fc.oneof(
    fc.record({ ok: fc.constant(true), result: fc.jsonValue() }).map((a) => JSON.stringify(a)),
    fc
      .record({ ok: fc.constant(false), error: fc.record({ code: fc.string({ maxLength: 80 }), message: fc.string({ maxLength: 300 }) }) })
      .map((a) => JSON.stringify(a)),
    fc.integer({ min: 1, max: 200_000 }).map((depth) => `{"ok":true,"result":${nested(depth)}}`),
    fc.integer({ min: 1, max: 200_000 }).map((depth) => `{"ok":true,"result":{"a":${nested(depth)}}}`),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
  );
  const failures: string[] = [];
  await fc
    .assert(
      fc.asyncProperty(answers, async (body) => {
        const run = request(`${url}/api/acp/machines/agentlet-a/jobs`, {
          method: 'POST',
          headers: { ...h.owner, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'ping' }),
        });
        while (jobs.length === 0) await new Promise<void>((r) => (wake = r));
        const job = jobs.shift()!;
        const answered = await request(`${url}/api/acp/providers/agentlet-a/jobs/${job.jobId}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        });
        const machineBody = await answered.body.text();
        const owner = await run;
        const ownerBody = (await owner.body.json()) as { code?: string };
        const problem =
          answered.statusCode >= 500
            ? `the machine got ${answered.statusCode}: ${machineBody.slice(0, 160)}`
            : owner.statusCode >= 500 && !['agentlet_job_failed', ...MACHINE_AWAY].includes(String(ownerBody.code))
              ? `the owner got ${owner.statusCode} ${String(ownerBody.code)}`
              : undefined;
        if (problem) failures.push(`${body.slice(0, 80)}: ${problem}`);
        return problem === undefined;
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    )
    .catch((err: unknown) => {
      // A property that returned false recorded its problem; anything that stopped fast-check otherwise is one too.
      if (failures.length === 0) failures.push(err instanceof Error ? err.message.split('\n').slice(0, 4).join(' | ') : String(err));
    });
  t.same(failures.slice(0, 3), [], `${RUNS} answers`);
});
