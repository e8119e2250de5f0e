// A typed client over Node's global fetch: every operation of the registry's OpenAPI document through
// openapi-fetch (`client.api.GET('/api/acp/resources/{id}', …)`, path, query, body and answer typed from
// `paths`), over one transport that holds the rules: base URL + bearer token, a bound on time and on the bytes
// read, no redirect followed, and the registry's error envelope `{statusCode, code, error, message, details?}`
// surfaced as a RegistryError. The token goes only into the Authorization header: no message, error or
// property shows it.
import createOpenApiClient, { type Client } from 'openapi-fetch';
import type { operations, paths } from './api-types.js';
import { type ErrorCode, isErrorCode } from './error-codes.js';

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type ReconcileOperation = operations['reconcileProviderResources'];
type ListOperation = operations['listProviderResources'];

/** Body of `PUT /api/acp/providers/{provider}/resources`: the provider's complete set. */
export type ReconcileRequest = JsonContent<ReconcileOperation['requestBody']>;
/** What a reconcile changed (or would change, with `dryRun`). */
export type ReconcileResponse = JsonContent<ReconcileOperation['responses'][200]>;
/** Answer of `GET /api/acp/providers/{provider}/resources`. */
export type ProviderResourceList = JsonContent<ListOperation['responses'][200]>;
/** Answer of `GET /api/acp/resources` (the owner catalogue, whole or one page). */
export type CatalogueList = JsonContent<operations['listResources']['responses'][200]>;
/** The query of an owner catalogue page: `q`, `limit`, `provider`, `schemaVersion` (the cursor is the iterator's). */
export type CataloguePageQuery = Omit<NonNullable<operations['listResources']['parameters']['query']>, 'cursor'>;
/** Answer of `GET /api/rfs/{canvasId}/resources` (an agent's catalogue, whole or one page). */
export type RfsList = JsonContent<operations['listRfsResources']['responses'][200]>;
/** The query of an RFS page: `q`, `limit`, `schemaVersion`. */
export type RfsPageQuery = Omit<NonNullable<operations['listRfsResources']['parameters']['query']>, 'cursor'>;

/** The cursor of the `rel="next"` link of a `Link` header, if there is one. */
export function nextCursor(link: string | null): string | undefined {
  const target = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link ?? '')?.[1];
  return target === undefined ? undefined : (new URL(target, 'http://registry.invalid').searchParams.get('cursor') ?? undefined);
}

/** The registry's error envelope, as every error answer carries it. */
export type ErrorBody = JsonContent<ReconcileOperation['responses'][409]>;

/** The route both provider calls use; a renamed route in the OpenAPI document breaks the build here. */
export const PROVIDER_RESOURCES_PATH = '/api/acp/providers/{provider}/resources' satisfies keyof paths;
type ProviderOperations = paths[typeof PROVIDER_RESOURCES_PATH];
const _linked: [ProviderOperations['put'], ProviderOperations['get']] extends [ReconcileOperation, ListOperation] ? true : never = true;
void _linked;

export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default bound on the bytes of one answer (after content decoding): larger than any answer of the registry's. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export interface RegistryClientOptions {
  /** Base URL of the registry, e.g. `http://127.0.0.1:8787` (a path prefix is kept; no credentials, query or fragment). */
  baseUrl: string;
  /** Bearer token: a machine token for the provider calls. Sent only in the Authorization header. */
  token?: string;
  /** Bound on each call, connection to last byte (default 10 s). */
  timeoutMs?: number;
  /** Bound on the bytes of one answer; reading stops there (default 32 MiB). */
  maxResponseBytes?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

/** An error answer of the registry, in its envelope. `message` is the registry's text as sent. */
export class RegistryError extends Error {
  override readonly name = 'RegistryError';
  readonly statusCode: number;
  readonly code: ErrorCode;
  /** HTTP reason phrase, as the registry sent it. */
  readonly error: string;
  readonly details: Record<string, unknown> | undefined;

