// The revisions and pins of the JSON store (docs/decisions/record-digest.md): kept in the resources document's
// state beside the records, so a write and the revision it keeps are one journal line; compaction writes
// them to `agent-resources/revisions.json` beside resources.json (whose format stays upstream's).
import { readFile } from 'node:fs/promises';
import { Compile } from 'typebox/compile';
import Type from 'typebox';
import {
  computeDigest,
  digestOf,
  newestFirst,
  noteDigest,
  revisionsToDrop,
  type ResourceRevision,
  type RevisionHold,
} from '../registry/record-digest.js';
import { planDrift } from '../registry/drift.js';
import type { EventDraft } from '../registry/events.js';
import { StoredResource } from '../schemas/resource.js';
import { OverlayMap, type RecordMap } from './overlay-map.js';
import { StoreFileError } from './store-file-error.js';

export const REVISIONS_FILE_VERSION = 1;

/** The revision part of the resources document's state. */
export interface RevisionsState {
  /** Key `<id> <digest>`. */
  revisions: RecordMap<ResourceRevision>;
  /** Key `<id> <holder>`. */
  holds: RecordMap<RevisionHold>;
  /** Key `<id> <holder>`: the digest (or WITHDRAWN) a workload was last told its pin of `id` drifted to. */
  notices: RecordMap<DriftNotice>;
  /** Committed only (drafts share it and add their own changes): the digests kept per ID. */
  revisionIndex: Map<string, Set<string>>;
  /** Committed only: the holders and their digests per ID. */
  holdIndex: Map<string, Map<string, string>>;
  /** The next revision's `seq` (shared by drafts; a discarded draft leaves a gap, which orders nothing wrongly). */
  seq: { next: number };
}

/** A workload told that its pin of `id` drifted to `told` (src/registry/drift.ts). */
export interface DriftNotice {
  id: string;
  holder: string;
  told: string;
}

export const revisionKey = (id: string, digest: string): string => `${id} ${digest}`;
export const holdKey = (id: string, holder: string): string => `${id} ${holder}`;

/** What a draft changed in `map` (nothing for the committed state). */
function draftChanges<V>(map: RecordMap<V>): [string, V | undefined][] {
  return map instanceof OverlayMap ? (map as OverlayMap<V>).changes() : [];
}

/** What a draft changed among the keys of `id` in `map`, a map keyed `<id> <…>` (nothing for the committed state). */
function draftChangesOf<V>(map: RecordMap<V>, id: string): [string, V | undefined][] {
  return map instanceof OverlayMap ? (map as OverlayMap<V>).changesIn(id) : [];
}

/** The ID of a key `<id> <…>` (an ID holds no space). */
const idOfKey = (key: string): string => key.slice(0, key.indexOf(' '));

/** The revisions of `id` in `state` (a draft's included), any order. */
export function revisionsOf(state: RevisionsState, id: string): ResourceRevision[] {
  const digests = new Set(state.revisionIndex.get(id) ?? []);
  for (const [key, value] of draftChangesOf(state.revisions, id)) {
    if (value) digests.add(value.digest);
    else digests.delete(key.slice(id.length + 1));
  }
  return [...digests].flatMap((d) => {
    const r = state.revisions.get(revisionKey(id, d));
    return r ? [r] : [];
  });
}

/** The digests of `id` that a workload or profile pins (a draft's holds included). */
export function pinnedDigestsOf(state: RevisionsState, id: string): Set<string> {
  return new Set(holdersOf(state, id).values());
}

/** The holders of `id` (a draft's holds included) with their pinned digest. */
function holdersOf(state: RevisionsState, id: string): Map<string, string> {
  const holders = new Map(state.holdIndex.get(id) ?? []);
  for (const [key, hold] of draftChangesOf(state.holds, id)) {
    if (hold) holders.set(hold.holder, hold.digest);
    else holders.delete(key.slice(id.length + 1));
  }
  return holders;
}

