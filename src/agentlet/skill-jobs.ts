// Skill management on the machine: the `skill.scan`, `skill.import` and `skill.remove` jobs the registry
// sends over the machine channel. A skill is a folder holding `SKILL.md` (YAML front matter with `name` and
// `description`, checked against the Agent Skills format by src/text/front-matter.ts), or a `.zip`/`.skill`
// archive of one (src/agentlet/skill-archive.ts). Scanning reads it and its files without following any
// symbolic link out of the folder; importing re-reads them, checks the revision the owner saw, scans every
// file for secrets (a binary one as its text runs) before anything is written, copies the files with their
// kept permission bits into `<root>/skills/<id>/` (temp directory, then rename), writes its receipt v2 and
// publishes. Nothing here writes outside the resource root.
import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import { ResourceId, SINGLE_LINE_PATTERN } from '../schemas/common.js';
import { ReconcileEntryV2, SOURCE_REVISION_PATTERN, V2_BOUNDS } from '../schemas/resource.js';
import { andMore, namedFindings, type ScanScope, type SecretFinding, type SecretScanner } from '../secrets/secret-scanner.js';
import { writeFileDurably } from '../storage/durable-file.js';
import type { SkillDiagnosticCode } from '../schemas/skill.js';
import { firstControlCharacter } from '../text/control-characters.js';
import { checkSkillFrontMatter, type SkillFrontMatterWarning } from '../text/front-matter.js';
import { JobError } from './job-error.js';
import { scannedText } from './scanned-text.js';
import type { JobContext } from './job-context.js';
import { allowedFindingsOf, jobAllowlist, keepAllowedFindings } from './allowed-findings.js';
import { ArchiveRefusal, archiveStem, isSkillArchive, readSkillArchive } from './skill-archive.js';
import { serializeReceipt, type ReceiptV2 } from './receipt.js';
import { DIR_MODE, KIND_DIRS, RECEIPTS_DIR } from './resource-root.js';
import { isOrphan, rootDiagnostics, type RootDiagnostic } from './skill-folders.js';

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
  /** Entries of a skill archive, folders included. */
  archiveEntries: 2000,
  /** How many times its own size a skill archive may unpack to. */
  archiveRatio: 100,
} as const;

/**
 * Why a folder is no candidate (src/schemas/skill.ts lists them); `secret_detected`: its SKILL.md looks like
 * it holds a secret; `skill_not_listed`: a full scan left it out.
 */
export type DiagnosticCode = SkillDiagnosticCode | 'secret_detected' | 'skill_not_listed';

/** A departure from the Agent Skills format that does not refuse the skill. */
export interface ScanWarning {
  code: SkillFrontMatterWarning;
  message: string;
}

export interface ScanCandidate {
  id: string;
  name: string;
  sourcePath: string;
  sourceContent: string;
  sourceRevision: string;
  /** Present when the skill departs from the format in a way that does not refuse it. */
  warnings?: ScanWarning[];
}

/** What a skill refused for a secret finding still tells the owner: enough to allow the finding and import it. */
export interface SecretRefusal {
  id: string;
  sourceRevision: string;
  /** Where the secrets look to be (field, line, rule, fingerprint; never the value), at most MAX_NAMED_FINDINGS. */
  findings: SecretFinding[];
}

export interface ScanDiagnostic extends Partial<SecretRefusal> {
  path: string;
  code: DiagnosticCode | RootDiagnostic['code'];
  message: string;
}

export interface ScanResult {
  rootPath: string;
  candidates: ScanCandidate[];
  diagnostics: ScanDiagnostic[];
}

export interface SkillFile {
  /** Relative to the skill folder, `/`-separated. */
  rel: string;
  bytes: Buffer;
  /** The permission bits the copy gets (`keptMode`). */
  mode: number;
}

/**
 * The permission bits a copied file keeps: read, write and run for owner and group, read and run for
 * others; never setuid, setgid, sticky or world-writable.
 */
export function keptMode(mode: number): number {
  return mode & 0o775;
}

/** One skill folder read whole: its candidate and every file's bytes (what an import copies). */
export interface ReadSkill {
  candidate: ScanCandidate;
  files: SkillFile[];
}

/** Why a skill folder or archive is refused, with its diagnostic code. */
export class SkillProblem extends Error {
  constructor(
    readonly code: DiagnosticCode,
    message: string,
    /** Set for `secret_detected`. */
    readonly refusal?: SecretRefusal,
  ) {
    super(message);
  }
}

