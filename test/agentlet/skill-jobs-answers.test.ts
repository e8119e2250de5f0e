// What a skill job answers and publishes, as the registry and the owner see it: with serve's one-receipt
// publisher a job publishes its own skill alone; a refresh scan answers the skill as it is now, or why not,
// and names the refresh as the route of its findings; a refusal keeps its code through the job runner; a
// folder scan's answer stays within its bound of diagnostics, the machine's own root first; an imported
// copy's folders are the owner's alone.
import t from 'tap';
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { JOBS, type JobContext } from '../../src/agentlet/jobs.js';
import { JobError } from '../../src/agentlet/job-error.js';
import { ALLOWED_FINDINGS_FILE } from '../../src/agentlet/allowed-findings.js';
import { importJob, readSkill, removeJob, scanJob, scanSkills, SKILL_LIMITS } from '../../src/agentlet/skill-jobs.js';
import { SecretScanner, secretFingerprint } from '../../src/secrets/secret-scanner.js';
import { tempDir } from '../helpers/agentlet.js';

const SKILL = (name: string, body = 'Body.') => `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n${body}\n`;
const VALUE = 'Xk9#mQ2$vL7pR4tZ8wN3';
const PASSWORD = `password = "${VALUE}"`;
const FINGERPRINT = secretFingerprint('credential-assignment', VALUE);

async function skill(dir: string, files: Record<string, string>): Promise<string> {
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

async function world(t: Parameters<typeof tempDir>[0]) {
  const dir = await tempDir(t, 'skill-answers-');
  const root = path.join(dir, 'root');
  await mkdir(path.join(root, 'receipts'), { recursive: true, mode: 0o700 });
  await mkdir(path.join(root, 'skills'), { recursive: true, mode: 0o700 });
  const wholeSet: number[] = [];
  const context: JobContext = {
    machineId: 'agentlet-x',
    root,
    publish: () => {
      wholeSet.push(1);
      return Promise.resolve({ dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] });
    },
    scanner: new SecretScanner([]),
  };
  const revision = async (p: string) => (await readSkill(p)).candidate.sourceRevision;
  return { dir, root, context, revision, wholeSet };
}

t.test("with serve's one-receipt publisher, an import, a refresh and a remove each publish their own skill alone", async (t) => {
  const { dir, root, context, revision, wholeSet } = await world(t);
  const published: string[] = [];
  let refuse = false;
  context.publishReceipt = (id: string) => {
    if (refuse) return Promise.reject(new JobError('record_quota_exceeded', 'this machine holds as many record bytes as it may'));
    published.push(id);
    return Promise.resolve();
  };
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  await importJob({ id: 'one', sourcePath: src, expectedRevision: await revision(src) }, context);
  t.same(published, ['one'], 'an import publishes its skill');
  await skill(src, { 'SKILL.md': SKILL('one', 'Newer.') });
  await importJob({ id: 'one', expectedRevision: await revision(src), refresh: true }, context);
  t.same(published, ['one', 'one'], 'a refresh publishes its skill');
  t.same(await removeJob({ id: 'one' }, context), { removed: true });
  t.same(published, ['one', 'one', 'one'], 'a remove publishes its skill');
  t.same(wholeSet, [], 'never the whole set');

  refuse = true;
  const two = await skill(path.join(dir, 'src', 'two'), { 'SKILL.md': SKILL('two') });
  await t.rejects(importJob({ id: 'two', sourcePath: two, expectedRevision: await revision(two) }, context), {
    code: 'record_quota_exceeded',
  });
  t.same(await readdir(path.join(root, 'skills')), [], 'a refused publish of its skill leaves no copy');
  t.same(await readdir(path.join(root, 'receipts')), [], 'and no receipt');
});