  constructor(body: { statusCode: number; code: ErrorCode; error: string; message: string; details?: Record<string, unknown> }) {
    super(body.message);
    this.statusCode = body.statusCode;
    this.code = body.code;
    this.error = body.error;
    this.details = body.details;
  }
}

/** Why an answer could not be taken as the registry's. */
export type ResponseProblem =
  /** A success status without a JSON body. */
  | 'not_json'
  /** An error status without the error envelope, or with a code that is not one of the registry's. */
  | 'no_error_envelope'
  /** More bytes than `maxResponseBytes`; reading stopped there. */
  | 'too_large';

/** An answer that is not the registry's: probably the wrong base URL, or another service in between. */
export class RegistryResponseError extends Error {
  override readonly name = 'RegistryResponseError';
  readonly problem: ResponseProblem;
  readonly statusCode: number;
  /** The parsed JSON body, if there was one (an error answer's envelope with an unknown code lands here). */
  readonly body: unknown;

  constructor(problem: ResponseProblem, statusCode: number, message: string, body?: unknown) {
    super(message);
    this.problem = problem;
    this.statusCode = statusCode;
    this.body = body;
  }
}

/** No answer: the connection failed, or the call took longer than `timeoutMs`. `cause` is fetch's error. */
export class RegistryConnectionError extends Error {
  override readonly name = 'RegistryConnectionError';
  readonly timedOut: boolean;

  constructor(message: string, timedOut: boolean, cause: unknown) {
    super(message, { cause });
    this.timedOut = timedOut;
  }
}

/** Checks `value` as a base URL and returns it without a trailing slash; the message never repeats the URL. */
export function normalizeBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError('baseUrl must be an absolute http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('baseUrl must be an http:// or https:// URL');
  if (url.username || url.password) throw new TypeError('baseUrl must not carry credentials; pass the token as `token`');
  if (url.search || url.hash) throw new TypeError('baseUrl must be the base URL, without query or fragment');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function isEnvelope(value: unknown): value is ErrorBody & { code: ErrorCode } {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.statusCode === 'number' &&
    isErrorCode(v.code) &&
    typeof v.error === 'string' &&
    typeof v.message === 'string' &&
    (v.details === undefined || (v.details !== null && typeof v.details === 'object'))
  );
}

function isTimeout(err: unknown): boolean {
  return err !== null && typeof err === 'object' && (err as { name?: unknown }).name === 'TimeoutError';
}

/** Every operation of the registry, typed from its OpenAPI document (openapi-fetch's client over `paths`). */
export type RegistryApi = Client<paths>;

