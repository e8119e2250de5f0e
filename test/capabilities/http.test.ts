// GET /api/acp/capabilities over the real app (JSON, ?kind=, DOT, SVG, ETag/304), the profile create/PATCH
// refusal of same-named selections with nothing written, and the validate endpoint's new issues.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build, CANARY, type TestApp } from '../helpers/build.js';

const HUABU = CANARY.huabu;

/** The test fixture: the required defaults, a host tool, two machines with their own records, two profiles. */
async function fixture(h: TestApp): Promise<{ macA: string; macB: string; reviewer: string; writer: string }> {
  const macA = await h.enroll('mac-a');
  const macB = await h.enroll('mac-b');
  const puts: [string, string, string, Record<string, string>][] = [
    ['huabu', HUABU, 'huabu-access', { name: 'Huabu access' }],
    ['huabu', HUABU, 'local-resource-management', { name: 'Local resource management' }],
    ['huabu', HUABU, 'web-search', { name: 'Web search' }],
    ['mac-a', macA, 'local-git', { name: 'Git' }],
    ['mac-b', macB, 'other-git', { name: 'Git', instructions: 'Run git in $HOME.' }],
  ];
  for (const [provider, token, id, fields] of puts) {
    const res = await h.put(provider, token, id, fields);
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  const create = async (alias: string, agentletId: string, resourceIds: string[]) => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: {
        alias,
        agentletId,
        workingDirPath: '/home/me/site',
        launch: { kind: 'acp-command', command: 'claude-code-acp' },
        resourceIds,
      },
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json().id as string;
  };
  return {
    macA,
    macB,
    reviewer: await create('Reviewer', 'mac-a', ['web-search', 'local-git']),
    writer: await create('Writer', 'mac-b', ['other-git']),
  };
}

t.test('GET /capabilities answers the snapshot as JSON with the digest as ETag, and 304 when it holds', async (t) => {
  const h = await build(t);
  const { reviewer, writer } = await fixture(h);
  const res = await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  const snapshot = res.json();
  t.equal(res.headers.etag, `"${snapshot.digest}"`);
  t.same(
    snapshot.components.map((c: { id: string }) => c.id),
    [
      `agent:${reviewer}`,
      `agent:${writer}`,
      'provider:huabu',
      'provider:mac-a',
      'provider:mac-b',
      'resource:huabu-access',
      'resource:local-git',
      'resource:local-resource-management',
      'resource:other-git',
      'resource:web-search',
    ].sort(),
  );
  t.same(
    snapshot.diagnostics.map((d: { code: string; components: string[] }) => [d.code, d.components]),
    [['unknown_variable', ['resource:other-git']]],
    'two Gits on two machines are no duplicate',
  );
  t.ok(snapshot.edges.some((e: { kind: string; from: string; to: string }) => e.kind === 'requires' && e.to === 'resource:huabu-access'));

  const again = await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner });
  t.equal(again.body, res.body, 'byte-identical while nothing changes');
  const cached = await h.app.inject({ url: '/api/acp/capabilities', headers: { ...h.owner, 'if-none-match': res.headers.etag as string } });
  t.equal(cached.statusCode, 304);
  t.equal(cached.body, '');
  const svgCached = await h.app.inject({
    url: '/api/acp/capabilities?format=svg',
    headers: { ...h.owner, 'if-none-match': res.headers.etag as string },
  });
  t.equal(svgCached.statusCode, 304, 'the ETag is the snapshot digest in every format');

  await h.put('huabu', HUABU, 'web-search', { name: 'Web search', description: 'Changed.' });
  const changed = await h.app.inject({
    url: '/api/acp/capabilities',
    headers: { ...h.owner, 'if-none-match': res.headers.etag as string },
  });
  t.equal(changed.statusCode, 200, 'a visible change gives a new digest');
  t.not(changed.headers.etag, res.headers.etag);
  await h.put('huabu', HUABU, 'web-search', { name: 'Web search', description: 'Changed.' });
  const unchanged = await h.app.inject({
    url: '/api/acp/capabilities',
    headers: { ...h.owner, 'if-none-match': changed.headers.etag as string },
  });
  t.equal(unchanged.statusCode, 304, 'an identical replace keeps it');

  const agents = await h.app.inject({ url: '/api/acp/capabilities?kind=agent', headers: h.owner });
  t.same(
    agents.json().components.map((c: { kind: string }) => c.kind),
    ['agent', 'agent'],
  );
  t.equal(agents.json().digest, changed.json().digest);
  const bad = await h.app.inject({ url: '/api/acp/capabilities?kind=machine', headers: h.owner });
  t.equal(bad.statusCode, 400);
  const forbidden = await h.app.inject({ url: '/api/acp/capabilities', headers: h.huabu });
  t.equal(forbidden.statusCode, 403);
});

