// Skill management on the machine: the `skill.scan`, `skill.import` and `skill.remove` jobs the registry
// sends over the machine channel. A skill is a folder holding `SKILL.md` (YAML front matter with `name` and
// `description`). Scanning reads it and its files without following any symbolic link out of the folder;
// importing re-reads them, checks the revision the owner saw, scans every text file for secrets before
// anything is written, copies the folder into `<root>/skills/<id>/` (temp directory, then rename), writes
// its receipt v2 and publishes. Nothing here writes outside the resource root.
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { parseDocument } from 'yaml';
import { ResourceId, SINGLE_LINE_PATTERN } from '../schemas/common.js';
import { ReconcileEntryV2, V2_BOUNDS } from '../schemas/resource.js';
import type { AllowedFinding, ScanScope, SecretScanner } from '../secrets/secret-scanner.js';
import { writeFileDurably } from '../storage/durable-file.js';
import { JobError } from './job-error.js';
import type { JobContext } from './jobs.js';
import { serializeReceipt, type ReceiptV2 } from './receipt.js';
import { DIR_MODE, KIND_DIRS, RECEIPTS_DIR } from './resource-root.js';

export const SKILL_FILE = 'SKILL.md';
/** Bounds of one skill folder and of one scan (a scan answers at most 256 candidates and 256 diagnostics, as upstream's). */
export const SKILL_LIMITS = {
  files: 1000,
  bytes: 16 * 1024 * 1024,
  depth: 16,
  skillFileBytes: 512 * 1024,
  candidates: 256,
  diagnostics: 256,
  /** Longest path a receipt's `source` holds. */
  sourcePath: 2048,
  /** Bytes of candidates one scan answers with (the registry takes a job answer of at most 1 MiB). */
  answerBytes: 768 * 1024,
} as const;

export type DiagnosticCode = 'skill_unreadable' | 'skill_invalid';

export interface ScanCandidate {
  id: string;
  name: string;
  sourcePath: string;
  sourceContent: string;
  sourceRevision: string;
}

export interface ScanDiagnostic {
  path: string;
  code: DiagnosticCode;
  message: string;
}

export interface ScanResult {
  rootPath: string;
  candidates: ScanCandidate[];
  diagnostics: ScanDiagnostic[];
}

interface SkillFile {
  /** Relative to the skill folder, `/`-separated. */
  rel: string;
  bytes: Buffer;
}

/** One skill folder read whole: its candidate and every file's bytes (what an import copies). */
export interface ReadSkill {
  candidate: ScanCandidate;
  files: SkillFile[];
}

class SkillProblem extends Error {
  constructor(
    readonly code: DiagnosticCode,
    message: string,
  ) {
    super(message);
  }
}

const checkId = Compile(ResourceId);
const checkEntry = Compile(ReconcileEntryV2);
const HEX64 = /^[a-f0-9]{64}$/;

/**
 * The revision of a skill folder: SHA-256 (hex) over its files sorted by relative path (`/`-separated,
 * compared as UTF-16 code units), each contributing its path, a NUL, its length in decimal, a NUL, and its
 * bytes. Any change of a file's name, place or content changes it.
 */
export function skillRevision(files: readonly SkillFile[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))) {
    hash.update(file.rel, 'utf8').update('\0').update(String(file.bytes.length)).update('\0').update(file.bytes);
  }
  return hash.digest('hex');
}