/**
 * The drift events of a change of `id` to `next` (undefined: withdrawn), found through its holds, and the
 * notices they leave in the draft (src/registry/drift.ts `planDrift`). A change that keeps the digest tells nothing.
 */
export function driftOf(
  state: RevisionsState,
  id: string,
  provider: string,
  previous: StoredResource | undefined,
  next: StoredResource | undefined,
): EventDraft[] {
  const current = next && digestOf(next);
  if (previous !== undefined && current === digestOf(previous)) return [];
  const holders = holdersOf(state, id);
  if (holders.size === 0) return [];
  const candidates = [...holders].map(([holder, pinned]) => {
    const told = state.notices.get(holdKey(id, holder))?.told;
    return { holder, pinned, ...(told === undefined ? {} : { told }) };
  });
  const { drafts, told } = planDrift(id, provider, current, candidates);
  for (const notice of told) state.notices.set(holdKey(id, notice.holder), Object.freeze({ id, ...notice }));
  return drafts;
}

/**
 * Keeps the revisions a change of one ID needs: the previous content's (when not kept yet: records stored
 * before revisions existed) and the new content's, as the newest; then applies the retention rule.
 */
export function keepRevisions(
  state: RevisionsState,
  previous: StoredResource | undefined,
  next: StoredResource | undefined,
  now: string,
): void {
  const id = (previous ?? next)!.id;
  if (previous && !state.revisions.has(revisionKey(id, digestOf(previous)))) add(state, previous, now);
  if (next) {
    const digest = digestOf(next);
    if (previous === undefined || digestOf(previous) !== digest || !state.revisions.has(revisionKey(id, digest))) add(state, next, now);
  }
  const current = next ? digestOf(next) : undefined;
  const kept = revisionsOf(state, id);
  for (const digest of revisionsToDrop(kept, { ...(current ? { current } : {}), pinned: pinnedDigestsOf(state, id) })) {
    state.revisions.delete(revisionKey(id, digest));
  }
}

function add(state: RevisionsState, record: StoredResource, now: string): void {
  const digest = digestOf(record);
  state.revisions.set(
    revisionKey(record.id, digest),
    Object.freeze({ id: record.id, digest, provider: record.provider, createdAt: now, seq: state.seq.next++, record }),
  );
}

/** Pins `holds` for `holder`; a current record's revision not kept yet (stored before revisions existed) is kept now. */
export function holdRevisions(
  state: RevisionsState,
  holder: string,
  holds: readonly { id: string; digest: string }[],
  current: (id: string) => StoredResource | undefined,
  now: string,
): boolean {
  let changed = false;
  for (const { id, digest } of holds) {
    const record = current(id);
    if (record && digestOf(record) === digest && !state.revisions.has(revisionKey(id, digest))) {
      add(state, record, now);
      changed = true;
    }
    const key = holdKey(id, holder);
    if (state.holds.get(key)?.digest === digest) continue;
    state.holds.set(key, Object.freeze({ holder, id, digest }));
    changed = true;
  }
  return changed;
}

/** The held revisions per ID (committed state), for `heldHistoryBytes`. */
export function* heldRevisions(state: RevisionsState): Generator<{ id: string; records: StoredResource[] }> {
  for (const [id, holders] of state.holdIndex) {
    const records = [...new Set(holders.values())].flatMap((digest) => state.revisions.get(revisionKey(id, digest))?.record ?? []);
    if (records.length > 0) yield { id, records };
  }
}

/** True when `holder` holds each of `holds` already (nothing to write). */
export function holdsAll(state: RevisionsState, holder: string, holds: readonly { id: string; digest: string }[]): boolean {
  return holds.every(({ id, digest }) => state.holds.get(holdKey(id, holder))?.digest === digest);
}

/**
 * Releases the hold of `holder` on `id` (a pin move's transient hold, once the move is decided); true when
 * there was one.
 */
export function releaseHold(state: RevisionsState, holder: string, id: string): boolean {
  const key = holdKey(id, holder);
  if (!state.holds.has(key)) return false;
  state.holds.delete(key);
  return true;
}

