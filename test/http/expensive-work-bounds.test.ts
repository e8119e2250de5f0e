// Work one caller can force is bounded. SVG renders are bounded by edges as well as components, stopped
// after a time limit and when nobody waits any more; expensive requests (SVG renders, reconciles of hundreds
// of records, dry runs included, and writes carrying much text to scan, an agent's local receipts too) are
// bounded per credential, so an agent's RFS read is still answered while one machine floods the registry.
import t from 'tap';
import { CapabilityProjection, MAX_SVG_EDGES } from '../../src/capabilities/capability-projection.js';
import { SvgRenderer } from '../../src/capabilities/svg-renderer.js';
import { EXPENSIVE_SCAN_CHARS } from '../../src/http/expensive-work.js';
import type { AgentProfile } from '../../src/schemas/profile.js';
import type { AgentResource } from '../../src/schemas/resource.js';
import { build } from '../helpers/build.js';
import { profileRecord } from '../helpers/profiles.js';

function resource(id: string, provider: string): AgentResource {
  return { schemaVersion: 1, id, name: `Name of ${id}`, provider, description: `About ${id}.`, instructions: `Use ${id}.` };
}

const profile = (id: string, agentletId: string, resourceIds: string[]): AgentProfile => profileRecord(id, { agentletId, resourceIds });

/** A dense graph: `n` nodes, every node linked to the next `k`. */
function denseDot(n: number, k: number): string {
  const lines = ['digraph g {'];
  for (let i = 0; i < n; i++) for (let j = 1; j <= k; j++) lines.push(`n${i} -> n${(i + j) % n};`);
  lines.push('}');
  return lines.join('\n');
}

t.test('SVG refuses a graph with few components but too many edges (413)', async (t) => {
  const resources = Array.from({ length: 60 }, (_, i) => resource(`r-${i}`, 'huabu'));
  const profiles = Array.from({ length: 30 }, (_, j) => ({
    profile: profile(
      `p-${j}`,
      'mac-a',
      resources.map((r) => r.id),
    ),
    revision: 'x',
  }));
  const store = {
    listResources: () => Promise.resolve(resources),
    listProfiles: () => Promise.resolve(profiles),
    listMachines: () => Promise.resolve([]),
  };
  const projection = new CapabilityProjection(store, []);
  t.teardown(() => projection.close());
  const err = await projection.render(undefined, 'svg').then(
    () => undefined,
    (e: unknown) => e as { code?: string; details?: { edges?: number } },
  );
  t.equal(err?.code, 'payload_too_large', `refused (${err?.details?.edges} edges > ${MAX_SVG_EDGES})`);
});

t.test('a render past its time limit is stopped (413) and the renderer keeps working', async (t) => {
  const renderer = new SvgRenderer();
  t.teardown(() => renderer.close());
  const started = Date.now();
  const err = await renderer.render(denseDot(600, 20), { timeoutMs: 300 }).then(
    () => undefined,
    (e: unknown) => e as { code?: string },
  );
  t.equal(err?.code, 'payload_too_large', 'stopped');
  t.ok(Date.now() - started < 5000, `stopped promptly (${Date.now() - started} ms)`);
  t.equal(renderer.running, 0, 'no worker left running');
  const svg = await renderer.render('digraph { a -> b }');
  t.match(svg, /<svg/, 'the next render works');
});