/** The scan's diagnostic for `path`: the problem's code and message, and what a secret refusal tells. */
function diagnosticOf(where: string, problem: SkillProblem): ScanDiagnostic {
  return { path: where, code: problem.code, message: problem.message, ...problem.refusal };
}

const checkId = Compile(ResourceId);
const checkEntry = Compile(ReconcileEntryV2);
const HEX64 = new RegExp(SOURCE_REVISION_PATTERN);

/**
 * The revision of a skill folder: SHA-256 (hex) over its files sorted by relative path (`/`-separated,
 * compared as UTF-16 code units), each contributing its path, a NUL, its kept permission bits in octal
 * (`755`), a NUL, its length in decimal, a NUL, and its bytes. Any change of a file's name, place, mode or
 * content changes it.
 */
export function skillRevision(files: readonly SkillFile[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))) {
    hash
      .update(file.rel, 'utf8')
      .update('\0')
      .update(keptMode(file.mode).toString(8))
      .update('\0')
      .update(String(file.bytes.length))
      .update('\0')
      .update(file.bytes);
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
      const mode = target === full ? st.mode : (await stat(target)).mode;
      const bytes = await readFile(target);
      total += bytes.length;
      if (total > SKILL_LIMITS.bytes) throw new SkillProblem('skill_invalid', `more than ${SKILL_LIMITS.bytes} bytes in all`);
      files.push({ rel, bytes, mode: keptMode(mode) });
    }
  };
  await walk(realDir, '', 0);
  return files;
}

/**
 * `name` and `description` from SKILL.md's YAML front matter, and the format's warnings; the first error
 * (src/text/front-matter.ts) refuses it. `folderName` is what a differing `name` is warned about.
 */
export function parseSkillFile(text: string, folderName?: string): { name: string; description: string; warnings: ScanWarning[] } {
  const checked = checkSkillFrontMatter(text, folderName);
  for (const issue of checked.issues) if (issue.severity === 'error') throw new SkillProblem(issue.code, issue.message);
  const name = checked.name!;
  if (name.length > V2_BOUNDS.name)
    throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s name is longer than ${V2_BOUNDS.name} characters`);
  return {
    name,
    description: checked.description!,
    warnings: checked.issues.flatMap((i) => (i.severity === 'warning' ? [{ code: i.code, message: i.message }] : [])),
  };
}

/**
 * A skill's `sourceContent`: its whole SKILL.md (front matter included) with CRLF line endings as LF,
 * trimmed, without a byte order mark. The copy on the machine keeps the file's bytes, and the revision is
 * over them.
 */
export function skillSourceContent(text: string): string {
  return text
    .replace(/^\uFEFF/, '')
    .replaceAll('\r\n', '\n')
    .trim();
}

/** Why SKILL.md's name or text cannot be a record's, naming the cause; undefined when they can. */
function recordTextProblem(name: string, sourceContent: string): string | undefined {
  const inName = firstControlCharacter(name);
  if (inName) return `${SKILL_FILE}'s name holds a control character (${inName.character})`;
  if (sourceContent.length > V2_BOUNDS.sourceContent)
    return `${SKILL_FILE} is ${sourceContent.length.toLocaleString('en-US')} characters long as the record's text; at most ${V2_BOUNDS.sourceContent.toLocaleString('en-US')}`;
  const inText = firstControlCharacter(sourceContent);
  if (inText)
    return `${SKILL_FILE} holds a control character (${inText.character}) on line ${inText.line}; only tab and line breaks are text`;
  return undefined;
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
  if (st.isFile() && isSkillArchive(dir)) {
    const { files, topFolder } = await readArchive(dir, st.size);
    return candidateOf(dir, files, topFolder ?? archiveStem(dir), id ?? idFromFolderName(archiveStem(dir)), scanner, scope);
  }
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
  return candidateOf(dir, files, path.basename(dir), id ?? idFromFolderName(path.basename(dir)), scanner, scope);
}

/** A skill archive's files, or the SkillProblem that refuses it. */
async function readArchive(file: string, size: number): Promise<{ files: SkillFile[]; topFolder?: string }> {
  if (size > SKILL_LIMITS.bytes)
    throw new SkillProblem('skill_archive_too_large', `the archive is larger than ${SKILL_LIMITS.bytes} bytes`);
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new SkillProblem('skill_unreadable', `cannot read the archive (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const read = await readSkillArchive(bytes, SKILL_LIMITS);
    const skillFile = read.files.find((f) => f.rel === SKILL_FILE);
    if (!skillFile) throw new SkillProblem('skill_invalid', `no ${SKILL_FILE} at the archive's top or in its single top folder`);
    if (skillFile.bytes.length > SKILL_LIMITS.skillFileBytes)
      throw new SkillProblem('skill_invalid', `${SKILL_FILE} is larger than ${SKILL_LIMITS.skillFileBytes} bytes`);
    return { ...read, files: read.files.map((f) => ({ ...f, mode: keptMode(f.mode) })) };
  } catch (err) {
    if (err instanceof ArchiveRefusal) throw new SkillProblem(err.code, err.message);
    throw err;
  }
}

