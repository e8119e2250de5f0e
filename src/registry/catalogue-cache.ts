// Pre-serialized catalogue bodies with content ETags, rebuilt once per change of the store and shared by
// every read of the same view until the next change; pages of a view are kept the same way, within a
// bound of bytes (docs/decisions/page-cache.md). Each representation of a view (record v1 or v2,
// `?schemaVersion=`) is its own entry with its own body and ETag: this is the one place that keys them.
// An entry also holds its compressed variants (br, gzip), each built once, on the first read that asks for
// it, and kept until the entry is dropped with its revision: a read never compresses a body another read
// already compressed.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import type { Representation, StoredResource } from '../schemas/resource.js';
import { represent } from './resource-versions.js';

/** The content codings a catalogue body is offered in besides `identity`, the server's preference first. */
export const CONTENT_CODINGS = ['br', 'gzip'] as const;
export type ContentCoding = (typeof CONTENT_CODINGS)[number];

/**
 * Bodies smaller than this many bytes are only ever sent as they are: a compressed copy would save a few
 * hundred bytes at most, and framing plus the decoder's work cost more than that.
 */
export const MIN_COMPRESSED_BYTES = 1024;

/**
 * Brotli quality for catalogue bodies. Measured on a 10k-record catalogue (3.1 MiB;
 * docs/decisions/catalogue-compression.md): quality 4 is ~2.5x the time of gzip's default for bodies ~2x smaller; 5
 * costs ~35 % more time for ~12 % fewer bytes, 11 (zlib's default) takes seconds.
 */
export const BROTLI_QUALITY = 4;
/** gzip level: zlib's default. */
export const GZIP_LEVEL = 6;

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** The ETag of a coding: the identity ETag with a suffix inside the quotes (`"<digest>-br"`, `"<digest>-gz"`). */
const ETAG_SUFFIX: Record<ContentCoding, string> = { br: '-br', gzip: '-gz' };

/**
 * The opaque tag an ETag of any coding was made from: `<tag>` for `<tag>`, `<tag>-br` and `<tag>-gz`
 * (without quotes). Where a client sends back an ETag to name a version (If-Match), it names the same
 * version whichever coding it read the body in.
 */
export function uncodedTag(opaque: string): string {
  for (const suffix of Object.values(ETAG_SUFFIX)) if (opaque.endsWith(suffix)) return opaque.slice(0, -suffix.length);
  return opaque;
}

