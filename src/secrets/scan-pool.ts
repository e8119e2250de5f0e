// The service's secret scanner, with the scanning itself run off the event loop by a pool of worker threads
// (node:worker_threads; src/secrets/scan-worker.ts). Each worker runs src/secrets/secret-scanner.ts's own
// `scan`, so the findings, their order and every refusal are that scanner's; only where it runs changes.
// A worker also parses the front matter of each record v2 `sourceContent` it scans (src/text/front-matter.ts,
// the parse every read makes), and a clean piece's parses are kept as the reads' own: the records of a large
// write are read without parsing YAML on the event loop.
// The owner's allowlist is read on the main thread, as the scanner reads it: only when a scan met a
// candidate (never for a clean text), and a failed read refuses the write. A scan with entries to apply is
// asked again with them. Small texts (under INLINE_CHARS in all) are scanned on the calling thread: posting
// them to a worker costs more than scanning them; a large scan (a machine's whole set) goes in pieces of about
// PIECE_CHARS, one message each, so that no one copy to a worker holds the event loop long. The queue is bounded: past MAX_QUEUED scans waiting, a
// scan is refused with 503 `overloaded` (`details.reason: scan_queue_full`) and the write it guards writes
// nothing; a worker that stops mid-scan refuses its scan the same way (`scan_worker_stopped`) and is
// replaced. `close()` stops the workers (the app's shutdown).
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AppError } from '../errors.js';
import { frontMatterYaml, keepParsedFrontMatter, type ParsedFrontMatter } from '../text/front-matter.js';
import {
  isKeyField,
  SecretScanner,
  type AllowedFinding,
  type ScanScope,
  type SecretFinding,
  type SecretScannerOptions,
} from './secret-scanner.js';

/** Texts shorter than this in all (UTF-16 code units) are scanned on the calling thread. */
export const INLINE_CHARS = 4 * 1024;
/** A scan of more text than this is sent to the workers in pieces of about this size (each one message). */
export const PIECE_CHARS = 1024 * 1024;
/** Scans waiting for a worker before more are refused. */
export const MAX_QUEUED = 256;
/** Workers: one per core left beside the event loop's, at least one, at most four. */
export const DEFAULT_WORKERS = Math.max(1, Math.min(4, availableParallelism() - 1));

export interface ScanRequest {
  id: number;
  fields: [string, string][];
  scope: { route?: string; allowed?: AllowedFinding[] };
}

export type ScanReply =
  | {
      id: number;
      findings: SecretFinding[];
      touched: boolean;
      /** The front matter parsed from the request's fields that open with one (isFrontMatterField), by field index. */
      frontMatters: [number, ParsedFrontMatter][];
    }
  | { id: number; error: string };

/**
 * The worker's file: beside this module when it runs from dist/ or from source (`.ts` under tsx), and in
 * the bundle's folder when it runs from dist/bundle (its entry or one of its chunks; scripts/bundle.mjs
 * bundles the worker as an entry of its own).
 */
export function workerFile(moduleUrl: string = import.meta.url): URL {
  const ext = moduleUrl.endsWith('.ts') ? '.ts' : '.js';
  const candidates = [new URL(`./scan-worker${ext}`, moduleUrl), new URL('../scan-worker.js', moduleUrl)];
  return candidates.find((u) => existsSync(fileURLToPath(u))) ?? candidates[0]!;
}

/** A worker's answer for one piece: its findings, whether it met a candidate, the front matter it parsed. */
type PieceScan = Omit<Extract<ScanReply, { findings: SecretFinding[] }>, 'id'>;

interface Job {
  request: ScanRequest;
  resolve(reply: PieceScan): void;
  reject(err: unknown): void;
}

class WorkerPool {
  readonly #knownSecrets: string[];
  readonly #size: number;
  readonly #idle: Worker[] = [];
  readonly #busy = new Map<Worker, Job>();
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closed = false;

  readonly #file: URL;

  constructor(knownSecrets: string[], size: number, file: URL) {
    this.#knownSecrets = knownSecrets;
    this.#size = size;
    this.#file = file;
  }

  get workers(): number {
    return this.#idle.length + this.#busy.size;
  }

