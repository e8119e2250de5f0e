// The owner catalogue as upstream Huabu's settings page reads it, and the read default HUABU_COMPAT
// switches, on a real socket: `manageableResourceIds` beside record v2 (cached, with ETags per
// representation), PATCH answering `{resource}`, and v1 readers' bytes unchanged with the switch off.
// Shapes from upstream microsoft/Huabu: packages/shared/src/types/api/agent-resource.ts @a8514a7df0798d075ddffe50ef3bd7f0ddcd2d25
// (`agentResourceListResponseSchema`, `agentResourceMutationResponseSchema`); the UI's reads in
// apps/web/src/components/Settings/sections/AgentResourcesSettings.tsx (`result.manageableResourceIds ?? []`,
// `result.resource`), as referenced by docs/architecture/agent-resources.md @0e53b7eb538ed0c1b76c4018daca13e8c8fd82ce.
import t from 'tap';
import { CatalogueCache } from '../../src/registry/catalogue-cache.js';
import { isManageable, manageableResourceIds } from '../../src/registry/manageable.js';
import type { StoredResource } from '../../src/schemas/resource.js';
import { build, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';
import { sansDigest } from '../helpers/digest.js';

/** The members of the answers this file reads: a list, one record, or a saved record (each has some). */
interface Body {
  resources: { id: string; schemaVersion: number; [key: string]: unknown }[];
  manageableResourceIds: string[];
  schemaVersion: number;
  resource: Record<string, unknown>;
}
type Answer = { status: number; etag: string | null; text: string; json: () => Body };

async function served(h: TestApp) {
  const origin = await listen(h.app);
  return async (url: string, headers: Record<string, string>, init: { method?: string; body?: unknown } = {}): Promise<Answer> => {
    const res = await fetch(origin + url, {
      method: init.method ?? 'GET',
      headers: { ...headers, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, etag: res.headers.get('etag'), text, json: () => JSON.parse(text) as Body };
  };
}

/** A catalogue with a v1 record of a machine and a v2 record of the host; a canvas token on the machine. */
async function world(t: Parameters<typeof build>[0], env: Record<string, string>) {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: '', ...env } });
  const a = await h.enroll('agentlet-a');
  await h.put('agentlet-a', a, 'pdf-tools');
  await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources/web-search',
    headers: h.huabu,
    payload: { schemaVersion: 2, name: 'Web search', sourceContent: 'Search the web.' },
  });
  const canvas = await h.canvasToken('canvas-x', 'agentlet-a');
  return { h, canvas: h.bearer(canvas), get: await served(h) };
}

t.test('HUABU_COMPAT off: every read without ?schemaVersion keeps its v1 bytes; v2 asked for carries manageableResourceIds', async (t) => {
  const { h, canvas, get } = await world(t, {});
  const plain = await get('/api/acp/resources', h.owner);
  const v1 = await get('/api/acp/resources?schemaVersion=1', h.owner);
  t.equal(plain.text, v1.text, 'the default is v1, byte for byte');
  t.equal(plain.etag, v1.etag);
  t.same(Object.keys(plain.json()), ['resources'], 'the v1 list is {resources} alone');
  t.same(
    plain.json().resources.map((r: { schemaVersion: number }) => r.schemaVersion),
    [1, 1],
  );

  const v2 = await get('/api/acp/resources?schemaVersion=2', h.owner);
  t.same(Object.keys(v2.json()), ['resources', 'manageableResourceIds']);
  t.same(v2.json().manageableResourceIds, [], 'nothing imported: none is manageable');
  t.not(v2.etag, plain.etag);
  t.equal((await get('/api/acp/resources?schemaVersion=2', { ...h.owner, 'if-none-match': v2.etag! })).status, 304);
  t.same(
    Object.keys((await get('/api/acp/resources?provider=agentlet-a&schemaVersion=2', h.owner)).json()),
    ['resources'],
    'a list of one provider is {resources} alone',
  );

  t.equal((await get('/api/acp/resources/web-search', h.owner)).json().schemaVersion, 1, 'one record: v1 by default');
  t.equal((await get('/api/rfs/canvas-x/resources', canvas)).json().resources[0]!.schemaVersion, 1, 'RFS list: v1 by default');
  t.same(
    Object.keys((await get('/api/rfs/canvas-x/resources?schemaVersion=2', canvas)).json()),
    ['resources'],
    'the RFS list never carries the owner-only IDs',
  );
  t.equal((await get('/api/rfs/canvas-x/resources/pdf-tools', canvas)).json().schemaVersion, 1, 'RFS record: v1 by default');
});

