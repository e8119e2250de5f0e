// `receipt add <id> --skill DIR`: a skill folder under the resource root recorded as it is, a receipt v2
// whose name is SKILL.md's front matter `name` and whose source content is the whole SKILL.md (no v1 bound),
// published by sync as record v2. The CLI runs in-process against a real registry.
import t from 'tap';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HELP } from '../../src/agentlet/main.js';
import { JOBS } from '../../src/agentlet/jobs.js';
import { installFile, machine } from '../helpers/agentlet.js';

// A real skill's length: far past v1's 4,000-character instructions, with a code fence.
const LONG_SKILL =
  '---\nname: pdf-tools\ndescription: Splits, merges and fills PDF files.\nlicense: Apache-2.0\n---\n\n# PDF tools\n\n' +
  Array.from({ length: 200 }, (_, i) => `## Step ${i}\n\nRun this:\n\n\`\`\`python\nprint(${i})\n\`\`\`\n`).join('\n');

t.test('receipt add --skill writes a receipt v2 from the folder, and sync publishes it as record v2', async (t) => {
  t.ok(LONG_SKILL.length > 8000, 'the SKILL.md is longer than v1 allows');
  const m = await machine(t);
  await installFile(m.root, 'skills/pdf-tools/SKILL.md', `${LONG_SKILL}\n`);
  await installFile(m.root, 'skills/pdf-tools/scripts/run.sh');
  const added = await m.cli([
    'receipt',
    'add',
    'pdf-tools',
    '--skill',
    path.join(m.root, 'skills', 'pdf-tools'),
    '--machine-id',
    'agentlet-7f3a',
  ]);
  t.equal(added.code, 0, added.stderr);
  t.match(added.stdout, /wrote .*receipts\/pdf-tools\.json/);
  const file = path.join(m.root, 'receipts', 'pdf-tools.json');
  t.equal((await stat(file)).mode & 0o777, 0o600);
  const receipt = JSON.parse(await readFile(file, 'utf8'));
  t.same(
    { ...receipt, installedAt: typeof receipt.installedAt },
    {
      schemaVersion: 2,
      id: 'pdf-tools',
      kind: 'skill',
      name: 'pdf-tools',
      provider: 'agentlet-7f3a',
      sourceContent: LONG_SKILL.trim(),
      entrypoint: 'skills/pdf-tools/SKILL.md',
      installedAt: 'string',
    },
    'no sourceRevision: it is not a skill the owner imported',
  );

  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 0, sync.stderr);
  t.match(sync.stdout, /^created:\s+pdf-tools$/m);
  const res = await m.reg.h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: m.reg.h.owner });
  t.match(
    res.json().resources.find((r: { id: string }) => r.id === 'pdf-tools'),
    { schemaVersion: 2, id: 'pdf-tools', name: 'pdf-tools', sourceContent: LONG_SKILL.trim() },
    'published whole, as record v2',
  );
});

t.test('receipt add --skill: warnings are shown, refusals say why and write nothing', async (t) => {
  const m = await machine(t);
  await installFile(m.root, 'skills/renamed/SKILL.md', '---\nname: Other Name\ndescription: Does things.\n---\nBody\n');
  const warned = await m.cli(['receipt', 'add', 'renamed', '--skill', `${m.root}/skills/renamed/`]);
  t.equal(warned.code, 0, warned.stderr);
  t.match(warned.stderr, /warning: skill_name_format: the name "Other Name"/);
  t.match(warned.stderr, /warning: skill_name_mismatch: the name "Other Name" differs from its folder's name "renamed"/);
  t.match(warned.stdout, /next: .*serve/, 'the hint fits a running serve');
  t.equal(JSON.parse(await readFile(path.join(m.root, 'receipts', 'renamed.json'), 'utf8')).name, 'Other Name');

  await installFile(m.root, 'skills/no-desc/SKILL.md', '---\nname: no-desc\n---\nBody\n');
  const refused = await m.cli(['receipt', 'add', 'no-desc', '--skill', path.join(m.root, 'skills', 'no-desc')]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /skill_description_missing: SKILL\.md's front matter has no description/);
  t.match(refused.stderr, /nothing was written/);

  const outside = path.join(m.dir, 'elsewhere');
  await installFile(outside, 'SKILL.md', '---\nname: elsewhere\ndescription: d\n---\n');
  const away = await m.cli(['receipt', 'add', 'elsewhere', '--skill', outside]);
  t.equal(away.code, 1);
  t.match(away.stderr, /is not inside the resource root's skills\/ .*: copy the folder there first/);

  await writeFile(path.join(m.dir, 'notes.md'), 'notes');
  const mixed = await m.cli(['receipt', 'add', 'renamed', '--skill', path.join(m.root, 'skills', 'renamed'), '--name', 'x', '--force']);
  t.equal(mixed.code, 2);
  t.match(mixed.stderr, /--skill takes the name and content from SKILL\.md; drop --name/);
  const none = await m.cli(['receipt', 'add', 'nothing', '--skill', path.join(m.root, 'skills', 'missing')]);
  t.equal(none.code, 2);
  t.match(none.stderr, /--skill .*missing\/SKILL\.md cannot be read \(ENOENT\)/);
  t.same(
    (await import('node:fs')).readdirSync(path.join(m.root, 'receipts')).sort(),
    ['renamed.json'],
    'only the warned skill was recorded',
  );
});

t.test('--help documents receipt add --skill, and serve names every job it runs', (t) => {
  t.match(HELP, /receipt add <id> --skill DIR/);
  for (const type of JOBS.types()) t.ok(HELP.includes(type), `serve --help names ${type}`);
  t.end();
});
