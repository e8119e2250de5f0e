// The context estimate: counted with the o200k_base encoding (known counts), special-token markers read as
// text, a long body counted on its head and scaled; per agent in the capability snapshot over the real
// app (the required defaults and the selection, each once), and the context_budget_exceeded warning above
// CONTEXT_BUDGET_TOKENS, off at 0.
import t, { type Test } from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { contextEstimate, EXACT_CHARS, tokensOf } from '../../src/capabilities/context-estimate.js';
import type { StoredResource } from '../../src/schemas/resource.js';

t.test('tokens are counted with o200k_base; special-token markers are text; a long text is scaled from its head', async (t) => {
  t.equal(tokensOf('hello world'), 2);
  t.equal(tokensOf('Splits PDF files page by page.'), countTokens('Splits PDF files page by page.'));
  t.ok(tokensOf('do not stop at <|endoftext|> here') > 8, 'a marker is counted as the characters it is, not refused');
  const skill = await readFile(path.resolve('test/fixtures/skill-collections/anthropics-skills/skill-creator/SKILL.md'), 'utf8');
  t.ok(skill.length > EXACT_CHARS, `a real skill longer than ${EXACT_CHARS} characters (${skill.length})`);
  const exact = countTokens(skill, { disallowedSpecial: new Set() });
  const estimated = tokensOf(skill);
  t.not(estimated, exact, 'counted on its head, not whole');
  t.ok(Math.abs(estimated - exact) / exact < 0.1, `within 10 % of the exact count (${estimated} vs ${exact})`);
  t.equal(tokensOf(skill), estimated, 'the same count again');
  t.end();
});

t.test('an estimate counts each record once: its name and description always, its body on activation', (t) => {
  const web = {
    schemaVersion: 1,
    id: 'web-search',
    provider: 'huabu',
    name: 'Web search',
    description: 'Searches the web.',
    instructions: 'Call the search tool with a query and read the top results.',
  } as const;
  const pdf = {
    schemaVersion: 2,
    id: 'pdf-split',
    provider: 'mac-a',
    name: 'pdf-split',
    sourceContent:
      '---\nname: pdf-split\ndescription: Splits PDF files page by page.\n---\n\n# PDF split\n\nRun scripts/split.py on the file.',
    userContent: '',
  } as const;
  const estimate = contextEstimate([web, pdf]);
  t.same(estimate, {
    alwaysLoadedTokens: tokensOf('Web search: Searches the web.') + tokensOf('pdf-split: Splits PDF files page by page.'),
    onActivationTokens: tokensOf(web.instructions) + tokensOf(pdf.sourceContent),
  });
  t.same(contextEstimate([]), { alwaysLoadedTokens: 0, onActivationTokens: 0 });
  t.end();
});

async function world(t: Test, env: Record<string, string> = {}) {
  const h = await build(t, { env });
  const macA = await h.enroll('mac-a');
  for (const id of ['huabu-access', 'local-resource-management', 'web-search']) await h.put('huabu', CANARY.huabu, id);
  const skill = await readFile(path.resolve('test/fixtures/skill-collections/anthropics-skills/mcp-builder/SKILL.md'), 'utf8');
  const put = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-a/resources/mcp-builder',
    headers: h.bearer(macA),
    payload: { schemaVersion: 2, name: 'mcp-builder', sourceContent: skill },
  });
  t.equal(put.statusCode, 201, 'a real skill published as record v2');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Builder',
      agentletId: 'mac-a',
      workingDirPath: '/home/me',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search', 'mcp-builder', 'huabu-access'],
    },
  });
  t.equal(profile.statusCode, 201, 'a profile selecting it');
  return { h, profileId: profile.json().id as string };
}

