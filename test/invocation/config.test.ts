// The operator's HOSTED_CAPABILITIES_FILE: validated at start (a bad file stops the start with a clear
// error), input schemas must be bounded, credentials are named by environment variable and their values
// never appear in the configuration's serialized forms nor in any record.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { inspect } from 'node:util';
import { ConfigError, loadConfig } from '../../src/config.js';
import { HostedCapabilities, parseHostedCapabilities, unboundedSchemaProblems } from '../../src/invocation/capabilities-file.js';
import { build, CANARY, DATA_ROOT, recordIssuedToken } from '../helpers/build.js';

const KEY = 'arr_credential_CANARYconfig0key0value0for0tests00';
recordIssuedToken(KEY);

const schema = {
  type: 'object',
  properties: { query: { type: 'string', maxLength: 100 } },
  required: ['query'],
  additionalProperties: false,
};
const entry = (extra: Record<string, unknown> = {}) => ({
  endpoint: 'http://127.0.0.1:9/search',
  credential: { header: 'Authorization', scheme: 'Bearer', env: 'SEARCH_KEY' },
  inputSchema: schema,
  timeoutMs: 1000,
  maxInputBytes: 1000,
  maxOutputBytes: 1000,
  perGrant: { concurrency: 1, perMinute: 10 },
  ...extra,
});
const doc = (capabilities: Record<string, unknown>) => JSON.stringify({ schemaVersion: 1, capabilities });

