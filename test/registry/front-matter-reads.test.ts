// Records whose source content opens with front matter, read by every reader that views it as a skill (the
// v1 view over RFS, MCP's resources/list): a front matter past its bounds (src/text/front-matter.ts) is not
// parsed, so no record a canvas token can write holds the service while it is read, however often.
import t from 'tap';
import { request } from 'undici';
import { build } from '../helpers/build.js';
import { listen, whileHealthProbed } from '../helpers/sockets.js';

/** About 100,000 characters: one flow mapping of 11,000 short keys (the first a description), then a body. */
function hostileSkill(): string {
  const keys = Array.from({ length: 11_000 }, (_, i) => `${i}: 0`).join(', ');
  return `---\n{description: From the front matter, ${keys}}\n---\n# From the body\n\nThe rest.`;
}

t.test('a receipt with a front matter of 11,000 keys is read again and again without holding the service', async (t) => {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: '' } });
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const origin = await listen(h.app);
  const auth = { authorization: `Bearer ${token}` };
  const sourceContent = hostileSkill();
  t.ok(sourceContent.length > 90_000 && sourceContent.length <= 100_000, `${sourceContent.length} characters`);
  const stored = await request(`${origin}/api/rfs/canvas-x/resources/local/receipts`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'flood', kind: 'skill', name: 'Flood', sourceContent, entrypoint: 'skills/flood' }),
  });
  const storedBody = await stored.body.text();
  t.equal(stored.statusCode, 200, stored.statusCode === 200 ? 'stored' : storedBody);

  const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'resources/list', params: {} });
  /** Reads the record three times over RFS and in an MCP batch of three lists, timing the /healthz answers meanwhile. */
  const readAll = () =>
    whileHealthProbed(origin, async () => {
      const views: string[] = [];
      for (let i = 0; i < 3; i++) {
        const single = await request(`${origin}/api/rfs/canvas-x/resources/flood`, { headers: auth });
        t.equal(single.statusCode, 200);
        views.push(((await single.body.json()) as { description: string }).description);
      }
      const batch = await request(`${origin}/api/rfs/canvas-x/mcp`, {
        method: 'POST',
        headers: {
          ...auth,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify([list(1), list(2), list(3)]),
      });
      t.equal(batch.statusCode, 200);
      const listed = (await batch.body.json()) as { result: { resources: { name: string; description?: string }[] } }[];
      return { views, listed };
    });

  let read = await readAll();
  t.same(read.result.views, ['# From the body', '# From the body', '# From the body'], 'the v1 view skips a front matter past its bounds');
  for (const answer of read.result.listed) {
    const flood = answer.result.resources.find((r) => r.name === 'flood');
    t.equal(flood?.description, '# From the body', 'and so does MCP');
  }
  // Generous for a loaded machine under coverage, where these reads once took 1.5 to 2.6 s each; a second
  // pass only when the first is over it (the machine, not the record).
  const bound = 1000;
  if (read.worst >= bound) read = await readAll();
  t.ok(read.worst < bound, `the longest wait between /healthz answers was ${read.worst.toFixed(0)} ms (${read.answers} answers)`);
});