/** The journal changes of a draft's revisions and holds (beside the records' `{put}` / `{withdraw}`). */
export function revisionChanges(draft: RevisionsState): unknown[] {
  return [
    ...draftChanges(draft.revisions).map(([key, r]) => (r ? { revision: r } : { dropRevision: key })),
    ...draftChanges(draft.holds).map(([key, h]) => (h ? { hold: h } : { dropHold: key })),
    ...draftChanges(draft.notices).map(([, n]) => ({ notice: n })),
  ];
}

const checkRevision = Compile(
  Type.Object({
    id: Type.String(),
    digest: Type.String(),
    provider: Type.String(),
    createdAt: Type.String(),
    seq: Type.Integer(),
    record: StoredResource,
  }),
);
const checkHold = Compile(Type.Object({ holder: Type.String(), id: Type.String(), digest: Type.String() }));
const checkNotice = Compile(Type.Object({ id: Type.String(), holder: Type.String(), told: Type.String() }));

function putRevision(state: RevisionsState, revision: ResourceRevision): void {
  const record = Object.freeze(revision.record);
  noteDigest(record, revision.digest);
  state.revisions.set(revisionKey(revision.id, revision.digest), Object.freeze({ ...revision, record }));
  let digests = state.revisionIndex.get(revision.id);
  if (!digests) state.revisionIndex.set(revision.id, (digests = new Set()));
  digests.add(revision.digest);
  if (revision.seq >= state.seq.next) state.seq.next = revision.seq + 1;
}

function putHold(state: RevisionsState, hold: RevisionHold): void {
  state.holds.set(holdKey(hold.id, hold.holder), Object.freeze(hold));
  let holders = state.holdIndex.get(hold.id);
  if (!holders) state.holdIndex.set(hold.id, (holders = new Map()));
  holders.set(hold.holder, hold.digest);
}

/** Applies one journal change of revisions to the committed state; false when it is not one. */
/** `check`: the change was read from disk (a journal line), so its shape is checked before it is applied. */
export function applyRevisionChange(state: RevisionsState, change: unknown, check: boolean): boolean {
  if (change === null || typeof change !== 'object') return false;
  if ('revision' in change) {
    if (check && !checkRevision.Check(change.revision)) throw new Error('holds an invalid change');
    putRevision(state, change.revision as ResourceRevision);
    return true;
  }
  if ('dropRevision' in change && typeof change.dropRevision === 'string') {
    const [id, digest] = change.dropRevision.split(' ') as [string, string];
    state.revisions.delete(change.dropRevision);
    state.revisionIndex.get(id)?.delete(digest);
    return true;
  }
  if ('dropHold' in change && typeof change.dropHold === 'string') {
    const space = change.dropHold.indexOf(' ');
    state.holds.delete(change.dropHold);
    state.holdIndex.get(change.dropHold.slice(0, space))?.delete(change.dropHold.slice(space + 1));
    return true;
  }
  if ('hold' in change) {
    if (check && !checkHold.Check(change.hold)) throw new Error('holds an invalid change');
    putHold(state, change.hold as RevisionHold);
    return true;
  }
  if ('notice' in change) {
    if (check && !checkNotice.Check(change.notice)) throw new Error('holds an invalid change');
    const notice = change.notice as DriftNotice;
    state.notices.set(holdKey(notice.id, notice.holder), Object.freeze(notice));
    return true;
  }
  return false;
}

export function emptyRevisions(): RevisionsState {
  return { revisions: new Map(), holds: new Map(), notices: new Map(), revisionIndex: new Map(), holdIndex: new Map(), seq: { next: 1 } };
}

/** A draft over the committed revisions. */
export function cloneRevisions(state: RevisionsState): RevisionsState {
  return {
    revisions: new OverlayMap(state.revisions as Map<string, ResourceRevision>, idOfKey),
    holds: new OverlayMap(state.holds as Map<string, RevisionHold>, idOfKey),
    notices: new OverlayMap(state.notices as Map<string, DriftNotice>),
    revisionIndex: state.revisionIndex,
    holdIndex: state.holdIndex,
    seq: state.seq,
  };
}

