// agentlet-resources sync end to end: records created, replaced and withdrawn; dry run; conflicts with another provider.
// The CLI runs in the test's process (its main(), from source) against a real registry on a loopback socket (fresh
// DATA_DIR); every run is checked for leaked tokens (test/helpers/agentlet.ts).
import t from 'tap';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { addSkill, catalogue, cliRunner, installFile, machine, tempDir } from '../helpers/agentlet.js';

t.test('a machine goes from an empty directory to its records in the catalogue, and withdraws one', async (t) => {
  const m = await machine(t);
  for (const dir of ['', 'skills', 'tools', 'connectors', 'receipts']) {
    t.equal((await stat(path.join(m.root, dir))).mode & 0o777, 0o700, `${dir || 'root'} is 0700`);
  }
  // Someone else's record must survive this machine's reconcile.
  t.equal((await m.reg.h.put('huabu', m.reg.h.huabu.authorization!.slice(7), 'web-search')).statusCode, 201);

  const added = await addSkill(m, 'summarize-pdf', ['--source', 'https://example.org/skills/summarize-pdf']);
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /wrote .*receipts\/summarize-pdf\.json/);
  const receiptFile = path.join(m.root, 'receipts', 'summarize-pdf.json');
  t.equal((await stat(receiptFile)).mode & 0o777, 0o600, 'receipt is 0600');
  const receipt = JSON.parse(await readFile(receiptFile, 'utf8'));
  t.match(receipt, {
    schemaVersion: 1,
    id: 'summarize-pdf',
    kind: 'skill',
    name: 'Skill summarize-pdf',
    description: 'What summarize-pdf does.',
    instructions: 'Read $AGENT_RESOURCE_DIR/skills/summarize-pdf/SKILL.md before using summarize-pdf.',
    entrypoint: 'skills/summarize-pdf',
    source: 'https://example.org/skills/summarize-pdf',
  });
  t.ok(!Number.isNaN(Date.parse(receipt.installedAt)), 'installedAt is a date');

  await installFile(m.root, 'tools/grep/grep.sh');
  await writeFile(path.join(m.dir, 'grep.md'), 'Run $AGENT_RESOURCE_DIR/tools/grep/grep.sh PATTERN.');
  const tool = await m.cli([
    'receipt',
    'add',
    'local-grep',
    '--kind',
    'tool',
    '--entrypoint',
    path.join(m.root, 'tools/grep/grep.sh'),
    '--name',
    'Local grep',
    '--description',
    'Searches files.',
    '--instructions-file',
    path.join(m.dir, 'grep.md'),
  ]);
  t.equal(tool.code, 0, tool.stderr);
  t.equal(
    JSON.parse(await readFile(path.join(m.root, 'receipts', 'local-grep.json'), 'utf8')).entrypoint,
    'tools/grep/grep.sh',
    'absolute entrypoint inside the root is stored relative',
  );

  const again = await addSkill(m, 'summarize-pdf');
  t.equal(again.code, 1, 'an existing receipt is not overwritten without --force');
  t.match(again.stderr, /already exists; pass --force/);

  const validate = await m.cli(['validate']);
  t.equal(validate.code, 0, validate.stderr);
  t.equal(validate.stdout, 'ok local-grep\nok summarize-pdf\n');

  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 0, sync.stderr);
  t.match(sync.stdout, /^created:\s+local-grep, summarize-pdf$/m);
  t.match(sync.stdout, /^withdrawn:\s+-$/m);
  t.same(
    m.reg.providerRequests.filter((r) => !r.includes('/huabu/')),
    ['PUT /api/acp/providers/agentlet-7f3a/resources'],
    'one reconcile request',
  );

  const { resources } = await catalogue(m);
  t.same(resources, [
    {
      schemaVersion: 1,
      id: 'local-grep',
      name: 'Local grep',
      provider: 'agentlet-7f3a',
      description: 'Searches files.',
      instructions: 'Run $AGENT_RESOURCE_DIR/tools/grep/grep.sh PATTERN.',
    },
    {
      schemaVersion: 1,
      id: 'summarize-pdf',
      name: 'Skill summarize-pdf',
      provider: 'agentlet-7f3a',
      description: 'What summarize-pdf does.',
      instructions: 'Read $AGENT_RESOURCE_DIR/skills/summarize-pdf/SKILL.md before using summarize-pdf.',
    },
    {
      schemaVersion: 1,
      id: 'web-search',
      name: 'Name of web-search',
      provider: 'huabu',
      description: 'About web-search.',
      instructions: 'Use web-search via $HUABU_RFS_URL.',
    },
  ]);

  const list = await m.cli(['list', ...m.remote]);
  t.equal(list.code, 0, list.stderr);
  t.equal(
    list.stdout,
    [
      'ID             NAME                 DESCRIPTION',
      'local-grep     Local grep           Searches files.',
      'summarize-pdf  Skill summarize-pdf  What summarize-pdf does.',
      '',
    ].join('\n'),
  );

  const unchanged = await m.cli(['sync', ...m.remote]);
  t.match(unchanged.stdout, /^unchanged:\s+local-grep, summarize-pdf$/m, 'a second sync changes nothing');

  await rm(path.join(m.root, 'receipts', 'local-grep.json'));
  const withdraw = await m.cli(['sync', ...m.remote]);
  t.equal(withdraw.code, 0, withdraw.stderr);
  t.match(withdraw.stdout, /^withdrawn:\s+local-grep$/m);
  t.match(withdraw.stdout, /^created:\s+-$/m);
  t.same(
    (await catalogue(m)).resources.map((r) => [r.id, r.provider]),
    [
      ['summarize-pdf', 'agentlet-7f3a'],
      ['web-search', 'huabu'],
    ],
    'exactly that record is withdrawn',
  );
});

