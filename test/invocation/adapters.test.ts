// The built-in hosted capabilities, `adapter: "tavily-search"`, `"brave-search"` and `"openai-images"`, end to
// end on real sockets: an agent invokes the registry with undici, the registry calls a local server that
// speaks Tavily's, Brave's and OpenAI's formats (test/helpers/vendor-endpoints.ts). Covers the request each adapter sends
// (path, method, auth header, body), the answer each hands the agent, the defaults (concurrency 4 and 1 per
// grant), vendor errors and deadlines, the key absent at start, and the key never in an answer, a log
// line or the audit file.
//
// Input shapes after microsoft/Huabu packages/shared/src/types/api/hosted-capability.ts
// @a8514a7df0798d075ddffe50ef3bd7f0ddcd2d25 (webSearchInvocationInputSchema,
// imageGenerationInvocationInputSchema); result shapes after
// apps/server/src/modules/agent/hosted-capabilities/web-search.service.ts and image-generation.service.ts
// at the same commit.
import t, { type Test } from 'tap';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { ConfigError, loadConfig } from '../../src/config.js';
import { BUILT_IN_ADAPTERS, imageSizeProblem } from '../../src/invocation/adapters.js';
import { parseHostedCapabilities, unboundedSchemaProblems } from '../../src/invocation/capabilities-file.js';
import { build, CANARY, DATA_ROOT, recordIssuedToken, type TestApp } from '../helpers/build.js';
import { type InvokeAnswer } from '../helpers/invocation-world.js';
import { PNG_B64, startVendorEndpoints, VENDOR_LEAK, type VendorEndpoints } from '../helpers/vendor-endpoints.js';
import { listen } from '../helpers/sockets.js';
import { auditLines } from '../helpers/audit.js';

const TAVILY_KEY = 'tvly-arr_credential_CANARYtavily0key0value0for0tests';
const OPENAI_KEY = 'sk-arr_credential_CANARYopenai0key0value0for0tests';
const BRAVE_KEY = 'BSA-arr_credential_CANARYbrave0key0value0for0tests';
recordIssuedToken(TAVILY_KEY);
recordIssuedToken(OPENAI_KEY);
recordIssuedToken(BRAVE_KEY);
const KEYS = { ARR_TEST_TAVILY_KEY: TAVILY_KEY, ARR_TEST_OPENAI_KEY: OPENAI_KEY, ARR_TEST_BRAVE_KEY: BRAVE_KEY };

const search = (origin: string, extra: Record<string, unknown> = {}) => ({
  adapter: 'tavily-search',
  endpoint: `${origin}/search`,
  credential: { env: 'ARR_TEST_TAVILY_KEY' },
  ...extra,
});
const brave = (origin: string, extra: Record<string, unknown> = {}) => ({
  adapter: 'brave-search',
  endpoint: `${origin}/res/v1/web/search`,
  credential: { env: 'ARR_TEST_BRAVE_KEY' },
  ...extra,
});
const images = (origin: string, extra: Record<string, unknown> = {}) => ({
  adapter: 'openai-images',
  endpoint: `${origin}/v1/images/generations`,
  credential: { env: 'ARR_TEST_OPENAI_KEY' },
  ...extra,
});

function capabilitiesFile(origin: string) {
  return {
    schemaVersion: 1,
    capabilities: {
      'web-search': search(origin),
      'brave-web-search': brave(origin),
      'echo-brave': brave(origin, { endpoint: `${origin}/echo-auth` }),
      'generate-image': images(origin),
      'image-1': images(origin, { model: 'gpt-image-1' }),
      'url-image': images(origin, { endpoint: `${origin}/url-image` }),
      'tiny-image': images(origin, { maxOutputBytes: 64 }),
      'hold-search': search(origin, { endpoint: `${origin}/hold`, timeoutMs: 20_000 }),
      'hold-image': images(origin, { endpoint: `${origin}/hold`, timeoutMs: 20_000 }),
      'slow-search': search(origin, { endpoint: `${origin}/hold`, timeoutMs: 300 }),
      'refused-search': search(origin, { endpoint: `${origin}/status/401` }),
      'failing-image': images(origin, { endpoint: `${origin}/status/500` }),
      'odd-search': search(origin, { endpoint: `${origin}/other-shape` }),
      'echo-search': search(origin, { endpoint: `${origin}/echo-auth` }),
      'html-image': images(origin, { endpoint: `${origin}/not-json` }),
    },
  };
}
const IDS = Object.keys(capabilitiesFile('http://x').capabilities);

