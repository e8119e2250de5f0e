// agentlet-resources refuses to publish receipts whose entrypoint escapes the root or that hold a secret.
// The CLI runs in the test's process (its main(), from source) against a real registry on a loopback socket (fresh
// DATA_DIR); every run is checked for leaked tokens (test/helpers/agentlet.ts).
import t from 'tap';
import { rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { addSkill, catalogue, FAKE_GITHUB_TOKEN, installFile, machine, receiptJson, writeReceipt } from '../helpers/agentlet.js';

t.test('a receipt whose entrypoint escapes the root is rejected and nothing is sent', async (t) => {
  const m = await machine(t);
  t.equal((await addSkill(m, 'fine-skill')).code, 0, 'a valid receipt beside the bad ones');
  const outside = path.join(m.dir, 'outside');
  await installFile(outside, 'payload/run.sh');

  await t.test('by ..', async (t) => {
    await writeReceipt(m.root, receiptJson('dotdot-escape', { entrypoint: 'skills/../../outside/payload/run.sh' }));
    const validate = await m.cli(['validate']);
    t.equal(validate.code, 1);
    t.match(validate.stdout, /^ok fine-skill$/m);
    t.match(validate.stdout, /^invalid receipts\/dotdot-escape\.json: \/entrypoint must not contain "\.\." segments$/m);
    const sync = await m.cli(['sync', ...m.remote]);
    t.equal(sync.code, 1);
    t.match(sync.stderr, /nothing was sent to the registry/);
    t.same(m.reg.providerRequests, [], 'no request reached the registry');
    await rm(path.join(m.root, 'receipts', 'dotdot-escape.json'));
  });

  await t.test('by a symbolic link', async (t) => {
    await symlink(path.join(outside, 'payload'), path.join(m.root, 'skills', 'linked'));
    await writeReceipt(m.root, receiptJson('symlink-escape', { entrypoint: 'skills/linked/run.sh' }));
    const validate = await m.cli(['validate']);
    t.equal(validate.code, 1);
    t.match(
      validate.stdout,
      /^invalid receipts\/symlink-escape\.json: \/entrypoint skills\/linked\/run\.sh resolves outside the resource root/m,
    );
    const sync = await m.cli(['sync', ...m.remote]);
    t.equal(sync.code, 1);
    t.same(m.reg.providerRequests, [], 'no request reached the registry');

    await writeFile(path.join(m.dir, 'i.md'), 'Run it.');
    const add = await m.cli([
      'receipt',
      'add',
      'linked-tool',
      '--kind',
      'skill',
      '--entrypoint',
      'skills/linked/run.sh',
      '--name',
      'Linked',
      '--description',
      'Escapes.',
      '--instructions-file',
      path.join(m.dir, 'i.md'),
    ]);
    t.equal(add.code, 1, 'receipt add refuses it too');
    t.match(add.stderr, /resolves outside the resource root[\s\S]*nothing was written/);
    await t.rejects(stat(path.join(m.root, 'receipts', 'linked-tool.json')), { code: 'ENOENT' });
  });
  t.same((await catalogue(m)).resources, []);
});

/** `receipt add` of a connector whose instructions are the file `instructions`. */
const addGithubConnector = (m: Awaited<ReturnType<typeof machine>>, instructions: string) =>
  m.cli([
    'receipt',
    'add',
    'github-connector',
    '--kind',
    'connector',
    '--entrypoint',
    'connectors/gh/connector.json',
    '--name',
    'GitHub',
    '--description',
    'GitHub API.',
    '--instructions-file',
    instructions,
  ]);

t.test('a receipt holding a secret is rejected without echoing it, and nothing is sent', async (t) => {
  const m = await machine(t);
  m.cli.tokens.push(FAKE_GITHUB_TOKEN);
  await installFile(m.root, 'connectors/gh/connector.json', '{}');
  const instructions = path.join(m.dir, 'gh.md');
  await writeFile(instructions, `Call the API with token ${FAKE_GITHUB_TOKEN}.`);
  const add = await addGithubConnector(m, instructions);
  t.equal(add.code, 1);
  t.match(add.stderr, /\/instructions looks like it contains a secret \(line \d+, rule github-pat, fingerprint github-pat:[0-9a-f]{64}\)/);
  await t.rejects(stat(path.join(m.root, 'receipts', 'github-connector.json')), { code: 'ENOENT' }, 'nothing written');

  await writeReceipt(
    m.root,
    receiptJson('github-connector', {
      kind: 'connector',
      entrypoint: 'connectors/gh/connector.json',
      description: `Uses ${FAKE_GITHUB_TOKEN}`,
    }),
  );
  const validate = await m.cli(['validate']);
  t.equal(validate.code, 1);
  t.match(validate.stdout, /^invalid receipts\/github-connector\.json: \/description looks like it contains a secret/m);
  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 1);
  t.same(m.reg.providerRequests, [], 'no request reached the registry');
});

t.test('a receipt holding several secrets names every one of them at once', async (t) => {
  const m = await machine(t);
  const password = 'Xk9#mQ2$vL7pR4tZ8wN3';
  m.cli.tokens.push(FAKE_GITHUB_TOKEN, password);
  await installFile(m.root, 'connectors/gh/connector.json', '{}');
  const instructions = path.join(m.dir, 'gh.md');
  await writeFile(instructions, `Call the API with token ${FAKE_GITHUB_TOKEN}.\n\nThen log in with password = "${password}".`);
  const add = await addGithubConnector(m, instructions);
  t.equal(add.code, 1);
  t.match(add.stderr, /\/instructions looks like it contains a secret \(line 1, rule github-pat, fingerprint github-pat:[0-9a-f]{64}\)/);
  t.match(
    add.stderr,
    /\/instructions looks like it contains a secret \(line 3, rule credential-assignment, fingerprint credential-assignment:[0-9a-f]{64}\)/,
  );
});