t.test('--dry-run reports the plan and changes nothing', async (t) => {
  const m = await machine(t);
  t.equal((await addSkill(m, 'draft-notes')).code, 0);
  const dry = await m.cli(['sync', ...m.remote, '--dry-run']);
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stdout, /dry run: nothing changed/);
  t.match(dry.stdout, /^created:\s+draft-notes$/m);
  t.same(m.reg.providerRequests, ['PUT /api/acp/providers/agentlet-7f3a/resources?dryRun=true']);
  t.same((await catalogue(m)).resources, [], 'the catalogue is still empty');
});

t.test('a conflict with a huabu ID exits non-zero, names the ID and its holder, and changes nothing', async (t) => {
  const m = await machine(t);
  t.equal((await m.reg.h.put('huabu', m.reg.h.huabu.authorization!.slice(7), 'web-search')).statusCode, 201);
  const before = (await catalogue(m)).body;
  t.equal((await addSkill(m, 'web-search')).code, 0);
  t.equal((await addSkill(m, 'my-own-skill')).code, 0);
  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 1);
  t.match(sync.stderr, /conflict: 1 ID\(s\) are held by another provider; the registry changed nothing/);
  t.match(sync.stderr, /^ {2}web-search is held by provider huabu$/m);
  t.equal((await catalogue(m)).body, before, 'the catalogue is byte-for-byte unchanged');
});

t.test('the hints after init and receipt add fit a running serve: it publishes on its own; sync only without it', async (t) => {
  const dir = await tempDir(t);
  const root = path.join(dir, 'res');
  const cli = cliRunner(t, { AGENT_RESOURCE_DIR: root });
  const init = await cli(['init']);
  t.equal(init.code, 0, init.stderr);
  t.match(init.stdout, /next: .*receipt add <id>.*a running `agentlet-resources serve` publishes each receipt on its own/);
  t.match(init.stdout, /without serve, run `agentlet-resources sync --registry URL --machine-id ID --token-file FILE`/);

  await installFile(root, 'skills/hinted/SKILL.md', '# hinted\n');
  await writeFile(path.join(dir, 'hinted.md'), 'Read it.\n');
  const add = [
    'receipt',
    'add',
    'hinted',
    '--kind',
    'skill',
    '--entrypoint',
    'skills/hinted',
    '--name',
    'Hinted',
    '--description',
    'A hinted skill.',
    '--instructions-file',
    path.join(dir, 'hinted.md'),
  ];
  const added = await cli([...add, '--machine-id', 'agentlet-h1']);
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /next: a running `agentlet-resources serve` publishes it within a second/);
  t.match(
    added.stdout,
    /without serve, check it with `agentlet-resources validate --machine-id agentlet-h1`, then publish it with `agentlet-resources sync --registry URL --machine-id agentlet-h1 --token-file FILE`/,
    "the machine's ID filled in",
  );
  const again = await cli([...add, '--force']);
  t.match(again.stdout, /agentlet-resources sync --registry URL --machine-id ID --token-file FILE/, 'ID when it is not known');
});