t.test('removing a folder whose receipt was deleted by hand forgets its allowed findings and publishes nothing', async (t) => {
  const { dir, root, context, revision, wholeSet } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  await importJob(
    { id: 'one', sourcePath: src, expectedRevision: await revision(src), secretAllowlist: [{ fingerprint: FINGERPRINT }] },
    context,
  );
  t.same(JSON.parse(await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8')), { one: [{ fingerprint: FINGERPRINT }] });
  await rm(path.join(root, 'receipts', 'one.json'));
  const before = wholeSet.length;
  t.same(await removeJob({ id: 'one' }, context), { removed: true });
  t.same(JSON.parse(await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8')), {}, 'its entries are gone with it');
  t.equal(wholeSet.length, before, 'no receipt changed: nothing to publish');
});

t.test('a refresh scan answers the skill as it is now, or why not, and nothing else', async (t) => {
  const { dir, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  await importJob({ id: 'one', sourcePath: src, expectedRevision: await revision(src) }, context);
  await skill(src, { 'SKILL.md': SKILL('one', 'Newer.') });
  t.same(await scanJob({ id: 'one' }, context), { rootPath: src, candidates: [(await readSkill(src)).candidate], diagnostics: [] });

  await writeFile(path.join(src, 'SKILL.md'), 'no front matter\n');
  const refused = await scanJob({ id: 'one' }, context);
  t.same(refused.candidates, [], 'no candidate');
  t.same(
    refused.diagnostics.map((d) => [d.path, d.code]),
    [[src, 'skill_front_matter_missing']],
  );

  t.match(await scanJob({ id: 'two' }, context).catch((e: unknown) => e), {
    code: 'skill_not_found',
    message: 'no imported skill two on this machine',
  });
  t.match(
    await scanJob({ id: 'one', secretAllowlist: 'all' }, context).catch((e: unknown) => e),
    { code: 'invalid_payload', message: 'secretAllowlist must be a list of {fingerprint, file?, route?}' },
    'a malformed allowlist refuses the job, it is no diagnostic of the skill',
  );
});

t.test('a refresh names its route: its findings carry resource.refresh, and an entry for that route lets it through', async (t) => {
  const { dir, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  await importJob({ id: 'one', sourcePath: src, expectedRevision: await revision(src) }, context);

  await skill(src, { 'SKILL.md': SKILL('one', PASSWORD) });
  const scanned = await scanJob({ id: 'one' }, context);
  t.same(scanned.candidates, []);
  t.match(scanned.diagnostics, [
    { code: 'secret_detected', findings: [{ field: '/sourceContent', fingerprint: FINGERPRINT, route: 'resource.refresh' }] },
  ]);
  const folderScan = await scanJob({ rootPath: src }, context);
  t.match(folderScan.diagnostics, [{ code: 'secret_detected', findings: [{ route: 'resource.import' }] }], 'a folder scan is an import');
  const allowed = await scanJob(
    { id: 'one', secretAllowlist: [{ fingerprint: FINGERPRINT, file: 'SKILL.md', route: 'resource.refresh' }] },
    context,
  );
  t.same(
    allowed.candidates.map((c) => c.id),
    ['one'],
    'listed with the entry for the refresh route',
  );

  const err = await importJob({ id: 'one', expectedRevision: await revision(src), refresh: true }, context).catch((e: unknown) => e);
  t.match(err, { code: 'secret_detected', findings: [{ field: '/files/SKILL.md', fingerprint: FINGERPRINT, route: 'resource.refresh' }] });
});

t.test('through the job runner, a refused import answers its own code and message', async (t) => {
  const { dir, context, revision } = await world(t);
  const missing = path.join(dir, 'src', 'missing');
  t.same(await JOBS.run('skill.import', { id: 'one', sourcePath: missing, expectedRevision: 'a'.repeat(64) }, context), {
    ok: false,
    error: { code: 'skill_unreadable', message: 'cannot read the folder (ENOENT)' },
  });
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  const rev = await revision(src);
  await skill(src, { 'SKILL.md': SKILL('one', 'Changed after the scan.') });
  t.same(await JOBS.run('skill.import', { id: 'one', sourcePath: src, expectedRevision: rev }, context), {
    ok: false,
    error: { code: 'source_changed', message: `the skill at ${src} changed since it was scanned; scan it again` },
  });
});

t.test("a folder scan's answer holds at most 256 diagnostics, the machine's own root first", async (t) => {
  const { dir, root, context } = await world(t);
  await skill(path.join(root, 'skills', 'stray'), { 'SKILL.md': SKILL('stray') });
  for (let i = 0; i < SKILL_LIMITS.diagnostics; i++)
    await skill(path.join(dir, 'many', `bad-${String(i).padStart(3, '0')}`), { 'SKILL.md': 'x' });
  const scanned = await scanJob({ rootPath: path.join(dir, 'many') }, context);
  t.equal(scanned.diagnostics.length, SKILL_LIMITS.diagnostics);
  t.match(scanned.diagnostics[0], { path: path.join(root, 'skills', 'stray'), code: 'skill_orphaned' });
  t.equal(path.basename(scanned.diagnostics.at(-1)!.path), 'bad-254');
});

t.test("a folder scan's answer lists candidates up to exactly its byte bound, and not one byte past it", async (t) => {
  const { dir } = await world(t);
  const many = path.join(dir, 'many');
  /** The bytes a candidate takes in the answer. */
  const size = async (folder: string) => Buffer.byteLength(JSON.stringify((await readSkill(folder)).candidate));
  let used = 0;
  for (let i = 0; i < 8; i++)
    used += await size(await skill(path.join(many, `big-${i}`), { 'SKILL.md': SKILL(`big-${i}`, 'x'.repeat(90_000)) }));
  // The last one (in name order) fills the answer to the byte.
  const last = path.join(many, 'big-9');
  await skill(last, { 'SKILL.md': SKILL('big-9', 'x') });
  const fill = SKILL_LIMITS.answerBytes - used - (await size(last)) + 1;
  await writeFile(path.join(last, 'SKILL.md'), SKILL('big-9', 'x'.repeat(fill)));
  t.equal(used + (await size(last)), SKILL_LIMITS.answerBytes);
  const full = await scanSkills(many);
  t.equal(full.candidates.length, 9, 'all listed');
  t.same(full.diagnostics, []);
  await writeFile(path.join(last, 'SKILL.md'), SKILL('big-9', 'x'.repeat(fill + 1)));
  const past = await scanSkills(many);
  t.equal(past.candidates.length, 8);
  t.match(past.diagnostics, [
    { path: last, code: 'skill_not_listed', message: 'not listed: the scan answer is full; scan this folder on its own' },
  ]);
});

t.test("an imported skill's folders are the owner's alone, whatever the source's were", async (t) => {
  const { dir, root, context, revision } = await world(t);
  const src = await skill(path.join(dir, 'src', 'open'), { 'SKILL.md': SKILL('open'), 'docs/deep/a.md': 'a\n' });
  for (const folder of [src, path.join(src, 'docs'), path.join(src, 'docs', 'deep')]) await chmod(folder, 0o777);
  await importJob({ id: 'open', sourcePath: src, expectedRevision: await revision(src) }, context);
  for (const rel of ['open', 'open/docs', 'open/docs/deep'])
    t.equal(((await stat(path.join(root, 'skills', rel))).mode & 0o777).toString(8), '700', rel);
});

t.test('an imported skill whose folder was deleted by hand is removed: its receipt goes, and the change is published', async (t) => {
  const { dir, root, context, revision } = await world(t);
  const published: string[] = [];
  context.publishReceipt = (id: string) => {
    published.push(id);
    return Promise.resolve();
  };
  const src = await skill(path.join(dir, 'src', 'one'), { 'SKILL.md': SKILL('one') });
  await importJob({ id: 'one', sourcePath: src, expectedRevision: await revision(src) }, context);
  await rm(path.join(root, 'skills', 'one'), { recursive: true });
  t.same(await removeJob({ id: 'one' }, context), { removed: true });
  t.same(await readdir(path.join(root, 'receipts')), []);
  t.same(published, ['one', 'one']);
});
