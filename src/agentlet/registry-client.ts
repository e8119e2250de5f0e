// The registry's provider routes as this machine uses them, through @agent-resource-registry/client (typed calls
// over fetch, generated from openapi/openapi.json). Answers are also checked at run time with the server's own
// TypeBox schemas, so the CLI cannot silently drift from the contract. Every failure becomes a CliError whose
// message names the URL and the machine, never the token.
import {
  RegistryClient as TypedClient,
  RegistryConnectionError,
  RegistryError,
  RegistryResponseError,
  PROVIDER_RESOURCES_PATH,
  type ErrorBody,
  type operations,
  type paths,
  type ProviderResourceList,
  type ReconcileRequest,
  type ReconcileResponse,
} from '@agent-resource-registry/client';
import { Compile } from 'typebox/compile';
import { ReconcileResult, ResourceList } from '../schemas/resource.js';
import type { MachineProblem } from '../schemas/machine.js';
import { CliError, EXIT } from './exit-codes.js';
import { oneLine } from './terminal-text.js';

export type { ReconcileRequest, ReconcileResponse };
/** A job's answer as the machine posts it: `{ok: true, result}` or `{ok: false, error}`. */
export type JobAnswer = operations['answerMachineJob']['requestBody']['content']['application/json'];

const JOB_ANSWER_PATH = '/api/acp/providers/{machineId}/jobs/{jobId}' satisfies keyof paths;
const PROVIDER_RESOURCE_PATH = '/api/acp/providers/{provider}/resources/{id}' satisfies keyof paths;
/** The registry no longer waits for a job (404 `job_not_found`). */
const JOB_GONE = Symbol('job gone');
export type ProviderResources = ProviderResourceList['resources'];

const checkReconcileResult = Compile(ReconcileResult);
const checkResourceList = Compile(ResourceList);

export const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * The least a whole-set publish waits for its answer, whatever the request timeout: the registry handles large
 * publishes one at a time and may hold one 20 s for its turn (its `LARGE_BODY_WAIT_MS`), then handles it.
 */
export const PUBLISH_TIMEOUT_MS = 60_000;
/**
 * Most bytes read of any answer. The largest legitimate one lists a machine's full set (1000 records, the
 * reconcile maximum) in record v1: name, description and instructions hold at most 4,640 UTF-16 units, none
 * longer than 6 bytes as JSON (a `\uXXXX` escape), plus ASCII IDs and keys: under 28.3 MB. A reconcile answer is
 * IDs only. Anything longer is not the registry's answer.
 */
export const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** Characters of registry text (an error's code, message, a conflict's ID) quoted in a message. */
const QUOTED_CHARS = 300;

export interface RegistryClientOptions {
  /** Base URL of the registry, e.g. `http://127.0.0.1:8787`. */
  registryUrl: string;
  machineId: string;
  token: string;
  /** Names the file in 401 messages. */
  tokenFile: string;
  timeoutMs: number;
}

/** Accepts `http(s)://host[:port][/prefix]`; refuses credentials, query and fragment. Returns it without a trailing slash. */
export function parseRegistryUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`--registry must be an http:// or https:// URL (got "${value}")`, EXIT.usage);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`--registry must be an http:// or https:// URL (got ${url.protocol})`, EXIT.usage);
  if (url.username || url.password)
    throw new CliError('--registry must not carry credentials; the machine token is read from the token file', EXIT.usage);
  if (url.search || url.hash) throw new CliError('--registry must be the base URL, without query or fragment', EXIT.usage);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** The first error code found on an error, its cause, or an AggregateError's members (connection errors nest). */
