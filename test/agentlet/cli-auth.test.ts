// agentlet-resources and the machine token: its file, 401 after revocation, 403 for another machine.
// The CLI runs in the test's process (its main(), from source) against a real registry on a loopback socket (fresh
// DATA_DIR); every run is checked for leaked tokens (test/helpers/agentlet.ts).
import t from 'tap';
import path from 'node:path';
import { addSkill, catalogue, machine, tokenFile } from '../helpers/agentlet.js';

t.test('a revoked machine token gets a clear 401 message', async (t) => {
  const m = await machine(t, 'agentlet-revoked');
  t.equal((await addSkill(m, 'kept-skill')).code, 0);
  t.equal((await m.cli(['sync', ...m.remote])).code, 0);
  const revoke = await m.reg.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-revoked', headers: m.reg.h.owner });
  t.equal(revoke.statusCode, 204);
  for (const command of ['sync', 'list']) {
    const run = await m.cli([command, ...m.remote]);
    t.equal(run.code, 3, command);
    t.match(run.stderr, /rejected the token for machine agentlet-revoked \(401 unauthorized\)/);
    t.match(run.stderr, /wrong, or the machine's enrollment was revoked/);
    t.match(run.stderr, new RegExp(`the token in ${m.tokenPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  }
  t.same(
    (await catalogue(m)).resources.map((r) => r.id),
    [],
    'its records are withdrawn with the revocation',
  );
});

t.test('a token of another machine is refused with a 403 message', async (t) => {
  const m = await machine(t);
  const other = m.remote.map((a) => (a === 'agentlet-7f3a' ? 'agentlet-other' : a));
  const run = await m.cli(['list', ...other]);
  t.equal(run.code, 3);
  t.match(run.stderr, /refused to act for machine agentlet-other \(403 forbidden\).*--machine-id must be the exact machine ID/);
});

t.test('the token file', async (t) => {
  const m = await machine(t);
  t.equal((await addSkill(m, 'env-skill')).code, 0);

  await t.test('is taken from AGENTLET_TOKEN_FILE', async (t) => {
    const run = await m.cli(['sync', '--registry', m.reg.url, '--machine-id', 'agentlet-7f3a'], { AGENTLET_TOKEN_FILE: m.tokenPath });
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /^created:\s+env-skill$/m);
  });

  for (const mode of [0o644, 0o640, 0o604]) {
    await t.test(`is refused with mode ${mode.toString(8)}`, async (t) => {
      const loose = await tokenFile(m.dir, m.token, mode, `loose-${mode.toString(8)}.token`);
      const before = m.reg.providerRequests.length;
      const run = await m.cli(['sync', '--registry', m.reg.url, '--machine-id', 'agentlet-7f3a', '--token-file', loose]);
      t.equal(run.code, 2);
      t.match(run.stderr, new RegExp(`accessible by group or others \\(mode 0${mode.toString(8)}\\); refusing to use it.*chmod 600`));
      t.equal(m.reg.providerRequests.length, before, 'nothing sent');
    });
  }

  await t.test('is required, and the token is never accepted on the command line', async (t) => {
    const missing = await m.cli(['sync', '--registry', m.reg.url, '--machine-id', 'agentlet-7f3a']);
    t.equal(missing.code, 2);
    t.match(missing.stderr, /needs the machine token: pass --token-file FILE or set AGENTLET_TOKEN_FILE/);
    const argv = await m.cli(['sync', '--registry', m.reg.url, '--machine-id', 'agentlet-7f3a', `--token=${m.token}`]);
    t.equal(argv.code, 2);
    t.match(argv.stderr, /the token is never taken from the command line/);
    const gone = await m.cli(['list', '--registry', m.reg.url, '--machine-id', 'agentlet-7f3a', '--token-file', path.join(m.dir, 'nope')]);
    t.equal(gone.code, 2);
    t.match(gone.stderr, /token file .*nope does not exist/);
  });
});
