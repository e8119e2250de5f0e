// The skill jobs on a real file system: the SKILL.md front matter, the source revision's definition, the
// containment rules of a scan (symbolic links, `..`, relative paths, limits), and an import that checks the
// revision, scans every file before writing anything, installs atomically and publishes; remove leaves
// anything that is not an imported skill alone.
import t from 'tap';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  importJob,
  parseSkillFile,
  readSkill,
  removeJob,
  scanJob,
  scanSkills,
  skillRevision,
  SKILL_LIMITS,
} from '../../src/agentlet/skill-jobs.js';
import { readSkillArchive } from '../../src/agentlet/skill-archive.js';
import type { JobContext } from '../../src/agentlet/jobs.js';
import { JobError } from '../../src/agentlet/job-error.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { tempDir } from '../helpers/agentlet.js';

const SKILL = (name: string, body = 'Body.') => `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n${body}\n`;
const SECRET = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

async function skill(dir: string, files: Record<string, string>): Promise<string> {
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

const code = (err: unknown) => (err as { code?: string }).code;
const message = (err: unknown) => (err as Error).message;

t.test('the source revision: SHA-256 over the files sorted by path, each as path NUL mode NUL length NUL bytes', (t) => {
  const files = [
    { rel: 'b/run.sh', bytes: Buffer.from('echo\n'), mode: 0o755 },
    { rel: 'SKILL.md', bytes: Buffer.from('hi'), mode: 0o644 },
  ];
  const expected = createHash('sha256')
    .update('SKILL.md\u0000644\u00002\u0000hi')
    .update('b/run.sh\u0000755\u00005\u0000echo\n')
    .digest('hex');
  t.equal(skillRevision(files), expected, 'the documented definition, the mode as its kept permission bits in octal');
  t.equal(skillRevision([...files].reverse()), expected, 'independent of the order files are read in');
  t.not(skillRevision([files[0]!, { ...files[1]!, bytes: Buffer.from('hI') }]), expected, 'a byte changes it');
  t.not(skillRevision([files[0]!, { ...files[1]!, rel: 'skill.md' }]), expected, 'a name changes it');
  t.not(skillRevision([files[0]!, { ...files[1]!, mode: 0o755 }]), expected, 'a mode changes it');
  t.equal(skillRevision([files[0]!, { ...files[1]!, mode: 0o4644 }]), expected, 'setuid is not kept, so not counted');
  t.not(
    skillRevision([{ rel: 'a', bytes: Buffer.from('bc'), mode: 0o644 }]),
    skillRevision([{ rel: 'ab', bytes: Buffer.from('c'), mode: 0o644 }]),
    'path and bytes cannot run into each other',
  );
  // Whatever order the files come in, they are taken in the order of their paths as UTF-16 code units: `a-c.md`
  // before `a/b.md` ('-' < '/'), though a folder's walk meets `a/` first.
  const many = ['scripts/x.sh', 'a/b.md', 'SKILL.md', 'z.md', 'a-c.md', 'B.md', 'references/r.md'].map((rel, i) => ({
    rel,
    bytes: Buffer.from(`file ${i}`),
    mode: 0o644,
  }));
  const byPath = [...many].sort((a, b) => (a.rel < b.rel ? -1 : 1));
  t.same(
    byPath.map((f) => f.rel),
    ['B.md', 'SKILL.md', 'a-c.md', 'a/b.md', 'references/r.md', 'scripts/x.sh', 'z.md'],
  );
  const hash = createHash('sha256');
  for (const f of byPath) hash.update(`${f.rel}\u0000644\u0000${f.bytes.length}\u0000`).update(f.bytes);
  const wanted = hash.digest('hex');
  for (const order of [many, [...many].reverse(), [...many.slice(3), ...many.slice(0, 3)], byPath])
    t.equal(skillRevision(order), wanted, `in path order whatever the order given (${order.map((f) => f.rel).join(' ')})`);
  t.end();
});

t.test('SKILL.md front matter is YAML with name and description', (t) => {
  t.match(parseSkillFile(SKILL('PDF helper')), { name: 'PDF helper', description: 'What PDF helper does.' });
  t.match(
    parseSkillFile('---\nname: "Quoted: yes"\ndescription: >\n  Folded\n  text\n---\n'),
    { name: 'Quoted: yes', description: 'Folded text' },
    'a real YAML parser',
  );
  t.throws(() => parseSkillFile('# no front matter\n'), /no YAML front matter/);
  t.throws(() => parseSkillFile('---\nname: [unclosed\n---\n'), /not valid YAML/);
  t.throws(() => parseSkillFile('---\nname: A\nname: B\ndescription: d\n---\n'), /not valid YAML/, 'duplicate keys are refused');
  t.throws(() => parseSkillFile('---\nname: A\n---\n'), /no description/);
  t.throws(() => parseSkillFile('---\n- a\n---\n'), /not a YAML mapping/);
  t.throws(() => parseSkillFile(`---\nname: ${'x'.repeat(129)}\ndescription: d\n---\n`), /longer than 128/);
  t.end();
});

t.test('a skill folder: candidate fields, and every way out of the folder refused', async (t) => {
  const dir = await tempDir(t, 'skill-read-');
  const src = await skill(path.join(dir, 'My Skill'), { 'SKILL.md': SKILL('Mine'), 'ref/a.md': 'A\n' });
  await symlink(path.join(src, 'ref', 'a.md'), path.join(src, 'inner-link.md'));
  const read = await readSkill(src);
  t.match(read.candidate, {
    id: 'my-skill',
    name: 'Mine',
    sourcePath: src,
    sourceContent: SKILL('Mine').trim(),
    sourceRevision: /^[a-f0-9]{64}$/,
  });
  t.same(
    read.files.map((f) => f.rel).sort(),
    ['SKILL.md', 'inner-link.md', 'ref/a.md'],
    'a link to a file inside the folder is read as that file',
  );
  t.equal((await readSkill(src + '/')).candidate.sourcePath, src, 'a trailing slash names the same folder');

  await writeFile(path.join(dir, 'secret.txt'), 'outside\n');
  const escaping = await skill(path.join(dir, 'escaping'), { 'SKILL.md': SKILL('Esc') });
  await symlink(path.join(dir, 'secret.txt'), path.join(escaping, 'leak.txt'));
  await t.rejects(readSkill(escaping), {
    code: 'skill_invalid',
    message: /leak\.txt is a symbolic link that leads outside the skill folder/,
  });
  const viaDots = await skill(path.join(dir, 'dots'), { 'SKILL.md': SKILL('Dots') });
  await symlink('../secret.txt', path.join(viaDots, 'up.txt'));
  await t.rejects(
    readSkill(viaDots),
    { code: 'skill_invalid', message: /up\.txt .*outside/ },
    'a relative link climbing out is refused too',
  );
  const dirLink = await skill(path.join(dir, 'dirlink'), { 'SKILL.md': SKILL('DirLink'), 'sub/x': 'x' });
  await symlink(path.join(dirLink, 'sub'), path.join(dirLink, 'again'));
  await t.rejects(
    readSkill(dirLink),
    { message: /again is a symbolic link to something other than a file/ },
    'a link to a folder is refused (no loops)',
  );
  const dangling = await skill(path.join(dir, 'dangling'), { 'SKILL.md': SKILL('Dangling') });
  await symlink(path.join(dir, 'nowhere'), path.join(dangling, 'gone'));
  await t.rejects(readSkill(dangling), { message: /gone is a symbolic link that leads nowhere/ });

  await symlink(src, path.join(dir, 'linked-skill'));
  await t.rejects(readSkill(path.join(dir, 'linked-skill')), { message: /skill folder is a symbolic link/ });
  await t.rejects(readSkill(`${dir}/escaping/../My Skill`), { message: /must not contain "\.\." segments/ });
  await t.rejects(readSkill('relative/path'), { message: /must be absolute/ });
  await t.rejects(readSkill(path.join(dir, 'missing')), { code: 'skill_unreadable' });
  await t.rejects(readSkill(await skill(path.join(dir, 'empty'), { 'x.txt': 'x' })), { message: /no SKILL\.md/ });
  await t.rejects(readSkill(await skill(path.join(dir, 'Bad_ID!'), { 'SKILL.md': SKILL('x') }), undefined, 'UPPER'), {
    message: /no valid resource ID/,
  });
  await t.rejects(
    readSkill(await skill(path.join(dir, 'leaky-md'), { 'SKILL.md': SKILL('Leaky', `token ${SECRET}`) }), new SecretScanner([])),
    {
      message: /SKILL\.md looks like it contains a secret/,
    },
    'with a scanner, a secret in SKILL.md (what the owner sees) is refused',
  );
});

t.test('limits: too many files is a clear refusal', async (t) => {
  const dir = await tempDir(t, 'skill-limits-');
  const big = await skill(path.join(dir, 'big'), { 'SKILL.md': SKILL('Big') });
  await Promise.all(Array.from({ length: SKILL_LIMITS.files }, (_, i) => writeFile(path.join(big, `f${i}`), '')));
  await t.rejects(readSkill(big), { code: 'skill_invalid', message: `more than ${SKILL_LIMITS.files} files` });
  const huge = await skill(path.join(dir, 'huge'), {
    'SKILL.md': '---\nname: H\ndescription: d\n---\n' + 'x'.repeat(SKILL_LIMITS.skillFileBytes),
  });
  await t.rejects(readSkill(huge), { message: /SKILL\.md is larger than/ });
});

t.test('a scan: the folder itself when it is a skill, else its direct sub-folders', async (t) => {
  const dir = await tempDir(t, 'skill-scan-');
  await skill(path.join(dir, 'one'), { 'SKILL.md': SKILL('One') });
  await skill(path.join(dir, 'two'), { 'SKILL.md': SKILL('Two'), 'deep/three/SKILL.md': SKILL('Nested') });
  await skill(path.join(dir, 'broken'), { 'SKILL.md': 'no front matter' });
  await skill(path.join(dir, '.hidden'), { 'SKILL.md': SKILL('Hidden') });
  await skill(path.join(dir, 'plain'), { 'README.md': 'not a skill' });
  await symlink(path.join(dir, 'one'), path.join(dir, 'one-again'));
  const result = await scanSkills(dir);
  t.equal(result.rootPath, dir);
  t.same(
    result.candidates.map((c) => c.id),
    ['one', 'two'],
    'direct sub-folders with SKILL.md; a nested SKILL.md belongs to its skill',
  );
  t.same(
    result.diagnostics.map((d) => [path.basename(d.path), d.code]),
    [
      ['broken', 'skill_front_matter_missing'],
      ['one-again', 'skill_invalid'],
    ],
  );
  t.equal(result.diagnostics[1]!.message, 'the skill folder is a symbolic link; name the real folder');
  t.same(
    (await scanSkills(path.join(dir, 'two'))).candidates.map((c) => c.name),
    ['Two'],
    'a skill folder scans as itself',
  );
  t.same(await scanSkills(`${dir}/`), result, 'a trailing slash names the same folder');
  await t.rejects(scanSkills('not/absolute'), { code: 'invalid_path' });
  await t.rejects(scanSkills(path.join(dir, 'none')), { code: 'skill_unreadable' });
});

async function rootWithContext(t: Parameters<typeof tempDir>[0]) {
  const dir = await tempDir(t, 'skill-import-');
  const root = path.join(dir, 'root');
  await mkdir(path.join(root, 'receipts'), { recursive: true, mode: 0o700 });
  await mkdir(path.join(root, 'skills'), { recursive: true, mode: 0o700 });
  let published = 0;
  const context: JobContext = {
    machineId: 'agentlet-x',
    root,
    publish: () => {
      published++;
      return Promise.resolve({ dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] });
    },
    scanner: new SecretScanner(['arr_machine_token_of_this_machine_0123456789']),
  };
  return { dir, root, context, published: () => published };
}