/** The candidate of a skill's files; `folderName` is what its `name` is compared with. */
async function candidateOf(
  dir: string,
  files: SkillFile[],
  folderName: string,
  candidateId: string,
  scanner?: SecretScanner,
  scope?: ScanScope,
): Promise<ReadSkill> {
  const text = files.find((f) => f.rel === SKILL_FILE)!.bytes.toString('utf8');
  const { name, warnings } = parseSkillFile(text, folderName);
  const sourceContent = skillSourceContent(text);
  if (!checkId.Check(candidateId))
    throw new SkillProblem(
      'skill_invalid',
      `the folder name gives no valid resource ID (lower-case letters and digits joined by hyphens): "${candidateId}"`,
    );
  const problem = recordTextProblem(name, sourceContent);
  if (problem !== undefined) throw new SkillProblem('skill_invalid', problem);
  // What the checks above leave to the record's schema (nothing today); refused, never sent.
  if (!checkEntry.Check({ schemaVersion: 2, id: candidateId, name, sourceContent }))
    throw new SkillProblem('skill_invalid', `${SKILL_FILE}'s name or text does not fit a record`);
  if (scanner) {
    const findings = await scanner.scan(
      [
        ['/name', name],
        ['/sourceContent', sourceContent],
      ],
      scope,
    );
    if (findings.length > 0) {
      // No fingerprint in the words: the registry scans a machine's words; the findings go as data.
      const { named: kept, more } = namedFindings(findings);
      const where = kept.map((f) => `${f.field === '/name' ? 'its name' : `line ${f.line}`}, rule ${f.rule}`).join('; ');
      throw new SkillProblem(
        'secret_detected',
        `${SKILL_FILE} looks like it contains a secret (${where}${andMore(more)}); remove it, or if it is none, allow the fingerprints in findings (POST /api/acp/secret-allowlist) and import it with this sourceRevision`,
        { id: candidateId, sourceRevision: skillRevision(files), findings: kept },
      );
    }
  }
  const candidate: ScanCandidate = { id: candidateId, name, sourcePath: dir, sourceContent, sourceRevision: skillRevision(files) };
  if (warnings.length > 0) candidate.warnings = warnings;
  return { candidate, files };
}

