// `npm run import` of a DATA_DIR holding record v2 (upstream's v2 resources.json) and customized v1 records:
// the PostgreSQL-backed app serves both representations byte for byte as the JSON store did.
import t from 'tap';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { runImport } from '../../src/storage/postgres/commands.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { build, CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';
import { sansDigest } from '../helpers/digest.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('a DATA_DIR with v1 and v2 records and customizations imports and serves the same in both representations', async (t) => {
    const dataDir = await tempDataDir();
    await cp(path.join('test', 'fixtures', 'upstream', 'resources-v2'), dataDir, { recursive: true });
    // A skill the owner imported onto a machine: its mark travels with the import.
    const store = await JsonFileStore.open({ dataDir });
    await store.putResource({
      schemaVersion: 2,
      id: 'imported-skill',
      name: 'Imported',
      provider: 'agentlet-a',
      sourceContent: 'Use it.',
      userContent: '',
    });
    await store.customizeResource('imported-skill', { userContent: 'Mine.', imported: true });
    await store.close();
    const json = await build({ teardown: () => undefined }, { dataDir });
    await json.put('huabu', CANARY.huabu, 'old-style', { name: ' Spaced ' });
    await json.app.inject({
      method: 'PATCH',
      url: '/api/acp/resources/old-style',
      headers: json.owner,
      payload: { displayName: 'Old', userContent: 'Owner.' },
    });
    const urls = [
      '/api/acp/resources',
      '/api/acp/resources?schemaVersion=2',
      '/api/acp/resources/old-style',
      '/api/acp/resources/slides?schemaVersion=2',
    ];
    const bodies = await Promise.all(urls.map(async (url) => (await json.app.inject({ url, headers: json.owner })).body));
    t.same(JSON.parse(bodies[1]!).manageableResourceIds, ['imported-skill'], 'the JSON store lists the marked record as manageable');
    await json.app.close();

    const url = await freshDatabase(t, base);
    const err: string[] = [];
    t.equal(
      await runImport(
        ['--data-dir', dataDir],
        url,
        () => undefined,
        (l) => err.push(l),
      ),
      0,
      err.join('\n'),
    );
    const config = loadConfig(testEnv(await tempDataDir(), { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'false' }));
    const pgApp = await buildApp({ config, logger: createLogger('silent') });
    t.teardown(() => pgApp.close());
    const owner = { authorization: `Bearer ${CANARY.owner}` };
    for (const [i, u] of urls.entries()) t.equal((await pgApp.inject({ url: u, headers: owner })).body, bodies[i], `${u}: byte for byte`);

    // A provider replace through the PostgreSQL store keeps the customization, and PATCH works there too.
    const put = await pgApp.inject({
      method: 'PUT',
      url: '/api/acp/providers/huabu/resources/old-style',
      headers: { authorization: `Bearer ${CANARY.huabu}` },
      payload: { schemaVersion: 2, name: 'New', sourceContent: 'Fresh.' },
    });
    t.equal(put.statusCode, 200);
    t.same(sansDigest(put.json()), {
      schemaVersion: 2,
      id: 'old-style',
      name: 'New',
      displayName: 'Old',
      provider: 'huabu',
      sourceContent: 'Fresh.',
      userContent: 'Owner.',
    });
    const patched = await pgApp.inject({
      method: 'PATCH',
      url: '/api/acp/resources/old-style',
      headers: owner,
      payload: { displayName: null },
    });
    t.same(
      sansDigest(patched.json()),
      { resource: { schemaVersion: 2, id: 'old-style', name: 'New', provider: 'huabu', sourceContent: 'Fresh.', userContent: 'Owner.' } },
      'PATCH answers {resource}',
    );
  });
}