t.test('import: revision checked, secrets scanned before any write, atomic install, receipt v2, publish', async (t) => {
  const { dir, root, context, published } = await rootWithContext(t);
  const src = await skill(path.join(dir, 'src', 'pdf'), { 'SKILL.md': SKILL('PDF'), 'bin/run': 'run\n' });
  const { candidate } = await readSkill(src);

  await t.rejects(importJob({ id: 'pdf', sourcePath: src, expectedRevision: 'f'.repeat(64) }, context), { code: 'source_changed' });
  t.same(await readdir(path.join(root, 'skills')), [], 'nothing written on a revision mismatch');

  const leaky = await skill(path.join(dir, 'src', 'leaky'), {
    'SKILL.md': SKILL('Leaky'),
    'a.txt': 'fine\n',
    'z/env': `TOKEN=${SECRET}\n`,
    'bin.dat': `\u0000${SECRET}`,
  });
  const leakyRev = (await readSkill(leaky)).candidate.sourceRevision;
  const refused = await importJob({ id: 'leaky', sourcePath: leaky, expectedRevision: leakyRev }, context).catch((e: unknown) => e);
  t.equal(code(refused), 'secret_detected');
  t.match(message(refused), /z\/env/);
  t.notMatch(message(refused), /ghp_/, 'the message names the file and rule, never the value');
  t.same(await readdir(path.join(root, 'skills')), [], 'nothing copied when a file holds a secret');
  t.same(await readdir(path.join(root, 'receipts')), [], 'no receipt either');
  t.equal(published(), 0);

  t.same(await importJob({ id: 'pdf-tools', sourcePath: src, expectedRevision: candidate.sourceRevision }, context), {
    id: 'pdf-tools',
    sourceRevision: candidate.sourceRevision,
    created: true,
  });
  t.equal(await readFile(path.join(root, 'skills', 'pdf-tools', 'bin', 'run'), 'utf8'), 'run\n');
  t.same((await readdir(path.join(root, 'skills'))).sort(), ['pdf-tools'], 'no temp folder left behind');
  const receipt = JSON.parse(await readFile(path.join(root, 'receipts', 'pdf-tools.json'), 'utf8'));
  t.match(receipt, {
    schemaVersion: 2,
    id: 'pdf-tools',
    kind: 'skill',
    name: 'PDF',
    provider: 'agentlet-x',
    sourceContent: candidate.sourceContent,
    entrypoint: 'skills/pdf-tools/SKILL.md',
    source: src,
    sourceRevision: candidate.sourceRevision,
  });
  t.equal(published(), 1, 'published once');
  await t.rejects(
    importJob({ id: 'pdf-tools', sourcePath: src, expectedRevision: candidate.sourceRevision }, context),
    { code: 'resource_conflict' },
    'imported twice: refresh instead',
  );

  // Refresh: the receipt's source, read again; the old copy replaced whole (a removed file is gone).
  await skill(src, { 'SKILL.md': SKILL('PDF', 'New body.') });
  await import('node:fs/promises').then((fs) => fs.rm(path.join(src, 'bin'), { recursive: true }));
  const scanned = await scanJob({ id: 'pdf-tools' }, context);
  t.same(
    scanned.candidates.map((c) => [c.id, c.sourcePath]),
    [['pdf-tools', src]],
    'a refresh scan reads the receipt source',
  );
  await importJob({ id: 'pdf-tools', expectedRevision: scanned.candidates[0]!.sourceRevision, refresh: true }, context);
  t.match(await readFile(path.join(root, 'skills', 'pdf-tools', 'SKILL.md'), 'utf8'), /New body/);
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-tools', 'bin')), 'the refreshed copy is the source as it is now');
  t.same((await readdir(path.join(root, 'skills'))).sort(), ['pdf-tools'], 'no old copy left behind');

  // Remove: only an imported skill.
  await writeFile(path.join(root, 'receipts', 'hand-made.json'), JSON.stringify({ schemaVersion: 1, id: 'hand-made', kind: 'skill' }));
  await t.rejects(
    removeJob({ id: 'hand-made' }, context),
    { code: 'resource_conflict' },
    'a receipt the owner did not import is left alone',
  );
  t.ok(existsSync(path.join(root, 'receipts', 'hand-made.json')));
  t.same(await removeJob({ id: 'nothing-here' }, context), { removed: false });
  t.same(await removeJob({ id: 'pdf-tools' }, context), { removed: true });
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-tools')) || existsSync(path.join(root, 'receipts', 'pdf-tools.json')));
  t.ok(existsSync(path.join(src, 'SKILL.md')), 'the source is never touched');
  await t.rejects(scanJob({ id: 'pdf-tools' }, context), { code: 'skill_not_found' });
  await t.rejects(importJob({ id: 'Bad', sourcePath: src, expectedRevision: 'a'.repeat(64) }, context), { code: 'invalid_payload' });
});

