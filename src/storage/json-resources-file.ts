// resources.json of the JSON store (docs/data-files.md): its records, journaled (`{put}` / `{withdraw}` lines
// beside the file), opened as a durable document, and read from outside without opening the store.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { Compile } from 'typebox/compile';
import {
  parseResourcesFile,
  readIfExists,
  resourcesFilePieces,
  serializeResourcesFile,
  writeResourcesFile,
} from '../migrations/resources-file.js';
import { toV1 } from '../registry/resource-versions.js';
import { StoredResource, type AgentResource } from '../schemas/resource.js';
import { DurableDocument, type BatchObserver, type JournalCodec } from './durable-document.js';
import { nodeFileSystem, writeFileDurably, type FileSystemSeam } from './durable-file.js';
import type { EventSink } from './event-log.js';
import { JournalCorruptError, journalPathFor, readJournal } from './journal.js';
import { OverlayMap, sortedValues, type RecordMap } from './overlay-map.js';
import { ResourceIndex } from './resource-index.js';
import { StoreFileError } from './store-file-error.js';
import {
  applyRevisionChange,
  cloneRevisions,
  loadRevisions,
  revisionChanges,
  revisionsFilePieces,
  revisionsSnapshot,
  type RevisionsState,
} from './json-revisions.js';
import { digestOf } from '../registry/record-digest.js';

/** The record frozen, its digest computed once (when its write has not already). */
function withDigest(record: StoredResource): StoredResource {
  digestOf(record);
  return Object.freeze(record);
}

export const RESOURCES_FILE = path.join('agent-resources', 'resources.json');

export const REVISIONS_FILE = path.join('agent-resources', 'revisions.json');

export interface ResourcesState extends RevisionsState {
  /** Committed: a Map; in a mutation's draft: an OverlayMap over it. */
  resources: RecordMap<StoredResource>;
  /** The committed state's page order and search index (kept up to date by `apply`); none in a draft. */
  index?: ResourceIndex;
}
const checkResource = Compile(StoredResource);

/** One journaled change of resources.json: a record stored (created or replaced) or an ID withdrawn. */
type ResourceChange = { put: StoredResource } | { withdraw: string };

/**
 * resources.json is journaled: a batch appends its changes (`{put}` / `{withdraw}`) to
 * `resources.json.journal` instead of rewriting the whole catalogue; drafts are overlays, not copies.
 * Compaction folds the journal into the file while later batches go on (DurableDocument's background compaction).
 * Compaction writes the file in the version its records need (src/migrations/resources-file.ts), backing
 * up a v1 file before it first becomes v2.
 */
const resourcesCodec = (file: string, fs: FileSystemSeam, onBackup: (backupFile: string) => void): JournalCodec<ResourcesState> => ({
  clone: (s) => ({ ...cloneRevisions(s), resources: new OverlayMap(s.resources as Map<string, StoredResource>) }),
  serialize: (s) => serializeResourcesFile(sortedValues(s.resources)),
  // Compaction runs beside the appends: the records and revisions as they are now (frozen values, so later
  // batches do not change them), written in pieces, so neither a whole-file string nor a long turn of the
  // event loop holds up the requests meanwhile.
  beginCompaction(s) {
    const records = sortedValues(s.resources);
    const revisions = revisionsSnapshot(s);
    return {
      async write() {
        const written = await writeResourcesFile(file, resourcesFilePieces(records), fs);
        if (written.backup !== undefined) onBackup(written.backup);
        // The revisions beside it, before the journal that also holds them is emptied.
        return written.bytes + (await writeFileDurably(revisionsPathFor(file), revisionsFilePieces(revisions), fs));
      },
      // Each compaction writes the whole state: nothing stays due.
      abandon: () => undefined,
    };
  },
  changes: (draft) => [
    ...(draft.resources as OverlayMap<StoredResource>)
      .changes()
      .map(([id, record]): ResourceChange => (record ? { put: record } : { withdraw: id })),
    ...revisionChanges(draft),
  ],
  apply(state, changes, from) {
    const replayed = from === 'journal';
    for (const change of changes as ResourceChange[]) {
      if (applyRevisionChange(state, change, replayed)) continue;
      if (change !== null && typeof change === 'object' && 'put' in change && (!replayed || checkResource.Check(change.put))) {
        const previous = state.resources.get(change.put.id);
        const record = withDigest(change.put);
        state.resources.set(record.id, record);
        state.index?.put(record, previous);
      } else if (change !== null && typeof change === 'object' && 'withdraw' in change && typeof change.withdraw === 'string') {
        const previous = state.resources.get(change.withdraw);
        state.resources.delete(change.withdraw);
        if (previous) state.index?.remove(previous);
      } else {
        throw new Error('holds an invalid change');
      }
    }
  },
});

/** revisions.json beside resources.json. */
const revisionsPathFor = (resourcesFile: string): string => path.join(path.dirname(resourcesFile), path.basename(REVISIONS_FILE));

async function loadResources(file: string): Promise<ResourcesState> {
  const resources = new Map<string, StoredResource>();
  const revisions = await loadRevisions(revisionsPathFor(file));
  const bytes = await readIfExists(file);
  if (bytes === undefined) return { ...revisions, resources };
  // Frozen; each digest is computed when first read (digestOf), not for every record at start.
  for (const record of parseResourcesFile(file, bytes.toString('utf8')).records) resources.set(record.id, Object.freeze(record));
  return { ...revisions, resources };
}

/** resources.json with its journal replayed (and compacted into it when the journal held anything). */
export async function openResources(
  file: string,
  fs: FileSystemSeam,
  observe: BatchObserver | undefined,
  tuning: { maxBatch?: number; events?: EventSink },
  onBackup: (backupFile: string) => void = () => undefined,
) {
  const loaded = await loadResources(file);
  const state: ResourcesState = { ...loaded, index: new ResourceIndex(loaded.resources as Map<string, StoredResource>) };
  // The versioned file always exists, so the layout of a DATA_DIR is the same with or without a journal.
  // Only whether it exists: loadResources has read it already, and at 100k records it is tens of MB.
  const exists = await access(file).then(
    () => true,
    () => false,
  );
  if (!exists) await writeFileDurably(file, serializeResourcesFile([]), fs);
  try {
    return await DurableDocument.openJournaled(file, state, resourcesCodec(file, fs, onBackup), fs, observe, undefined, tuning);
  } catch (err) {
    if (err instanceof JournalCorruptError) throw new StoreFileError(err.file, err.message.slice(path.basename(err.file).length + 1));
    if (err instanceof Error && err.message === 'holds an invalid change') throw new StoreFileError(journalPathFor(file), err.message);
    throw err;
  }
}

/**
 * The resources as stored durably (the versioned file with its journal replayed), read without opening
 * the store: for tests and tools that look at a DATA_DIR from outside.
 */
export async function readStoredRecords(dataDir: string): Promise<StoredResource[]> {
  const file = path.join(dataDir, RESOURCES_FILE);
  const state = await loadResources(file);
  for (const changes of (await readJournal(journalPathFor(file))).batches)
    resourcesCodec(file, nodeFileSystem, () => undefined).apply(state, changes, 'journal');
  return sortedValues(state.resources);
}

/** The stored resources as record v1 (records written as v1 exactly as written). */
export async function readStoredResources(dataDir: string): Promise<AgentResource[]> {
  return (await readStoredRecords(dataDir)).map(toV1);
}