t.test('a render nobody waits for any more is cancelled, and one that has not started never starts', async (t) => {
  const renderer = new SvgRenderer();
  t.teardown(() => renderer.close());
  const first = new AbortController();
  const second = new AbortController();
  const a = renderer.render(denseDot(600, 20), { signal: first.signal, timeoutMs: 60_000 });
  const b = renderer.render(denseDot(600, 20), { signal: second.signal, timeoutMs: 60_000 });
  second.abort();
  await new Promise((r) => setTimeout(r, 200));
  first.abort();
  const results = await Promise.allSettled([a, b]);
  t.same(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  t.same(
    results.map((r) => (r as PromiseRejectedResult).reason.name),
    ['AbortError', 'AbortError'],
  );
  t.equal(renderer.running, 0, 'the worker was terminated');
});

t.test('large reconciles are bounded per credential; agents are still served meanwhile', async (t) => {
  const h = await build(t);
  const token = await h.enroll('mac-a');
  await h.enroll('mac-b');
  const canvas = await h.canvasToken('canvas-1', 'mac-b');
  const resources = Array.from({ length: 150 }, (_, i) => ({
    schemaVersion: 1,
    id: `tool-${i}`,
    name: `Tool ${i}`,
    description: 'A tool.',
    instructions: 'Use it.',
  }));
  const reconcile = () =>
    h.app.inject({
      method: 'PUT',
      url: '/api/acp/providers/mac-a/resources?dryRun=true',
      headers: h.bearer(token),
      payload: { resources },
    });
  const [rfs, ...runs] = await Promise.all([
    h.app.inject({ url: '/api/rfs/canvas-1/resources', headers: h.bearer(canvas) }),
    ...Array.from({ length: 6 }, reconcile),
  ]);
  const codes = runs.map((r) => r.statusCode);
  t.ok(codes.filter((c) => c === 429).length >= 1, `some refused (${codes.join(' ')})`);
  t.ok(codes.filter((c) => c === 200).length >= 2, 'the first ones run');
  const refused = runs.find((r) => r.statusCode === 429)!;
  t.equal(refused.json().code, 'rate_limited');
  t.equal(refused.headers['retry-after'], '1');
  t.equal(rfs.statusCode, 200, "the agent's read is answered");
  t.equal((await reconcile()).statusCode, 200, 'once they finished, the machine may reconcile again');
});

t.test("an agent's large local receipts share the expensive-work bound of its credential; another agent is served meanwhile", async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  await h.enroll('mac-b');
  const agent = await h.canvasToken('canvas-1', 'mac-a');
  const other = await h.canvasToken('canvas-2', 'mac-b');
  // Past EXPENSIVE_SCAN_CHARS of text to scan: every one counts as expensive.
  const sourceContent = 'Run the tool with its options; read its output and report.\n'.repeat(Math.ceil(EXPENSIVE_SCAN_CHARS / 58));
  t.ok(sourceContent.length >= EXPENSIVE_SCAN_CHARS && sourceContent.length <= 100_000);
  const record = (i: number) =>
    h.app.inject({
      method: 'POST',
      url: '/api/rfs/canvas-1/resources/local/receipts',
      headers: h.bearer(agent),
      payload: { id: `big-tool-${i}`, kind: 'tool', name: `Big tool ${i}`, sourceContent, entrypoint: `tools/big-tool-${i}/run.sh` },
    });
  const [read, ...runs] = await Promise.all([
    h.app.inject({ url: '/api/rfs/canvas-2/resources', headers: h.bearer(other) }),
    ...Array.from({ length: 8 }, (_, i) => record(i)),
  ]);
  const codes = runs.map((r) => r.statusCode);
  t.ok(codes.filter((c) => c === 429).length >= 1, `some refused (${codes.join(' ')})`);
  t.ok(codes.filter((c) => c === 200).length >= 2, 'the first ones run');
  const refused = runs.find((r) => r.statusCode === 429)!;
  t.equal(refused.json().code, 'rate_limited');
  t.equal(refused.headers['retry-after'], '1');
  t.equal(read.statusCode, 200, "the other agent's read is answered");
  const refusedIds = runs.flatMap((r, i) => (r.statusCode === 429 ? [`big-tool-${i}`] : []));
  const catalogue = (await h.app.inject({ url: '/api/acp/resources', headers: h.owner })).json<{ resources: { id: string }[] }>();
  t.notOk(
    catalogue.resources.some((r) => refusedIds.includes(r.id)),
    'nothing of a refused receipt was recorded',
  );
  t.equal((await record(99)).statusCode, 200, 'once they finished, the agent may record again');
});
