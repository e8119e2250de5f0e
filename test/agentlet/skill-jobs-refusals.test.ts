// The skill jobs' refusals and bounds, each as the owner meets it on a real file system: a malformed job
// payload, a source path or scan root that is no skill, a folder past a bound (exactly at it is fine), a
// receipt under the ID that is no imported skill's, a `skills/` that is not a real folder, and a secret in a
// SKILL.md, whose refusal says where (never what) and carries what the owner needs to allow it.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { idFromFolderName, importJob, readSkill, removeJob, scanJob, scanSkills, SKILL_LIMITS } from '../../src/agentlet/skill-jobs.js';
import type { JobContext } from '../../src/agentlet/jobs.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { FAKE_GITHUB_TOKEN, tempDir } from '../helpers/agentlet.js';

const SKILL = (name: string, body = 'Body.') => `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n${body}\n`;
// One finding (rule credential-assignment) in a file.
const PASSWORD = 'password = "Xk9#mQ2$vL7pR4tZ8wN3"';
const code = (err: unknown) => (err as { code?: string }).code;
const message = (err: unknown) => (err as Error).message;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

async function skill(dir: string, files: Record<string, string>): Promise<string> {
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

/** A zip archive of `files` stored uncompressed (regular files, mode 644), as any zip tool writes one. */
function storedZip(files: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [rel, content] of Object.entries(files)) {
    const name = Buffer.from(rel);
    const data = Buffer.from(content);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(0x031e, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(0x21, 14);
    entry.writeUInt32LE(crc, 16);
    entry.writeUInt32LE(data.length, 20);
    entry.writeUInt32LE(data.length, 24);
    entry.writeUInt16LE(name.length, 28);
    entry.writeUInt32LE((0o100644 << 16) >>> 0, 38);
    entry.writeUInt32LE(offset, 42);
    parts.push(local, name, data);
    central.push(entry, name);
    offset += local.length + name.length + data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

async function world(t: Parameters<typeof tempDir>[0], { skillsDir = true } = {}) {
  const dir = await tempDir(t, 'skill-refusals-');
  const root = path.join(dir, 'root');
  await mkdir(path.join(root, 'receipts'), { recursive: true, mode: 0o700 });
  if (skillsDir) await mkdir(path.join(root, 'skills'), { recursive: true, mode: 0o700 });
  let published = 0;
  const context: JobContext = {
    machineId: 'agentlet-x',
    root,
    publish: () => {
      published++;
      return Promise.resolve({ dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] });
    },
    scanner: new SecretScanner([]),
  };
  const revision = async (p: string) => (await readSkill(p)).candidate.sourceRevision;
  return { dir, root, context, revision, published: () => published };
}

t.test('a job payload that is not an object, or an import without a valid ID, revision or source path, is invalid_payload', async (t) => {
  const { dir, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  for (const payload of [null, 'one', 42, ['one']]) {
    for (const job of [scanJob, importJob, removeJob]) {
      const err = await failure(job(payload, context));
      t.equal(code(err), 'invalid_payload', `${job.name} of ${JSON.stringify(payload)}`);
      t.equal(message(err), 'the job payload must be an object');
    }
  }
  const rev = await revision(src);
  for (const [expectedRevision, why] of [
    [rev.toUpperCase(), 'upper-case hex'],
    [rev.slice(1), '63 digits'],
    [`${rev}0`, '65 digits'],
    [`x${rev}`, 'a prefix'],
    [undefined, 'none'],
  ] as const) {
    const err = await failure(importJob({ id: 'one', sourcePath: src, expectedRevision }, context));
    t.equal(code(err), 'invalid_payload', why);
    t.equal(message(err), 'expectedRevision must be 64 lower-case hex digits', why);
  }
  for (const id of [undefined, 7, 'Not-An-ID']) {
    t.match(await failure(importJob({ id, sourcePath: src, expectedRevision: rev }, context)), {
      code: 'invalid_payload',
      message: 'id must be a resource ID',
    });
    t.match(await failure(removeJob({ id }, context)), { code: 'invalid_payload', message: 'id must be a resource ID' });
  }
  t.match(await failure(importJob({ id: 'one', expectedRevision: rev }, context)), {
    code: 'invalid_payload',
    message: 'sourcePath must be a string',
  });
  t.match(await failure(scanJob({}, context)), { code: 'invalid_path' }, 'a scan without rootPath');
  t.match(await failure(scanJob({ rootPath: `${dir}/src/../src` }, context)), {
    code: 'invalid_path',
    message: 'rootPath must be an absolute path without ".." segments',
  });
  t.same(await readdir(path.join(context.root, 'skills')), [], 'nothing written by a refused job');
});

t.test("a job's secretAllowlist must be a list of {fingerprint, file?, route?}", async (t) => {
  const { dir, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  const fp = 'a'.repeat(64);
  for (const secretAllowlist of [
    'all',
    { fingerprint: fp },
    [null],
    ['x'],
    [{}],
    [{ fingerprint: 1 }],
    [{ fingerprint: fp, file: 2 }],
    [{ fingerprint: fp, route: false }],
    [{ fingerprint: fp }, { file: 'SKILL.md' }],
  ]) {
    const why = JSON.stringify(secretAllowlist);
    for (const run of [
      () => importJob({ id: 'one', sourcePath: src, expectedRevision: rev, secretAllowlist }, context),
      () => scanJob({ rootPath: path.join(dir, 'src'), secretAllowlist }, context),
    ]) {
      const err = await failure(run());
      t.equal(code(err), 'invalid_payload', why);
      t.equal(message(err), 'secretAllowlist must be a list of {fingerprint, file?, route?}', why);
    }
  }
  t.match(
    await importJob(
      {
        id: 'one',
        sourcePath: src,
        expectedRevision: rev,
        secretAllowlist: [{ fingerprint: fp }, { fingerprint: fp, file: 'SKILL.md' }, { fingerprint: fp, route: 'resource.import' }],
      },
      context,
    ),
    { id: 'one', created: true },
    'valid entries, each with or without file and route',
  );
  t.same(
    JSON.parse(await readFile(path.join(context.root, '.allowed-findings.json'), 'utf8')),
    { one: [{ fingerprint: fp }, { fingerprint: fp, file: 'SKILL.md' }, { fingerprint: fp, route: 'resource.import' }] },
    'kept as given, no key added for what an entry leaves out',
  );
});

t.test('a resource ID from a folder name: lower case, runs of anything else one hyphen, none at either end', (t) => {
  t.equal(idFromFolderName('My Skill'), 'my-skill');
  t.equal(idFromFolderName('PDF  --  Tools'), 'pdf-tools');
  t.equal(idFromFolderName('__private skill__'), 'private-skill');
  t.equal(idFromFolderName('-a-'), 'a');
  t.equal(idFromFolderName('v2.1_final'), 'v2-1-final');
  t.end();
});

t.test('a source path or scan root that is no skill folder says what it is instead', async (t) => {
  const { dir } = await world(t);
  const notes = path.join(dir, 'notes.txt');
  await writeFile(notes, 'just notes\n');
  t.match(await failure(readSkill(notes)), { code: 'skill_invalid', message: 'not a folder' });
  t.match(await failure(scanSkills(notes)), {
    code: 'skill_unreadable',
    message: `${notes} does not exist or is not a folder or skill archive`,
  });
  t.match(await failure(readSkill(path.join(dir, 'missing'))), { code: 'skill_unreadable', message: 'cannot read the folder (ENOENT)' });

  const asFolder = await skill(path.join(dir, 'md-folder'), { 'SKILL.md/inner.md': 'x' });
  t.match(await failure(readSkill(asFolder)), { code: 'skill_invalid', message: 'SKILL.md must be a regular file' });
  const linkedMd = await skill(path.join(dir, 'md-link'), { 'real.md': SKILL('md-link') });
  await symlink(path.join(linkedMd, 'real.md'), path.join(linkedMd, 'SKILL.md'));
  t.match(await failure(readSkill(linkedMd)), { code: 'skill_invalid', message: 'SKILL.md must be a regular file' });

  const fifo = await skill(path.join(dir, 'fifo'), { 'SKILL.md': SKILL('fifo') });
  t.equal(spawnSync('mkfifo', [path.join(fifo, 'pipe')]).status, 0);
  t.match(await failure(readSkill(fifo)), { code: 'skill_invalid', message: 'pipe is neither a file nor a folder' });

  const up = await skill(path.join(dir, 'up', 'inner'), { 'SKILL.md': SKILL('inner') });
  await symlink('..', path.join(up, 'parent'));
  t.match(
    await failure(readSkill(up)),
    { message: 'parent is a symbolic link that leads outside the skill folder' },
    'a link to the folder above',
  );

  // A path of 2,048 characters is read (here: found missing); one more is refused before any read.
  const at = path.join(dir, 'p'.repeat(SKILL_LIMITS.sourcePath - dir.length - 1));
  t.equal(at.length, SKILL_LIMITS.sourcePath);
  t.match(await failure(readSkill(at)), { code: 'skill_unreadable' });
  const past = `${at}q`;
  for (const bad of [past, `${dir}/two\nlines`])
    t.match(await failure(readSkill(bad)), {
      code: 'skill_invalid',
      message: 'the source path must be one line of at most 2048 characters',
    });
});

t.test("a folder's bounds: depth and bytes refused past them, and taken at them", async (t) => {
  const { dir } = await world(t);
  const nest = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`).join('/');
  const deepest = await skill(path.join(dir, 'deepest'), { 'SKILL.md': SKILL('deepest'), [`${nest(SKILL_LIMITS.depth)}/f.txt`]: 'f' });
  t.ok(
    (await readSkill(deepest)).files.some((f) => f.rel === `${nest(SKILL_LIMITS.depth)}/f.txt`),
    '16 folders deep is read',
  );
  const deeper = await skill(path.join(dir, 'deeper'), { 'SKILL.md': SKILL('deeper'), [`${nest(SKILL_LIMITS.depth + 1)}/f.txt`]: 'f' });
  t.match(await failure(readSkill(deeper)), {
    code: 'skill_invalid',
    message: `${nest(SKILL_LIMITS.depth + 1)} is nested deeper than 16 folders`,
  });

  const text = SKILL('heavy');
  const heavy = await skill(path.join(dir, 'heavy'), { 'SKILL.md': text });
  const fill = path.join(heavy, 'data.bin');
  await writeFile(fill, '');
  await truncate(fill, SKILL_LIMITS.bytes - Buffer.byteLength(text));
  t.equal((await readSkill(heavy)).files.length, 2, 'exactly 16 MiB in all is read');
  await truncate(fill, SKILL_LIMITS.bytes - Buffer.byteLength(text) + 1);
  t.match(await failure(readSkill(heavy)), { code: 'skill_invalid', message: `more than ${SKILL_LIMITS.bytes} bytes in all` });

  // SKILL.md of exactly 512 KiB is read (and refused for its record text); one byte more is refused for its size.
  const big = await skill(path.join(dir, 'big'), { 'SKILL.md': text + 'x'.repeat(SKILL_LIMITS.skillFileBytes - Buffer.byteLength(text)) });
  t.match(await failure(readSkill(big)), { code: 'skill_invalid', message: /characters long as the record's text/ });
  await writeFile(path.join(big, 'SKILL.md'), 'y', { flag: 'a' });
  t.match(await failure(readSkill(big)), {
    code: 'skill_invalid',
    message: `SKILL.md is larger than ${SKILL_LIMITS.skillFileBytes} bytes`,
  });

  // The record text at its bound is taken; one character more is not.
  const header = `---\nname: bound\ndescription: What bound does.\n---\n\n`;
  const bound = await skill(path.join(dir, 'bound'), { 'SKILL.md': header + 'z'.repeat(100_000 - header.length) });
  t.equal((await readSkill(bound)).candidate.sourceContent.length, 100_000);
  await writeFile(path.join(bound, 'SKILL.md'), 'z', { flag: 'a' });
  t.match(await failure(readSkill(bound)), { message: "SKILL.md is 100,001 characters long as the record's text; at most 100,000" });

  // A name of 128 characters is a name.
  const long = await skill(path.join(dir, 'long'), { 'SKILL.md': SKILL('n'.repeat(128)) });
  t.equal((await readSkill(long)).candidate.name, 'n'.repeat(128));
});

t.test('a linked file inside the folder is copied as its target: its bytes and its mode', async (t) => {
  const { dir, root, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'linked'), {
    'SKILL.md': SKILL('linked'),
    'run.sh': '#!/bin/sh\necho ran\n',
    'notes.txt': 'n\n',
  });
  await chmod(path.join(src, 'run.sh'), 0o755);
  await chmod(path.join(src, 'notes.txt'), 0o640);
  await symlink('run.sh', path.join(src, 'start.sh'));
  await symlink('notes.txt', path.join(src, 'readme.txt'));
  const read = await readSkill(src);
  t.same(Object.fromEntries(read.files.map((f) => [f.rel, f.mode.toString(8)])), {
    'SKILL.md': '644',
    'notes.txt': '640',
    'readme.txt': '640',
    'run.sh': '755',
    'start.sh': '755',
  });
  await importJob({ id: 'linked', sourcePath: src, expectedRevision: await revision(src) }, context);
  const copy = path.join(root, 'skills', 'linked');
  t.equal(((await stat(path.join(copy, 'readme.txt'))).mode & 0o777).toString(8), '640');
  t.notOk((await lstat(path.join(copy, 'start.sh'))).isSymbolicLink(), 'the copy holds no link');
  t.equal(spawnSync(path.join(copy, 'start.sh'), { encoding: 'utf8' }).stdout, 'ran\n', 'a real file, not a link');
  t.equal(await readFile(path.join(copy, 'readme.txt'), 'utf8'), 'n\n');
});

t.test('a byte order mark is no part of the record text', async (t) => {
  const { dir } = await world(t);
  const src = await skill(path.join(dir, 'bom'), { 'SKILL.md': `\uFEFF${SKILL('bom')}` });
  t.equal((await readSkill(src)).candidate.sourceContent, SKILL('bom').trim());
});

t.test('a scan of one skill folder or archive that is refused answers its diagnostic', async (t) => {
  const { dir } = await world(t);
  const broken = await skill(path.join(dir, 'broken'), { 'SKILL.md': 'no front matter\n' });
  t.match(await scanSkills(broken), {
    rootPath: broken,
    candidates: [],
    diagnostics: [{ path: broken, code: 'skill_front_matter_missing' }],
  });
  const zip = path.join(dir, 'broken.zip');
  await writeFile(zip, 'not a zip');
  t.match(await scanSkills(zip), { rootPath: zip, candidates: [], diagnostics: [{ path: zip, code: 'skill_archive_invalid' }] });

  // In a collection: a linked archive is named, a file or a link that is no skill is passed over.
  const collection = path.join(dir, 'collection');
  await skill(path.join(collection, 'good'), { 'SKILL.md': SKILL('good'), 'README.md': 'r' });
  await writeFile(path.join(collection, 'README.md'), 'a collection\n');
  await symlink(zip, path.join(collection, 'linked.zip'));
  await symlink(path.join(dir, 'elsewhere'), path.join(collection, 'dangling'));
  await symlink(path.join(collection, 'README.md'), path.join(collection, 'readme-link'));
  const result = await scanSkills(collection);
  t.same(
    result.candidates.map((c) => c.id),
    ['good'],
  );
  t.same(
    result.diagnostics.map((d) => [path.basename(d.path), d.code, d.message]),
    [['linked.zip', 'skill_invalid', 'the skill archive is a symbolic link; name the real file']],
  );
});

t.test('a scan names at most 256 refused skills', async (t) => {
  const { dir } = await world(t);
  for (let i = 0; i <= SKILL_LIMITS.diagnostics; i++)
    await skill(path.join(dir, 'many', `bad-${String(i).padStart(3, '0')}`), { 'SKILL.md': 'x' });
  const result = await scanSkills(path.join(dir, 'many'));
  t.equal(result.diagnostics.length, SKILL_LIMITS.diagnostics);
  t.equal(path.basename(result.diagnostics.at(-1)!.path), 'bad-255');
});

t.test('an archive past the byte bound is refused before it is read; one without SKILL.md says so', async (t) => {
  const { dir, context } = await world(t);
  const big = path.join(dir, 'big.zip');
  await writeFile(big, '');
  await truncate(big, SKILL_LIMITS.bytes + 1);
  t.match(await failure(readSkill(big)), {
    code: 'skill_archive_too_large',
    message: `the archive is larger than ${SKILL_LIMITS.bytes} bytes`,
  });
  await writeFile(path.join(dir, 'plain.zip'), storedZip({ 'notes/README.md': 'no skill here\n' }));
  t.match(await failure(readSkill(path.join(dir, 'plain.zip'))), {
    code: 'skill_invalid',
    message: "no SKILL.md at the archive's top or in its single top folder",
  });
  await writeFile(path.join(dir, 'huge.skill'), storedZip({ 'SKILL.md': SKILL('huge', 'x'.repeat(SKILL_LIMITS.skillFileBytes)) }));
  t.match(await failure(readSkill(path.join(dir, 'huge.skill'))), {
    code: 'skill_invalid',
    message: `SKILL.md is larger than ${SKILL_LIMITS.skillFileBytes} bytes`,
  });
  await writeFile(path.join(dir, 'Named Tool.zip'), storedZip({ 'SKILL.md': SKILL('named') }));
  const archived = await readSkill(path.join(dir, 'Named Tool.zip'));
  t.equal(archived.candidate.id, 'named-tool', "an archive's ID is its file name's");
  t.match(
    await importJob(
      { id: 'chosen', sourcePath: path.join(dir, 'Named Tool.zip'), expectedRevision: archived.candidate.sourceRevision },
      context,
    ),
    { id: 'chosen', created: true },
    'imported under the ID the owner chose',
  );
});

t.test('a secret in SKILL.md: the scan names where (line or name, rule) and carries the ID, revision and findings', async (t) => {
  const { dir, context } = await world(t);
  const src = await skill(path.join(dir, 'src', 'leaky'), { 'SKILL.md': SKILL('leaky', `one\ntoken ${FAKE_GITHUB_TOKEN}`), 'a.txt': 'a' });
  const revision = (await readSkill(src)).candidate.sourceRevision;
  const scanned = await scanSkills(path.join(dir, 'src'), context.scanner);
  t.same(scanned.candidates, []);
  t.equal(scanned.diagnostics.length, 1);
  const [d] = scanned.diagnostics;
  t.match(d, { path: src, code: 'secret_detected', id: 'leaky', sourceRevision: revision });
  t.ok(d!.findings!.length > 0);
  for (const f of d!.findings!) t.match(f, { field: '/sourceContent', line: 7, rule: /\S/, fingerprint: /^[a-z-]+:[a-f0-9]{64}$/ });
  const where = d!.findings!.map((f) => `line 7, rule ${f.rule}`).join('; ');
  t.equal(
    d!.message,
    `SKILL.md looks like it contains a secret (${where}); remove it, or if it is none, allow the fingerprints in findings (POST /api/acp/secret-allowlist) and import it with this sourceRevision`,
  );
  for (const f of d!.findings!) t.notMatch(d!.message, f.fingerprint);

  const named = await skill(path.join(dir, 'named', 'leaky-name'), { 'SKILL.md': SKILL(`Token ${FAKE_GITHUB_TOKEN}`) });
  t.match(await failure(readSkill(named, context.scanner)), { code: 'secret_detected', message: /\(its name, rule / });

  const many = Array.from({ length: 23 }, (_, i) => `key ${i}: ghp_${String(i).padStart(2, '0')}${FAKE_GITHUB_TOKEN.slice(6)}`).join('\n');
  const crowded = await skill(path.join(dir, 'crowded', 'crowded'), { 'SKILL.md': SKILL('crowded', many) });
  const err = (await failure(readSkill(crowded, context.scanner))) as { message: string; refusal: { findings: unknown[] } };
  t.equal(err.refusal.findings.length, 20, 'at most 20 named');
  t.match(err.message, /, and [1-9]\d* more\); remove it/);
});

t.test('an import refused for secrets says each file, line and rule; one finding "looks", more "look"', async (t) => {
  const { dir, context, revision } = await world(t);
  const one = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one'), 'env/.env': `A=1\n${PASSWORD}\n` });
  const err = await failure(importJob({ id: 'one', sourcePath: one, expectedRevision: await revision(one) }, context));
  t.match(err, { code: 'secret_detected', findings: [{ field: '/files/env/.env', line: 2 }] });
  t.match(message(err), /^nothing was copied: env\/\.env line 2 \(rule [^)]+\) looks like it holds a secret$/);
  const two = await skill(path.join(dir, 'src', 'two'), {
    'SKILL.md': SKILL('two'),
    'a.txt': PASSWORD,
    'b.txt': `\n${PASSWORD}`,
  });
  const both = await failure(importJob({ id: 'two', sourcePath: two, expectedRevision: await revision(two) }, context));
  t.match(message(both), /^nothing was copied: a\.txt line 1 \(rule [^)]+\), b\.txt line 2 \(rule [^)]+\) look like it holds a secret$/);
  t.same(await readdir(path.join(context.root, 'skills')), []);
});

t.test('a receipt under the ID that is not an imported skill is left alone by import, scan and remove', async (t) => {
  const { dir, root, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  const imported = {
    schemaVersion: 2,
    id: 'x',
    kind: 'skill',
    name: 'X',
    provider: 'agentlet-x',
    sourceContent: 'x',
    entrypoint: 'skills/x/SKILL.md',
    source: src,
    sourceRevision: rev,
  };
  const cases: [string, string, RegExp][] = [
    ['{not json', 'not json', /is not an imported skill's receipt/],
    ['null', 'JSON null', /not a skill imported from a folder/],
    ['[1]', 'a JSON list', /not a skill imported from a folder/],
    [JSON.stringify({ ...imported, schemaVersion: 1 }), 'v1', /not a skill imported from a folder/],
    [JSON.stringify({ ...imported, kind: 'tool', entrypoint: 'tools/x/run' }), 'a tool', /not a skill imported from a folder/],
    [JSON.stringify({ ...imported, source: undefined }), 'no source', /not a skill imported from a folder/],
    [JSON.stringify({ ...imported, sourceRevision: 7 }), 'no revision', /not a skill imported from a folder/],
  ];
  for (const [text, why, pattern] of cases) {
    await writeFile(path.join(root, 'receipts', 'x.json'), text);
    for (const run of [
      () => importJob({ id: 'x', sourcePath: src, expectedRevision: rev, replace: true }, context),
      () => importJob({ id: 'x', expectedRevision: rev, refresh: true }, context),
      () => scanJob({ id: 'x' }, context),
      () => removeJob({ id: 'x' }, context),
    ]) {
      const err = await failure(run());
      t.equal(code(err), 'resource_conflict', why);
      t.match(message(err), pattern, why);
    }
    t.equal(await readFile(path.join(root, 'receipts', 'x.json'), 'utf8'), text, `${why}: kept as it was`);
  }
  t.same(await readdir(path.join(root, 'skills')), []);
});

t.test('import without a receipt: a refresh is skill_not_found; a folder another receipt names is never taken', async (t) => {
  const { dir, root, context, revision, published } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  t.match(await failure(importJob({ id: 'one', expectedRevision: rev, refresh: true }, context)), {
    code: 'skill_not_found',
    message: 'no imported skill one on this machine',
  });
  await skill(path.join(root, 'skills', 'shared'), { 'SKILL.md': SKILL('shared') });
  await writeFile(
    path.join(root, 'receipts', 'other.json'),
    JSON.stringify({ schemaVersion: 1, id: 'other', kind: 'skill', entrypoint: 'skills/shared/SKILL.md' }),
  );
  for (const replace of [false, true]) {
    t.match(await failure(importJob({ id: 'shared', sourcePath: src, expectedRevision: rev, replace }, context)), {
      code: 'resource_conflict',
      message: 'skills/shared in the resource root is named by another receipt; it is left as it is',
    });
  }
  t.equal(await readFile(path.join(root, 'skills', 'shared', 'SKILL.md'), 'utf8'), SKILL('shared'));
  t.match(await failure(removeJob({ id: 'shared' }, context)), {
    message: 'skills/shared is named by another receipt; it is left as it is',
  });
  t.equal(published(), 0);
});

t.test('an imported skill whose folder was deleted by hand imports again; a refresh and a remove publish', async (t) => {
  const { dir, root, context, revision, published } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  const before = Date.now();
  t.same(await importJob({ id: 'one', sourcePath: src, expectedRevision: rev }, context), {
    id: 'one',
    sourceRevision: rev,
    created: true,
  });
  const installedAt = Date.parse(JSON.parse(await readFile(path.join(root, 'receipts', 'one.json'), 'utf8')).installedAt);
  t.ok(installedAt >= before - 1000 && installedAt <= Date.now() + 1000, 'installedAt is when it was imported');
  t.equal(published(), 1);
  await rm(path.join(root, 'skills', 'one'), { recursive: true });
  t.same(await importJob({ id: 'one', sourcePath: src, expectedRevision: rev }, context), {
    id: 'one',
    sourceRevision: rev,
    created: false,
  });
  t.ok(existsSync(path.join(root, 'skills', 'one', 'SKILL.md')));
  t.same(await importJob({ id: 'one', expectedRevision: rev, refresh: true }, context), { id: 'one', sourceRevision: rev, created: false });
  t.equal(published(), 3);
  t.same(await removeJob({ id: 'one' }, context), { removed: true });
  t.equal(published(), 4, 'a remove publishes once');
  t.same(await readdir(path.join(root, 'skills')), []);
  t.same(await readdir(path.join(root, 'receipts')), []);
});

t.test('skills/ in the resource root: made when missing (owner only), refused when it is not a real folder', async (t) => {
  const { dir, root, context, revision } = await world(t, { skillsDir: false });
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  await importJob({ id: 'one', sourcePath: src, expectedRevision: rev }, context);
  t.equal(((await stat(path.join(root, 'skills'))).mode & 0o777).toString(8), '700');
  t.same(await readdir(path.join(root, 'skills')), ['one']);
  await removeJob({ id: 'one' }, context);

  await rm(path.join(root, 'skills'), { recursive: true });
  await mkdir(path.join(dir, 'elsewhere'));
  await symlink(path.join(dir, 'elsewhere'), path.join(root, 'skills'));
  t.match(await failure(importJob({ id: 'one', sourcePath: src, expectedRevision: rev }, context)), {
    code: 'invalid_root',
    message: 'skills/ in the resource root must be a real folder',
  });
  t.same(await readdir(path.join(dir, 'elsewhere')), [], 'nothing written through the link');
  await rm(path.join(root, 'skills'));
  await writeFile(path.join(root, 'skills'), 'a file');
  t.match(await failure(importJob({ id: 'one', sourcePath: src, expectedRevision: rev }, context)), { code: 'invalid_root' });
  t.same(await readdir(path.join(root, 'receipts')), []);
});

t.test('only a leading byte order mark is dropped: a U+FEFF inside the text is kept', async (t) => {
  const { dir } = await world(t);
  const src = await skill(path.join(dir, 'joiner'), { 'SKILL.md': SKILL('joiner', 'word\uFEFFjoiner') });
  t.equal((await readSkill(src)).candidate.sourceContent, SKILL('joiner', 'word\uFEFFjoiner').trim());
});

t.test('a folder whose name gives no resource ID is refused for that, and an ID given with the import is taken instead', async (t) => {
  const { dir, context } = await world(t);
  const src = await skill(path.join(dir, '___'), { 'SKILL.md': SKILL('tool') });
  t.match(await failure(readSkill(src)), {
    code: 'skill_invalid',
    message: 'the folder name gives no valid resource ID (lower-case letters and digits joined by hyphens): ""',
  });
  const { candidate } = await readSkill(src, undefined, 'tool');
  t.equal(candidate.id, 'tool');
  t.match(await importJob({ id: 'tool', sourcePath: src, expectedRevision: candidate.sourceRevision }, context), {
    id: 'tool',
    created: true,
  });
});

t.test("an archive's bounds are taken at them: an archive of 16 MiB is read, its SKILL.md of 512 KiB too", async (t) => {
  const { dir } = await world(t);
  const at = path.join(dir, 'at.zip');
  await writeFile(at, '');
  await truncate(at, SKILL_LIMITS.bytes);
  t.match(await failure(readSkill(at)), { code: 'skill_archive_invalid' }, 'read (and found no zip), not refused for its size');
  const header = SKILL('exact', '');
  const text = header + 'x'.repeat(SKILL_LIMITS.skillFileBytes - Buffer.byteLength(header));
  t.equal(Buffer.byteLength(text), SKILL_LIMITS.skillFileBytes);
  await writeFile(path.join(dir, 'exact.skill'), storedZip({ 'SKILL.md': text }));
  t.match(
    await failure(readSkill(path.join(dir, 'exact.skill'))),
    { code: 'skill_invalid', message: /characters long as the record's text/ },
    'read, and refused for its record text',
  );
});

t.test('a folder whose files the machine cannot read is skill_unreadable, naming the error', async (t) => {
  const { dir } = await world(t);
  const src = await skill(path.join(dir, 'deep'), { 'SKILL.md': SKILL('deep') });
  // Sixteen folders deep (within the depth bound), but each name so long that the file's path passes the
  // system's limit: made relative to each folder in turn, as nothing can name it whole.
  const names = Array.from({ length: SKILL_LIMITS.depth }, (_, i) => `${String(i).padStart(2, '0')}${'d'.repeat(253)}`);
  const cwd = process.cwd();
  try {
    process.chdir(src);
    for (const name of names) {
      await mkdir(name);
      process.chdir(name);
    }
    await writeFile('f.txt', 'f');
  } finally {
    process.chdir(cwd);
  }
  t.teardown(() => void spawnSync('rm', ['-rf', path.join(src, names[0]!)]));
  t.match(await failure(readSkill(src)), { code: 'skill_unreadable', message: "cannot read the folder's files (ENAMETOOLONG)" });
});