function errorCode(err: unknown, depth = 0): string | undefined {
  if (depth > 4 || err === null || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; name?: unknown; cause?: unknown; errors?: unknown[] };
  if (e.name === 'TimeoutError') return 'TIMEOUT';
  if (typeof e.code === 'string' && e.code !== 'UND_ERR') return e.code;
  return (
    errorCode(e.cause, depth + 1) ?? (Array.isArray(e.errors) ? e.errors.map((x) => errorCode(x, depth + 1)).find(Boolean) : undefined)
  );
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

export class RegistryClient {
  readonly #o: RegistryClientOptions;
  readonly #client: TypedClient;
  /** The whole-set publish's client: the same, waiting at least PUBLISH_TIMEOUT_MS. */
  readonly #publisher: TypedClient;
  readonly #publishTimeoutMs: number;

  constructor(options: RegistryClientOptions) {
    this.#o = options;
    const client = (timeoutMs: number) =>
      new TypedClient({ baseUrl: options.registryUrl, token: options.token, timeoutMs, maxResponseBytes: MAX_RESPONSE_BYTES });
    this.#client = client(options.timeoutMs);
    this.#publishTimeoutMs = Math.max(options.timeoutMs, PUBLISH_TIMEOUT_MS);
    this.#publisher = client(this.#publishTimeoutMs);
  }

  /** Nothing to release: fetch's connections are pooled by Node and closed when idle. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** `PUT /api/acp/providers/:machineId/resources[?dryRun=true]`: the machine's whole set in one request. */
  /** `problems`, when given and not empty, is sent with the set; without it the body is `{resources}` alone. */
  async reconcile(resources: ReconcileRequest['resources'], dryRun: boolean, problems: MachineProblem[] = []): Promise<ReconcileResponse> {
    const body = problems.length > 0 ? { resources, problems } : { resources };
    const answer = await this.#send(
      () => this.#publisher.reconcileProviderResources(this.#o.machineId, body, { dryRun }),
      this.#publishTimeoutMs,
    );
    if (!checkReconcileResult.Check(answer)) throw this.#unexpected('the reconcile answer does not match the contract');
    return answer;
  }

  /**
   * `PUT /api/acp/providers/:machineId/resources/:id`: registers or replaces one record of this machine, through
   * the registry's one-record path (its quota, ownership and secret rules, as for the whole set).
   */
  async putResource(entry: ReconcileRequest['resources'][number]): Promise<void> {
    await this.#send(() =>
      this.#client.api.PUT(PROVIDER_RESOURCE_PATH, { params: { path: { provider: this.#o.machineId, id: entry.id } }, body: entry }),
    );
  }

  /** `DELETE /api/acp/providers/:machineId/resources/:id`: withdraws one record of this machine. */
  async withdrawResource(id: string): Promise<void> {
    await this.#send(() => this.#client.api.DELETE(PROVIDER_RESOURCE_PATH, { params: { path: { provider: this.#o.machineId, id } } }));
  }

  /** `GET /api/acp/providers/:machineId/resources`: what the registry holds for this machine. */
  async list(): Promise<ProviderResources> {
    const answer = await this.#send(() => this.#client.listProviderResources(this.#o.machineId));
    if (!checkResourceList.Check(answer)) throw this.#unexpected('the resource list does not match the contract');
    return (answer as ProviderResourceList).resources;
  }

  /**
   * `POST /api/acp/providers/:machineId/jobs/:jobId`: a job's answer. False when the registry no longer waits
   * for it (404 `job_not_found`: it timed out, or its channel closed).
   */
  async answerJob(jobId: string, answer: JobAnswer): Promise<boolean> {
    const sent = await this.#send(() =>
      this.#client.api
        .POST(JOB_ANSWER_PATH, { params: { path: { machineId: this.#o.machineId, jobId } }, body: answer })
        .catch((err: unknown) => {
          if (err instanceof RegistryError && err.statusCode === 404 && err.code === 'job_not_found') return JOB_GONE;
          throw err;
        }),
    );
    return sent !== JOB_GONE;
  }

  async #send(call: () => Promise<unknown>, timeoutMs = this.#o.timeoutMs): Promise<unknown> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof RegistryError) throw this.#statusError(err.statusCode, err);
      if (err instanceof RegistryResponseError) {
        if (err.problem === 'too_large') throw this.#tooLarge();
        if (err.problem === 'not_json') throw this.#unexpected(`status ${err.statusCode} without a JSON body`);
        throw this.#statusError(err.statusCode, err.body as Partial<ErrorBody> | undefined);
      }
      if (err instanceof RegistryConnectionError) throw this.#networkError(err, timeoutMs);
      throw err;
    }
  }

  #tooLarge(): CliError {
    return new CliError(
      `the answer from ${this.#o.registryUrl} is larger than ${MAX_RESPONSE_BYTES / (1024 * 1024)} MiB, more than any answer this client expects; stopped reading it. Is --registry the registry's base URL?`,
      EXIT.unavailable,
    );
  }

  #networkError(err: RegistryConnectionError, timeoutMs: number): CliError {
    const { registryUrl } = this.#o;
    const code = errorCode(err.cause) ?? 'unknown error';
    // Node's fetch has its own connect and headers bounds; meeting one of them is a timeout too.
    if (err.timedOut || TIMEOUT_CODES.has(code)) {
      return new CliError(
        `the registry at ${registryUrl} did not answer within ${timeoutMs} ms; check that it is running and reachable, or raise --timeout-ms (AGENTLET_TIMEOUT_MS)`,
        EXIT.unavailable,
      );
    }
    const why = code === 'ECONNREFUSED' ? 'connection refused' : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code;
    return new CliError(
      `cannot reach the registry at ${registryUrl} (${why}); check that the registry is running and that --registry is its base URL`,
      EXIT.unavailable,
    );
  }

  #unexpected(what: string): CliError {
    return new CliError(
      `unexpected answer from ${this.#o.registryUrl}: ${what}; is --registry the registry's base URL, and is the registry the version this client was built for?`,
      EXIT.unavailable,
    );
  }

  #statusError(status: number, body: Partial<ErrorBody> | undefined): CliError {
    const { registryUrl, machineId, tokenFile } = this.#o;
    // The registry's own words are quoted on one line, cut: they cannot fake a line of this CLI's output.
    const code = typeof body?.code === 'string' ? oneLine(body.code, QUOTED_CHARS) : undefined;
    const message = typeof body?.message === 'string' ? oneLine(body.message, QUOTED_CHARS) : undefined;
    // A 404 on these routes means the URL does not point at this registry's API (wrong prefix, other service).
    if (status === 404) return this.#unexpected(`404${code ? ` ${code}` : ''} for ${PROVIDER_RESOURCES_PATH}`);
    if (body === undefined || code === undefined) return this.#unexpected(`status ${status} without an error body`);
    if (status === 401) {
      return new CliError(
        `the registry at ${registryUrl} rejected the token for machine ${machineId} (401 ${code}): the token in ${tokenFile} is wrong, ` +
          `or the machine's enrollment was revoked. Ask the owner to enroll ${machineId} again and store the new token in the token file.`,
        EXIT.unavailable,
      );
    }
    if (status === 403) {
      return new CliError(
        `the registry at ${registryUrl} refused to act for machine ${machineId} (403 ${code}): the token is valid but belongs to another ` +
          `provider; --machine-id must be the exact machine ID the token was issued for.`,
        EXIT.unavailable,
      );
    }
    if (status === 409 && code === 'resource_conflict') {
      const conflicts = (body.details?.conflicts as { id?: unknown; provider?: unknown }[] | undefined) ?? [];
      const lines = conflicts.map(
        (c) => `  ${oneLine(String(c.id), QUOTED_CHARS)} is held by provider ${oneLine(String(c.provider), QUOTED_CHARS)}`,
      );
      return new CliError(
        [`conflict: ${conflicts.length} ID(s) are held by another provider; the registry changed nothing:`, ...lines].join('\n') +
          '\nRename these receipts (resource IDs are global) or ask the holder to withdraw them.',
        EXIT.rejected,
      );
    }
    const detail = message ? `: ${message}` : '';
    if (status >= 500)
      return new CliError(`the registry at ${registryUrl} failed (${status} ${code})${detail}; try again later`, EXIT.unavailable);
    return new CliError(`the registry rejected the request (${status} ${code})${detail}`, EXIT.rejected);
  }
}