  run(fields: [string, string][], scope: ScanScope): Promise<PieceScan> {
    if (this.#closed) return Promise.reject(stopped('the secret scan was closed'));
    if (this.#queue.length >= MAX_QUEUED) {
      return Promise.reject(
        new AppError('overloaded', `The secret scan has ${MAX_QUEUED} texts waiting; nothing was written, retry shortly.`, {
          reason: 'scan_queue_full',
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const request: ScanRequest = {
        id: this.#nextId++,
        fields,
        scope: { ...(scope.route === undefined ? {} : { route: scope.route }), ...(scope.allowed ? { allowed: [...scope.allowed] } : {}) },
      };
      this.#queue.push({ request, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.workers < this.#size ? this.#spawn() : undefined);
      if (!worker) return;
      const job = this.#queue.shift()!;
      this.#busy.set(worker, job);
      worker.ref();
      worker.postMessage(job.request);
    }
  }

  #spawn(): Worker {
    const file = this.#file;
    const workerData = { knownSecrets: this.#knownSecrets };
    const worker = file.pathname.endsWith('.ts')
      ? // From source (tests, the bench under tsx): the worker registers tsx's loader before it loads the module.
        new Worker(
          `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file.href)}); });`,
          { eval: true, workerData },
        )
      : new Worker(file, { workerData });
    // An idle worker does not hold the process open; a busy one does until its scan is answered.
    worker.unref();
    worker.on('message', (reply: ScanReply) => {
      const job = this.#busy.get(worker);
      if (!job || job.request.id !== reply.id) return;
      this.#busy.delete(worker);
      worker.unref();
      this.#idle.push(worker);
      if ('error' in reply) job.reject(new Error(reply.error));
      else job.resolve(reply);
      this.#dispatch();
    });
    const gone = (why: string) => {
      const job = this.#busy.get(worker);
      this.#busy.delete(worker);
      const at = this.#idle.indexOf(worker);
      if (at >= 0) this.#idle.splice(at, 1);
      job?.reject(stopped(why));
      if (!this.#closed) this.#dispatch();
    };
    worker.on('error', (err) => gone(`a secret scan worker failed (${err.message})`));
    worker.on('exit', (code) => gone(`a secret scan worker stopped (exit code ${code})`));
    return worker;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(stopped('the secret scan was closed'));
    await Promise.all([...this.#idle, ...this.#busy.keys()].map((w) => w.terminate()));
  }
}

function stopped(why: string): AppError {
  return new AppError('overloaded', `${why}; nothing was written, retry shortly.`, { reason: 'scan_worker_stopped' });
}

export interface PooledScannerOptions extends SecretScannerOptions {
  /** Worker threads (DEFAULT_WORKERS). */
  workers?: number;
  /** The worker's module (`workerFile()`); a test names one that fails. */
  workerFile?: URL;
}

/** A SecretScanner whose scans of more than INLINE_CHARS run in the worker pool. */
export class PooledSecretScanner extends SecretScanner {
  readonly #pool: WorkerPool;
  readonly #allowlist: SecretScannerOptions['allowlist'];

  constructor(knownSecrets: readonly string[] = [], options: PooledScannerOptions = {}) {
    super(knownSecrets, options);
    this.#allowlist = options.allowlist;
    this.#pool = new WorkerPool([...knownSecrets], Math.max(1, options.workers ?? DEFAULT_WORKERS), options.workerFile ?? workerFile());
  }

  /** Worker threads running now. */
  get workers(): number {
    return this.#pool.workers;
  }

  override async scan(fields: Iterable<[field: string, value: string]>, scope: ScanScope = {}): Promise<SecretFinding[]> {
    const list = [...fields];
    if (list.reduce((n, [, value]) => n + value.length, 0) < INLINE_CHARS) return super.scan(list, scope);
    const first = await this.#inPieces(list, scope);
    if (!first.touched) return first.findings;
    // The scan met a candidate: the owner's allowlist is read now, as the scanner reads it then (a failed
    // read refuses), and its entries are applied by scanning again with them.
    const entries = (await this.#allowlist?.()) ?? [];
    if (entries.length === 0) return first.findings;
    return (await this.#inPieces(list, { ...scope, allowed: [...(scope.allowed ?? []), ...entries] })).findings;
  }

  /**
   * The scan of `list` as consecutive pieces of about PIECE_CHARS (whole fields), so that no one message to a
   * worker carries a machine's whole set; the findings are the pieces' in order, up to a finding in an object
   * key, which ends the scan as it does in one piece.
   */
  async #inPieces(list: [string, string][], scope: ScanScope): Promise<{ findings: SecretFinding[]; touched: boolean }> {
    const pieces: [string, string][][] = [[]];
    let chars = 0;
    for (const field of list) {
      if (chars >= PIECE_CHARS) {
        pieces.push([]);
        chars = 0;
      }
      pieces.at(-1)!.push(field);
      chars += field[1].length;
    }
    const results = await Promise.all(pieces.map((piece) => this.#pool.run(piece, scope)));
    const findings: SecretFinding[] = [];
    let touched = false;
    for (const [p, result] of results.entries()) {
      findings.push(...result.findings);
      touched ||= result.touched;
      // The worker's parse is the one the reads of a clean piece's records get (a refused text is not kept).
      if (result.findings.length === 0) {
        for (const [i, parsed] of result.frontMatters) {
          const yaml = frontMatterYaml(pieces[p]![i]?.[1] ?? '');
          if (yaml !== undefined) keepParsedFrontMatter(yaml, parsed);
        }
      }
      if (result.findings.some((f) => isKeyField(f.field))) break;
    }
    return { findings, touched };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