t.test('front matter at scan: a refusal is a diagnostic with its code; a warning rides with its candidate', async (t) => {
  const dir = await tempDir(t, 'skill-front-');
  const fm = (body: string) => `---\n${body}\n---\nBody.\n`;
  await skill(path.join(dir, 'good'), { 'SKILL.md': fm('name: good\ndescription: Fine.') });
  await skill(path.join(dir, 'renamed'), { 'SKILL.md': fm('name: other-name\ndescription: Fine.\nversion: 2') });
  await skill(path.join(dir, 'no-front'), { 'SKILL.md': '# Title\n' });
  await skill(path.join(dir, 'bad-yaml'), { 'SKILL.md': fm('name: bad-yaml\ndescription: Use when: it breaks') });
  await skill(path.join(dir, 'no-name'), { 'SKILL.md': fm('description: Fine.') });
  await skill(path.join(dir, 'no-desc'), { 'SKILL.md': fm('name: no-desc') });
  const result = await scanSkills(dir);
  t.same(
    result.candidates.map((c) => [c.id, c.warnings?.map((w) => w.code)]),
    [
      ['good', undefined],
      ['renamed', ['skill_name_mismatch', 'skill_field_unknown']],
    ],
    'a warned skill is still a candidate, its warnings beside it',
  );
  t.match(result.candidates[1]!.warnings, [{ message: /"other-name" differs from its folder's name "renamed"/ }, { message: /"version"/ }]);
  t.same(
    result.diagnostics.map((d) => [path.basename(d.path), d.code]),
    [
      ['bad-yaml', 'skill_front_matter_invalid'],
      ['no-desc', 'skill_description_missing'],
      ['no-front', 'skill_front_matter_missing'],
      ['no-name', 'skill_name_missing'],
    ],
  );
  t.match(result.diagnostics[0]!.message, /not valid YAML \(line 3/);

  // Import refuses what the scan refuses, with the same code; a refresh scan of a broken source reports it.
  const { context, root } = await rootWithContext(t);
  await t.rejects(importJob({ id: 'no-desc', sourcePath: path.join(dir, 'no-desc'), expectedRevision: 'a'.repeat(64) }, context), {
    code: 'skill_description_missing',
  });
  const renamed = result.candidates[1]!;
  await importJob({ id: 'renamed', sourcePath: renamed.sourcePath, expectedRevision: renamed.sourceRevision }, context);
  t.ok(existsSync(path.join(root, 'skills', 'renamed', 'SKILL.md')), 'a warned skill imports');
  await writeFile(path.join(dir, 'renamed', 'SKILL.md'), fm('name: renamed'));
  t.match(await scanJob({ id: 'renamed' }, context), {
    candidates: [],
    diagnostics: [{ code: 'skill_description_missing' }],
  });
});

t.test('files as they were: permission bits kept (never setuid, setgid, sticky or world-writable), the revision covers them', async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  const src = await skill(path.join(dir, 'src', 'tools'), {
    'SKILL.md': SKILL('tools'),
    'scripts/start-server.sh': '#!/bin/sh\necho started\n',
    'scripts/group.sh': '#!/bin/sh\necho group\n',
    'scripts/setuid.sh': '#!/bin/sh\necho setuid\n',
    'open.txt': 'anyone may write me\n',
    'sticky.txt': 'sticky\n',
    'private.txt': 'mine\n',
  });
  const modes: Record<string, [number, number]> = {
    'SKILL.md': [0o644, 0o644],
    'scripts/start-server.sh': [0o755, 0o755],
    'scripts/group.sh': [0o775, 0o775],
    'scripts/setuid.sh': [0o6755, 0o755],
    'open.txt': [0o666, 0o664],
    'sticky.txt': [0o1777, 0o775],
    'private.txt': [0o600, 0o600],
  };
  for (const [rel, [mode]] of Object.entries(modes)) await chmod(path.join(src, rel), mode);
  const before = (await readSkill(src)).candidate.sourceRevision;
  await importJob({ id: 'tools', sourcePath: src, expectedRevision: before }, context);
  for (const [rel, [, kept]] of Object.entries(modes))
    t.equal(((await stat(path.join(root, 'skills', 'tools', rel))).mode & 0o7777).toString(8), kept.toString(8), rel);
  const run = spawnSync(path.join(root, 'skills', 'tools', 'scripts', 'start-server.sh'), { encoding: 'utf8' });
  t.equal(run.stdout, 'started\n', 'the installed script runs');

  // A run bit lost at the source, then given back: each changes the revision, and a refresh installs it.
  await chmod(path.join(src, 'scripts', 'start-server.sh'), 0o644);
  const lost = (await scanJob({ id: 'tools' }, context)).candidates[0]!.sourceRevision;
  t.not(lost, before, 'chmod -x changes the revision');
  await importJob({ id: 'tools', expectedRevision: lost, refresh: true }, context);
  t.equal((await stat(path.join(root, 'skills', 'tools', 'scripts', 'start-server.sh'))).mode & 0o777, 0o644);
  await chmod(path.join(src, 'scripts', 'start-server.sh'), 0o755);
  const back = (await scanJob({ id: 'tools' }, context)).candidates[0]!.sourceRevision;
  t.equal(back, before, 'the same files and modes give the same revision');
  await importJob({ id: 'tools', expectedRevision: back, refresh: true }, context);
  t.equal((await stat(path.join(root, 'skills', 'tools', 'scripts', 'start-server.sh'))).mode & 0o777, 0o755, 'the refresh repaired it');
});

const FIXTURES = path.resolve('test', 'fixtures', 'skill-binaries');

t.test('a file holding a NUL byte: its text runs are scanned; real images and fonts import', async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  const assets = ['EricaOne-Regular.ttf', 'OpenSans-Regular.woff2', 'trpl21-01.png', 'photo.jpg'];
  const src = await skill(path.join(dir, 'src', 'design'), { 'SKILL.md': SKILL('design') });
  await mkdir(path.join(src, 'assets'));
  for (const name of assets) await copyFile(path.join(FIXTURES, name), path.join(src, 'assets', name));
  const clean = (await readSkill(src)).candidate.sourceRevision;
  await importJob({ id: 'design', sourcePath: src, expectedRevision: clean }, context);
  for (const name of assets)
    t.same(
      await readFile(path.join(root, 'skills', 'design', 'assets', name)),
      await readFile(path.join(FIXTURES, name)),
      `${name} imported as it was`,
    );

  const png = await readFile(path.join(FIXTURES, 'trpl21-01.png'));
  const hidden = await skill(path.join(dir, 'src', 'hidden'), { 'SKILL.md': SKILL('hidden') });
  await writeFile(path.join(hidden, 'logo.png'), Buffer.concat([png, Buffer.from(`\u0000token=${SECRET}\u0000`), png.subarray(0, 64)]));
  await writeFile(path.join(hidden, 'wide.bin'), Buffer.from(`\u0000\u0000${SECRET}`, 'utf16le'));
  const refused = await importJob(
    { id: 'hidden', sourcePath: hidden, expectedRevision: (await readSkill(hidden)).candidate.sourceRevision },
    context,
  ).catch((e: unknown) => e);
  t.equal(code(refused), 'secret_detected', 'a key appended to a PNG is found');
  t.match(message(refused), /logo\.png/);
  t.match(message(refused), /wide\.bin/, 'and one written as UTF-16');
  t.notMatch(message(refused), /ghp_/);
  t.notOk(existsSync(path.join(root, 'skills', 'hidden')));
});

const ARCHIVES = path.resolve('test', 'fixtures', 'skill-archives');

t.test('skill archives in a collection: candidates, or diagnostics naming why; never skipped silently', async (t) => {
  const dir = await tempDir(t, 'skill-archives-');
  for (const name of await readdir(ARCHIVES)) if (name !== 'README.md') await copyFile(path.join(ARCHIVES, name), path.join(dir, name));
  await skill(path.join(dir, 'folder-skill'), { 'SKILL.md': SKILL('folder-skill') });
  const result = await scanSkills(dir);
  t.same(
    result.candidates.map((c) => [c.id, path.basename(c.sourcePath), c.warnings?.map((w) => w.code)]),
    [
      ['flat', 'flat.zip', ['skill_name_mismatch']],
      ['folder-skill', 'folder-skill', undefined],
      ['pdf-tools', 'pdf-tools.skill', undefined],
    ],
    "an archive's ID is its file name without .zip or .skill; its name is checked against its top folder, else that",
  );
  t.same(
    result.diagnostics.map((d) => [path.basename(d.path), d.code]),
    [
      ['absolute.zip', 'skill_archive_invalid'],
      ['bomb.zip', 'skill_archive_too_large'],
      ['broken.zip', 'skill_archive_invalid'],
      ['linked.zip', 'skill_archive_invalid'],
      ['zip-slip.zip', 'skill_archive_invalid'],
    ],
  );
  const why = Object.fromEntries(result.diagnostics.map((d) => [path.basename(d.path), d.message]));
  t.match(why['absolute.zip'], /absolute/);
  t.match(why['bomb.zip'], /times/);
  t.match(why['linked.zip'], /linked\/passwd is a symbolic link/);
  t.match(why['zip-slip.zip'], /\.\./);
  t.match(why['broken.zip'], /not a zip archive/);

  // The archive's revision is that of the files it holds, as a folder of them would have.
  const folder = await skill(path.join(dir, 'as-folder', 'pdf-tools'), {
    'SKILL.md': '---\nname: pdf-tools\ndescription: Splits and merges PDF files.\n---\n\n# PDF tools\n\nRun `scripts/run.sh`.\n',
    'scripts/run.sh': '#!/bin/sh\necho pdf-tools ran\n',
  });
  await chmod(path.join(folder, 'SKILL.md'), 0o644);
  await chmod(path.join(folder, 'scripts', 'run.sh'), 0o755);
  const archived = result.candidates.find((c) => c.id === 'pdf-tools')!;
  t.equal(archived.sourceRevision, (await readSkill(folder)).candidate.sourceRevision);
  t.equal(result.candidates.find((c) => c.id === 'flat')!.sourceRevision, archived.sourceRevision, 'with or without a top folder');
  t.same(
    (await scanSkills(path.join(dir, 'pdf-tools.skill'))).candidates.map((c) => c.id),
    ['pdf-tools'],
    'an archive scans as itself',
  );

  // Import extracts into the skill's folder, modes kept; refresh reads the archive again.
  const { context, root } = await rootWithContext(t);
  await importJob({ id: 'pdf-tools', sourcePath: archived.sourcePath, expectedRevision: archived.sourceRevision }, context);
  const run = spawnSync(path.join(root, 'skills', 'pdf-tools', 'scripts', 'run.sh'), { encoding: 'utf8' });
  t.equal(run.stdout, 'pdf-tools ran\n', 'the extracted script runs');
  t.match(JSON.parse(await readFile(path.join(root, 'receipts', 'pdf-tools.json'), 'utf8')), {
    source: archived.sourcePath,
    sourceRevision: archived.sourceRevision,
    entrypoint: 'skills/pdf-tools/SKILL.md',
  });
  await copyFile(path.join(ARCHIVES, 'linked.zip'), archived.sourcePath);
  t.match(await scanJob({ id: 'pdf-tools' }, context), { candidates: [], diagnostics: [{ code: 'skill_archive_invalid' }] });

  for (const name of ['zip-slip.zip', 'absolute.zip', 'bomb.zip']) {
    await t.rejects(
      importJob({ id: 'hostile', sourcePath: path.join(dir, name), expectedRevision: 'a'.repeat(64) }, context),
      { code: /^skill_archive_/ },
      name,
    );
  }
  t.same((await readdir(path.join(root, 'skills'))).sort(), ['pdf-tools'], 'nothing of a refused archive written');
  t.notOk(
    existsSync(path.join(dir, '..', 'escaped.txt')) || existsSync(path.join(root, '..', 'escaped.txt')) || existsSync('/tmp/absolute.txt'),
  );
});

t.test("an archive's bounds: entries, files, bytes, depth and ratio", async (t) => {
  const bytes = await readFile(path.join(ARCHIVES, 'pdf-tools.skill'));
  const limits = { ...SKILL_LIMITS };
  await t.resolves(readSkillArchive(bytes, limits));
  await t.rejects(readSkillArchive(bytes, { ...limits, archiveEntries: 3 }), {
    code: 'skill_archive_too_large',
    message: /more than 3 entries/,
  });
  await t.rejects(readSkillArchive(bytes, { ...limits, files: 1 }), { code: 'skill_archive_too_large', message: /more than 1 files/ });
  await t.rejects(readSkillArchive(bytes, { ...limits, bytes: 100 }), { code: 'skill_archive_too_large', message: /more than 100 bytes/ });
  await t.rejects(readSkillArchive(bytes, { ...limits, depth: 0 }), { code: 'skill_archive_too_large', message: /deeper than 0/ });
  const bomb = await readFile(path.join(ARCHIVES, 'bomb.zip'));
  await t.rejects(readSkillArchive(bomb, limits), { code: 'skill_archive_too_large', message: /more than 100 times/ });
});

t.test('remove: the folder goes even without its receipt; an orphan folder is cleared; a folder a receipt names is left', async (t) => {
  const { dir, root, context, published } = await rootWithContext(t);
  const src = await skill(path.join(dir, 'src', 'pdf'), { 'SKILL.md': SKILL('PDF'), 'bin/run': 'run\n' });
  const { candidate } = await readSkill(src);
  await importJob({ id: 'pdf-tools', sourcePath: src, expectedRevision: candidate.sourceRevision }, context);

  await rm(path.join(root, 'receipts', 'pdf-tools.json'));
  t.same(await removeJob({ id: 'pdf-tools' }, context), { removed: true }, 'an imported skill whose receipt was deleted');
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-tools')), 'its folder is gone');

  await skill(path.join(root, 'skills', 'left-over'), { 'SKILL.md': SKILL('Left over'), 'deep/a.txt': 'a\n' });
  t.same(await removeJob({ id: 'left-over' }, context), { removed: true }, 'an orphan folder');
  t.notOk(existsSync(path.join(root, 'skills', 'left-over')));

  // A folder a hand-written receipt names (under another ID) is not an orphan.
  await skill(path.join(root, 'skills', 'shared'), { 'SKILL.md': SKILL('Shared') });
  await writeFile(
    path.join(root, 'receipts', 'other.json'),
    JSON.stringify({ schemaVersion: 1, id: 'other', kind: 'skill', entrypoint: 'skills/shared/SKILL.md' }),
  );
  await t.rejects(removeJob({ id: 'shared' }, context), { code: 'resource_conflict' }, 'named by receipts/other.json');
  t.ok(existsSync(path.join(root, 'skills', 'shared', 'SKILL.md')), 'left as it is');

  // A link in skills/ is removed as a link: what it points to stays.
  const outside = await skill(path.join(dir, 'outside'), { 'keep.txt': 'keep\n' });
  await symlink(outside, path.join(root, 'skills', 'linked'));
  t.same(await removeJob({ id: 'linked' }, context), { removed: true });
  t.notOk(existsSync(path.join(root, 'skills', 'linked')), 'the link is gone');
  t.ok(existsSync(path.join(outside, 'keep.txt')), 'its target is untouched');
  t.same(await removeJob({ id: 'nothing-here' }, context), { removed: false });
  t.ok(published() >= 1);
});

t.test("a scan shows the machine's own root: receipts it cannot publish, and folders no receipt names", async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  const sources = await skill(path.join(dir, 'sources', 'fresh'), { 'SKILL.md': SKILL('Fresh') });
  await skill(path.join(root, 'skills', 'orphan-skill'), { 'SKILL.md': SKILL('Orphan') });
  await skill(path.join(root, 'skills', 'Not An ID'), { 'SKILL.md': SKILL('Odd') });
  await writeFile(
    path.join(root, 'receipts', 'deleted-skill.json'),
    JSON.stringify({
      schemaVersion: 2,
      id: 'deleted-skill',
      kind: 'skill',
      name: 'Deleted',
      provider: 'agentlet-x',
      sourceContent: SKILL('Deleted').trim(),
      entrypoint: 'skills/deleted-skill/SKILL.md',
      source: '/elsewhere/deleted',
      sourceRevision: 'a'.repeat(64),
      installedAt: '2026-01-31T12:00:00.000Z',
    }),
  );
  const scanned = await scanJob({ rootPath: path.dirname(sources) }, context);
  t.same(
    scanned.candidates.map((c) => c.id),
    ['fresh'],
  );
  t.match(scanned.diagnostics, [
    {
      path: path.join(root, 'receipts', 'deleted-skill.json'),
      code: 'entrypoint_missing',
      message: /^not published: \/entrypoint skills\/deleted-skill\/SKILL\.md does not exist/,
    },
    { path: path.join(root, 'skills', 'Not An ID'), code: 'skill_orphaned', message: /remove it by hand/ },
    {
      path: path.join(root, 'skills', 'orphan-skill'),
      code: 'skill_orphaned',
      message: /DELETE \/api\/acp\/resources\/orphan-skill \(with \?agentletId=agentlet-x\)/,
    },
  ]);
  t.equal(scanned.diagnostics.length, 3);
});

t.test('import again under the same ID: a replace only when asked (the registry asks for a skill the owner imported)', async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  const first = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('One'), 'old.txt': 'old\n' });
  const second = await skill(path.join(dir, 'src', 'two'), { 'SKILL.md': SKILL('Two') });
  const rev = async (p: string) => (await readSkill(p)).candidate.sourceRevision;
  await importJob({ id: 'tool', sourcePath: first, expectedRevision: await rev(first) }, context);

  const refused = await importJob({ id: 'tool', sourcePath: second, expectedRevision: await rev(second) }, context).catch(
    (e: unknown) => e,
  );
  t.equal(code(refused), 'resource_conflict');
  t.match(message(refused), /already imported on this machine/);
  await t.rejects(
    importJob({ id: 'tool', sourcePath: second, expectedRevision: 'f'.repeat(64), replace: true }, context),
    { code: 'source_changed' },
    'the replace is guarded by the revision the owner scanned',
  );
  t.ok(existsSync(path.join(root, 'skills', 'tool', 'old.txt')), 'nothing changed by a refused replace');
  t.same(await importJob({ id: 'tool', sourcePath: second, expectedRevision: await rev(second), replace: true }, context), {
    id: 'tool',
    sourceRevision: await rev(second),
    created: false,
  });
  t.notOk(existsSync(path.join(root, 'skills', 'tool', 'old.txt')), 'the folder is the new source whole');
  t.match(JSON.parse(await readFile(path.join(root, 'receipts', 'tool.json'), 'utf8')), { name: 'Two', source: second });

  // An orphan folder under the ID: refused with the way out, replaced when asked.
  await skill(path.join(root, 'skills', 'stray'), { 'SKILL.md': SKILL('Stray') });
  const stray = await importJob({ id: 'stray', sourcePath: first, expectedRevision: await rev(first) }, context).catch((e: unknown) => e);
  t.equal(code(stray), 'resource_conflict');
  t.match(message(stray), /DELETE \/api\/acp\/resources\/stray/);
  t.match(await importJob({ id: 'stray', sourcePath: first, expectedRevision: await rev(first), replace: true }, context), {
    created: true,
  });

  // A hand-written receipt under the ID is never replaced.
  await writeFile(path.join(root, 'receipts', 'hand.json'), JSON.stringify({ schemaVersion: 1, id: 'hand', kind: 'skill' }));
  await t.rejects(importJob({ id: 'hand', sourcePath: first, expectedRevision: await rev(first), replace: true }, context), {
    code: 'resource_conflict',
  });
});

