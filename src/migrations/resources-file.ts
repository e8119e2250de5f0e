// The on-disk format of `agent-resources/resources.json`, v1 and v2 (docs/decisions/record-v2.md,
// "resources.json v1 and v2"). The file stays v1 while every record is a v1 record without customization (byte-compatible with
// every earlier build); otherwise it is v2 exactly as upstream's Agenetes store writes it
// (`{schemaVersion: 2, state: {resources}}`, two-space JSON), where a record written as v1 is upstream's
// v2 conversion of it plus a `v1` key holding what the provider wrote (upstream's parser ignores unknown
// keys, so the file stays one upstream parses). The first v2 write over a v1 file keeps the v1 bytes in a
// durable backup first. Framework-free.
import { readFile } from 'node:fs/promises';
import { Compile } from 'typebox/compile';
import { sourceContentOfV1, toV2 } from '../registry/resource-versions.js';
import { AgentResource, AgentResourceV2, StoredResource, type StoredResourceV1 } from '../schemas/resource.js';
import { nodeFileSystem, writeFileDurably, type FileSystemSeam } from '../storage/durable-file.js';
import { StoreFileError } from '../storage/store-file-error.js';

/** The newest resources.json version this build reads and writes. */
export const RESOURCES_FILE_VERSION = 2;

const checkStored = Compile(StoredResource);
const checkV2 = Compile(AgentResourceV2);
const checkV1 = Compile(AgentResource);

/** The version the file must have to hold `records`: 1 while they are all uncustomized v1 records. */
export function fileVersionFor(records: Iterable<StoredResource>): 1 | 2 {
  for (const r of records) if (r.schemaVersion === 2 || r.displayName !== undefined || r.userContent !== undefined || r.imported) return 2;
  return 1;
}

/**
 * One record as a v2 file entry: upstream's record, plus `v1` for a record written as v1, plus
 * `imported: true` for a skill the owner imported (upstream's parser ignores both keys).
 */
function v2Entry(record: StoredResource): Record<string, unknown> {
  if (record.schemaVersion === 2) return record;
  return {
    ...toV2(record),
    v1: { name: record.name, description: record.description, instructions: record.instructions },
    ...(record.imported ? { imported: true } : {}),
  };
}

/** `records` sorted by id, as the file text. */
export function serializeResourcesFile(records: readonly StoredResource[]): string {
  return [...resourcesFilePieces(records)].join('');
}

/** Where a v2 file's record entries sit: inside `state.resources`, three levels deep in two-space JSON. */
const V2_ENTRY_INDENT = '      ';

/**
 * The file text of `records` in pieces of about `pieceChars` characters each, so a large catalogue is written
 * without one string (and one buffer) of the whole file: v1 is compact JSON, v2 two-space JSON, exactly as
 * `JSON.stringify` writes the whole document.
 */
export function* resourcesFilePieces(records: readonly StoredResource[], pieceChars = 1 << 20): Generator<string> {
  // An empty catalogue is a v1 file (fileVersionFor).
  if (records.length === 0) {
    yield '{"schemaVersion":1,"state":{"resources":[]}}\n';
    return;
  }
  const v2 = fileVersionFor(records) === 2;
  let piece = v2 ? '{\n  "schemaVersion": 2,\n  "state": {\n    "resources": [\n' : '{"schemaVersion":1,"state":{"resources":[';
  for (let i = 0; i < records.length; i++) {
    // Two-space JSON holds a line break only between tokens (one inside a string is written `\n`), so each
    // of an entry's lines moves in by its depth.
    if (v2)
      piece +=
        (i > 0 ? ',\n' : '') + V2_ENTRY_INDENT + JSON.stringify(v2Entry(records[i]!), null, 2).replaceAll('\n', `\n${V2_ENTRY_INDENT}`);
    else piece += (i > 0 ? ',' : '') + JSON.stringify(records[i]);
    if (piece.length >= pieceChars) {
      yield piece;
      piece = '';
    }
  }
  yield piece + (v2 ? '\n    ]\n  }\n}\n' : ']}}\n');
}

