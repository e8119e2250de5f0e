// The request validator compiler (conversion only when a value does not pass as it came) gives
// the same answers as @fastify/type-provider-typebox's TypeBoxValidatorCompiler, which converts every
// querystring, params and headers value first: same accepted value, same refusals. Over the kinds of
// schemas the routes declare (optional strings with patterns, booleans with defaults, literal unions),
// with generated inputs; and through the real app, `?dryRun=true` is still a boolean.
import t from 'tap';
import fc from 'fast-check';
import Type, { type TSchema } from 'typebox';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import { validatorCompiler } from '../../src/http/validator.js';
import { CapabilityQuery } from '../../src/schemas/capability.js';
import { CanvasId, ProviderId, ResourceId } from '../../src/schemas/common.js';
import { IfMatchHeaders, ProfileParams } from '../../src/schemas/profile.js';
import { build, CANARY } from '../helpers/build.js';

const schemas: [string, TSchema][] = [
  ['catalogue querystring', Type.Object({ provider: Type.Optional(ProviderId) }, { additionalProperties: false })],
  ['reconcile querystring', Type.Object({ dryRun: Type.Optional(Type.Boolean({ default: false })) }, { additionalProperties: false })],
  ['workloads querystring', Type.Object({ canvasId: CanvasId }, { additionalProperties: false })],
  ['capabilities querystring', CapabilityQuery],
  ['resource params', Type.Object({ provider: ProviderId, id: ResourceId })],
  ['profile params', ProfileParams],
  ['if-match headers', IfMatchHeaders],
];
const keys = ['provider', 'dryRun', 'canvasId', 'kind', 'format', 'id', 'if-match', 'other'];
const values = fc.oneof(
  fc.constantFrom(
    'true',
    'false',
    '1',
    '0',
    '',
    'json',
    'dot',
    'svg',
    'resource',
    'huabu',
    'bm0',
    'web-search',
    'prf-1',
    '*',
    'UPPER',
    'a b',
  ),
  fc.string({ maxLength: 12 }),
  fc.boolean(),
  fc.integer(),
);
const input = fc.dictionary(fc.constantFrom(...keys), values, { maxKeys: 4 });

for (const [name, schema] of schemas) {
  for (const httpPart of ['querystring', 'params', 'headers', 'body'] as const) {
    t.test(`${name} as ${httpPart}: same answers as TypeBoxValidatorCompiler`, (t) => {
      const ours = validatorCompiler({ schema, httpPart, method: 'GET', url: '/' }) as (v: unknown) => {
        value?: unknown;
        error?: unknown[];
      };
      const theirs = TypeBoxValidatorCompiler({ schema, httpPart, method: 'GET', url: '/' }) as (v: unknown) => {
        value?: unknown;
        error?: unknown[];
      };
      fc.assert(
        fc.property(input, (raw) => {
          const a = ours(structuredClone(raw));
          const b = theirs(structuredClone(raw));
          t.same(a.error === undefined, b.error === undefined, `accepted alike: ${JSON.stringify(raw)}`);
          if (a.error === undefined) t.same(a.value, b.value, `same value: ${JSON.stringify(raw)}`);
          else t.same(a.error, b.error, `same errors: ${JSON.stringify(raw)}`);
        }),
        { numRuns: 150 },
      );
      t.end();
    });
  }
}

t.test('through the app: ?dryRun=true is converted and a bad query is a 400 envelope', async (t) => {
  const { app } = await build(t);
  const put = (query: string) =>
    app.inject({
      method: 'PUT',
      url: `/api/acp/providers/huabu/resources${query}`,
      headers: { authorization: `Bearer ${CANARY.huabu}` },
      payload: {
        resources: [{ id: 'web-search', schemaVersion: 1, name: 'Web search', description: 'Search the web.', instructions: 'Use it.' }],
      },
    });
  const dry = await put('?dryRun=true');
  t.equal(dry.statusCode, 200);
  t.equal(dry.json().dryRun, true, 'dry run: nothing stored');
  const list = await app.inject({
    method: 'GET',
    url: '/api/acp/resources?provider=huabu',
    headers: { authorization: `Bearer ${CANARY.owner}` },
  });
  t.same(
    list
      .json()
      .resources.map((r: { id: string }) => r.id)
      .includes('web-search'),
    false,
  );
  const bad = await put('?dryRun=maybe');
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().code, 'validation_failed');
});