/**
 * Scans `rootPath`: the `.zip`/`.skill` archive or the folder itself when it is a skill (a folder holding SKILL.md),
 * else each direct sub-folder holding SKILL.md and each skill archive in it.
 */
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
    result.diagnostics.push(diagnosticOf(where, problem));
  };
  const st = await stat(root).catch(() => undefined);
  if (st?.isFile() && isSkillArchive(root)) {
    try {
      result.candidates.push((await readSkill(root, scanner, undefined, scope)).candidate);
    } catch (err) {
      diagnose(root, err);
    }
    return result;
  }
  if (!st?.isDirectory()) throw new JobError('skill_unreadable', `${root} does not exist or is not a folder or skill archive`);
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
      if (isSkillArchive(name))
        diagnose(dir, new SkillProblem('skill_invalid', 'the skill archive is a symbolic link; name the real file'));
      else if (await stat(path.join(dir, SKILL_FILE)).catch(() => undefined))
        diagnose(dir, new SkillProblem('skill_invalid', 'the skill folder is a symbolic link; name the real folder'));
      continue;
    }
    const archive = entry.isFile() && isSkillArchive(name);
    if (!archive && (!entry.isDirectory() || !(await lstat(path.join(dir, SKILL_FILE)).catch(() => undefined)))) continue;
    if (result.candidates.length >= SKILL_LIMITS.candidates) {
      diagnose(
        dir,
        new SkillProblem(
          'skill_not_listed',
          `not scanned: a scan lists at most ${SKILL_LIMITS.candidates} skills; scan this folder on its own, or a folder holding fewer`,
        ),
      );
      continue;
    }
    try {
      const { candidate } = await readSkill(dir, scanner, undefined, scope);
      const size = Buffer.byteLength(JSON.stringify(candidate));
      if (answerBytes + size > SKILL_LIMITS.answerBytes) {
        diagnose(dir, new SkillProblem('skill_not_listed', 'not listed: the scan answer is full; scan this folder on its own'));
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
  let value: Partial<ReceiptV2> | null;
  try {
    value = JSON.parse(text) as Partial<ReceiptV2> | null;
  } catch {
    throw new JobError('resource_conflict', `receipts/${id}.json is not an imported skill's receipt`);
  }
  if (
    value === null ||
    value.schemaVersion !== 2 ||
    value.kind !== 'skill' ||
    typeof value.source !== 'string' ||
    typeof value.sourceRevision !== 'string'
  ) {
    throw new JobError('resource_conflict', `${id} on this machine is not a skill imported from a folder; it is left as it is`);
  }
  return value as ReceiptV2;
}

function payloadOf(payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new JobError('invalid_payload', 'the job payload must be an object');
  return payload as Record<string, unknown>;
}

function asJobError(err: unknown): unknown {
  return err instanceof SkillProblem ? new JobError(err.code, err.message) : err;
}

/** A copy put in place: `keep` drops what it replaced, `undo` puts that back. */
interface Installed {
  keep(): Promise<void>;
  undo(): Promise<void>;
}

/**
 * Copies the files into `<root>/skills/<id>/` through a temp folder beside it and a rename; a folder
 * already there (a refresh) is moved aside, and removed by `keep` or put back by `undo`.
 */
async function install(root: string, id: string, files: readonly SkillFile[]): Promise<Installed> {
  const skills = path.join(root, KIND_DIRS.skill);
  const skillsSt = await lstat(skills).catch(() => undefined);
  if (skillsSt?.isSymbolicLink() || (skillsSt && !skillsSt.isDirectory()))
    throw new JobError('invalid_root', `${KIND_DIRS.skill}/ in the resource root must be a real folder`);
  if (!skillsSt) await mkdir(skills, { mode: DIR_MODE });
  const suffix = randomBytes(6).toString('hex');
  const temp = path.join(skills, `.${id}.import-${suffix}`);
  await mkdir(temp, { mode: DIR_MODE });
  const target = skillDir(root, id);
  const aside = path.join(skills, `.${id}.old-${suffix}`);
  let existing = false;
  try {
    for (const file of files) {
      const into = path.join(temp, ...file.rel.split('/'));
      await mkdir(path.dirname(into), { recursive: true, mode: DIR_MODE });
      await writeFile(into, file.bytes, { mode: 0o600, flag: 'wx' });
      // The mode given to writeFile is filtered by the umask; the copy gets the source's kept bits.
      await chmod(into, keptMode(file.mode));
    }
    existing = (await lstat(target).catch(() => undefined)) !== undefined;
    if (existing) await rename(target, aside);
    await rename(temp, target);
  } catch (err) {
    await rm(temp, { recursive: true, force: true });
    throw err;
  }
  return {
    keep: async () => {
      if (existing) await rm(aside, { recursive: true, force: true });
    },
    undo: async () => {
      await rm(target, { recursive: true, force: true });
      if (existing) await rename(aside, target);
    },
  };
}

/** Publishes a job's change of receipt `id`: that receipt alone when the context can, else the whole set. */
async function publishReceipt(context: JobContext, id: string): Promise<void> {
  if (context.publishReceipt) await context.publishReceipt(id);
  else await context.publish();
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
          (await readSkill(source, context.scanner, receipt.id, { route: 'resource.refresh', allowed: jobAllowlist(body) })).candidate,
        ],
        diagnostics: [],
      };
    } catch (err) {
      if (!(err instanceof SkillProblem)) throw err;
      return { rootPath: source, candidates: [], diagnostics: [diagnosticOf(source, err)] };
    }
  }
  const result = await scanSkills(body.rootPath as string, context.scanner, { route: 'resource.import', allowed: jobAllowlist(body) });
  // Every folder scan also shows the machine's own root: receipts it cannot publish, folders nothing names.
  const root = await rootDiagnostics(context.root, context.scanner, context.machineId, SKILL_LIMITS.diagnostics);
  return { ...result, diagnostics: [...root, ...result.diagnostics].slice(0, SKILL_LIMITS.diagnostics) };
}

