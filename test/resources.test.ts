import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from './helpers/build.js';

t.test('a provider registers, replaces and withdraws its own record', async (t) => {
  const h = await build(t);
  const created = await h.put('huabu', h.huabu.authorization!.slice(7), 'web-search');
  t.equal(created.statusCode, 201);
  t.same(created.json(), {
    schemaVersion: 1,
    id: 'web-search',
    name: 'Name of web-search',
    provider: 'huabu',
    description: 'About web-search.',
    instructions: 'Use web-search via $HUABU_RFS_URL.',
  });
  const replaced = await h.put('huabu', h.huabu.authorization!.slice(7), 'web-search', { name: 'Web search' });
  t.equal(replaced.statusCode, 200);
  t.equal(replaced.json().name, 'Web search');

  const read = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.equal(read.json().name, 'Web search');

  const gone = await h.app.inject({ method: 'DELETE', url: '/api/acp/providers/huabu/resources/web-search', headers: h.huabu });
  t.equal(gone.statusCode, 204);
  const missing = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().code, 'resource_not_found');

  const onDisk = JSON.parse(await readFile(path.join(h.dataDir, 'agent-resources', 'resources.json'), 'utf8'));
  t.same(onDisk, { schemaVersion: 1, state: { resources: [] } });
  const audit = (await readFile(path.join(h.dataDir, 'audit.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  t.same(
    audit.map((a) => [a.actor, a.action, a.id, a.outcome]),
    [
      ['provider:huabu', 'resource.register', 'web-search', 'created'],
      ['provider:huabu', 'resource.register', 'web-search', 'replaced'],
      ['provider:huabu', 'resource.withdraw', 'web-search', 'withdrawn'],
    ],
  );
});
