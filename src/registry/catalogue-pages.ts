// Pages and search of a catalogue view (docs/decisions/search-and-pages.md): a view's scope (which
// providers' records it holds) applies in the store, before any search; a page is the next `limit` records
// after the cursor's position in the view's order — (provider, id) without a query, (tier desc, provider,
// id) with one — so a walk yields every record that existed for the whole walk exactly once, whatever is
// written meanwhile. The cursor is opaque and signed: it carries the last position and is bound to the
// view's scope and query, so a cursor of another canvas, machine, provider or query is 400 `invalid_cursor`.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';
import type { StoredResource } from '../schemas/resource.js';
import { parseSearch, searchKey, type SearchTerm } from './search.js';
import type { FoundResource, PagePosition, RegistryStore, ResourceScope } from './store.js';

/** The largest page: `limit` is 1..MAX_PAGE_LIMIT. */
export const MAX_PAGE_LIMIT = 500;
/** A cursor longer than this is not one of ours. */
const MAX_CURSOR_CHARS = 512;
const KEY_LABEL = 'arr-catalogue-cursor-v1';

/** A catalogue view: the records of `providers` (every provider when absent), named by `binding`. */
export interface ViewScope extends ResourceScope {
  /** What a cursor of this view is bound to: the caller's scope (canvas and machine, or owner and provider). */
  binding: string;
}

/** What a request asks of a view: any of `q`, `limit`, `cursor` makes it a paged read. */
export interface PageParams {
  q?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

export interface Page {
  records: readonly StoredResource[];
  /** The cursor of the next page, while more records remain. */
  next?: string;
}

/** Whether a request asks for a page (or a search) rather than the whole view. */
export function isPaged(params: PageParams): boolean {
  return params.q !== undefined || params.limit !== undefined || params.cursor !== undefined;
}

/** The page size when a paged read names none. */
export const DEFAULT_PAGE_LIMIT = 100;

export class CataloguePages {
  readonly #key: Buffer;

  /** @param secret the deployment's signing secret (the same on every replica), from which the cursor key derives. */
  constructor(
    private readonly store: Pick<RegistryStore, 'findResources'>,
    secret: string,
  ) {
    this.#key = createHmac('sha256', secret).update(KEY_LABEL).digest();
  }

  /**
   * One page of `scope`: the records after `params.cursor` (from the start without one), at most
   * `params.limit` (DEFAULT_PAGE_LIMIT), matching `params.q` when it holds a word. 400 `invalid_cursor`
   * for a cursor this view did not hand out; 400 `validation_failed` for a query past its bounds.
   */
  async page(scope: ViewScope, params: PageParams): Promise<Page> {
    const terms = params.q === undefined ? [] : parseSearch(params.q);
    const limit = params.limit ?? DEFAULT_PAGE_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
      throw new AppError('validation_failed', `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}.`, { field: '/limit' });
    }
    const binding = this.#binding(scope, terms);
    const after = params.cursor === undefined ? undefined : this.#decode(params.cursor, binding, terms.length > 0);
    const found = await this.store.findResources({
      ...(scope.providers ? { providers: scope.providers } : {}),
      ...(terms.length > 0 ? { terms } : {}),
      ...(after ? { after } : {}),
      limit: limit + 1,
    });
    const records = found.slice(0, limit).map((f) => f.record);
    if (found.length <= limit) return { records };
    return { records, next: this.#encode(binding, positionOf(found[limit - 1]!, terms.length > 0)) };
  }

  #binding(scope: ViewScope, terms: readonly SearchTerm[]): string {
    const providers = scope.providers ? [...scope.providers].sort().join(',') : '*';
    return createHash('sha256')
      .update(`${scope.binding}\n${providers}\n${searchKey(terms)}`)
      .digest('base64url')
      .slice(0, 22);
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#key).update(payload).digest('base64url').slice(0, 32);
  }

  #encode(binding: string, position: PagePosition): string {
    const payload = Buffer.from(
      JSON.stringify({ b: binding, p: position.provider, i: position.id, ...(position.tier === undefined ? {} : { t: position.tier }) }),
    ).toString('base64url');
    return `${payload}.${this.#sign(payload)}`;
  }

  #decode(cursor: string, binding: string, searched: boolean): PagePosition {
    const invalid = () =>
      new AppError('invalid_cursor', 'The cursor was not handed out for this list and query; start again without it.', {
        field: '/cursor',
      });
    const [payload, signature, extra] = cursor.length <= MAX_CURSOR_CHARS ? cursor.split('.') : [];
    if (payload === undefined || signature === undefined || extra !== undefined) throw invalid();
    const expected = Buffer.from(this.#sign(payload));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    const { b, p, i, t } = (body ?? {}) as { b?: unknown; p?: unknown; i?: unknown; t?: unknown };
    if (b !== binding || typeof p !== 'string' || typeof i !== 'string') throw invalid();
    if (searched !== (typeof t === 'number')) throw invalid();
    return { provider: p, id: i, ...(typeof t === 'number' ? { tier: t } : {}) };
  }
}

function positionOf(found: FoundResource, searched: boolean): PagePosition {
  return { provider: found.record.provider, id: found.record.id, ...(searched ? { tier: found.tier } : {}) };
}

/** Compares two positions in a view's order: (tier desc, provider, id). */
export function comparePositions(a: PagePosition, b: PagePosition): number {
  if ((a.tier ?? 0) !== (b.tier ?? 0)) return (b.tier ?? 0) - (a.tier ?? 0);
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}