export class RegistryClient {
  /** The base URL calls go to, without a trailing slash. */
  readonly baseUrl: string;
  /**
   * Every operation of the OpenAPI document: `api.GET(path, { params: { path, query } })`,
   * `api.PUT(path, { params, body })`, … An answer resolves to `{ data, response }` with `data` typed as the
   * operation's success body; an error answer throws `RegistryError` (or `RegistryResponseError`,
   * `RegistryConnectionError`), as the methods below do.
   */
  readonly api: RegistryApi;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: RegistryClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.api = createOpenApiClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.#send(request) });
  }

  /** `GET /api/acp/providers/{provider}/resources`: what the registry holds for one provider. */
  async listProviderResources(provider: string): Promise<ProviderResourceList> {
    const { data } = await this.api.GET(PROVIDER_RESOURCES_PATH, { params: { path: { provider } } });
    return data!;
  }

  /**
   * `PUT /api/acp/providers/{provider}/resources[?dryRun=true]`: the provider's whole set in one request; records
   * it held and left out are withdrawn. With `dryRun`, the answer says what would change and nothing does.
   */
  async reconcileProviderResources(
    provider: string,
    body: ReconcileRequest,
    options: { dryRun?: boolean } = {},
  ): Promise<ReconcileResponse> {
    const { data } = await this.api.PUT(PROVIDER_RESOURCES_PATH, {
      params: { path: { provider }, ...(options.dryRun ? { query: { dryRun: true } } : {}) },
      body,
    });
    return data!;
  }

  /**
   * The owner catalogue a page at a time (`GET /api/acp/resources` with `limit`, default 100), following
   * `Link: rel="next"` until the last page: with `q`, the matches most relevant first; without, every record
   * once in (provider, id) order, whatever is written meanwhile. Yields each page's answer.
   */
  async *cataloguePages(query: CataloguePageQuery = {}): AsyncGenerator<CatalogueList, void, undefined> {
    let cursor: string | undefined;
    do {
      const { data, response } = await this.api.GET('/api/acp/resources', {
        params: { query: { limit: 100, ...query, ...(cursor === undefined ? {} : { cursor }) } },
      });
      yield data!;
      cursor = nextCursor(response.headers.get('link'));
    } while (cursor !== undefined);
  }

  /**
   * An agent's catalogue a page at a time (`GET /api/rfs/{canvasId}/resources` with a canvas token as
   * `token`), as `cataloguePages` walks the owner's.
   */
  async *rfsPages(canvasId: string, query: RfsPageQuery = {}): AsyncGenerator<RfsList, void, undefined> {
    let cursor: string | undefined;
    do {
      const { data, response } = await this.api.GET('/api/rfs/{canvasId}/resources', {
        params: { path: { canvasId }, query: { limit: 100, ...query, ...(cursor === undefined ? {} : { cursor }) } },
      });
      yield data!;
      cursor = nextCursor(response.headers.get('link'));
    } while (cursor !== undefined);
  }

  /**
   * The transport every call goes through: the token added, the time bounded, no redirect followed, the body
   * read within the byte bound; a success without JSON and every error answer thrown as this client's errors.
   */
  async #send(request: Request): Promise<Response> {
    const headers = new Headers(request.headers);
    headers.set('accept', 'application/json');
    if (this.#token !== undefined) headers.set('authorization', `Bearer ${this.#token}`);
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let status: number;
    let contentType: string;
    let link: string | null;
    let text: string;
    try {
      const body = request.body === null ? undefined : await request.text();
      const res = await this.#fetch(request.url, {
        method: request.method,
        headers,
        signal,
        // A redirect is not the registry's answer; following one could carry the token elsewhere.
        redirect: 'manual',
        ...(body === undefined ? {} : { body }),
      });
      status = res.status;
      contentType = res.headers.get('content-type') ?? '';
      link = res.headers.get('link');
      text = await this.#readText(res);
    } catch (err) {
      if (err instanceof RegistryResponseError) throw err;
      if (isTimeout(err) || signal.aborted) {
        throw new RegistryConnectionError(`${this.baseUrl} did not answer within ${this.#timeoutMs} ms`, true, err);
      }
      throw new RegistryConnectionError(`cannot reach ${this.baseUrl}`, false, err);
    }
    let json: unknown;
    try {
      json = /^application\/([\w.+-]*\+)?json\b/i.test(contentType.trim()) ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (status >= 200 && status < 300) {
      if (status === 204 || status === 205) return new Response(null, { status });
      if (json === undefined)
        throw new RegistryResponseError('not_json', status, `status ${status} from ${this.baseUrl} without a JSON body`);
      return new Response(text, { status, headers: { 'content-type': 'application/json', ...(link === null ? {} : { link }) } });
    }
    if (isEnvelope(json)) throw new RegistryError(json);
    throw new RegistryResponseError(
      'no_error_envelope',
      status,
      `status ${status} from ${this.baseUrl} without the registry's error body`,
      json,
    );
  }

  /** The body as text, refusing (and cancelling) it past the byte bound, whatever its headers claim. */
  async #readText(res: Response): Promise<string> {
    const tooLarge = () =>
      new RegistryResponseError('too_large', res.status, `the answer from ${this.baseUrl} is larger than ${this.#maxBytes} bytes`);
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > this.#maxBytes) {
      await res.body?.cancel().catch(() => {});
      throw tooLarge();
    }
    if (res.body === null) return '';
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let total = 0;
    let text = '';
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > this.#maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      text += decoder.decode(value, { stream: true });
    }
    return text + decoder.decode();
  }
}
