// `npm run import`: a JSON DATA_DIR copied into an empty database, served the same by a PostgreSQL-backed
// app, and idempotent; a database with data of its own is refused.
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { LARGE_ROW_COUNT, terminalProgress } from '../../src/progress.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { runImport } from '../../src/storage/postgres/commands.js';
import { logFilesOldestFirst } from '../../src/storage/append-log.js';
import { build, CANARY, recordIssuedToken, tempDataDir, testEnv } from '../helpers/build.js';
import { freshDatabase, postgresOrSkip, queryOnce } from '../helpers/postgres.js';

const base = postgresOrSkip(t);
if (base) {
  t.test('npm run import shows a bar on a terminal for a large DATA_DIR, and only its report when not a terminal', async (t) => {
    const dataDir = await tempDataDir();
    await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
    const profiles = Array.from({ length: LARGE_ROW_COUNT }, (_, i) => ({
      schemaVersion: 2,
      id: `p-${i}`,
      alias: `Agent ${i}`,
      agentletId: 'mac-a',
      workingDirPath: '/w',
      resourceIds: [],
      launch: { kind: 'acp-command', command: 'agent' },
    }));
    await writeFile(
      path.join(dataDir, 'agent-team', 'registry.json'),
      JSON.stringify({ schemaVersion: 4, state: { roots: [], members: [], profiles, configs: [] } }),
    );

    const chunks: string[] = [];
    const terminal = Object.assign(new Writable({ write: (c, _e, done) => (chunks.push(String(c)), done()) }), {
      isTTY: true,
      columns: 120,
    });
    const url = await freshDatabase(t, base);
    t.equal(
      await runImport(
        ['--data-dir', dataDir],
        url,
        () => undefined,
        () => undefined,
        terminalProgress(terminal),
      ),
      0,
    );
    t.match(chunks.join(''), /importing into PostgreSQL .*100% \d+\/\d+ rows/, 'the bar reaches 100% of the rows');

    const entry = path.resolve('dist/scripts/import-json.js');
    const other = await freshDatabase(t, base);
    const child = spawn(process.execPath, [entry, '--data-dir', dataDir], {
      env: { ...process.env, DATABASE_URL: other },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    t.equal(await new Promise((resolve) => child.once('exit', resolve)), 0);
    t.equal(stderr, '', 'nothing on stderr');
    // eslint-disable-next-line no-control-regex -- ESC starts the escape sequences a progress bar draws with
    t.notMatch(stdout, /[\r\u001b]|%/, 'no bar');
    t.match(stdout, new RegExp(`holds 0 resources, 0 machines, ${LARGE_ROW_COUNT} profiles`));
  });

  t.test(
    'an upstream Huabu registry file (v1 with deployments) is migrated, imported, and listed the same with its selectable profiles',
    async (t) => {
      const dataDir = await tempDataDir();
      await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
      const v1 = JSON.parse(await readFile(path.join('test', 'fixtures', 'registry', 'v1.json'), 'utf8'));
      await writeFile(path.join(dataDir, 'agent-team', 'registry.json'), JSON.stringify(v1));
      const json = await build({ teardown: () => undefined }, { dataDir });
      const jsonList = await json.app.inject({ url: '/api/acp/profiles', headers: json.owner });
      await json.app.close();
      t.same(jsonList.json().selectableProfileIds, ['legacy-deployment'], 'the ready deployment on an active member is selectable');

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
      const pgList = await pgApp.inject({ url: '/api/acp/profiles', headers: { authorization: `Bearer ${CANARY.owner}` } });
      t.same(pgList.json(), jsonList.json(), 'the same profiles and selectableProfileIds from the database');
      t.same(
        (
          await queryOnce<{ key: string; value: unknown }>(
            url,
            "SELECT key, value FROM registry_state WHERE key IN ('roots', 'members', 'configs') ORDER BY key",
          )
        ).map((r) => [r.key, r.value]),
        [
          ['configs', v1.state.configs],
          ['members', v1.state.members],
          ['roots', v1.state.roots],
        ],
        'the Agent Team state is carried key for key',
      );
    },
  );

  t.test('a JSON DATA_DIR imports into an empty database, serves the same, and re-importing changes nothing', async (t) => {
    const dataDir = await tempDataDir();
    const json = await build({ teardown: () => undefined }, { dataDir, env: { SEED_HUABU_RESOURCES: 'true' } });
    const mac = await json.enroll('mac-a');
    await json.put('huabu', CANARY.huabu, 'web-search');
    await json.put('mac-a', mac, 'local-git');
    const created = await json.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: json.owner,
      payload: {
        alias: 'Reviewer',
        agentletId: 'mac-a',
        workingDirPath: '/home/me/site',
        launch: { kind: 'acp-command', command: 'agent' },
        resourceIds: ['web-search'],
      },
    });
    const profileId = created.json().id as string;
    const launched = await json.app.inject({
      method: 'POST',
      url: '/api/acp/launch',
      headers: json.owner,
      payload: { profileId, canvasId: 'canvas-1', threadId: 'thread-1' },
    });
    t.equal(launched.statusCode, 201);
    const jsonCatalogue = await json.app.inject({ url: '/api/acp/resources', headers: json.owner });
    const jsonProfile = await json.app.inject({ url: `/api/acp/profiles/${profileId}`, headers: json.owner });
    await json.app.close();

    const url = await freshDatabase(t, base);
    const out: string[] = [];
    const err: string[] = [];
    t.equal(
      await runImport(
        ['--data-dir', dataDir],
        url,
        (l) => out.push(l),
        (l) => err.push(l),
      ),
      0,
      err.join('\n'),
    );
    t.match(out.join('\n'), /holds 4 resources, 1 machines, 1 profiles, \d+ other registry keys, 1 workloads, \d+ audit entries/);
    t.match(out.join('\n'), /written: 4 resources, 1 machines, 1 profiles/);
    out.length = 0;
    const auditBefore = await queryOnce<{ n: string }>(url, 'SELECT count(*) AS n FROM audit_log');
    t.equal(
      await runImport(
        [`--data-dir=${dataDir}`],
        url,
        (l) => out.push(l),
        (l) => err.push(l),
      ),
      0,
    );
    t.match(out.join('\n'), /already held all of it; nothing written/, 'idempotent');
    t.same(await queryOnce(url, 'SELECT count(*) AS n FROM audit_log'), auditBefore, 'audit entries are not copied twice');
    t.same(await queryOnce(url, 'SELECT count(*)::int AS n FROM json_imports'), [{ n: 1 }], 'a no-op re-run leaves no trace');

    const config = loadConfig(testEnv(await tempDataDir(), { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'false' }));
    const pgApp = await buildApp({ config, logger: createLogger('silent') });
    t.teardown(() => pgApp.close());
    const owner = { authorization: `Bearer ${CANARY.owner}` };
    const catalogue = await pgApp.inject({ url: '/api/acp/resources', headers: owner });
    t.same(catalogue.json(), jsonCatalogue.json(), 'the same catalogue');
    t.equal(catalogue.body, jsonCatalogue.body, 'byte for byte');
    const profile = await pgApp.inject({ url: `/api/acp/profiles/${profileId}`, headers: owner });
    t.same(profile.json(), jsonProfile.json());
    t.equal(profile.headers.etag, jsonProfile.headers.etag, 'the same ETag: If-Match keeps working across the move');
    t.same((await pgApp.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: owner })).json(), launched.json());
    const rfs = await pgApp.inject({ url: '/api/rfs/canvas-1/resources', headers: { authorization: `Bearer ${mac}` } });
    t.not(rfs.statusCode, 401, 'the machine token still authenticates');
    recordIssuedToken(mac);
  });

  t.test(
    'rotated audit files import oldest first; after more rotation (the oldest files deleted) a re-import copies only the new entries',
    async (t) => {
      const dataDir = await tempDataDir();
      // Small files: the enrollments' audit entries spread over audit.jsonl and rotated files.
      const env = { AUDIT_MAX_BYTES: '1024', AUDIT_MAX_FILES: '3' };
      const first = await build(t, { dataDir, env });
      for (let i = 0; i < 12; i++) recordIssuedToken(await first.enroll(`imp-${i}`));
      await first.app.close();
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
      const enrollments = async () =>
        (
          await queryOnce<{ object_id: string }>(
            url,
            "SELECT object_id FROM audit_log WHERE source = 'import' AND action = 'machine.enroll' ORDER BY seq",
          )
        ).map((r) => r.object_id);
      const imported = await enrollments();
      t.ok(imported.length >= 4, `several enrollments imported (${imported.length})`);
      const firstKept = Number(imported[0]!.slice(4));
      t.same(
        imported,
        Array.from({ length: 12 - firstKept }, (_, i) => `imp-${firstKept + i}`),
        'oldest first, in order, each once',
      );

      // The JSON service goes on until the oldest entry the first import copied has been rotated away.
      const second = await build(t, { dataDir, env });
      const auditText = async () =>
        (await Promise.all((await logFilesOldestFirst(path.join(dataDir, 'audit.jsonl'))).map((f) => readFile(f, 'utf8')))).join('');
      let n = 12;
      while ((await auditText()).includes(`"imp-${firstKept}"`) && n < 80) recordIssuedToken(await second.enroll(`imp-${n++}`));
      await second.app.close();
      t.notMatch(await auditText(), `"imp-${firstKept}"`, 'the first imported entries are no longer in the files');
      t.match(await auditText(), '"imp-12"', 'every entry since the first import still is');
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
      const after = await enrollments();
      t.same(after.slice(0, imported.length), imported, 'what was imported stays');
      t.same(
        after.slice(imported.length),
        Array.from({ length: n - 12 }, (_, i) => `imp-${12 + i}`),
        'then every new entry once, none lost to the rotation, none twice',
      );
      const again = await queryOnce<{ n: string }>(url, "SELECT count(*) AS n FROM audit_log WHERE source = 'import'");
      t.equal(
        await runImport(
          ['--data-dir', dataDir],
          url,
          () => undefined,
          (l) => err.push(l),
        ),
        0,
      );
      t.same(await queryOnce(url, "SELECT count(*) AS n FROM audit_log WHERE source = 'import'"), again, 'a third run copies nothing');
    },
  );

  t.test('a database holding data that did not come from an import is refused, untouched', async (t) => {
    const url = await freshDatabase(t, base);
    const config = loadConfig(testEnv(await tempDataDir(), { DATABASE_URL: url, SEED_HUABU_RESOURCES: 'true' }));
    await (await buildApp({ config, logger: createLogger('silent') })).close();
    const before = await queryOnce(url, 'SELECT id FROM resources ORDER BY id');
    const err: string[] = [];
    t.equal(
      await runImport(
        ['--data-dir', await tempDataDir()],
        url,
        () => undefined,
        (l) => err.push(l),
      ),
      1,
    );
    t.match(err.join('\n'), /import only into an empty database/);
    t.same(await queryOnce(url, 'SELECT id FROM resources ORDER BY id'), before);
    t.equal(
      await runImport(
        [],
        url,
        () => undefined,
        () => undefined,
      ),
      2,
      'usage',
    );
  });
}