/** A resource ID from a folder name: lower case, runs of anything else joined by single hyphens. */
export function idFromFolderName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function inside(realDir: string, real: string): boolean {
  const relative = path.relative(realDir, real);
  return relative !== '' && relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/**
 * Every file of the folder, bounded. A symbolic link to a file inside the folder is read as that file; a
 * link that resolves outside the folder, to a directory, or nowhere is refused, as is anything that is
 * neither a file nor a directory.
 */
async function readFiles(realDir: string): Promise<SkillFile[]> {
  const files: SkillFile[] = [];
  let total = 0;
  const walk = async (dir: string, relDir: string, depth: number): Promise<void> => {
    if (depth > SKILL_LIMITS.depth)
      throw new SkillProblem('skill_invalid', `${relDir} is nested deeper than ${SKILL_LIMITS.depth} folders`);
    const entries = (await readdir(dir)).sort();
    for (const name of entries) {
      const rel = relDir === '' ? name : `${relDir}/${name}`;
      const full = path.join(dir, name);
      const st = await lstat(full);
      let target = full;
      if (st.isSymbolicLink()) {
        const real = await realpath(full).catch(() => undefined);
        if (real === undefined) throw new SkillProblem('skill_invalid', `${rel} is a symbolic link that leads nowhere`);
        if (!inside(realDir, real))
          throw new SkillProblem('skill_invalid', `${rel} is a symbolic link that leads outside the skill folder`);
        const targetSt = await stat(real);
        if (!targetSt.isFile()) throw new SkillProblem('skill_invalid', `${rel} is a symbolic link to something other than a file`);
        target = real;
      } else if (st.isDirectory()) {
        await walk(full, rel, depth + 1);
        continue;
      } else if (!st.isFile()) {
        throw new SkillProblem('skill_invalid', `${rel} is neither a file nor a folder`);
      }
      if (files.length >= SKILL_LIMITS.files) throw new SkillProblem('skill_invalid', `more than ${SKILL_LIMITS.files} files`);
      const bytes = await readFile(target);
      total += bytes.length;
      if (total > SKILL_LIMITS.bytes) throw new SkillProblem('skill_invalid', `more than ${SKILL_LIMITS.bytes} bytes in all`);
      files.push({ rel, bytes });
    }
  };
  await walk(realDir, '', 0);
  return files;
}

/** `name` and `description` from SKILL.md's YAML front matter (between `---` lines at the top). */
export function parseSkillFile(text: string): { name: string; description: string } {
  const body = text.replace(/^\uFEFF/, '');
  const match = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(body);
  if (!match) throw new SkillProblem('skill_invalid', `${SKILL_FILE} has no YAML front matter (a block between --- lines at its top)`);
  const doc = parseDocument(match[1]!, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0)
    throw new SkillProblem(
      'skill_invalid',
      `${SKILL_FILE}'s front matter is not valid YAML (line ${doc.errors[0]!.linePos?.[0]?.line ?? '?'})`,
    );
  const value = doc.toJS({ maxAliasCount: 10 }) as unknown;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s front matter is not a mapping`);
  const { name, description } = value as Record<string, unknown>;
  if (typeof name !== 'string' || name.trim() === '') throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s front matter has no name`);
  if (typeof description !== 'string' || description.trim() === '')
    throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s front matter has no description`);
  if (name.trim().length > V2_BOUNDS.name)
    throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s name is longer than ${V2_BOUNDS.name} characters`);
  return { name: name.trim(), description: description.trim() };
}

/** Text a secret could hide in: any file without a NUL byte (binary files are not scanned). */
function asText(bytes: Buffer): string | undefined {
  return bytes.includes(0) ? undefined : bytes.toString('utf8');
}

/**
 * Reads one skill folder. `sourcePath` must be absolute and contain no `..` segment; the folder itself
 * must be a real directory (not a symbolic link). With a scanner, SKILL.md (which the owner sees) is
 * scanned for secrets too.
 */