t.test('?format=dot answers Graphviz source and ?format=svg the rendered graph', async (t) => {
  const h = await build(t);
  await fixture(h);
  const dot = await h.app.inject({ url: '/api/acp/capabilities?format=dot', headers: h.owner });
  t.equal(dot.statusCode, 200);
  t.match(dot.headers['content-type'], /^text\/vnd\.graphviz/);
  t.match(dot.body, /^digraph "capabilities" \{/);
  for (const cluster of ['cluster_provider', 'cluster_resource', 'cluster_agent']) t.match(dot.body, `subgraph "${cluster}"`);
  t.equal(
    dot.body.match(/ -> /g)?.length,
    (await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner })).json().edges.length,
    'every edge drawn',
  );

  const svg = await h.app.inject({ url: '/api/acp/capabilities?format=svg', headers: h.owner });
  t.equal(svg.statusCode, 200);
  t.match(svg.headers['content-type'], /^image\/svg\+xml/);
  t.match(svg.body, /<svg[\s\S]*Web search[\s\S]*<\/svg>\s*$/);
  t.equal(svg.headers.etag, dot.headers.etag);
  const agentsSvg = await h.app.inject({ url: '/api/acp/capabilities?format=svg&kind=agent', headers: h.owner });
  t.equal(agentsSvg.statusCode, 200);
  t.not(agentsSvg.body, svg.body);
});

t.test('profile create and PATCH refuse a selection with two same-named resources, writing nothing', async (t) => {
  const h = await build(t);
  const { macA, reviewer } = await fixture(h);
  await h.put('mac-a', macA, 'web-search-local', { name: ' WEB SEARCH ' });
  const registryFile = path.join(h.dataDir, 'agent-team', 'registry.json');
  const before = await readFile(registryFile, 'utf8');

  const created = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Doubler',
      agentletId: 'mac-a',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search', 'web-search-local'],
    },
  });
  t.equal(created.statusCode, 422);
  t.equal(created.json().code, 'capability_diagnostics_failed');
  t.same(
    created.json().details.diagnostics.map((d: { code: string; components: string[] }) => [d.code, d.components]),
    [['duplicate_resource_name', ['resource:web-search', 'resource:web-search-local']]],
  );
  const patched = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${reviewer}`,
    headers: h.owner,
    payload: { resourceIds: ['web-search-local', 'web-search'] },
  });
  t.equal(patched.statusCode, 422);
  t.equal(patched.json().code, 'capability_diagnostics_failed');
  t.equal(await readFile(registryFile, 'utf8'), before, 'nothing written');

  const one = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${reviewer}`,
    headers: h.owner,
    payload: { resourceIds: ['web-search-local'] },
  });
  t.equal(one.statusCode, 200, 'one of the namesakes alone may be saved (launch judges what the agent would see)');
  const rename = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${reviewer}`,
    headers: h.owner,
    payload: { alias: 'Critic' },
  });
  t.equal(rename.statusCode, 200, 'a change that leaves the selection alone is not checked');
  const elsewhere = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Elsewhere',
      agentletId: 'mac-b',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search', 'other-git'],
    },
  });
  t.equal(elsewhere.statusCode, 201, 'near miss: on mac-b the namesake of mac-a is out of sight');

  await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/mac-a/resources/web-search-local', headers: h.bearer(macA) });
  const retry = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Doubler',
      agentletId: 'mac-a',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: ['web-search'],
    },
  });
  t.equal(retry.statusCode, 201, 'allowed once the namesake is withdrawn');
});

t.test('POST /resources/validate reports unknown_variable and a would-be duplicate_resource_name', async (t) => {
  const h = await build(t);
  const { macA, macB } = await fixture(h);
  const validate = (token: string, body: Record<string, unknown>) =>
    h.app.inject({
      method: 'POST',
      url: '/api/acp/resources/validate',
      headers: h.bearer(token),
      payload: { schemaVersion: 1, description: 'd', ...body },
    });

  const dup = await validate(macA, { id: 'new-git', name: ' git ', instructions: 'Use $HUABU_RFS_URL and $HOME.' });
  t.equal(dup.json().valid, false);
  t.same(
    dup.json().issues.map((i: { code: string; field: string; severity: string }) => [i.code, i.field, i.severity]),
    [
      ['unknown_variable', '/instructions', 'warning'],
      ['duplicate_resource_name', '/name', 'error'],
    ],
  );
  t.match(dup.json().issues[1].message, /local-git \(mac-a\)/);
  t.notMatch(dup.json().issues[1].message, /other-git/, "machine B's Git is out of sight of machine A");

  const replace = await validate(macA, { id: 'local-git', name: 'Git', instructions: 'Use $HUABU_RFS_URL.' });
  t.same(replace.json(), { valid: true, issues: [] }, 'near miss: replacing its own record under its own name');
  const onHost = await validate(HUABU, { id: 'host-git', name: 'GIT', instructions: 'Use it.' });
  t.same(
    onHost.json().issues.map((i: { code: string }) => i.code),
    ['duplicate_resource_name'],
    'a host record clashes with every machine',
  );
  t.match(onHost.json().issues[0].message, /local-git \(mac-a\), other-git \(mac-b\)/);
  const ownerUnnamed = await h.app.inject({
    method: 'POST',
    url: '/api/acp/resources/validate',
    headers: h.owner,
    payload: { schemaVersion: 1, id: 'x-git', name: 'Git', description: 'd', instructions: 'i' },
  });
  t.same(ownerUnnamed.json(), { valid: true, issues: [] }, 'with no provider named, only host records are certain clashes');
  t.equal((await validate(macB, { id: 'b-tool', name: 'Web search', instructions: 'i' })).json().issues[0].code, 'duplicate_resource_name');
});
