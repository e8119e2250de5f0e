// `agentlet-resources serve`: the Agentlet as a long-running daemon. It holds the machine's channel to the
// registry (reconnecting with capped exponential backoff and full jitter), runs the jobs the channel carries
// inside the resource root, watches `receipts/` and publishes a changed set within a second, and on stop
// finishes the jobs in flight (up to a grace period), closes the channel and returns 0. It reads nothing from
// the registry past the bound the one-shot commands use (MAX_RESPONSE_BYTES), and runs one publish at a time.
// It logs with pino: readable lines on a terminal, JSON lines otherwise, every one through the CLI's output
// boundary (terminal-safe, the token masked).
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { Compile } from 'typebox/compile';
import { ChannelJob } from '../schemas/channel.js';
import type { MachineProblem } from '../schemas/machine.js';
import { MAX_RECONCILE_RESOURCES } from '../schemas/resource.js';
import { ALLOWED_FINDINGS_FILE, machineScanner } from './allowed-findings.js';
import { ChannelClient, ChannelMessageTooLarge, ChannelRefused, type ServerSentEvent } from './channel-client.js';
import type { Output, RegistryInput } from './commands.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import { JOBS, type JobContext } from './jobs.js';
import { publishableSet, toReconcileEntry, validateResourceRoot, type ReceiptReport } from './receipt.js';
import { ReceiptReportCache } from './receipt-cache.js';
import { RegistryClient, type ReconcileRequest, type ReconcileResponse } from './registry-client.js';
import { assertInitialized, KIND_DIRS, RECEIPTS_DIR } from './resource-root.js';
import { RECONNECT_BASE_MS } from './serve-constants.js';
import { oneLine } from './terminal-text.js';
import { readTokenFile } from './token-file.js';

/** How long a stop waits for the jobs in flight to finish and be answered before abandoning them. */
export const STOP_GRACE_MS = 10_000;
/**
 * Jobs run (and being answered) at once. The registry sends at most 16 per machine before one is answered or
 * times out; a job it has timed out may still be running here, so the bound leaves room for that.
 */
export const MAX_JOBS_IN_FLIGHT = 64;
/** Changes to receipts/ are gathered this long before one publish (an editor writes a file in several steps). */
export const WATCH_DEBOUNCE_MS = 150;

export interface ServeInput extends RegistryInput {
  reconnectMaxMs: number;
}

export interface ServeRuntime {
  /** Aborted on SIGTERM or SIGINT. */
  stop: AbortSignal;
  /** Readable log lines instead of JSON. */
  isTty: boolean;
  random?: () => number;
}

const checkJob = Compile(ChannelJob);

/** One publish: the registry's answer (absent when the set had not changed), and the receipts left out. */
interface Published {
  result?: ReconcileResponse;
  problems: MachineProblem[];
}

/** The delay before reconnect attempt `attempt` (0-based): full jitter over a capped exponential. */
export function backoffMs(attempt: number, maxMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(maxMs, RECONNECT_BASE_MS * 2 ** Math.min(attempt, 30)));
}

/**
 * Characters of one log message, and of one text field of a log line. A message quotes what the registry sent
 * (a job's type, a path in a job's failure), which has no bound of its own short of a channel message.
 */
export const MAX_LOG_TEXT = 4000;

/** Text for a log line: on one line, so nothing it quotes can start a line that looks like the daemon's; cut. */
const logText = (text: string) => oneLine(text, MAX_LOG_TEXT);

/**
 * The daemon's logger. Its messages and top-level text fields are made one line here; every line it writes
 * goes out through `io.out`, the CLI's one output boundary, which makes it terminal-safe and masks the token.
 * On a terminal the lines are pino-pretty's, without colour (the boundary lets no escape sequence through).
 */
function serveLogger(isTty: boolean, io: Output, machineId: string): Logger {
  const pretty = isTty ? prettyFactory({ colorize: false, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,machineId' }) : undefined;
  return pino(
    {
      base: { machineId },
      redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization'], censor: '[redacted]' },
      hooks: {
        logMethod(args: unknown[], method: (...a: unknown[]) => void) {
          method.apply(
            this,
            args.map((a) => (typeof a === 'string' ? logText(a) : a)),
          );
        },
      },
      formatters: {
        log: (fields: Record<string, unknown>) =>
          Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? logText(v) : v])),
      },
      serializers: { err: pino.stdSerializers.err },
    },
    { write: (line: string) => io.out((pretty ? pretty(line) : line).replace(/\n$/, '')) },
  );
}