async function fileWith(text: string): Promise<string> {
  const file = path.join(DATA_ROOT, `caps-config-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, text);
  return file;
}

t.test('a valid file: capabilities, credential header value, policy version from the bytes', (t) => {
  const text = doc({ 'web-search': entry() });
  const caps = parseHostedCapabilities(text, { SEARCH_KEY: KEY });
  t.same(caps.ids, ['web-search']);
  t.same(caps.outboundHeaders('web-search'), { authorization: `Bearer ${KEY}` });
  t.same(caps.credentialValues(), [KEY]);
  t.same(caps.get('web-search')!.checkInput({ query: 'x' }), []);
  t.match(caps.get('web-search')!.checkInput({ query: 'x', more: 1 }), [{ field: 'body/input' }]);
  const again = parseHostedCapabilities(text, { SEARCH_KEY: 'another-value-entirely-here' });
  t.equal(again.policyVersion, caps.policyVersion, 'the version is the file, not the credential');
  t.not(
    parseHostedCapabilities(doc({ 'web-search': entry({ timeoutMs: 999 }) }), { SEARCH_KEY: KEY }).policyVersion,
    caps.policyVersion,
    'any change bumps it',
  );
  for (const shown of [JSON.stringify(caps), inspect(caps, { depth: 10, showHidden: true })]) {
    t.notOk(shown.includes(KEY.slice(16)), 'no serialized form shows the credential value');
  }
  t.end();
});

t.test('a bad file stops the start with an error naming the problem, never a value', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{', /is not valid JSON/],
    ['unknown version', JSON.stringify({ schemaVersion: 2, capabilities: {} }), /schemaVersion/],
    ['unknown field', doc({ 'web-search': entry({ retries: 3 }) }), /additional properties/],
    ['bad id', doc({ Web_Search: entry() }), /invalid|pattern|additional/i],
    ['endpoint scheme', doc({ 'web-search': entry({ endpoint: 'ftp://x/y' }) }), /endpoint/],
    ['endpoint credentials', doc({ 'web-search': entry({ endpoint: 'http://user:pw@x/y' }) }), /must not carry credentials/],
    [
      'unbounded string',
      doc({ 'web-search': entry({ inputSchema: { type: 'object', properties: { q: { type: 'string' } }, additionalProperties: false } }) }),
      /properties\/q: a string needs `maxLength`/,
    ],
    ['open object', doc({ 'web-search': entry({ inputSchema: { type: 'object', properties: {} } }) }), /additionalProperties: false/],
    ['unbounded array', doc({ 'web-search': entry({ inputSchema: { type: 'array', items: { type: 'integer' } } }) }), /maxItems/],
    ['ref', doc({ 'web-search': entry({ inputSchema: { $ref: 'http://evil.example/schema' } }) }), /\$ref/],
    ['reserved header', doc({ 'web-search': entry({ credential: { header: 'Host', env: 'SEARCH_KEY' } }) }), /reserved/],
    ['timeout bound', doc({ 'web-search': entry({ timeoutMs: 10_000_000 }) }), /timeoutMs/],
    [
      'unset variable',
      doc({ 'web-search': entry({ credential: { header: 'X-Key', env: 'NOT_SET_ANYWHERE' } }) }),
      /names NOT_SET_ANYWHERE, which is not set/,
    ],
  ];
  for (const [what, text, message] of cases) {
    const file = await fileWith(text);
    const env = { DATA_DIR: '/var/lib/registry', HOSTED_CAPABILITIES_FILE: file, SEARCH_KEY: KEY };
    t.throws(() => loadConfig(env), ConfigError, what);
    try {
      loadConfig(env);
    } catch (err) {
      t.match((err as Error).message, message, what);
      t.match((err as Error).message, file, `${what}: names the file`);
      t.notOk((err as Error).message.includes(KEY.slice(16)), `${what}: never the credential`);
    }
  }
  t.throws(() => loadConfig({ HOSTED_CAPABILITIES_FILE: path.join(DATA_ROOT, 'no-such-file.json') }), /cannot be read: ENOENT/);
  t.equal(loadConfig({}).hostedCapabilities.policyVersion, 'none', 'no file: no capabilities');
});

t.test(
  "one grant in flight across its capabilities: 4 by default, the largest per-capability concurrency when larger, or the file's",
  (t) => {
    const with_ = (extra: Record<string, unknown>, capabilities: Record<string, unknown>) =>
      JSON.stringify({ schemaVersion: 1, ...extra, capabilities });
    t.equal(parseHostedCapabilities(doc({ 'web-search': entry() }), { SEARCH_KEY: KEY }).maxInFlightPerGrant, 4);
    t.equal(
      parseHostedCapabilities(doc({ 'web-search': entry({ perGrant: { concurrency: 8, perMinute: 10 } }) }), { SEARCH_KEY: KEY })
        .maxInFlightPerGrant,
      8,
    );
    t.equal(
      parseHostedCapabilities(with_({ maxInFlightPerGrant: 2 }, { 'web-search': entry() }), { SEARCH_KEY: KEY }).maxInFlightPerGrant,
      2,
    );
    t.throws(
      () =>
        parseHostedCapabilities(
          with_({ maxInFlightPerGrant: 2 }, { 'web-search': entry({ perGrant: { concurrency: 3, perMinute: 10 } }) }),
          { SEARCH_KEY: KEY },
        ),
      /maxInFlightPerGrant 2 is below the perGrant.concurrency of web-search/,
    );
    t.throws(
      () => parseHostedCapabilities(with_({ maxInFlightPerGrant: 0 }, { 'web-search': entry() }), { SEARCH_KEY: KEY }),
      /maxInFlightPerGrant/,
    );
    t.equal(HostedCapabilities.none().maxInFlightPerGrant, 4);
    t.end();
  },
);

t.test("an answer carrying a capability's own credential, in its usual spellings", (t) => {
  const value = 'tvly-Ab+/"cd\\efGHIJ0123456789';
  const caps = parseHostedCapabilities(doc({ 'web-search': entry(), 'other-search': entry({ credential: undefined }) }), {
    SEARCH_KEY: value,
  });
  const bytes = Buffer.from(value);
  const carried = [
    JSON.stringify({ echoed: value }),
    JSON.stringify({ headers: { authorization: `Bearer ${value}` } }),
    JSON.stringify({ q: encodeURIComponent(value) }),
    JSON.stringify({ hex: bytes.toString('hex') }),
    JSON.stringify({ hex: bytes.toString('hex').toUpperCase() }),
    ...[0, 1, 2].flatMap((pad) => {
      const blob = Buffer.concat([Buffer.from('x'.repeat(pad)), bytes, Buffer.from('trailer')]);
      return [JSON.stringify({ blob: blob.toString('base64') }), JSON.stringify({ blob: blob.toString('base64url') })];
    }),
  ];
  for (const answer of carried) t.ok(caps.answerCarriesCredential('web-search', answer), answer);
  t.notOk(caps.answerCarriesCredential('web-search', JSON.stringify({ results: ['tvly-', value.slice(0, 10)] })), 'a part of it is not it');
  t.notOk(caps.answerCarriesCredential('other-search', carried[0]!), 'a capability without a credential has nothing to leak');
  t.end();
});

t.test('bounded schemas: what counts', (t) => {
  t.same(unboundedSchemaProblems(schema), []);
  t.same(
    unboundedSchemaProblems({
      type: 'object',
      properties: { n: { type: 'integer' }, e: { enum: ['a', 'b'] } },
      additionalProperties: false,
    }),
    [],
  );
  let deep: Record<string, unknown> = { type: 'boolean' };
  for (let i = 0; i < 10; i++) deep = { type: 'object', properties: { d: deep }, additionalProperties: false };
  t.match(unboundedSchemaProblems(deep).join('\n'), /nests deeper than 8 levels/);
  t.end();
});

t.test('no provider can write a hosted credential into a record', async (t) => {
  const file = await fileWith(doc({ 'web-search': entry() }));
  const h = await build(t, { env: { HOSTED_CAPABILITIES_FILE: file, SEARCH_KEY: KEY } });
  const res = await h.put('huabu', CANARY.huabu, 'web-search', { instructions: `Use the key ${KEY} when you search.` });
  t.equal(res.statusCode, 422);
  t.equal(res.json().code, 'secret_detected');
  t.notOk(res.body.includes(KEY.slice(16)));
});

t.test("the hosted-capabilities guide's example capabilities file is valid", async (t) => {
  const guide = await import('node:fs/promises').then((fs) => fs.readFile('docs/hosted-capabilities.md', 'utf8'));
  const section = guide.slice(guide.indexOf('## The capabilities file'));
  const example = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  t.ok(example, 'the section has a JSON example');
  const caps = parseHostedCapabilities(example!, { SEARCH_API_KEY: 'sk-readme-example-value-000' });
  t.same(caps.ids, ['web-search']);
  t.same(caps.outboundHeaders('web-search'), { authorization: 'Bearer sk-readme-example-value-000' });
});

t.test('src/invocation is framework-free: no Fastify, no HTTP adapters', async (t) => {
  const fs = await import('node:fs/promises');
  const dir = path.join('src', 'invocation');
  const names = (await fs.readdir(dir, { recursive: true })).filter((name) => name.endsWith('.ts'));
  t.ok(names.includes(path.join('adapters', 'tavily-search.ts')), 'the adapters folder included');
  for (const name of names) {
    const text = await fs.readFile(path.join(dir, name), 'utf8');
    const imports = [...text.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
    t.same(
      imports.filter((i) => /fastify|\/routes\/|\/http\//.test(i)),
      [],
      `${name} imports no HTTP adapter`,
    );
  }
});