t.test('an import or refresh the registry refuses to publish leaves the machine as it was', async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  let refuse = false;
  context.publish = () =>
    refuse
      ? Promise.reject(new JobError('record_quota_exceeded', 'this machine holds as many record bytes as it may'))
      : Promise.resolve({ dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] });
  const snapshot = async () => {
    const files: Record<string, string> = {};
    const walk = async (rel: string): Promise<void> => {
      for (const entry of await readdir(path.join(root, rel), { withFileTypes: true })) {
        const child = path.join(rel, entry.name);
        if (entry.isDirectory()) await walk(child);
        else files[child] = await readFile(path.join(root, child), 'utf8');
      }
    };
    await walk('.');
    // The allowlist file is compared as data: an empty one holds what none does.
    const allowed = files['.allowed-findings.json'];
    if (allowed !== undefined && JSON.stringify(JSON.parse(allowed)) === '{}') delete files['.allowed-findings.json'];
    return files;
  };
  const allowlist = [{ fingerprint: 'f'.repeat(64) }];

  const src = await skill(path.join(dir, 'src', 'notes'), { 'SKILL.md': SKILL('Notes'), 'bin/run': 'run\n' });
  const before = await snapshot();
  refuse = true;
  const revision = (await readSkill(src)).candidate.sourceRevision;
  await t.rejects(
    importJob({ id: 'notes', sourcePath: src, expectedRevision: revision, secretAllowlist: allowlist }, context),
    { code: 'record_quota_exceeded' },
    "the registry's refusal is the job's answer",
  );
  t.same(await snapshot(), before, 'a refused import leaves no folder, receipt or allowlist entry behind');

  refuse = false;
  await importJob({ id: 'notes', sourcePath: src, expectedRevision: revision }, context);
  const imported = await snapshot();
  t.ok(imported[path.join('skills', 'notes', 'bin', 'run')], 'imported once the registry takes it');
  await skill(src, { 'SKILL.md': SKILL('Notes', 'A much longer body.'), 'bin/run': 'run again\n' });
  refuse = true;
  const newer = (await readSkill(src)).candidate.sourceRevision;
  await t.rejects(importJob({ id: 'notes', expectedRevision: newer, refresh: true, secretAllowlist: allowlist }, context), {
    code: 'record_quota_exceeded',
  });
  t.same(await snapshot(), imported, 'a refused refresh puts back the copy, receipt and allowlist it replaced');
});

