// The capability SVG's labels fit their node shapes: long resource names, machine IDs and
// profile aliases, rendered by the real app (Graphviz in WebAssembly), parsed back; every text element's
// width, estimated for the wider of Helvetica and DejaVu Sans (what a viewer without Helvetica draws it
// in), lies inside its node's box, ellipse or component body. A name cut to fit keeps its full text as the
// node's tooltip; short names are drawn as before.
import t from 'tap';
import { build, CANARY, type TestApp } from '../helpers/build.js';
import { estimateTextWidth, wrapLabel } from '../../src/capabilities/label-fit.js';

const LONG = {
  tool: 'Terrific structured tabletop transcript retriever for the quarterly stakeholder reports and meeting minutes',
  wide: 'WWW MMM WWW MMM WWW MMM WWW MMM WWW',
  unspaced: 'ttttttttttttttttttttttttttttttttttttttttttttttttttttttt',
  accented: 'Übersetzungsdienst für Ärztinnen und Ärzte — Résumés, Zeugnisse & Befunde',
  alias: 'The reviewer of every pull request that touches the storage layer, the migrations or the HTTP routes',
};

async function longFixture(h: TestApp): Promise<void> {
  const mac = await h.enroll('a-machine-with-a-rather-long-identifier-for-the-build-farm');
  const puts: [string, string, string, string][] = [
    ['huabu', CANARY.huabu, 'huabu-access', 'Huabu access'],
    ['huabu', CANARY.huabu, 'local-resource-management', 'Local resource management'],
    ['huabu', CANARY.huabu, 'transcripts', LONG.tool],
    ['huabu', CANARY.huabu, 'wide', LONG.wide],
    ['a-machine-with-a-rather-long-identifier-for-the-build-farm', mac, 'ttt', LONG.unspaced],
    ['a-machine-with-a-rather-long-identifier-for-the-build-farm', mac, 'translation-service-with-a-long-identifier-too', LONG.accented],
  ];
  for (const [provider, token, id, name] of puts) {
    const res = await h.put(provider, token, id, { name });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: LONG.alias,
      agentletId: 'a-machine-with-a-rather-long-identifier-for-the-build-farm',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'x' },
      resourceIds: ['transcripts', 'ttt', 'translation-service-with-a-long-identifier-too'],
    },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
}

const decode = (s: string) =>
  s
    .replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

const numbers = (s: string) => [...s.matchAll(/-?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));

interface DrawnNode {
  title: string;
  tooltip?: string;
  /** inside(x, y): whether a point lies in the node's shape (its body, for the component shape). */
  inside: (x: number, y: number) => boolean;
  texts: { x: number; y: number; size: number; anchor: string; text: string }[];
}

function parseNodes(svg: string): DrawnNode[] {
  const nodes: DrawnNode[] = [];
  const groups = svg
    .split(/<g id="node\d+" class="node">/)
    .slice(1)
    .map((g) => g.split(/<g id="(?:node|edge|clust)\d+"/)[0]!);
  for (const g of groups) {
    const title = decode(/<title>([^<]*)<\/title>/.exec(g)![1]!);
    const tooltip = /xlink:title="([^"]*)"/.exec(g)?.[1];
    let inside: DrawnNode['inside'];
    const ellipse = /<ellipse[^>]*cx="([-\d.]+)" cy="([-\d.]+)" rx="([-\d.]+)" ry="([-\d.]+)"/.exec(g);
    if (ellipse) {
      const [cx, cy, rx, ry] = ellipse.slice(1).map(Number) as [number, number, number, number];
      inside = (x, y) => ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;
    } else {
      const shape = /<(?:path[^>]* d|polygon[^>]* points)="([^"]*)"/.exec(g)![1]!;
      const v = numbers(shape);
      const xs = v.filter((_, i) => i % 2 === 0);
      const ys = v.filter((_, i) => i % 2 === 1);
      // The component shape's tabs stick out on the left: its body starts at the second x from the left.
      const distinct = [...new Set(xs)].sort((a, b) => a - b);
      const left = /<polyline/.test(g) ? distinct[1]! : distinct[0]!;
      const [right, top, bottom] = [Math.max(...xs), Math.min(...ys), Math.max(...ys)];
      inside = (x, y) => x >= left && x <= right && y >= top && y <= bottom;
    }
    const texts = [
      ...g.matchAll(/<text[^>]*text-anchor="(\w+)" x="([-\d.]+)" y="([-\d.]+)"[^>]*font-size="([\d.]+)"[^>]*>([^<]*)<\/text>/g),
    ].map((m) => ({
      anchor: m[1]!,
      x: Number(m[2]),
      y: Number(m[3]),
      size: Number(m[4]),
      text: decode(m[5]!),
    }));
    nodes.push({ title, ...(tooltip === undefined ? {} : { tooltip: decode(tooltip) }), inside, texts });
  }
  return nodes;
}

