// Inputs that gave 500. customData nesting is bounded (400, no stack overflow) and the
// DOT export works at the sizes the service holds (10k resources + 10k profiles and their edges).
import t from 'tap';
import { instance } from '@viz-js/viz';
import { snapshotToDot } from '../../src/capabilities/dot.js';
import type { CapabilitySnapshot } from '../../src/schemas/capability.js';
import { build } from '../helpers/build.js';

/** JSON text of an object nested `depth` deep (built as text: serializing it would overflow the stack). */
function nested(depth: number): string {
  return '{"a":'.repeat(depth) + '{"leaf":"x"}' + '}'.repeat(depth);
}

t.test('customData nested deeper than the bound is 400 validation_failed, at create and PATCH', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const body = (customData: string) =>
    `{"alias":"Deep","agentletId":"mac-a","workingDirPath":"/home/me","launch":{"kind":"acp-command","command":"agent"},"customData":${customData}}`;
  const json = { ...h.owner, 'content-type': 'application/json' };
  for (const depth of [5000, 3000, 65]) {
    const res = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: json, payload: body(nested(depth)) });
    t.equal(res.statusCode, 400, `depth ${depth}`);
    t.equal(res.json().code, 'validation_failed');
    t.equal(res.json().details?.field, '/customData');
  }
  const ok = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: json, payload: body(nested(30)) });
  t.equal(ok.statusCode, 201, 'a reasonable nesting is fine');
  const patch = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${ok.json().id}`,
    headers: json,
    payload: `{"customData":${nested(5000)}}`,
  });
  t.equal(patch.statusCode, 400, 'PATCH too');
  const arrays = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: json,
    payload: body(`{"a":${'['.repeat(4000)}${']'.repeat(4000)}}`),
  });
  t.equal(arrays.statusCode, 400, 'nested arrays count too');
});

t.test('DOT export of 10k resources and 10k profiles (with their edges) works, labels escaped', (t) => {
  const components: CapabilitySnapshot['components'] = [];
  const edges: CapabilitySnapshot['edges'] = [];
  components.push({ id: 'provider:huabu', kind: 'provider', name: 'huabu', description: 'host', tags: ['host'], aliases: [] });
  for (let m = 0; m < 10; m++)
    components.push({ id: `provider:m${m}`, kind: 'provider', name: `m${m}`, description: 'machine', tags: ['machine'], aliases: [] });
  for (let i = 0; i < 10_000; i++) {
    const provider = i % 2 === 0 ? 'huabu' : `m${i % 10}`;
    components.push({
      id: `resource:r-${i}`,
      kind: 'resource',
      name: i === 0 ? 'evil" ] ; x -> y [ label="' : `R ${i}`,
      description: 'd',
      tags: [],
      aliases: [],
    });
    edges.push({ from: `provider:${provider}`, kind: 'publishes', to: `resource:r-${i}` });
  }
  for (let j = 0; j < 10_000; j++) {
    components.push({ id: `agent:p-${j}`, kind: 'agent', name: `Agent ${j}`, description: 'd', tags: [], aliases: [`a${j}`] });
    edges.push({ from: `agent:p-${j}`, kind: 'placed-on', to: `provider:m${j % 10}` });
    edges.push({ from: `agent:p-${j}`, kind: 'selects', to: `resource:r-${j}` });
  }
  const snapshot = { digest: 'x', components, edges, aliases: [], diagnostics: [] } as unknown as CapabilitySnapshot;
  const started = Date.now();
  const dot = snapshotToDot(snapshot);
  t.ok(dot.startsWith('digraph'), `rendered ${dot.length} bytes in ${Date.now() - started} ms`);
  t.match(dot, /"resource:r-9999"/);
  t.equal(dot.match(/ -> /g)?.length, edges.length + 1, "one edge line per edge (the name's own text holds one, inside its label)");
  t.end();
});

t.test('names with quotes and backslashes cannot end a DOT string early (checked by Graphviz)', async (t) => {
  const names = ['x\\" ] ; "injected" [ label="', 'a\\', '"', '\\"\\"', 'back\\slash" -> "provider:huabu'];
  const components: CapabilitySnapshot['components'] = [
    { id: 'provider:huabu', kind: 'provider', name: 'huabu', description: 'h', tags: [], aliases: [] },
  ];
  names.forEach((name, i) => components.push({ id: `resource:r-${i}`, kind: 'resource', name, description: 'd', tags: [], aliases: [] }));
  const snapshot = { digest: 'x', components, edges: [], aliases: [], diagnostics: [] } as unknown as CapabilitySnapshot;
  const viz = await instance();
  const result = viz.render(snapshotToDot(snapshot), { format: 'json' });
  t.equal(result.status, 'success', 'Graphviz parses it');
  const objects = (JSON.parse(result.output!) as { objects: { name: string; label?: string }[] }).objects.filter(
    (o) => !o.name.startsWith('cluster_'),
  );
  t.same(objects.map((o) => o.name).sort(), components.map((c) => c.id).sort(), 'exactly the components, nothing injected');
});