t.test('a SKILL.md whose front matter is past its bounds is refused for that reason, not parsed', async (t) => {
  const dir = await tempDir(t);
  // 250 KB: a name, a description, then a flow mapping of 20,000 more keys.
  const keys = Array.from({ length: 20_000 }, (_, i) => `key${i}: value${i}`).join(', ');
  const src = await skill(path.join(dir, 'flood'), { 'SKILL.md': `---\n{name: flood, description: Floods., ${keys}}\n---\nBody.\n` });
  t.ok((await stat(path.join(src, 'SKILL.md'))).size > 250_000);
  await t.rejects(readSkill(src), {
    code: 'skill_front_matter_invalid',
    message: /SKILL\.md: the front matter is longer than 16000 characters/,
  });
  const many = Array.from({ length: 300 }, (_, i) => `k${i}: v`).join('\n');
  const manyKeys = await skill(path.join(dir, 'many'), { 'SKILL.md': `---\nname: many\ndescription: Many.\n${many}\n---\nBody.\n` });
  await t.rejects(readSkill(manyKeys), { code: 'skill_front_matter_invalid', message: /more than 256 keys/ });
});

t.test('SKILL.md with CRLF line endings: imported, its record text in LF, its copy byte for byte', async (t) => {
  const { dir, root, context } = await rootWithContext(t);
  const lf = SKILL('crlf-guide', Array.from({ length: 300 }, (_, i) => `Step ${i}: do the thing in a line of text.`).join('\n'));
  const crlf = lf.replaceAll('\n', '\r\n');
  t.ok(crlf.length > 12_000, `a real-sized file (${crlf.length} characters)`);
  const src = await skill(path.join(dir, 'src', 'crlf-guide'), { 'SKILL.md': crlf });
  const { candidate } = await readSkill(src, context.scanner);
  t.equal(candidate.sourceContent, lf.trim(), "the record's text is the file with its line endings as LF");
  t.equal(
    candidate.sourceRevision,
    skillRevision([{ rel: 'SKILL.md', bytes: Buffer.from(crlf), mode: (await stat(path.join(src, 'SKILL.md'))).mode }]),
    'the revision is over the bytes as they are',
  );
  t.same(
    (await scanJob({ rootPath: path.join(dir, 'src') }, context)).candidates.map((c) => c.id),
    ['crlf-guide'],
    'listed by a scan',
  );
  await importJob({ id: 'crlf-guide', sourcePath: src, expectedRevision: candidate.sourceRevision }, context);
  t.equal(await readFile(path.join(root, 'skills', 'crlf-guide', 'SKILL.md'), 'utf8'), crlf, 'the copy is the file as it was');
  const receipt = JSON.parse(await readFile(path.join(root, 'receipts', 'crlf-guide.json'), 'utf8'));
  t.equal(receipt.sourceContent, lf.trim());
});

