// `credentials.json` values checked like environment values, an empty If-Match refused,
// duplicate reconcile IDs stated in the schema, 405 with Allow for methods a path does not serve, and a
// failed store open leaves no file handle for the garbage collector to close.
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type * as fsp from 'node:fs/promises';
import t from 'tap';
import { CredentialsFileError, resolveCredentials } from '../../src/credentials/credentials-file.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { nodeFileSystem } from '../../src/storage/durable-file.js';
import { build, tempDataDir } from '../helpers/build.js';

t.test('credentials.json values shorter than 24 characters stop the start', async (t) => {
  const dir = await tempDataDir();
  const file = path.join(dir, 'credentials.json');
  await writeFile(
    file,
    JSON.stringify({
      ownerToken: 'x',
      huabuProviderToken: 'arr_huabu_' + 'h'.repeat(40),
      canvasTokenSecret: 'arr_secret_' + 's'.repeat(40),
    }),
    { mode: 0o600 },
  );
  const err = await resolveCredentials(dir, {}).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof CredentialsFileError, 'refused');
  t.match((err as Error).message, /ownerToken/);
  t.notMatch((err as Error).message, /"x"/, 'the value is not quoted');
});

t.test('an empty If-Match is 400, not "no condition"', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const created = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/home/me', launch: { kind: 'acp-command', command: 'agent' } },
  });
  const url = `/api/acp/profiles/${created.json().id}`;
  for (const value of ['', ' ', ',']) {
    const patch = await h.app.inject({ method: 'PATCH', url, headers: { ...h.owner, 'if-match': value }, payload: { alias: 'Changed' } });
    t.equal(patch.statusCode, 400, `PATCH with If-Match "${value}"`);
    t.equal(patch.json().code, 'validation_failed');
    const del = await h.app.inject({ method: 'DELETE', url, headers: { ...h.owner, 'if-match': value } });
    t.equal(del.statusCode, 400, `DELETE with If-Match "${value}"`);
  }
  const read = await h.app.inject({ url, headers: h.owner });
  t.equal(read.json().alias, 'Reviewer', 'unchanged');
});

t.test('the reconcile schema states that IDs must be unique', async (t) => {
  const h = await build(t);
  const doc = (await h.app.inject({ url: '/openapi.json' })).json();
  const body = doc.paths['/api/acp/providers/{provider}/resources'].put.requestBody.content['application/json'].schema;
  t.match(body.properties.resources.description, /only once|unique/i);
});

t.test('a method a path does not serve is 405 with Allow, in our envelope', async (t) => {
  const h = await build(t);
  const cases: [string, string, string[]][] = [
    ['POST', '/api/acp/resources/web-search', ['GET']],
    ['PUT', '/api/acp/machines', ['GET', 'POST']],
    ['DELETE', '/healthz', ['GET']],
    ['PATCH', '/api/acp/providers/huabu/resources', ['GET', 'PUT']],
  ];
  for (const [method, url, allowed] of cases) {
    const res = await h.app.inject({ method: method as 'POST', url, headers: h.owner });
    t.equal(res.statusCode, 405, `${method} ${url}`);
    t.equal(res.json().code, 'method_not_allowed');
    const allow = String(res.headers.allow).split(/,\s*/);
    for (const m of allowed) t.ok(allow.includes(m), `Allow lists ${m} (${res.headers.allow})`);
  }
  const unknown = await h.app.inject({ url: '/api/acp/nothing-here', headers: h.owner });
  t.equal(unknown.statusCode, 404, 'an unknown path stays 404');
});

t.test('a store that fails to open closes every file handle it opened', async (t) => {
  const dir = await tempDataDir();
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'machines.json'), '{"schemaVersion": 1, "state": {"machines": [{"bad": true}]}}');
  const open = new Set<fsp.FileHandle>();
  const fs = {
    ...nodeFileSystem,
    open: async (file: string, flags: string, mode?: number) => {
      const handle = await nodeFileSystem.open(file, flags, mode);
      open.add(handle);
      const close = handle.close.bind(handle);
      handle.close = async () => {
        open.delete(handle);
        return close();
      };
      return handle;
    },
  };
  await t.rejects(JsonFileStore.open({ dataDir: dir, fs }));
  t.equal(open.size, 0, 'no handle left open');
});