/** A v2 file entry back to the stored record: a record written as v1 when its `v1` key still describes it. */
function storedOfV2Entry(entry: unknown): StoredResource | undefined {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const { v1, imported, ...rest } = entry as Record<string, unknown>;
  if (!checkV2.Check(rest) || (imported !== undefined && imported !== true)) return undefined;
  const mark = imported === true ? { imported: true as const } : {};
  const record = { ...rest, ...mark };
  if (v1 !== undefined) {
    const origin = v1 as { name?: unknown; description?: unknown; instructions?: unknown };
    const candidate: StoredResourceV1 = {
      schemaVersion: 1,
      id: record.id,
      name: origin?.name as string,
      provider: record.provider,
      description: origin?.description as string,
      instructions: origin?.instructions as string,
      ...(record.displayName !== undefined ? { displayName: record.displayName } : {}),
      ...(record.userContent !== '' ? { userContent: record.userContent } : {}),
      ...mark,
    };
    // Kept only while it is still the origin of what the entry says (a hand edit of the v2 fields wins).
    if (
      checkV1.Check({
        schemaVersion: 1,
        id: candidate.id,
        name: candidate.name,
        provider: candidate.provider,
        description: candidate.description,
        instructions: candidate.instructions,
      }) &&
      candidate.name.trim() === record.name &&
      sourceContentOfV1(candidate.description, candidate.instructions) === record.sourceContent
    ) {
      return candidate;
    }
  }
  return record;
}

export interface ParsedResourcesFile {
  version: 1 | 2;
  records: StoredResource[];
}

/** Parses the file's text; refuses (StoreFileError) anything it cannot read exactly. */
export function parseResourcesFile(file: string, text: string): ParsedResourcesFile {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new StoreFileError(file, 'does not parse as JSON');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new StoreFileError(file, 'is not a JSON object');
  const { schemaVersion, state } = doc as { schemaVersion?: unknown; state?: unknown };
  if (typeof schemaVersion !== 'number') throw new StoreFileError(file, 'has no numeric schemaVersion');
  if (schemaVersion > RESOURCES_FILE_VERSION) {
    throw new StoreFileError(
      file,
      `has schemaVersion ${schemaVersion}, newer than this version of the service understands (${RESOURCES_FILE_VERSION})`,
    );
  }
  if (schemaVersion !== 1 && schemaVersion !== 2)
    throw new StoreFileError(file, `has unknown schemaVersion ${schemaVersion} (expected 1 or 2)`);
  if (state === null || typeof state !== 'object' || Array.isArray(state)) throw new StoreFileError(file, 'has no state object');
  const list = (state as { resources?: unknown }).resources;
  if (list === undefined) return { version: schemaVersion, records: [] };
  if (!Array.isArray(list)) throw new StoreFileError(file, 'state.resources is not an array');
  const records: StoredResource[] = [];
  const ids = new Set<string>();
  for (const entry of list) {
    const record = schemaVersion === 1 ? (checkV1.Check(entry) ? entry : undefined) : storedOfV2Entry(entry);
    if (!record || !checkStored.Check(record)) {
      throw new StoreFileError(file, `holds an invalid resource record (${JSON.stringify((entry as { id?: unknown })?.id ?? null)})`);
    }
    if (ids.has(record.id)) throw new StoreFileError(file, `holds resource ${record.id} twice`);
    ids.add(record.id);
    records.push(record);
  }
  return { version: schemaVersion, records };
}

export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `resources.json.v1.bak`, or the next free `resources.json.v1.N.bak` when another original is kept there. */
export async function resourcesBackupPath(file: string, original: Buffer): Promise<{ path: string; present: boolean }> {
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? `${file}.v1.bak` : `${file}.v1.${n}.bak`;
    const existing = await readIfExists(candidate);
    if (existing === undefined) return { path: candidate, present: false };
    if (existing.equals(original)) return { path: candidate, present: true };
  }
}

/**
 * Writes the file text (whole, or in pieces) over the file durably; when that turns a v1 file into v2, first
 * keeps the v1 bytes in a durable backup. Returns the backup's path when one was needed, and the bytes written.
 */