t.test('every label of long names fits inside its node, in Helvetica or DejaVu Sans widths', async (t) => {
  const h = await build(t);
  await longFixture(h);
  const res = await h.app.inject({ url: '/api/acp/capabilities?format=svg', headers: h.owner });
  t.equal(res.statusCode, 200);
  const nodes = parseNodes(res.body);
  t.ok(nodes.length >= 8, `nodes drawn (${nodes.length})`);
  let checked = 0;
  for (const node of nodes) {
    for (const text of node.texts) {
      t.equal(text.anchor, 'middle');
      const half = estimateTextWidth(text.text, text.size) / 2;
      // The line's box: from its baseline up to about its cap height.
      const corners = [
        [text.x - half, text.y],
        [text.x + half, text.y],
        [text.x - half, text.y - text.size * 0.75],
        [text.x + half, text.y - text.size * 0.75],
      ] as const;
      const outside = corners.filter(([x, y]) => !node.inside(x, y));
      if (outside.length > 0) t.fail(`"${text.text}" (node ${node.title}) runs out of its shape`, { corners, outside });
      checked++;
    }
  }
  t.ok(checked >= 16, `${checked} text lines checked`);
  t.pass('every line inside its shape');

  const byTitle = new Map(nodes.map((n) => [n.title, n]));
  const transcripts = byTitle.get('resource:transcripts')!;
  t.ok(transcripts.texts.length > 2, 'a long name is wrapped into several lines');
  t.ok(
    transcripts.texts.some((x) => x.text.endsWith('…')),
    'and cut with "…" past three lines',
  );
  t.equal(transcripts.tooltip, `${LONG.tool}\ntranscripts`, 'the full name is the tooltip');
  t.equal(
    byTitle
      .get('resource:ttt')!
      .texts.map((x) => x.text)
      .join(''),
    `${LONG.unspaced}ttt`,
    'a word without spaces is broken inside (not cut: it fits in three lines)',
  );
  t.notOk(byTitle.get('resource:ttt')!.tooltip, 'no tooltip when nothing was cut');
  const web = byTitle.get('resource:huabu-access')!;
  t.same(
    web.texts.map((x) => x.text),
    ['Huabu access', 'huabu-access'],
    'short labels are drawn as before',
  );
  const agent = nodes.find((n) => n.title.startsWith('agent:'))!;
  t.match(agent.texts.map((x) => x.text).join(' '), /^The reviewer of every pull/, "the profile's alias is wrapped too");

  const dot = await h.app.inject({ url: '/api/acp/capabilities?format=dot', headers: h.owner });
  t.match(dot.body, `label = "${LONG.tool}\\ntranscripts"`, '?format=dot keeps the full labels, unwrapped');
  t.notMatch(dot.body, /width = /);
});

t.test('wrapLabel breaks after separators, inside long words, and cuts with "…"', (t) => {
  t.same(wrapLabel('short'), { lines: ['short'], cut: false });
  t.same(wrapLabel('alpha beta gamma delta', 12), { lines: ['alpha beta', 'gamma delta'], cut: false });
  t.same(wrapLabel('abcdefghij', 4, 2), { lines: ['abcd', 'efg…'], cut: true });
  t.same(wrapLabel('x'.repeat(8), 4, 2), { lines: ['xxxx', 'xxxx'], cut: false });
  t.same(wrapLabel('one-two-three-four', 9), { lines: ['one-two-', 'three-', 'four'], cut: false });
  t.ok(
    estimateTextWidth('tttt', 14) > estimateTextWidth('iiii', 14) && estimateTextWidth('é', 10) === 10,
    'per-character widths; others a full em',
  );
  t.end();
});