export async function readSkill(sourcePath: string, scanner?: SecretScanner, id?: string, scope?: ScanScope): Promise<ReadSkill> {
  if (!path.isAbsolute(sourcePath)) throw new SkillProblem('skill_invalid', 'the source path must be absolute');
  if (sourcePath.split(/[\\/]/).includes('..')) throw new SkillProblem('skill_invalid', 'the source path must not contain ".." segments');
  const dir = path.normalize(sourcePath).replace(/(.)[\\/]+$/, '$1');
  if (dir.length > SKILL_LIMITS.sourcePath || !new RegExp(SINGLE_LINE_PATTERN, 'u').test(dir)) {
    throw new SkillProblem('skill_invalid', `the source path must be one line of at most ${SKILL_LIMITS.sourcePath} characters`);
  }
  const st = await lstat(dir).catch((err: NodeJS.ErrnoException) => {
    throw new SkillProblem('skill_unreadable', `cannot read the folder (${err.code ?? 'error'})`);
  });
  if (st.isSymbolicLink()) throw new SkillProblem('skill_invalid', 'the skill folder is a symbolic link; name the real folder');
  if (!st.isDirectory()) throw new SkillProblem('skill_invalid', 'not a folder');
  const realDir = await realpath(dir);
  const skillSt = await lstat(path.join(realDir, SKILL_FILE)).catch(() => undefined);
  if (!skillSt) throw new SkillProblem('skill_invalid', `no ${SKILL_FILE} in the folder`);
  if (!skillSt.isFile()) throw new SkillProblem('skill_invalid', `${SKILL_FILE} must be a regular file`);
  if (skillSt.size > SKILL_LIMITS.skillFileBytes)
    throw new SkillProblem('skill_invalid', `${SKILL_FILE} is larger than ${SKILL_LIMITS.skillFileBytes} bytes`);
  let files: SkillFile[];
  try {
    files = await readFiles(realDir);
  } catch (err) {
    if (err instanceof SkillProblem) throw err;
    throw new SkillProblem('skill_unreadable', `cannot read the folder's files (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const text = files.find((f) => f.rel === SKILL_FILE)!.bytes.toString('utf8');
  const { name } = parseSkillFile(text);
  const sourceContent = text.replace(/^\uFEFF/, '').trim();
  const candidateId = id ?? idFromFolderName(path.basename(dir));
  if (!checkId.Check(candidateId))
    throw new SkillProblem(
      'skill_invalid',
      `the folder name gives no valid resource ID (lower-case letters and digits joined by hyphens): "${candidateId}"`,
    );
  if (!checkEntry.Check({ schemaVersion: 2, id: candidateId, name, sourceContent })) {
    throw new SkillProblem(
      'skill_invalid',
      `${SKILL_FILE} is longer than ${V2_BOUNDS.sourceContent} characters or holds control characters`,
    );
  }
  if (scanner) {
    const findings = await scanner.scan(
      [
        ['/name', name],
        ['/sourceContent', sourceContent],
      ],
      scope,
    );
    if (findings.length > 0) {
      const f = findings[0]!;
      throw new SkillProblem(
        'skill_invalid',
        `${SKILL_FILE} looks like it contains a secret (${f.field === '/name' ? 'its name' : `line ${f.line}`}, rule ${f.rule}); remove it before importing`,
      );
    }
  }
  return { candidate: { id: candidateId, name, sourcePath: dir, sourceContent, sourceRevision: skillRevision(files) }, files };
}

/** Scans `rootPath`: the folder itself when it holds SKILL.md, else each direct sub-folder that does. */
export async function scanSkills(rootPath: string, scanner?: SecretScanner, scope?: ScanScope): Promise<ScanResult> {
  if (typeof rootPath !== 'string' || !path.isAbsolute(rootPath) || rootPath.split(/[\\/]/).includes('..')) {
    throw new JobError('invalid_path', 'rootPath must be an absolute path without ".." segments');
  }
  const root = path.normalize(rootPath).replace(/(.)[\\/]+$/, '$1');
  const result: ScanResult = { rootPath: root, candidates: [], diagnostics: [] };
  const diagnose = (where: string, err: unknown) => {
    if (result.diagnostics.length >= SKILL_LIMITS.diagnostics) return;
    const problem =
      err instanceof SkillProblem
        ? err
        : new SkillProblem('skill_unreadable', `cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    result.diagnostics.push({ path: where, code: problem.code, message: problem.message });
  };
  const st = await stat(root).catch(() => undefined);
  if (!st?.isDirectory()) throw new JobError('skill_unreadable', `${root} does not exist or is not a folder`);
  if (await lstat(path.join(root, SKILL_FILE)).catch(() => undefined)) {
    try {
      result.candidates.push((await readSkill(root, scanner, undefined, scope)).candidate);
    } catch (err) {
      diagnose(root, err);
    }
    return result;
  }
  let names: string[];
  try {
    names = (await readdir(root)).filter((n) => !n.startsWith('.')).sort();
  } catch (err) {
    throw new JobError('skill_unreadable', `cannot list ${root} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let answerBytes = 0;
  for (const name of names) {
    const dir = path.join(root, name);
    const entry = await lstat(dir).catch(() => undefined);
    if (!entry) continue;
    if (entry.isSymbolicLink()) {
      if (await stat(path.join(dir, SKILL_FILE)).catch(() => undefined))
        diagnose(dir, new SkillProblem('skill_invalid', 'the skill folder is a symbolic link; name the real folder'));
      continue;
    }
    if (!entry.isDirectory() || !(await lstat(path.join(dir, SKILL_FILE)).catch(() => undefined))) continue;
    if (result.candidates.length >= SKILL_LIMITS.candidates) {
      diagnose(dir, new SkillProblem('skill_invalid', `not scanned: a scan lists at most ${SKILL_LIMITS.candidates} skills`));
      continue;
    }
    try {
      const { candidate } = await readSkill(dir, scanner, undefined, scope);
      const size = Buffer.byteLength(JSON.stringify(candidate));
      if (answerBytes + size > SKILL_LIMITS.answerBytes) {
        diagnose(dir, new SkillProblem('skill_invalid', 'not listed: the scan answer is full; scan this folder on its own'));
        continue;
      }
      answerBytes += size;
      result.candidates.push(candidate);
    } catch (err) {
      diagnose(dir, err);
    }
  }
  return result;
}

const receiptPath = (root: string, id: string) => path.join(root, RECEIPTS_DIR, `${id}.json`);
const skillDir = (root: string, id: string) => path.join(root, KIND_DIRS.skill, id);

/** The receipt of an imported skill (v2, kind skill, with source and revision), or undefined when there is none. */
async function importedReceipt(root: string, id: string): Promise<ReceiptV2 | undefined> {
  const text = await readFile(receiptPath(root, id), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  let value: Partial<ReceiptV2>;
  try {
    value = JSON.parse(text) as Partial<ReceiptV2>;
  } catch {
    throw new JobError('resource_conflict', `receipts/${id}.json is not an imported skill's receipt`);
  }
  if (value.schemaVersion !== 2 || value.kind !== 'skill' || typeof value.source !== 'string' || typeof value.sourceRevision !== 'string') {
    throw new JobError('resource_conflict', `${id} on this machine is not a skill imported from a folder; it is left as it is`);
  }
  return value as ReceiptV2;
}

/** The job's `secretAllowlist`: the owner's entries that apply to an import (an entry that is not one is refused). */
function allowedOf(body: Record<string, unknown>): AllowedFinding[] {
  const list = body.secretAllowlist;
  if (list === undefined) return [];
  const valid = (e: unknown): e is AllowedFinding =>
    e !== null &&
    typeof e === 'object' &&
    typeof (e as AllowedFinding).fingerprint === 'string' &&
    ['undefined', 'string'].includes(typeof (e as AllowedFinding).file) &&
    ['undefined', 'string'].includes(typeof (e as AllowedFinding).route);
  if (!Array.isArray(list) || !list.every(valid))
    throw new JobError('invalid_payload', 'secretAllowlist must be a list of {fingerprint, file?, route?}');
  return list.map(({ fingerprint, file, route }) => ({
    fingerprint,
    ...(file === undefined ? {} : { file }),
    ...(route === undefined ? {} : { route }),
  }));
}

function payloadOf(payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new JobError('invalid_payload', 'the job payload must be an object');
  return payload as Record<string, unknown>;
}

function asJobError(err: unknown): unknown {
  return err instanceof SkillProblem ? new JobError(err.code, err.message) : err;
}

/**
 * Copies the files into `<root>/skills/<id>/` through a temp folder beside it and a rename; a folder
 * already there (a refresh) is moved aside first and removed after.
 */
async function install(root: string, id: string, files: readonly SkillFile[]): Promise<void> {
  const skills = path.join(root, KIND_DIRS.skill);
  const skillsSt = await lstat(skills).catch(() => undefined);
  if (skillsSt?.isSymbolicLink() || (skillsSt && !skillsSt.isDirectory()))
    throw new JobError('invalid_root', `${KIND_DIRS.skill}/ in the resource root must be a real folder`);
  if (!skillsSt) await mkdir(skills, { mode: DIR_MODE });
  const suffix = randomBytes(6).toString('hex');
  const temp = path.join(skills, `.${id}.import-${suffix}`);
  await mkdir(temp, { mode: DIR_MODE });
  try {
    for (const file of files) {
      const target = path.join(temp, ...file.rel.split('/'));
      await mkdir(path.dirname(target), { recursive: true, mode: DIR_MODE });
      await writeFile(target, file.bytes, { mode: 0o600, flag: 'wx' });
    }
    const target = skillDir(root, id);
    const existing = await lstat(target).catch(() => undefined);
    const aside = path.join(skills, `.${id}.old-${suffix}`);
    if (existing) await rename(target, aside);
    await rename(temp, target);
    if (existing) await rm(aside, { recursive: true, force: true });
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    throw err;
  }
}

/** `skill.scan {rootPath}`, or `{id}`: a scan of that imported skill's source folder. */
export async function scanJob(payload: unknown, context: JobContext): Promise<ScanResult> {
  const body = payloadOf(payload);
  if (typeof body.id === 'string') {
    const receipt = await importedReceipt(context.root, body.id);
    if (!receipt) throw new JobError('skill_not_found', `no imported skill ${body.id} on this machine`);
    const source = receipt.source!;
    try {
      return {
        rootPath: source,
        candidates: [
          (await readSkill(source, context.scanner, receipt.id, { route: 'resource.refresh', allowed: allowedOf(body) })).candidate,
        ],
        diagnostics: [],
      };
    } catch (err) {
      if (!(err instanceof SkillProblem)) throw err;
      return { rootPath: source, candidates: [], diagnostics: [{ path: source, code: err.code, message: err.message }] };
    }
  }
  return scanSkills(body.rootPath as string, context.scanner, { route: 'resource.import', allowed: allowedOf(body) });
}

/**
 * `skill.import {id, sourcePath, expectedRevision}`, or `{id, expectedRevision, refresh: true}` (the source
 * is the receipt's): copies the skill, writes its receipt, publishes.
 */
export async function importJob(payload: unknown, context: JobContext): Promise<{ id: string; sourceRevision: string; created: boolean }> {
  const body = payloadOf(payload);
  const { id, expectedRevision } = body;
  const refresh = body.refresh === true;
  if (typeof id !== 'string' || !checkId.Check(id)) throw new JobError('invalid_payload', 'id must be a resource ID');
  if (typeof expectedRevision !== 'string' || !HEX64.test(expectedRevision))
    throw new JobError('invalid_payload', 'expectedRevision must be 64 lower-case hex digits');
  const existing = await importedReceipt(context.root, id);
  let sourcePath: string;
  if (refresh) {
    if (!existing) throw new JobError('skill_not_found', `no imported skill ${id} on this machine`);
    sourcePath = existing.source!;
  } else {
    if (typeof body.sourcePath !== 'string') throw new JobError('invalid_payload', 'sourcePath must be a string');
    if (existing) throw new JobError('resource_conflict', `${id} is already imported on this machine; refresh it instead`);
    if (await lstat(skillDir(context.root, id)).catch(() => undefined)) {
      throw new JobError('resource_conflict', `${KIND_DIRS.skill}/${id} already exists in the resource root; it is left as it is`);
    }
    sourcePath = body.sourcePath;
  }
  let skill: ReadSkill;
  try {
    skill = await readSkill(sourcePath, undefined, id);
  } catch (err) {
    throw asJobError(err);
  }
  if (skill.candidate.sourceRevision !== expectedRevision) {
    throw new JobError('source_changed', `the skill at ${skill.candidate.sourcePath} changed since it was scanned; scan it again`);
  }
  // Every text file is scanned before anything is written.
  const texts = skill.files.flatMap((f): [string, string][] => {
    const text = asText(f.bytes);
    return text === undefined ? [] : [[`/files/${f.rel}`, text]];
  });
  // The owner's allowlist entries come with the job: the registry holds the list, the machine scans the files.
  const findings = await context.scanner.scan(texts, { route: refresh ? 'resource.refresh' : 'resource.import', allowed: allowedOf(body) });
  if (findings.length > 0) {
    // No fingerprint in the message: the registry scans a machine's words, and names the fingerprints itself.
    const where = findings.slice(0, 10).map((f) => `${f.field.slice('/files/'.length)} line ${f.line} (rule ${f.rule})`);
    throw new JobError(
      'secret_detected',
      `nothing was copied: ${where.join(', ')} look${where.length === 1 ? 's' : ''} like it holds a secret`,
      findings.slice(0, 10),
    );
  }
  await install(context.root, id, skill.files);
  const receipt: ReceiptV2 = {
    schemaVersion: 2,
    id,
    kind: 'skill',
    name: skill.candidate.name,
    provider: context.machineId,
    sourceContent: skill.candidate.sourceContent,
    entrypoint: `${KIND_DIRS.skill}/${id}/${SKILL_FILE}`,
    source: skill.candidate.sourcePath,
    sourceRevision: skill.candidate.sourceRevision,
    installedAt: new Date().toISOString(),
  };
  await writeFileDurably(receiptPath(context.root, id), serializeReceipt(receipt));
  await context.publish();
  return { id, sourceRevision: skill.candidate.sourceRevision, created: !refresh };
}

/** `skill.remove {id}`: removes the imported skill's receipt and folder, then publishes. */
export async function removeJob(payload: unknown, context: JobContext): Promise<{ removed: boolean }> {
  const { id } = payloadOf(payload);
  if (typeof id !== 'string' || !checkId.Check(id)) throw new JobError('invalid_payload', 'id must be a resource ID');
  const receipt = await importedReceipt(context.root, id);
  if (!receipt) return { removed: false };
  await rm(receiptPath(context.root, id), { force: true });
  // rm never follows a symbolic link: a link inside the folder is removed, not what it points to.
  await rm(skillDir(context.root, id), { recursive: true, force: true });
  await context.publish();
  return { removed: true };
}