interface Snapshot {
  components: { id: string; contextEstimate?: { alwaysLoadedTokens: number; onActivationTokens: number } }[];
  diagnostics: { code: string; severity: string; message: string; components: string[] }[];
}
const snapshot = async (h: TestApp) => (await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner })).json<Snapshot>();
/** The records as stored: the host's v1 ones from the v1 catalogue, the machine's skill from the v2 one. */
async function stored(h: TestApp): Promise<Map<string, StoredResource>> {
  const read = async (v: number) =>
    (await h.app.inject({ url: `/api/acp/resources?schemaVersion=${v}`, headers: h.owner })).json().resources as StoredResource[];
  const [v1, v2] = [await read(1), await read(2)];
  return new Map([...v1.filter((r) => r.provider === 'huabu'), ...v2.filter((r) => r.provider !== 'huabu')].map((r) => [r.id, r]));
}

t.test("each agent's estimate in the snapshot is its effective set's, required defaults first and each once", async (t) => {
  const { h, profileId } = await world(t);
  const s = await snapshot(h);
  const agent = s.components.find((c) => c.id === `agent:${profileId}`)!;
  const byId = await stored(h);
  const effective = ['huabu-access', 'local-resource-management', 'web-search', 'mcp-builder'].map((id) => byId.get(id)!);
  t.same(agent.contextEstimate, contextEstimate(effective), 'the required defaults, then the selection, huabu-access once');
  t.ok(agent.contextEstimate!.onActivationTokens > 1000, `a real skill's body is counted (${agent.contextEstimate!.onActivationTokens})`);
  t.notOk(
    s.components.some((c) => !c.id.startsWith('agent:') && c.contextEstimate !== undefined),
    'only agents carry an estimate',
  );
  t.notOk(
    s.diagnostics.some((d) => d.code === 'context_budget_exceeded'),
    'under the default budget',
  );

  const before = agent.contextEstimate!.alwaysLoadedTokens;
  await h.put('huabu', CANARY.huabu, 'web-search', { description: 'Searches the web for pages, news and images, and ranks them.' });
  const after = (await snapshot(h)).components.find((c) => c.id === `agent:${profileId}`)!.contextEstimate!;
  t.ok(after.alwaysLoadedTokens > before, 'a longer description is more always-loaded tokens');
});

t.test('CONTEXT_BUDGET_TOKENS: an agent above it is a warning naming it; a launch still works; 0 turns it off', async (t) => {
  const { h, profileId } = await world(t, { CONTEXT_BUDGET_TOKENS: '20' });
  const s = await snapshot(h);
  const warned = s.diagnostics.filter((d) => d.code === 'context_budget_exceeded');
  t.equal(warned.length, 1);
  t.equal(warned[0]!.severity, 'warning');
  t.same(warned[0]!.components, [`agent:${profileId}`]);
  const tokens = s.components.find((c) => c.id === `agent:${profileId}`)!.contextEstimate!.alwaysLoadedTokens;
  t.match(warned[0]!.message, new RegExp(`holds about ${tokens} tokens .* more than CONTEXT_BUDGET_TOKENS \\(20\\)`));
  const launch = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId, canvasId: 'canvas-1', threadId: 'thread-1' },
  });
  t.equal(launch.statusCode, 201, 'a warning never stops a launch');
  t.same(
    launch.json().contextEstimate,
    s.components.find((c) => c.id === `agent:${profileId}`)!.contextEstimate,
    "the launch answer carries its own estimate: the profile's, as nothing was overridden",
  );
  const narrowed = await h.app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers: h.owner,
    payload: { profileId, canvasId: 'canvas-1', threadId: 'thread-2', resourceIds: [] },
  });
  const required = await stored(h);
  t.same(
    narrowed.json().contextEstimate,
    contextEstimate(['huabu-access', 'local-resource-management'].map((id) => required.get(id)!)),
    'a launch that replaces the selection is estimated for what it gives',
  );

  const { h: off } = await world(t, { CONTEXT_BUDGET_TOKENS: '0' });
  t.notOk(
    (await snapshot(off)).diagnostics.some((d) => d.code === 'context_budget_exceeded'),
    'no bound at 0',
  );
});