t.test('HUABU_COMPAT=1: owner and RFS reads default to record v2; ?schemaVersion=1 still answers v1 exactly', async (t) => {
  const { h: plainApp, get: plainGet } = await world(t, {});
  const v1Bytes = (await plainGet('/api/acp/resources?schemaVersion=1', plainApp.owner)).text;
  const { h, canvas, get } = await world(t, { HUABU_COMPAT: '1' });

  const list = await get('/api/acp/resources', h.owner);
  const asked = await get('/api/acp/resources?schemaVersion=2', h.owner);
  t.equal(list.text, asked.text, 'the default is v2');
  t.equal(list.etag, asked.etag, 'one ETag per representation, whichever way it was asked for');
  t.same(sansDigest(list.json()), {
    resources: [
      {
        schemaVersion: 2,
        id: 'pdf-tools',
        name: 'Name of pdf-tools',
        provider: 'agentlet-a',
        sourceContent: 'About pdf-tools.\n\nUse pdf-tools via $HUABU_RFS_URL.',
        userContent: '',
      },
      { schemaVersion: 2, id: 'web-search', name: 'Web search', provider: 'huabu', sourceContent: 'Search the web.', userContent: '' },
    ],
    manageableResourceIds: [],
  });
  t.equal((await get('/api/acp/resources', { ...h.owner, 'if-none-match': list.etag! })).status, 304);
  t.equal((await get('/api/acp/resources?schemaVersion=1', h.owner)).text, v1Bytes, 'v1 asked for: the same bytes as without the switch');

  t.equal((await get('/api/acp/resources/pdf-tools', h.owner)).json().schemaVersion, 2);
  t.equal((await get('/api/acp/resources/pdf-tools?schemaVersion=1', h.owner)).json().schemaVersion, 1);
  const rfs = (await get('/api/rfs/canvas-x/resources', canvas)).json();
  t.same(
    rfs.resources.map((r: { id: string; schemaVersion: number }) => [r.id, r.schemaVersion]),
    [
      ['pdf-tools', 2],
      ['web-search', 2],
    ],
  );
  t.same(Object.keys(rfs), ['resources']);
  t.equal((await get('/api/rfs/canvas-x/resources/web-search', canvas)).json().schemaVersion, 2);

  // The settings page saves a customization and reads `result.resource`; the next list shows it (new ETag).
  const saved = await get('/api/acp/resources/pdf-tools', h.owner, {
    method: 'PATCH',
    body: { displayName: 'PDF', userContent: 'Be brief.' },
  });
  t.equal(saved.status, 200);
  t.match(saved.json(), { resource: { schemaVersion: 2, id: 'pdf-tools', displayName: 'PDF', userContent: 'Be brief.' } });
  const after = await get('/api/acp/resources', h.owner);
  t.not(after.etag, list.etag, 'a change gives the list a new ETag');
  t.match(after.json().resources[0], { displayName: 'PDF', userContent: 'Be brief.' });
});

t.test('the manageable rule: only a skill the owner imported onto a machine', (t) => {
  const machine: StoredResource = {
    schemaVersion: 2,
    id: 'deck',
    name: 'Deck',
    provider: 'agentlet-a',
    sourceContent: 'S',
    userContent: '',
  };
  const host: StoredResource = { ...machine, id: 'web-search', provider: 'huabu' };
  t.ok(isManageable(machine, { origin: 'imported', kind: 'skill' }));
  t.notOk(isManageable(host, { origin: 'imported', kind: 'skill' }), 'never a host record');
  t.notOk(isManageable(machine, { origin: 'published' }), "a machine's own publication or an agent's receipt is not");
  t.notOk(isManageable(machine, undefined), 'nothing known: not manageable');
  t.same(manageableResourceIds([machine, host]), [], 'nothing is marked imported today');
  t.same(
    manageableResourceIds([host, machine], (r) => (r.id === 'deck' ? { origin: 'imported', kind: 'skill' } : undefined)),
    ['deck'],
  );
  t.end();
});

t.test('the cached v2 body is built once per revision with its extra members, and changes with the revision', async (t) => {
  let built = 0;
  const cache = new CatalogueCache(() => built++);
  const records: StoredResource[] = [
    { schemaVersion: 2, id: 'deck', name: 'Deck', provider: 'agentlet-a', sourceContent: 'S', userContent: '' },
  ];
  let marked: string[] = [];
  const besides = (rs: readonly StoredResource[]) => ({ manageableResourceIds: rs.filter((r) => marked.includes(r.id)).map((r) => r.id) });
  const first = await cache.get('r1', 'all', 2, () => Promise.resolve(records), besides);
  t.same(sansDigest(JSON.parse(first.body)), { resources: records, manageableResourceIds: [] });
  marked = ['deck'];
  t.equal((await cache.get('r1', 'all', 2, () => Promise.resolve(records), besides)).etag, first.etag, 'same revision: the cached body');
  t.equal(built, 1);
  const next = await cache.get('r2', 'all', 2, () => Promise.resolve(records), besides);
  t.same(JSON.parse(next.body).manageableResourceIds, ['deck'], 'a mark lands with the next revision');
  t.not(next.etag, first.etag);
});
