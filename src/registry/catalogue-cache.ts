// Pre-serialized catalogue bodies with content ETags, rebuilt once per change of the store and shared by
// every read of the same view until the next change.
import { createHash } from 'node:crypto';
import type { AgentResource } from '../schemas/resource.js';

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
   * The cached `{resources}` body for `viewKey` at `revision`, built from `select` on a miss.
   * A new revision drops every cached view.
   */
  async get(revision: string, viewKey: string, select: () => Promise<readonly AgentResource[]>): Promise<CachedBody> {
    if (revision !== this.#revision) {
      this.#revision = revision;
      this.#views.clear();
    }
    const hit = this.#views.get(viewKey);
    if (hit) return hit;
    const body = JSON.stringify({ resources: await select() });
    this.onRebuild(viewKey);
    const entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
    if (this.#revision === revision) {
      if (this.#views.size >= CatalogueCache.MAX_VIEWS) this.#views.clear();
      this.#views.set(viewKey, entry);
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