/**
 * `skill.import {id, sourcePath, expectedRevision}`, or `{id, expectedRevision, refresh: true}` (the source
 * is the receipt's): copies the skill, writes its receipt, publishes. `replace: true` (the registry sends it
 * for a skill the owner imported) imports over the skill already imported under the ID, or over a folder no
 * receipt names; without it either is 409 `resource_conflict`, naming the way out.
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
    const replace = body.replace === true;
    // An imported skill whose folder is gone (deleted by hand) has nothing left to lose: importing it again
    // replaces its receipt, as it replaces an imported skill the registry still lists.
    if (existing && !replace && (await lstat(skillDir(context.root, id)).catch(() => undefined))) {
      throw new JobError(
        'resource_conflict',
        `${id} is already imported on this machine, without a record the registry lets an import replace; remove it (DELETE /api/acp/resources/${id}) and import it again`,
      );
    }
    if (!existing && (await lstat(skillDir(context.root, id)).catch(() => undefined))) {
      if (!(await isOrphan(context.root, id))) {
        throw new JobError(
          'resource_conflict',
          `${KIND_DIRS.skill}/${id} in the resource root is named by another receipt; it is left as it is`,
        );
      }
      if (!replace) {
        throw new JobError(
          'resource_conflict',
          `${KIND_DIRS.skill}/${id} already exists in the resource root without a receipt; clear it with DELETE /api/acp/resources/${id}, then import again`,
        );
      }
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
  const texts = skill.files.map((f): [string, string] => [`/files/${f.rel}`, scannedText(f.bytes)]);
  // The owner's allowlist entries come with the job: the registry holds the list, the machine scans the files.
  const findings = await context.scanner.scan(texts, {
    route: refresh ? 'resource.refresh' : 'resource.import',
    allowed: jobAllowlist(body),
  });
  if (findings.length > 0) {
    // No fingerprint in the message: the registry scans a machine's words, and names the fingerprints itself.
    const { named, more } = namedFindings(findings);
    const where = named.map((f) => `${f.field.slice('/files/'.length)} line ${f.line} (rule ${f.rule})`);
    throw new JobError(
      'secret_detected',
      `nothing was copied: ${where.join(', ')}${andMore(more)} look${findings.length === 1 ? 's' : ''} like it holds a secret`,
      named,
    );
  }
  const receiptFile = receiptPath(context.root, id);
  const before = {
    receipt: await readFile(receiptFile).catch(() => undefined),
    allowed: await allowedFindingsOf(context.root, id),
  };
  const installed = await install(context.root, id, skill.files);
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
  try {
    await keepAllowedFindings(context.root, id, jobAllowlist(body));
    await writeFileDurably(receiptFile, serializeReceipt(receipt));
    await publishReceipt(context, id);
  } catch (err) {
    // The registry did not take it (a quota, a refusal): the machine is put back as it was, so what it holds
    // is what the registry lists, and the job answers with the refusal.
    await installed.undo();
    if (before.receipt) await writeFileDurably(receiptFile, before.receipt);
    else await rm(receiptFile, { force: true });
    await keepAllowedFindings(context.root, id, before.allowed);
    throw err;
  }
  await installed.keep();
  return { id, sourceRevision: skill.candidate.sourceRevision, created: !refresh && !existing };
}

/**
 * `skill.remove {id}`: removes the imported skill's receipt and folder, then publishes. Without a receipt,
 * `skills/<id>` is removed when no other receipt names it (an orphan: the receipt was deleted by hand); one
 * another receipt names is 409 `resource_conflict`. `{removed: false}` when there is neither.
 */
export async function removeJob(payload: unknown, context: JobContext): Promise<{ removed: boolean }> {
  const { id } = payloadOf(payload);
  if (typeof id !== 'string' || !checkId.Check(id)) throw new JobError('invalid_payload', 'id must be a resource ID');
  const receipt = await importedReceipt(context.root, id);
  if (!receipt) {
    if (!(await lstat(skillDir(context.root, id)).catch(() => undefined))) return { removed: false };
    if (!(await isOrphan(context.root, id)))
      throw new JobError('resource_conflict', `${KIND_DIRS.skill}/${id} is named by another receipt; it is left as it is`);
    await rm(skillDir(context.root, id), { recursive: true, force: true });
    await keepAllowedFindings(context.root, id, []);
    return { removed: true };
  }
  await rm(receiptPath(context.root, id), { force: true });
  // rm never follows a symbolic link: a link inside the folder is removed, not what it points to.
  await rm(skillDir(context.root, id), { recursive: true, force: true });
  await keepAllowedFindings(context.root, id, []);
  await publishReceipt(context, id);
  return { removed: true };
}