/** Compresses text bytes with `coding` at the levels above, on libuv's thread pool. */
export function compressBytes(bytes: Buffer, coding: ContentCoding): Promise<Buffer> {
  if (coding === 'gzip') return gzipAsync(bytes, { level: GZIP_LEVEL });
  return brotliAsync(bytes, {
    params: {
      [zlibConstants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
      [zlibConstants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  });
}

/**
 * One cached body: its identity text, the same as UTF-8 bytes, its ETag, and its compressed variants once
 * asked for. The bytes are what goes out: a string would be encoded again on every send, which for a large
 * catalogue costs more than writing it to the socket.
 */
export class CachedBody {
  readonly bytes: Buffer;
  /**
   * Whether compressed variants are offered: the body is large enough (MIN_COMPRESSED_BYTES) and the entry
   * is kept for later reads. A body built for a revision that was superseded while it was being built
   * serves only the read that built it, so it is sent as it is rather than compressed for one read.
   */
  readonly compressible: boolean;
  readonly #encoded = new Map<ContentCoding, Promise<Buffer>>();
  readonly #onEncode: (coding: ContentCoding) => void;

  constructor(
    readonly body: string,
    readonly etag: string,
    options: { kept?: boolean; onEncode?: (coding: ContentCoding) => void } = {},
    /** `body` as UTF-8, when the caller has it already. */
    bytes: Buffer = Buffer.from(body, 'utf8'),
  ) {
    this.bytes = bytes;
    this.compressible = (options.kept ?? true) && this.bytes.length >= MIN_COMPRESSED_BYTES;
    this.#onEncode = options.onEncode ?? (() => undefined);
  }

  /** The ETag of the body in `coding` (no compression needed to know it). */
  etagFor(coding: ContentCoding | 'identity'): string {
    return coding === 'identity' ? this.etag : `${this.etag.slice(0, -1)}${ETAG_SUFFIX[coding]}"`;
  }

  /**
   * The body compressed with `coding`, built on the first call and shared by every later (and every
   * concurrent) call for this entry. A failed compression is not kept: the next call tries again.
   */
  encoded(coding: ContentCoding): Promise<Buffer> {
    let pending = this.#encoded.get(coding);
    if (!pending) {
      pending = compressBytes(this.bytes, coding);
      this.#encoded.set(coding, pending);
      this.#onEncode(coding);
      pending.catch(() => this.#encoded.delete(coding));
    }
    return pending;
  }
}

/**
 * The `{resources, ...besides}` body of `records` in `representation`, with its content ETag: what the
 * cache keeps for a whole view or a page, and what a per-request body (a page served as a launched thread
 * pinned it) is sent as without being kept (`kept: false`: no compressed variants either).
 */
export function catalogueBody(
  records: readonly StoredResource[],
  representation: Representation,
  besides?: (records: readonly StoredResource[]) => Record<string, unknown>,
  options: { kept?: boolean; onEncode?: (coding: ContentCoding) => void } = {},
): CachedBody {
  // The same text as JSON.stringify({ resources: records.map(represent), ...besides }), from each record's own.
  const others = besides ? JSON.stringify(besides(records)).slice(1, -1) : '';
  const body = `{"resources":[${records.map((r) => recordJson(r, representation)).join(',')}]${others === '' ? '' : `,${others}`}}`;
  const bytes = Buffer.from(body, 'utf8');
  const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 32)}"`;
  return new CachedBody(body, etag, options, bytes);
}

/**
 * Each stored record's JSON in each representation, kept while the record lives. Only a frozen record is
 * kept: the stores freeze what they hold and replace a record rather than change it, so its text is its own
 * for as long as it is stored. A catalogue built again after a write then reads the front matter of, and
 * serializes, only the records the write changed; a page is the kept texts joined.
 */
const RECORD_JSON: Record<Representation, WeakMap<StoredResource, string>> = { 1: new WeakMap(), 2: new WeakMap() };

/** `record` in `representation` as JSON text: kept per frozen record (RECORD_JSON). */
export function recordJson(record: StoredResource, representation: Representation): string {
  if (!Object.isFrozen(record)) return JSON.stringify(represent(record, representation));
  const kept = RECORD_JSON[representation];
  let json = kept.get(record);
  if (json === undefined) {
    json = JSON.stringify(represent(record, representation));
    kept.set(record, json);
  }
  return json;
}

/**
 * The metric label of a view key: its kind (`all`, `provider`, `machine`), never the provider or machine
 * ID (one label value per kind, however many machines there are).
 */
export function viewLabel(viewKey: string): string {
  return viewKey.split(':')[0]!;
}

/** A view's entry in one representation: each representation is cached on its own. */
const entryKey = (viewKey: string, representation: Representation) => `v${representation} ${viewKey}`;

/** The view key kept pages are counted under (their metric label). */
const PAGE_VIEW = 'page';
/** Bytes of pages a catalogue cache keeps at once by default (CATALOGUE_PAGE_CACHE_BYTES). */
export const DEFAULT_PAGE_CACHE_BYTES = 16 * 2 ** 20;
/**
 * What a kept page counts against the bound besides its body and key: its objects and map entry, about
 * this much. So pages with few or no records (searches that find nothing) cannot pile up by the million.
 */
export const PAGE_ENTRY_BYTES = 1024;
/** What a kept page counts against the bound of bytes. */
const pageCost = (pageKey: string, page: CachedPage) => page.body.bytes.length + pageKey.length + PAGE_ENTRY_BYTES;

/** A page of a view, kept: its body and the cursor of the page after it (absent on the last page). */
export interface CachedPage {
  body: CachedBody;
  next?: string;
}

export class CatalogueCache {
  #revision: string | undefined;
  #views = new Map<string, CachedBody>();
  /** Pages by key, least recently read first. */
  #pages = new Map<string, CachedPage>();
  #pageBytes = 0;
  static readonly MAX_VIEWS = 1024;
  /** The pages kept at once: at most this many bytes (`pageCost`: their bodies as they are, keys and entries; compressed copies besides); 0: none. */
  readonly #maxPageBytes: number;

  /**
   * @param onRebuild told the view key of every body it serializes (for metrics).
   * @param onEncode told the view key and coding of every compressed variant it builds (for metrics).
   */
  constructor(
    private readonly onRebuild: (viewKey: string) => void = () => undefined,
    private readonly onEncode: (viewKey: string, coding: ContentCoding) => void = () => undefined,
    options: { maxPageBytes?: number } = {},
  ) {
    this.#maxPageBytes = options.maxPageBytes ?? DEFAULT_PAGE_CACHE_BYTES;
  }

  /**
   * The cached body for `viewKey` in `representation` at `revision` when there is one, found without a turn
   * of the event loop (the common read: nothing changed since the body was built); undefined on a miss. A
   * new revision drops every cached view (and with them their compressed variants).
   */
  hit(revision: string, viewKey: string, representation: Representation): CachedBody | undefined {
    this.#at(revision);
    return this.#views.get(entryKey(viewKey, representation));
  }

  /** Holds `revision` from now on: a new one drops every view and page kept. */
  #at(revision: string): void {
    if (revision === this.#revision) return;
    this.#revision = revision;
    this.#views.clear();
    this.#pages.clear();
    this.#pageBytes = 0;
  }

  /**
   * The kept page `pageKey` at `revision` when there is one, found without a turn of the event loop;
   * undefined on a miss. The key names everything the page's bytes follow from: the view and its scope,
   * the representation, the query, the limit and the cursor.
   */
  pageHit(revision: string, pageKey: string): CachedPage | undefined {
    this.#at(revision);
    const page = this.#pages.get(pageKey);
    if (page) {
      this.#pages.delete(pageKey);
      this.#pages.set(pageKey, page);
    }
    return page;
  }

  /**
   * The page `pageKey` at `revision`, built from `select` on a miss and kept until the revision changes
   * (the least recently read pages forgotten first past the bound of bytes). A page read while the revision
   * moved, or larger than the bound, serves only its own read.
   */
  async page(
    revision: string,
    pageKey: string,
    representation: Representation,
    select: () => Promise<{ records: readonly StoredResource[]; next?: string }>,
    besides?: (records: readonly StoredResource[]) => Record<string, unknown>,
  ): Promise<CachedPage> {
    const hit = this.pageHit(revision, pageKey);
    if (hit) return hit;
    const { records, next } = await select();
    const built = catalogueBody(records, representation, besides, { kept: false });
    const withNext = (body: CachedBody): CachedPage => (next === undefined ? { body } : { body, next });
    if (this.#revision !== revision || pageCost(pageKey, withNext(built)) > this.#maxPageBytes) return withNext(built);
    const page = withNext(new CachedBody(built.body, built.etag, { onEncode: (coding) => this.onEncode(PAGE_VIEW, coding) }, built.bytes));
    const previous = this.#pages.get(pageKey);
    if (previous) this.#pageBytes -= pageCost(pageKey, previous);
    this.#pages.delete(pageKey);
    this.#pages.set(pageKey, page);
    this.#pageBytes += pageCost(pageKey, page);
    for (const [key, oldest] of this.#pages) {
      if (this.#pageBytes <= this.#maxPageBytes) break;
      this.#pages.delete(key);
      this.#pageBytes -= pageCost(key, oldest);
    }
    return page;
  }

  /**
   * The cached `{resources}` body for `viewKey` in `representation` at `revision`, built from `select` on a
   * miss. `besides` adds members after `resources`, computed from the same records (so they change only
   * with the revision, as the records do); a view key always comes with the same `besides`. A new revision
   * drops every cached view (and with them their compressed variants).
   */
  async get(
    revision: string,
    viewKey: string,
    representation: Representation,
    select: () => Promise<readonly StoredResource[]>,
    besides?: (records: readonly StoredResource[]) => Record<string, unknown>,
  ): Promise<CachedBody> {
    const hit = this.hit(revision, viewKey, representation);
    if (hit) return hit;
    const records = await select();
    const kept = this.#revision === revision;
    const entry = catalogueBody(records, representation, besides, { kept, onEncode: (coding) => this.onEncode(viewKey, coding) });
    this.onRebuild(viewKey);
    if (kept) {
      if (this.#views.size >= CatalogueCache.MAX_VIEWS) this.#views.clear();
      this.#views.set(entryKey(viewKey, representation), entry);
    }
    return entry;
  }
}

/** RFC 9110 If-None-Match: a list of (possibly weak) entity tags, or `*`. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