interface Invoked {
  status: number;
  body: InvokeAnswer;
  text: string;
}

interface World {
  h: TestApp;
  vendor: VendorEndpoints;
  invoke(id: string, input: unknown): Promise<Invoked>;
}

async function world(t: Test): Promise<World> {
  const vendor = await startVendorEndpoints();
  t.teardown(() => vendor.close());
  const capsFile = path.join(DATA_ROOT, `caps-adapters-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(capsFile, JSON.stringify(capabilitiesFile(vendor.origin)));
  const h = await build(t, { env: { HOSTED_CAPABILITIES_FILE: capsFile, ...KEYS, REQUIRED_RESOURCE_IDS: '' } });
  const origin = await listen(h.app);
  await h.enroll('mac-1');
  for (const id of IDS) {
    const put = await h.put('huabu', CANARY.huabu, id);
    if (put.statusCode !== 201) throw new Error(`put ${id}: ${put.body}`);
  }
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Agent with hosted tools',
      agentletId: 'mac-1',
      workingDirPath: '/work',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: IDS,
    },
  });
  if (profile.statusCode !== 200 && profile.statusCode !== 201) throw new Error(`profile: ${profile.body}`);
  const launch = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId: profile.json().id, canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  if (launch.statusCode !== 201) throw new Error(`launch: ${launch.body}`);
  const token = await h.canvasToken('canvas-1', 'mac-1');
  const minted = await h.app.inject({
    method: 'POST',
    url: '/api/acp/grants',
    headers: h.owner,
    payload: { canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  if (minted.statusCode !== 201) throw new Error(`grant: ${minted.body}`);
  const grant = minted.json().grant as string;
  recordIssuedToken(grant);
  return {
    h,
    vendor,
    async invoke(id, input) {
      const res = await request(`${origin}/api/rfs/canvas-1/resources/${id}/invoke`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
          'x-huabu-resource-grant': grant,
          'x-huabu-thread-id': 'thread-1',
        },
        body: JSON.stringify({ schemaVersion: 1, input }),
      });
      const text = await res.body.text();
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: res.statusCode, body: body as InvokeAnswer, text };
    },
  };
}

/** The invoke answer's result. */
const resultOf = (res: Invoked): Record<string, unknown> => res.body?.result;

/** Huabu's error code and our finer reason (details.reason), as the invoke route answers every failure. */
function isCode(t: Test, res: Invoked, code: string, reason: string, what: string): void {
  t.same([res.body?.code, res.body?.details?.reason], [code, reason], `${what}: ${res.status} ${res.text.slice(0, 300)}`);
}

/** Every file under `dir`, recursively, as text. */
async function allText(dir: string): Promise<string> {
  let text = '';
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) text += await readFile(path.join(entry.parentPath, entry.name), 'latin1');
  }
  return text;
}

t.test("tavily-search: Huabu's input becomes Tavily's request, its answer Huabu's result", async (t) => {
  const w = await world(t);
  const res = await w.invoke('web-search', { query: '  lichen growth rates ', maxResults: 2, searchDepth: 'advanced' });
  t.equal(res.status, 200, res.text);
  t.same(
    resultOf(res),
    {
      query: 'lichen growth rates',
      answer: 'Lichens grow a few millimetres a year.',
      results: [
        { title: 'Lichen growth', url: 'https://example.org/lichen', content: 'Slow.', favicon: '', score: 0.91 },
        { title: 'Crustose lichens', url: 'https://example.org/crustose', content: 'Slower still.', favicon: '', score: 0.5 },
      ],
    },
    'results without a URL are dropped; vendor-only fields (raw_content, images, response_time) are not passed on',
  );
  const sent = w.vendor.received.at(-1)!;
  t.equal(sent.method, 'POST');
  t.equal(sent.path, '/search');
  t.equal(sent.headers.authorization, `Bearer ${TAVILY_KEY}`, 'the key from the named variable, in the auth header Tavily documents');
  t.match(sent.headers['content-type'], /^application\/json/);
  t.same(
    JSON.parse(sent.body),
    { query: 'lichen growth rates', search_depth: 'advanced', max_results: 2, include_answer: true, include_raw_content: false },
    "the request body: Tavily's fields, no key in it",
  );

  const defaults = await w.invoke('web-search', { query: 'mosses', includeAnswer: false });
  t.equal(defaults.status, 200, defaults.text);
  t.same(
    JSON.parse(w.vendor.received.at(-1)!.body),
    { query: 'mosses', search_depth: 'basic', max_results: 5, include_answer: false, include_raw_content: false },
    "Huabu's defaults: basic depth, 5 results",
  );
  t.notOk('answer' in resultOf(defaults), 'no answer when Tavily gives none');
  for (const r of [res, defaults]) t.notOk(r.text.includes(TAVILY_KEY), 'the key is not in the answer');
});

t.test("brave-search: Huabu's input becomes Brave's GET with the key in X-Subscription-Token, its answer Huabu's result", async (t) => {
  const w = await world(t);
  const res = await w.invoke('brave-web-search', { query: '  lichen growth rates ', maxResults: 2, searchDepth: 'advanced' });
  t.equal(res.status, 200, res.text);
  t.same(
    resultOf(res),
    {
      query: 'lichen growth rates',
      results: [
        {
          title: 'Lichen growth',
          url: 'https://example.org/lichen',
          content: 'Slow.',
          favicon: 'https://imgs.search.brave.com/example.org.ico',
        },
        {
          title: 'Crustose lichens',
          url: 'https://example.net/crustose',
          content: 'Slower still.',
          favicon: 'https://imgs.search.brave.com/example.net.ico',
        },
      ],
    },
    "Huabu's result: description as content, the favicon from meta_url, results without a URL dropped, no answer or score",
  );
  const sent = w.vendor.received.at(-1)!;
  t.equal(sent.method, 'GET');
  t.equal(sent.path, '/res/v1/web/search?q=lichen+growth+rates&count=2', 'the query and the count in the URL');
  t.equal(sent.headers['x-subscription-token'], BRAVE_KEY, 'the key from the named variable, in the header Brave documents');
  t.equal(sent.headers.authorization, undefined, 'and in no other header');
  t.equal(sent.headers['content-type'], undefined, 'a GET without a body');
  t.equal(sent.body, '');
  t.match(sent.headers.accept, /application\/json/);

  const defaults = await w.invoke('brave-web-search', { query: 'nothing' });
  t.equal(w.vendor.received.at(-1)!.path, '/res/v1/web/search?q=nothing&count=5', "Huabu's default: 5 results");
  t.same(resultOf(defaults), { query: 'nothing', results: [] }, 'no `web` in the answer: nothing found');
  const long = await w.invoke('brave-web-search', { query: 'moss '.repeat(51) });
  t.equal(long.status, 400, 'more words than Brave takes');
  t.match(long.body.details.issues, [{ field: 'body/input/query', message: /at most 400 characters and 50 words/ }]);
  t.equal(w.vendor.received.length, 2, 'the refused query was not sent');
  const echo = await w.invoke('echo-brave', { query: 'x' });
  t.equal(echo.body.details.cause, 'credential_echoed', 'an answer carrying the key is refused');
  for (const r of [res, defaults, long, echo]) t.notOk(r.text.includes(BRAVE_KEY), 'the key is not in the answer');
});

t.test("openai-images: Huabu's input becomes an Images generation request, the image comes back in the result", async (t) => {
  const w = await world(t);
  const res = await w.invoke('generate-image', { prompt: 'a fox in the snow', size: '1536x1024', quality: 'high' });
  t.equal(res.status, 200, res.text);
  t.same(resultOf(res), { src: `data:image/png;base64,${PNG_B64}`, width: 1536, height: 1024, revisedPrompt: 'A fox, in watercolour.' });
  const sent = w.vendor.received.at(-1)!;
  t.equal(sent.method, 'POST');
  t.equal(sent.path, '/v1/images/generations');
  t.equal(sent.headers.authorization, `Bearer ${OPENAI_KEY}`);
  t.same(
    JSON.parse(sent.body),
    { model: 'gpt-image-2', prompt: 'a fox in the snow', n: 1, size: '1536x1024', quality: 'high' },
    "the default model is Huabu's default family",
  );

  const defaults = await w.invoke('image-1', { prompt: 'a heron' });
  t.equal(defaults.status, 200, defaults.text);
  t.same(
    JSON.parse(w.vendor.received.at(-1)!.body),
    { model: 'gpt-image-1', prompt: 'a heron', n: 1, size: '1024x1024', quality: 'low' },
    "the entry's model; Huabu's default size and quality",
  );
  t.match(resultOf(defaults), { width: 1024, height: 1024 });

  const auto = await w.invoke('url-image', { prompt: 'a heron', size: 'auto' });
  t.same(
    resultOf(auto),
    { src: 'https://images.example.org/fox.png', width: 0, height: 0 },
    'a URL answer is passed on; auto reports 0×0 as Huabu does',
  );
  t.notOk(
    [res, defaults, auto].some((r) => r.text.includes(OPENAI_KEY)),
    'the key is not in any answer',
  );
});

t.test('input the adapters refuse never reaches the vendor', async (t) => {
  const w = await world(t);
  const cases: [string, unknown, string][] = [
    ['web-search', { query: '   ' }, 'a blank query'],
    ['web-search', { query: 'x', maxResults: 11 }, 'more than 10 results'],
    ['web-search', { query: 'x', searchDepth: 'deep' }, 'an unknown depth'],
    ['web-search', { query: 'x', api_key: 'mine' }, 'an extra field'],
    ['generate-image', { prompt: 'a fox', quality: 'ultra' }, 'an unknown quality'],
    ['generate-image', { prompt: 'a fox', size: '1000x1000' }, 'a size gpt-image-2 cannot make'],
    ['image-1', { prompt: 'a fox', size: '2048x2048' }, 'a size gpt-image-1 does not take'],
    ['generate-image', { prompt: 'a fox', referenceArtifactSrcs: ['sketch.png'] }, 'reference artifacts'],
  ];
  for (const [id, input, what] of cases) {
    const res = await w.invoke(id, input);
    t.equal(res.status, 400, what);
    isCode(t, res, 'invalid_input', 'validation_failed', what);
  }
  const refs = await w.invoke('generate-image', { prompt: 'a fox', referenceArtifactSrcs: ['sketch.png'] });
  t.match(refs.body.details.issues, [{ field: 'body/input/referenceArtifactSrcs', message: /not supported here/ }], 'the refusal says why');
  t.equal(w.vendor.received.length, 0, 'no refused input was sent');
  const empty = await w.invoke('generate-image', { prompt: 'a fox', referenceArtifactSrcs: [] });
  t.equal(empty.status, 200, 'an empty reference list is a plain generation');
});

t.test(
  'vendor failures: status, a foreign answer, the key echoed, not JSON, too large, the deadline; the vendor body never reaches the agent',
  async (t) => {
    const w = await world(t);
    const refused = await w.invoke('refused-search', { query: 'x' });
    t.equal(refused.status, 502);
    isCode(t, refused, 'provider_failure', 'invocation_failed', 'a vendor 401');
    t.equal(refused.body.details.cause, 'status');
    const failing = await w.invoke('failing-image', { prompt: 'a fox' });
    t.equal(failing.status, 502);
    isCode(t, failing, 'provider_failure', 'invocation_failed', 'a vendor 500');
    const odd = await w.invoke('odd-search', { query: 'x' });
    t.equal(odd.status, 502);
    t.equal(odd.body.details.cause, 'unexpected_answer', "JSON that is not the vendor's answer");
    const tiny = await w.invoke('tiny-image', { prompt: 'a fox' });
    t.equal(tiny.status, 502);
    t.same(tiny.body.details, { reason: 'invocation_failed', cause: 'output_too_large', maxOutputBytes: 64 });
    const echo = await w.invoke('echo-search', { query: 'x' });
    t.equal(echo.status, 502);
    t.equal(echo.body.details.cause, 'credential_echoed', 'a vendor answer carrying the key is refused before it is reshaped');
    t.notOk(echo.text.includes(TAVILY_KEY), 'the key is not passed on');
    const html = await w.invoke('html-image', { prompt: 'a fox' });
    t.equal(html.status, 502);
    t.equal(html.body.details.cause, 'not_json');
    const slow = await w.invoke('slow-search', { query: 'x' });
    t.equal(slow.status, 504);
    isCode(t, slow, 'timeout', 'invocation_timeout', 'past the deadline');
    for (const r of [refused, failing, odd, echo, html, tiny, slow]) t.notOk(r.text.includes(VENDOR_LEAK), 'no vendor body in the answer');
    const audit = (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');
    t.equal(audit.length, 7, 'each failure audited once');
  },
);

t.test("per-grant concurrency defaults to Huabu's: 4 searches, 1 image generation", async (t) => {
  const w = await world(t);
  const searches = Array.from({ length: 4 }, () => w.invoke('hold-search', { query: 'x' }));
  while (w.vendor.held() < 4) await new Promise((r) => setTimeout(r, 10));
  const fifth = await w.invoke('hold-search', { query: 'x' });
  t.equal(fifth.status, 429, 'a fifth search in flight is refused');
  isCode(t, fifth, 'quota_exceeded', 'rate_limited', 'the fifth search');
  t.equal(fifth.body.details.cause, 'concurrency');
  w.vendor.releaseAll();
  t.same(
    (await Promise.all(searches)).map((r) => r.status),
    [200, 200, 200, 200],
    'the four in flight complete',
  );

  const image = w.invoke('hold-image', { prompt: 'a fox' });
  while (w.vendor.held() < 1) await new Promise((r) => setTimeout(r, 10));
  const second = await w.invoke('hold-image', { prompt: 'another fox' });
  t.equal(second.status, 429, 'a second image generation in flight is refused');
  t.equal(second.body.details.cause, 'concurrency');
  w.vendor.releaseAll();
  t.equal((await image).status, 502, 'the held answer is not an image (the test server answers a search): unexpected_answer');
  t.equal(w.vendor.received.filter((r) => r.path === '/hold').length, 5, 'refused calls never reached the vendor');
});

t.test('the keys never appear in a log line, the audit file or any file the service writes', async (t) => {
  const w = await world(t);
  await w.invoke('web-search', { query: 'lichen' });
  await w.invoke('generate-image', { prompt: 'a fox' });
  await w.invoke('refused-search', { query: 'x' });
  await w.invoke('failing-image', { prompt: 'a fox' });
  await w.invoke('brave-web-search', { query: 'lichen' });
  t.equal(w.vendor.received.filter((r) => r.headers.authorization?.startsWith('Bearer ')).length, 4, 'every vendor call carried its key');
  t.equal(w.vendor.received.filter((r) => r.headers['x-subscription-token'] === BRAVE_KEY).length, 1, "Brave's in its own header");
  const log = await readFile(w.h.logFile, 'utf8');
  t.match(log, /hosted capability call failed/, 'the failures were logged');
  const stored = await allText(w.h.dataDir);
  t.match(stored, /resource\.invoke/, 'the audit file is among the files read');
  for (const key of [TAVILY_KEY, OPENAI_KEY, BRAVE_KEY]) {
    for (const part of [key, key.slice(5, 30), Buffer.from(key).toString('base64').slice(4, 30)]) {
      t.notOk(log.includes(part), 'not in the log');
      t.notOk(stored.includes(part), 'not in the data directory (audit file included)');
    }
  }
  t.notOk(log.includes('fake-image-bytes') || log.includes(PNG_B64), 'nor the image in the log');
  for (const key of [TAVILY_KEY, OPENAI_KEY, BRAVE_KEY]) {
    const leaked = await w.h.put('huabu', CANARY.huabu, 'leaky-note', { instructions: `Call the vendor yourself with ${key}.` });
    t.equal(leaked.statusCode, 422, 'a vendor key pasted into a record is refused');
    t.equal(leaked.json().code, 'secret_detected');
  }
});

t.test('the capabilities file: defaults, overrides, and refusals that stop the start', async (t) => {
  const doc = (capabilities: Record<string, unknown>) => JSON.stringify({ schemaVersion: 1, capabilities });
  const caps = parseHostedCapabilities(
    doc({
      'web-search': { adapter: 'tavily-search', credential: { env: 'ARR_TEST_TAVILY_KEY' } },
      'generate-image': { adapter: 'openai-images', credential: { env: 'ARR_TEST_OPENAI_KEY' } },
      'brave-search': { adapter: 'brave-search', credential: { env: 'ARR_TEST_BRAVE_KEY' } },
    }),
    KEYS,
  );
  const s = caps.get('web-search')!;
  const i = caps.get('generate-image')!;
  t.equal(s.endpoint.href, 'https://api.tavily.com/search', "the vendor's endpoint by default");
  t.equal(i.endpoint.href, 'https://api.openai.com/v1/images/generations');
  t.same(s.perGrant, { concurrency: 4, perMinute: 60 });
  t.same(i.perGrant, { concurrency: 1, perMinute: 10 });
  t.equal(s.timeoutMs, 15_000, "Huabu's provider deadlines");
  t.equal(i.timeoutMs, 120_000);
  t.equal(caps.maxInFlightPerGrant, 4);
  t.same(caps.outboundHeaders('web-search'), { authorization: `Bearer ${TAVILY_KEY}` });
  const b = caps.get('brave-search')!;
  t.equal(b.endpoint.href, 'https://api.search.brave.com/res/v1/web/search');
  t.equal(b.method, 'GET');
  t.same([b.timeoutMs, b.perGrant], [15_000, { concurrency: 4, perMinute: 60 }], "Huabu's search defaults");
  t.same(caps.outboundHeaders('brave-search'), { 'x-subscription-token': BRAVE_KEY }, 'the key alone, in the header Brave documents');
  t.notOk(JSON.stringify(caps).includes(BRAVE_KEY.slice(5)), 'not in the serialized capabilities');
  const over = parseHostedCapabilities(
    doc({
      'web-search': {
        adapter: 'tavily-search',
        endpoint: 'https://proxy.internal/tavily',
        credential: { env: 'ARR_TEST_TAVILY_KEY' },
        perGrant: { concurrency: 2, perMinute: 5 },
        timeoutMs: 5000,
      },
    }),
    KEYS,
  ).get('web-search')!;
  t.equal(over.endpoint.href, 'https://proxy.internal/tavily', 'the endpoint is overridable');
  t.same(over.perGrant, { concurrency: 2, perMinute: 5 });
  t.equal(over.timeoutMs, 5000);
  for (const adapter of Object.values(BUILT_IN_ADAPTERS))
    t.same(unboundedSchemaProblems(adapter.inputSchema), [], `${adapter.name}'s input schema is bounded`);

  const refusals: [string, Record<string, unknown>, RegExp][] = [
    [
      'the key variable unset',
      { adapter: 'tavily-search', credential: { env: 'ARR_NOT_SET_ANYWHERE' } },
      /names ARR_NOT_SET_ANYWHERE, which is not set/,
    ],
    [
      "Brave's key variable unset",
      { adapter: 'brave-search', credential: { env: 'ARR_NOT_SET_ANYWHERE' } },
      /names ARR_NOT_SET_ANYWHERE, which is not set/,
    ],
    [
      'a model for Brave search',
      { adapter: 'brave-search', credential: { env: 'ARR_TEST_BRAVE_KEY' }, model: 'x' },
      /brave-search takes no model/,
    ],
    ['an unknown adapter', { adapter: 'bing-search', credential: { env: 'ARR_TEST_TAVILY_KEY' } }, /adapter/],
    [
      'a header (the adapter sets it)',
      { adapter: 'tavily-search', credential: { env: 'ARR_TEST_TAVILY_KEY', header: 'X-Api-Key' } },
      /credential.*additional properties/,
    ],
    [
      'an input schema (the adapter has its own)',
      {
        adapter: 'tavily-search',
        credential: { env: 'ARR_TEST_TAVILY_KEY' },
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      },
      /additional properties/,
    ],
    [
      'a model for search',
      { adapter: 'tavily-search', credential: { env: 'ARR_TEST_TAVILY_KEY' }, model: 'x' },
      /tavily-search takes no model/,
    ],
    ['no key variable', { adapter: 'openai-images' }, /credential/],
    [
      'a bound over the ceiling',
      { adapter: 'openai-images', credential: { env: 'ARR_TEST_OPENAI_KEY' }, maxOutputBytes: 100_000_000 },
      /maxOutputBytes/,
    ],
  ];
  for (const [what, entry, message] of refusals) {
    const file = path.join(DATA_ROOT, `caps-adapters-bad-${process.pid}-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, doc({ 'web-search': entry }));
    const env = { DATA_DIR: '/var/lib/registry', HOSTED_CAPABILITIES_FILE: file, ...KEYS };
    try {
      loadConfig(env);
      t.fail(`${what}: the start must be refused`);
    } catch (err) {
      t.type(err, ConfigError, what);
      t.match((err as Error).message, message, what);
      t.notOk(
        [TAVILY_KEY, OPENAI_KEY, BRAVE_KEY].some((key) => (err as Error).message.includes(key.slice(5))),
        `${what}: never a key`,
      );
    }
  }
});

t.test('image sizes follow the model family', (t) => {
  t.equal(imageSizeProblem('gpt-image-2', '2048x2048'), undefined);
  t.equal(imageSizeProblem('gpt-image-2', 'auto'), undefined);
  t.match(imageSizeProblem('gpt-image-2', '1000x1000'), /multiples of 16/);
  t.match(imageSizeProblem('gpt-image-2', '3840x1024'), /aspect ratio/);
  t.match(imageSizeProblem('gpt-image-2', '4096x2048'), /long edge/);
  t.match(imageSizeProblem('gpt-image-2', '512x512'), /pixels/);
  t.equal(imageSizeProblem('gpt-image-1', '1024x1536'), undefined);
  t.match(imageSizeProblem('gpt-image-1-mini', '2048x2048'), /takes the sizes/);
  t.equal(imageSizeProblem('dall-e-3', '1792x1024'), undefined, 'another model: any WIDTHxHEIGHT, the vendor decides');
  t.match(imageSizeProblem('dall-e-3', 'large'), /WIDTHxHEIGHT/);
  t.end();
});
