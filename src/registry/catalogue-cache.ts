// Pre-serialized catalogue bodies with content ETags, rebuilt once per change of the store and shared by
// every read of the same view until the next change. Each representation of a view (record v1 or v2,
// `?schemaVersion=`) is its own entry with its own body and ETag: this is the one place that keys them.
import { createHash } from 'node:crypto';
import type { Representation, StoredResource } from '../schemas/resource.js';
import { represent } from './resource-versions.js';

export interface CachedBody {
  body: string;
  etag: string;
}

export class CatalogueCache {
  #revision: string | undefined;
  #views = new Map<string, CachedBody>();
  static readonly MAX_VIEWS = 1024;

  /** @param onRebuild told the view key of every body it serializes (for metrics). */
  constructor(private readonly onRebuild: (viewKey: string) => void = () => undefined) {}

  /**
   * The cached `{resources}` body for `viewKey` in `representation` at `revision`, built from `select` on a
   * miss. A new revision drops every cached view.
   */
  async get(revision: string, viewKey: string, representation: Representation, select: () => Promise<readonly StoredResource[]>): Promise<CachedBody> {
    if (revision !== this.#revision) {
      this.#revision = revision;
      this.#views.clear();
    }
    const key = `v${representation} ${viewKey}`;
    const hit = this.#views.get(key);
    if (hit) return hit;
    const body = JSON.stringify({ resources: (await select()).map((r) => represent(r, representation)) });
    this.onRebuild(viewKey);
    const entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
    if (this.#revision === revision) {
      if (this.#views.size >= CatalogueCache.MAX_VIEWS) this.#views.clear();
      this.#views.set(key, entry);
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
