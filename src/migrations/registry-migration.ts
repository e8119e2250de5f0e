// Runs the registry-file migration on disk: read, migrate in memory, and (unless it is a dry run or nothing
// changes) write a durable backup of the original bytes beside the file, then the setup logs leaving the
// file (`<profile id>.setup.jsonl` beside it, where upstream's store keeps them), then the migrated file
// durably. A run killed midway is finished by the next one: it starts again from the original bytes.
// A file already at v4 with v2 profiles is left alone, so re-running is a no-op. A file that does not
// parse, or has a future or unknown version, stops with StoreFileError and is never written.
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { nodeFileSystem, writeFileDurably, type FileSystemSeam } from '../storage/durable-file.js';
import { StoreFileError } from '../storage/store-file-error.js';
import { LARGE_FILE_BYTES, silentProgress, type Progress } from '../progress.js';
import { MigrationError, type JsonObject } from './profile-v1.js';
import { migrateRegistryDocument, serializeRegistryDocument, serializeSetupLog, setupLogFileName } from './registry-file.js';

export interface RegistryMigrationReport {
  file: string;
  /** False when there is no registry file yet (nothing to migrate; the store starts empty). */
  exists: boolean;
  /** The version found on disk. */
  from?: number;
  /** True when the file is (or, in a dry run, would be) rewritten. */
  changed: boolean;
  steps: string[];
  upgradedProfileIds: string[];
  /** Where the original bytes are (or would be) kept. */
  backupFile?: string;
  /** Setup-log files written (or, in a dry run, that would be), one per profile that had an embedded log. */
  setupLogFiles: string[];
  /** The document as the store will load it (v4); absent when there is no file. */
  doc?: JsonObject;
}

async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `registry.json.v3.bak`, or the next free `registry.json.v3.N.bak` when another original is kept there. */
async function backupPathFor(file: string, version: number, original: Buffer): Promise<{ path: string; present: boolean }> {
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? `${file}.v${version}.bak` : `${file}.v${version}.${n}.bak`;
    const existing = await readIfExists(candidate);
    if (existing === undefined) return { path: candidate, present: false };
    if (existing.equals(original)) return { path: candidate, present: true };
  }
}

/** The file's bytes, read in chunks that advance `progress` when the file is large; undefined when absent. */
async function readWithProgress(file: string, progress: Progress): Promise<{ bytes: Buffer; large: boolean } | undefined> {
  const size = await stat(file).then(
    (s) => s.size,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    },
  );
  if (size === undefined) return undefined;
  if (size < LARGE_FILE_BYTES) {
    const bytes = await readIfExists(file);
    return bytes && { bytes, large: false };
  }
  progress.stage('reading registry.json', size, 'bytes');
  const chunks: Buffer[] = [];
  for await (const chunk of createReadStream(file)) {
    chunks.push(chunk as Buffer);
    progress.advance((chunk as Buffer).length);
  }
  return { bytes: Buffer.concat(chunks), large: true };
}

export async function migrateRegistryFile(
  file: string,
  options: { dryRun?: boolean; fs?: FileSystemSeam; progress?: Progress } = {},
): Promise<RegistryMigrationReport> {
  const read = await readWithProgress(file, options.progress ?? silentProgress);
  if (read === undefined) return { file, exists: false, changed: false, steps: [], upgradedProfileIds: [], setupLogFiles: [] };
  const original = read.bytes;
  // A bar only for a large file; small ones are done before it could be drawn.
  const progress = read.large ? (options.progress ?? silentProgress) : silentProgress;
  try {
    return await migrateBytes(file, original, options, progress);
  } finally {
    progress.done();
  }
}

async function migrateBytes(
  file: string,
  original: Buffer,
  options: { dryRun?: boolean; fs?: FileSystemSeam },
  progress: Progress,
): Promise<RegistryMigrationReport> {
  progress.stage('migrating', 1, 'file');
  let parsed: unknown;
  try {
    parsed = JSON.parse(original.toString('utf8'));
  } catch {
    throw new StoreFileError(file, 'does not parse as JSON');
  }
  let result;
  try {
    result = migrateRegistryDocument(parsed);
  } catch (err) {
    if (err instanceof MigrationError) throw new StoreFileError(file, err.message);
    throw err;
  }
  progress.advance();
  const report: RegistryMigrationReport = {
    file,
    exists: true,
    from: result.from,
    changed: result.steps.length > 0,
    steps: result.steps,
    upgradedProfileIds: result.upgradedIds,
    setupLogFiles: [...result.setupLogs.keys()].map((id) => path.join(path.dirname(file), setupLogFileName(id))),
    doc: result.doc,
  };
  if (!report.changed) return report;
  const backup = await backupPathFor(file, result.from, original);
  report.backupFile = backup.path;
  if (options.dryRun) return report;
  const fs = options.fs ?? nodeFileSystem;
  progress.stage('writing', 2 + result.setupLogs.size, 'files');
  if (!backup.present) await writeFileDurably(backup.path, original, fs);
  progress.advance();
  // Before the registry file: a run killed in between starts from the original again and rewrites them.
  for (const [id, entries] of result.setupLogs) {
    await writeFileDurably(path.join(path.dirname(file), setupLogFileName(id)), serializeSetupLog(entries), fs);
    progress.advance();
  }
  await writeFileDurably(file, serializeRegistryDocument(result.doc), fs);
  progress.advance();
  return report;
}