t.test('a refused SKILL.md is told its real cause: too long, or which control character on which line', async (t) => {
  const dir = await tempDir(t, 'skill-causes-');
  const long = await skill(path.join(dir, 'long'), { 'SKILL.md': SKILL('long', 'x'.repeat(120_000)) });
  const tooLong = await readSkill(long).catch((e: unknown) => e);
  t.equal(code(tooLong), 'skill_invalid');
  t.match(message(tooLong), /SKILL\.md is 120,\d{3} characters long as the record's text; at most 100,000/);
  t.notMatch(message(tooLong), /control/);

  const bell = await skill(path.join(dir, 'bell'), { 'SKILL.md': SKILL('bell', 'one\ntwo\nring \u0007 here') });
  const control = await readSkill(bell).catch((e: unknown) => e);
  t.equal(code(control), 'skill_invalid');
  t.match(message(control), 'SKILL.md holds a control character (U+0007) on line 8');
  t.notMatch(message(control), /longer/);

  const lone = await skill(path.join(dir, 'lone-cr'), { 'SKILL.md': SKILL('lone-cr', 'a\rb') });
  t.match(message(await readSkill(lone).catch((e: unknown) => e)), 'control character (U+000D) on line 6');

  const escaped = await skill(path.join(dir, 'escaped'), { 'SKILL.md': '---\nname: "esc\\u001bname"\ndescription: d\n---\n' });
  t.match(message(await readSkill(escaped).catch((e: unknown) => e)), "SKILL.md's name holds a control character (U+001B)");
});

t.test('a full scan names the valid skills it leaves out as not listed, never as invalid', async (t) => {
  const dir = await tempDir(t, 'skill-full-');
  const many = path.join(dir, 'many');
  for (let i = 0; i <= SKILL_LIMITS.candidates; i++) {
    const name = `skill-${String(i).padStart(3, '0')}`;
    await skill(path.join(many, name), { 'SKILL.md': SKILL(name) });
  }
  const counted = await scanSkills(many);
  t.equal(counted.candidates.length, SKILL_LIMITS.candidates);
  t.same(
    counted.diagnostics.map((d) => [path.basename(d.path), d.code]),
    [[`skill-${SKILL_LIMITS.candidates}`, 'skill_not_listed']],
  );
  t.match(counted.diagnostics[0]!.message, /at most 256 skills; scan this folder on its own/);

  const large = path.join(dir, 'large');
  for (let i = 0; i < 10; i++) await skill(path.join(large, `big-${i}`), { 'SKILL.md': SKILL(`big-${i}`, 'x'.repeat(90_000)) });
  const full = await scanSkills(large);
  t.ok(full.candidates.length > 0 && full.candidates.length < 10, `${full.candidates.length} listed before the answer is full`);
  t.same(new Set(full.diagnostics.map((d) => d.code)), new Set(['skill_not_listed']), 'the others are not listed, not invalid');
  t.equal(full.candidates.length + full.diagnostics.length, 10, 'each is listed or named');
});