export async function writeResourcesFile(
  file: string,
  text: string | Iterable<string>,
  fs: FileSystemSeam = nodeFileSystem,
): Promise<{ backup: string | undefined; bytes: number }> {
  const pieces = typeof text === 'string' ? [text] : text;
  const iterator = pieces[Symbol.iterator]();
  const first = iterator.next();
  const head = first.done ? '' : first.value;
  let backup: string | undefined;
  if (head.startsWith(V2_FILE_HEAD)) {
    const original = await readIfExists(file);
    if (original !== undefined && parseVersion(original) === 1) {
      const target = await resourcesBackupPath(file, original);
      if (!target.present) await writeFileDurably(target.path, original, fs);
      backup = target.path;
    }
  }
  const bytes = await writeFileDurably(
    file,
    (function* () {
      yield head;
      for (let next = iterator.next(); !next.done; next = iterator.next()) yield next.value;
    })(),
    fs,
  );
  return { backup, bytes };
}

/** How every v2 file this build writes begins (two-space JSON, `schemaVersion` first). */
const V2_FILE_HEAD = '{\n  "schemaVersion": 2,';

/** The version of a file on disk: one this build wrote as v2 is known by its first bytes, without parsing it whole. */
function parseVersion(bytes: Buffer): number | undefined {
  if (bytes.subarray(0, V2_FILE_HEAD.length).toString('latin1') === V2_FILE_HEAD) return 2;
  try {
    return (JSON.parse(bytes.toString('utf8')) as { schemaVersion?: number }).schemaVersion;
  } catch {
    return undefined;
  }
}

export interface ResourcesFileReport {
  file: string;
  exists: boolean;
  /** The version on disk. */
  from?: 1 | 2;
  /** The version the file has once its journal is folded in (what a start writes). */
  to?: 1 | 2;
  records: number;
  writtenAsV1: number;
  customized: number;
  /** Where the v1 bytes are (or would be) kept when the file becomes v2 now. */
  backupFile?: string;
}

/** What `resources.json` (with its journal replayed) holds, and whether folding the journal makes it v2. */
export async function inspectResourcesFile(file: string, journal: readonly (readonly unknown[])[]): Promise<ResourcesFileReport> {
  const bytes = await readIfExists(file);
  if (bytes === undefined && journal.length === 0) return { file, exists: false, records: 0, writtenAsV1: 0, customized: 0 };
  const parsed = bytes === undefined ? { version: 1 as const, records: [] } : parseResourcesFile(file, bytes.toString('utf8'));
  const records = new Map(parsed.records.map((r) => [r.id, r]));
  for (const changes of journal) {
    for (const change of changes as ({ put?: unknown; withdraw?: unknown } | null)[]) {
      if (change && checkStored.Check(change.put)) records.set(change.put.id, change.put);
      else if (change && typeof change.withdraw === 'string') records.delete(change.withdraw);
      else throw new StoreFileError(`${file}.journal`, 'holds an invalid change');
    }
  }
  const all = [...records.values()];
  const to = journal.length === 0 ? parsed.version : fileVersionFor(all);
  const report: ResourcesFileReport = {
    file,
    exists: bytes !== undefined,
    from: parsed.version,
    to,
    records: all.length,
    writtenAsV1: all.filter((r) => r.schemaVersion === 1).length,
    customized: all.filter((r) => r.displayName !== undefined || (r.userContent ?? '') !== '').length,
  };
  if (bytes !== undefined && parsed.version === 1 && to === 2) report.backupFile = (await resourcesBackupPath(file, bytes)).path;
  return report;
}

export function describeResourcesReport(report: ResourcesFileReport, dryRun: boolean): string[] {
  if (!report.exists && report.records === 0) return [`${report.file}: no resources file; nothing to migrate`];
  const what = `${report.records} record(s), ${report.writtenAsV1} written as v1 (kept exactly), ${report.customized} customized by the owner`;
  if (report.backupFile) {
    return [
      `${report.file}: resources file v1 → v2 (its journal holds v2 records or customizations)${dryRun ? ' (dry run: nothing written)' : ''}; ${what}`,
      `  ${dryRun ? 'would back up' : 'backed up'} the original bytes to ${report.backupFile}`,
    ];
  }
  if (report.from === 2) return [`${report.file}: resources file v2 (upstream's format); ${what}; nothing to do`];
  return [
    `${report.file}: resources file v1; ${what}; nothing to do`,
    '  it becomes v2 when a v2 record or an owner customization is first stored; its v1 bytes are backed up first',
  ];
}