/** revisions.json's content at one moment, in file order: revisions by ID and then oldest first, holds and drift notices by ID and holder. */
export interface RevisionsSnapshot {
  revisions: readonly ResourceRevision[];
  holds: readonly RevisionHold[];
  notices: readonly DriftNotice[];
}

/** The entries are frozen, so the snapshot stays as it is while later changes are applied to the state. */
export function revisionsSnapshot(state: RevisionsState): RevisionsSnapshot {
  return {
    revisions: [...state.revisions.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.seq - b.seq)),
    holds: [...state.holds.keys()].sort().map((k) => state.holds.get(k)!),
    notices: [...state.notices.keys()].sort().map((k) => state.notices.get(k)!),
  };
}

/** revisions.json's text (compact JSON) in pieces of about `pieceChars` characters each. */
export function* revisionsFilePieces(snapshot: RevisionsSnapshot, pieceChars = 1 << 20): Generator<string> {
  const lists: [string, readonly unknown[]][] = [
    ['revisions', snapshot.revisions],
    ['holds', snapshot.holds],
    ...(snapshot.notices.length > 0 ? [['notices', snapshot.notices] as [string, readonly unknown[]]] : []),
  ];
  let piece = `{"schemaVersion":${REVISIONS_FILE_VERSION}`;
  for (const [name, list] of lists) {
    piece += `,"${name}":[`;
    for (let i = 0; i < list.length; i++) {
      piece += (i > 0 ? ',' : '') + JSON.stringify(list[i]);
      if (piece.length >= pieceChars) {
        yield piece;
        piece = '';
      }
    }
    piece += ']';
  }
  yield piece + '}\n';
}

/** revisions.json's text. */
export function serializeRevisions(state: RevisionsState): string {
  return [...revisionsFilePieces(revisionsSnapshot(state))].join('');
}

/** Loads revisions.json (absent: none yet). A file that does not parse, or of another version, stops the start. */
export async function loadRevisions(file: string): Promise<RevisionsState> {
  const state = emptyRevisions();
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (text === undefined) return state;
  let doc: { schemaVersion?: unknown; revisions?: unknown; holds?: unknown; notices?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    throw new StoreFileError(file, 'is not valid JSON');
  }
  if (doc?.schemaVersion !== REVISIONS_FILE_VERSION || !Array.isArray(doc.revisions) || !Array.isArray(doc.holds)) {
    throw new StoreFileError(file, `has an unknown version or shape (this build reads version ${REVISIONS_FILE_VERSION})`);
  }
  for (const r of doc.revisions) {
    if (!checkRevision.Check(r) || computeDigest(r.record) !== r.digest) throw new StoreFileError(file, 'holds an invalid revision');
    putRevision(state, r);
  }
  for (const h of doc.holds) {
    if (!checkHold.Check(h)) throw new StoreFileError(file, 'holds an invalid pin');
    putHold(state, h);
  }
  // Absent in a file written before drift notices existed: no workload was told anything yet.
  for (const n of Array.isArray(doc.notices) ? doc.notices : []) {
    if (!checkNotice.Check(n)) throw new StoreFileError(file, 'holds an invalid drift notice');
    state.notices.set(holdKey(n.id, n.holder), Object.freeze(n));
  }
  return state;
}

/** The kept revisions of `id`, newest first; the current record's first when it was stored before revisions existed. */
export function listRevisionsOf(
  state: RevisionsState,
  id: string,
  current: StoredResource | undefined,
  /** When the store opened: the time given to such a record's revision until a write keeps it. */
  openedAt: string,
): ResourceRevision[] {
  const kept = newestFirst(revisionsOf(state, id));
  if (current && !kept.some((r) => r.digest === digestOf(current))) {
    kept.unshift({ id, digest: digestOf(current), provider: current.provider, createdAt: openedAt, seq: Infinity, record: current });
  }
  return kept;
}