/**
 * Runs `task` one at a time. A call while it runs is answered by one more run after it, which every call made
 * meanwhile shares (their arguments merged): however many calls arrive during a run, at most one run follows.
 */
export function coalescing<A, R>(task: (arg: A) => Promise<R>, merge: (queued: A, arg: A) => A) {
  let running: Promise<R> | undefined;
  let next: { arg: A; promise: Promise<R>; resolve: (value: R) => void; reject: (err: unknown) => void } | undefined;
  const start = (arg: A): Promise<R> => {
    const run = task(arg);
    running = run;
    const settled = () => {
      running = undefined;
      if (next === undefined) return;
      const queued = next;
      next = undefined;
      start(queued.arg).then(queued.resolve, queued.reject);
    };
    run.then(settled, settled);
    return run;
  };
  return {
    call(arg: A): Promise<R> {
      if (running === undefined) return start(arg);
      if (next !== undefined) {
        next.arg = merge(next.arg, arg);
        return next.promise;
      }
      let resolve!: (value: R) => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<R>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      next = { arg, promise, resolve, reject };
      return promise;
    },
    /** Settles once no run is left, the queued one included. */
    async idle(): Promise<void> {
      while (running !== undefined) await running.catch(() => undefined);
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A network failure's code (connection errors nest in causes and AggregateErrors). */
function networkCode(err: unknown, depth = 0): string | undefined {
  if (depth > 4 || err === null || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown[] };
  if (typeof e.code === 'string' && e.code !== 'UND_ERR') return e.code;
  return (
    networkCode(e.cause, depth + 1) ?? (Array.isArray(e.errors) ? e.errors.map((x) => networkCode(x, depth + 1)).find(Boolean) : undefined)
  );
}

interface PublishRequest {
  why: string;
  onlyIfChanged: boolean;
  /** Only these receipts' IDs changed (a skill job's); absent: the whole set. */
  only?: string[];
}

/** What the registry holds of this machine after its last publish: each record's digest by ID, and the receipts left out. */
interface PublishedState {
  entries: Map<string, string>;
  problems: string;
  /** The receipt files reported as problems. */
  problemFiles: Set<string>;
}

const digestOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

function publishedState(entries: readonly ReconcileRequest['resources'][number][], problems: readonly MachineProblem[]): PublishedState {
  return {
    entries: new Map(entries.map((e) => [e.id, digestOf(e)])),
    problems: digestOf(problems),
    problemFiles: new Set(problems.map((p) => p.receipt)),
  };
}

/** The one ID whose record differs between the sets (added, changed or removed), when the problems are the same. */
function oneChange(now: PublishedState, before: PublishedState): [string] | undefined {
  if (now.problems !== before.problems) return undefined;
  const differing = new Set<string>();
  for (const [id, digest] of now.entries) if (before.entries.get(id) !== digest) differing.add(id);
  for (const id of before.entries.keys()) if (!now.entries.has(id)) differing.add(id);
  return differing.size === 1 ? [[...differing][0]!] : undefined;
}

function sameState(a: PublishedState, b: PublishedState): boolean {
  return a.problems === b.problems && a.entries.size === b.entries.size && [...a.entries].every(([id, d]) => b.entries.get(id) === d);
}

/**
 * Publishes only the receipts `ids` (a skill job's), each through the registry's one-record path: a valid one
 * is registered (when it differs from what was published), a removed one withdrawn. Undefined, having changed
 * nothing, when the whole set must be published instead: a receipt that is invalid or was reported as a
 * problem, or a set that would pass the registry's bound. `state` is updated with what was published.
 */
async function publishOnly(
  ids: readonly string[],
  state: PublishedState,
  client: RegistryClient,
  realRoot: string,
  check: (realRoot: string, name: string) => Promise<ReceiptReport>,
): Promise<Published | undefined> {
  const changes: { id: string; entry?: ReconcileRequest['resources'][number] }[] = [];
  for (const id of ids) {
    const name = `${id}.json`;
    if (state.problemFiles.has(`${RECEIPTS_DIR}/${name}`)) return undefined;
    if (!(await lstat(path.join(realRoot, RECEIPTS_DIR, name)).catch(() => undefined))) {
      changes.push({ id });
      continue;
    }
    const report = await check(realRoot, name);
    if (!report.receipt || report.receipt.id !== id) return undefined;
    changes.push({ id, entry: toReconcileEntry(report.receipt) });
  }
  const added = changes.filter((c) => c.entry && !state.entries.has(c.id)).length;
  if (state.entries.size + added > MAX_RECONCILE_RESOURCES) return undefined;
  for (const { id, entry } of changes) {
    if (entry === undefined) {
      if (!state.entries.has(id)) continue;
      await client.withdrawResource(id);
      state.entries.delete(id);
      continue;
    }
    const digest = digestOf(entry);
    if (state.entries.get(id) === digest) continue;
    await client.putResource(entry);
    state.entries.set(id, digest);
  }
  return { problems: [] };
}

export async function serveCommand(root: string, input: ServeInput, io: Output, runtime: ServeRuntime): Promise<ExitCode> {
  await assertInitialized(root);
  const protect = (token: string) => io.protect(token);
  let token = await readTokenFile(input.tokenFile);
  protect(token);
  const log = serveLogger(runtime.isTty, io, input.machineId);
  const random = runtime.random ?? Math.random;
  const channel = new ChannelClient(input);

  // Publishing: one at a time; whatever asks for a publish while one runs (a reconnect, a change, sync jobs)
  // shares the one publish after it. The watcher publishes only a set that differs from the last one sent.
  // An invalid receipt never holds the others back: it is left out (the registry withdraws its record) and
  // reported with the set, so the owner sees it for this machine. A skill job publishes only its own receipt
  // (`only`) through the registry's one-record path when the rest is as last published; anything else (no
  // publish yet, an invalid receipt, a refusal) publishes the whole set, as before. Each receipt's check is
  // kept until something it depends on changes (src/agentlet/receipt-cache.ts).
  const checked = new ReceiptReportCache();
  let published: PublishedState | undefined;
  const publisher = coalescing(
    async ({ why, onlyIfChanged, only }: PublishRequest): Promise<Published> => {
      const scanner = machineScanner(root, token);
      const scannerKey = createHash('sha256')
        .update(`${token}\0${await readFile(path.join(root, ALLOWED_FINDINGS_FILE), 'utf8').catch(() => '')}`)
        .digest('hex');
      const check = (realRoot: string, name: string) => checked.validate(realRoot, name, scanner, input.machineId, scannerKey);
      const client = new RegistryClient({ ...input, token });
      try {
        // Several jobs' receipts in one publish go as the whole set: one refusal then changes nothing of any.
        if (only?.length === 1 && published !== undefined) {
          const one = await publishOnly(only, published, client, await realpath(root), check).catch(() => undefined);
          if (one) {
            log.info({ why, receipts: only }, `published ${only.join(', ')}`);
            return one;
          }
        }
        const { reports } = await validateResourceRoot(root, scanner, input.machineId, check);
        checked.keepOnly(reports.map((r) => r.file.slice(RECEIPTS_DIR.length + 1)));
        const { entries, problems } = await publishableSet(reports, scanner);
        const state = publishedState(entries, problems);
        // A job's publish or the watcher's need only what changed; a sync job, a connect and a retry send the set.
        const conditional = onlyIfChanged || only !== undefined;
        if (conditional && published !== undefined && sameState(state, published)) return { problems };
        // The watcher's publish of a set that differs in one record (a job's receipt it saw first, a receipt
        // dropped in by hand) sends that record alone, as a job would; the whole set on any doubt.
        const changedIds = conditional && published !== undefined ? oneChange(state, published) : undefined;
        if (changedIds) {
          const one = await publishOnly(changedIds, published!, client, await realpath(root), check).catch(() => undefined);
          if (one) {
            log.info({ why, receipts: changedIds }, `published ${changedIds.join(', ')}`);
            return one;
          }
        }
        const result = await client.reconcile(entries, false, problems);
        published = state;
        if (problems.length > 0) {
          log.warn(
            { problems },
            `${problems.length} receipt(s) not published (their records are withdrawn until they are fixed): ${problems.map((p) => `${p.receipt}: ${p.message}`).join('; ')}`,
          );
        }
        log.info({ why, receipts: entries.length, ...result }, `published ${entries.length} receipt(s)`);
        return { result, problems };
      } finally {
        await client.close();
      }
    },
    (queued, arg) => ({
      why: queued.why.split(', ').includes(arg.why) ? queued.why : `${queued.why}, ${arg.why}`,
      // A job's publish shared with the watcher's publishes what changed; with a sync job's, the whole set.
      onlyIfChanged: (queued.onlyIfChanged || queued.only !== undefined) && (arg.onlyIfChanged || arg.only !== undefined),
      // Receipts of jobs share one publish of them; any whole-set publish covers them all.
      ...(queued.only && arg.only ? { only: [...new Set([...queued.only, ...arg.only])] } : {}),
    }),
  );
  const publish = (why: string, onlyIfChanged: boolean, only?: string[]): Promise<Published> =>
    publisher.call({ why, onlyIfChanged, ...(only ? { only } : {}) });
  // A publish that fails is tried again after a growing delay, and with any change of the receipts or the
  // skill folders, and on every reconnect; whichever comes first.
  let retry: NodeJS.Timeout | undefined;
  let retryAttempt = 0;
  let stopping = false;
  // Callers that share one publish see its outcome once: one failure line, one retry.
  const reported = new WeakSet<Promise<Published>>();
  const publishQuietly = (why: string, onlyIfChanged: boolean): Promise<Published | undefined> => {
    clearTimeout(retry);
    const run = publish(why, onlyIfChanged);
    if (reported.has(run)) return run.catch(() => undefined);
    reported.add(run);
    return run.then(
      (published) => {
        retryAttempt = 0;
        return published;
      },
      (err: unknown) => {
        if (stopping) return undefined;
        const delay = Math.max(RECONNECT_BASE_MS, backoffMs(retryAttempt++, input.reconnectMaxMs, random));
        log.error(
          { why, retryInMs: delay },
          `publish failed: ${(err as Error).message}; will retry in ${(delay / 1000).toFixed(1)} s, or sooner when receipts change or the channel reconnects`,
        );
        clearTimeout(retry);
        retry = setTimeout(() => void publishQuietly('retry', false), delay);
        return undefined;
      },
    );
  };

  // The watchers: any change under receipts/, or of the folders in skills/ (a skill folder deleted by hand),
  // schedules one publish of the set, if it changed.
  let debounce: NodeJS.Timeout | undefined;
  const watchers: FSWatcher[] = [];
  const changed = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => void publishQuietly('receipts changed', true), WATCH_DEBOUNCE_MS);
  };
  try {
    const watcher = watch(path.join(root, RECEIPTS_DIR), changed);
    watcher.on('error', (err) => log.error({ err }, `stopped watching ${RECEIPTS_DIR}/; restart serve to publish changes again`));
    watchers.push(watcher);
  } catch (err) {
    throw new CliError(`cannot watch ${path.join(root, RECEIPTS_DIR)}: ${(err as Error).message}`, EXIT.usage);
  }
  try {
    const skills = watch(path.join(root, KIND_DIRS.skill), changed);
    skills.on('error', (err) =>
      log.warn({ err }, `stopped watching ${KIND_DIRS.skill}/; a skill folder removed by hand is noticed at the next publish`),
    );
    watchers.push(skills);
  } catch {
    // No skills/ folder (yet): a receipt change or a reconnect still notices what is missing.
  }

  // Jobs: each runs as it arrives; once stopping, new ones are left for the registry to time out.
  const context: JobContext = {
    machineId: input.machineId,
    root,
    publish: async () => {
      const { result, problems } = await publish('sync job', false);
      return { ...result!, ...(problems.length > 0 ? { problems } : {}) };
    },
    publishReceipt: async (id: string) => {
      await publish('skill job', false, [id]);
    },
    get scanner() {
      return machineScanner(root, token);
    },
  };
  const inFlight = new Set<Promise<void>>();
  // Jobs not started because MAX_JOBS_IN_FLIGHT were running: one line when that starts, one when it ends.
  let refused = 0;
  let draining = false;
  const runJob = (event: ServerSentEvent) => {
    let job: unknown;
    try {
      job = JSON.parse(event.data);
    } catch {
      return log.warn('ignored a job that is not JSON');
    }
    if (!checkJob.Check(job)) return log.warn('ignored a job that is not {jobId, type, payload}');
    const { jobId, type } = job;
    if (draining) return log.warn({ jobId, type }, 'stopping: job not started');
    if (inFlight.size >= MAX_JOBS_IN_FLIGHT) {
      if (refused++ === 0)
        log.warn(
          { jobId, type },
          `${MAX_JOBS_IN_FLIGHT} jobs in flight, more than the registry sends at once; further jobs are not started (the registry times them out) until one finishes`,
        );
      return;
    }
    const started = Date.now();
    const running = (async () => {
      const answer = await JOBS.run(type, job.payload, context);
      const ms = Date.now() - started;
      const client = new RegistryClient({ ...input, token });
      try {
        const delivered = await client.answerJob(jobId, answer);
        if (!delivered)
          log.warn({ jobId, type, ms }, 'the registry no longer waits for this job (it timed out or the channel closed); answer dropped');
        else if (answer.ok) log.info({ jobId, type, ms }, `job ${type} done`);
        else log.warn({ jobId, type, ms, code: answer.error.code }, `job ${type} failed: ${answer.error.message}`);
      } catch (err) {
        log.warn({ jobId, type, reason: networkCode(err) ?? (err as Error).message }, 'could not deliver the answer');
      }
    })();
    inFlight.add(running);
    void running.finally(() => {
      inFlight.delete(running);
      if (refused > 0) {
        log.warn({ refused }, `refused ${refused} job(s) while ${MAX_JOBS_IN_FLIGHT} were in flight; taking jobs again`);
        refused = 0;
      }
    });
  };

  // Stopping: no new jobs, the ones in flight finish (or are abandoned after the grace period), then the
  // channel closes.
  const channelAbort = new AbortController();
  const stopped = new Promise<void>((resolve) => {
    const stop = async () => {
      draining = true;
      log.info({ jobsInFlight: inFlight.size }, 'stopping');
      const grace = new AbortController();
      const finished = Promise.allSettled([...inFlight]).then(() => 'finished' as const);
      const outcome = await Promise.race([finished, sleep(STOP_GRACE_MS, grace.signal).then(() => 'abandoned' as const)]);
      grace.abort();
      if (outcome === 'abandoned') log.warn({ jobsInFlight: inFlight.size }, 'abandoned the jobs still running');
      channelAbort.abort();
      resolve();
    };
    if (runtime.stop.aborted) void stop();
    else runtime.stop.addEventListener('abort', () => void stop(), { once: true });
  });

  log.info({ registry: input.registryUrl, root, jobs: JOBS.types() }, `serving machine ${input.machineId}`);
  let attempt = 0;
  while (!channelAbort.signal.aborted) {
    let connected = false;
    // The attempt count before this connection's `ready`: a connection dropped past a bound does not count as
    // one that worked, so the delay before the next keeps growing.
    const attemptBefore = attempt;
    try {
      token = await readTokenFile(input.tokenFile); // re-read: a rotated token is picked up on reconnect
      protect(token);
      for await (const event of channel.open(token, channelAbort.signal)) {
        if (event.event === 'ready') {
          if (connected) continue; // the registry sends one per connection; more change nothing
          attempt = 0;
          connected = true;
          log.info(`connected to ${input.registryUrl}`);
          void publishQuietly('connected', false);
        } else if (event.event === 'job') runJob(event);
      }
      if (!channelAbort.signal.aborted) log.warn('the registry closed the channel; reconnecting');
    } catch (err) {
      if (channelAbort.signal.aborted) break;
      if (err instanceof ChannelMessageTooLarge) {
        attempt = attemptBefore;
        log.warn(`${err.message}; dropped the connection to ${input.registryUrl}`);
      } else if (err instanceof CliError) log.error(err.message);
      else if (err instanceof ChannelRefused && err.status === 401) {
        log.error(
          `the registry rejected the token for machine ${input.machineId} (401): the token in ${input.tokenFile} is wrong, or the enrollment was revoked or rotated; put the current token in that file`,
        );
      } else if (err instanceof ChannelRefused && err.status === 403) {
        log.error(
          `the registry refused the channel of machine ${input.machineId} (403): the token belongs to another machine; --machine-id must be the ID it was issued for`,
        );
      } else if (err instanceof ChannelRefused) log.error(`${err.message}; is --registry the registry's base URL?`);
      else {
        const reason = networkCode(err) ?? (err as Error).message;
        log.warn(
          { reason },
          connected ? `lost the channel to ${input.registryUrl}` : `cannot reach the registry at ${input.registryUrl} (${reason})`,
        );
      }
    }
    if (channelAbort.signal.aborted) break;
    const delay = backoffMs(attempt++, input.reconnectMaxMs, random);
    log.info({ delayMs: delay, attempt }, 'reconnecting');
    await sleep(delay, channelAbort.signal);
  }

  await stopped;
  stopping = true;
  clearTimeout(debounce);
  clearTimeout(retry);
  for (const w of watchers) w.close();
  await Promise.race([publisher.idle(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  await channel.close();
  log.info('stopped');
  return EXIT.ok;
}
