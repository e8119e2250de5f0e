// The crash test's server processes: `node dist/src/server.js` on a DATA_DIR with real sockets, started,
// waited for (bounded, with the log tail in every error), SIGKILLed, and always killed in teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { canaryLogFile } from '../helpers/build.js';

export const SERVER_ENTRY = path.resolve('dist/src/server.js');
/** What `npm start` runs: the same server, bundled by scripts/bundle.mjs (test/lifecycle/bundle.test.ts). */
export const BUNDLE_ENTRY = path.resolve('dist/bundle/server.js');

const live = new Set<ChildProcess>();
// Last resort: never leave a server behind, even when the test process dies on an error.
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface RunningServer {
  pid: number;
  origin: string;
  logFile: string;
  /** Milliseconds from spawn to /readyz answering 200. */
  startMs: number;
  /** SIGKILLs the process and resolves once it has exited. */
  kill(): Promise<void>;
}

async function logTail(logFile: string): Promise<string> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  return text.split('\n').slice(-8).join('\n');
}

/** The coverage directory tap collects into, passed on to child processes. */
export function coverageEnv(): Record<string, string> {
  return process.env.NODE_V8_COVERAGE ? { NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE } : {};
}

/** Starts the server on `env` (PORT 0: the port is read from the log), bounded by `timeoutMs`. */
export async function startServer(env: Record<string, string>, timeoutMs = 60_000, entry = SERVER_ENTRY): Promise<RunningServer> {
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` before the crash test`);
  const started = performance.now();
  const logFile = canaryLogFile();
  // The log is written without asynchronous file-system calls in this process: the child's stderr goes to
  // the file's descriptor directly and its stdout, read here for the listening line, is appended with
  // writeSync. (Node 24.22 under tap's async hooks aborted in an fs write stream's callback
  // (`InternalCallbackScope::Close`, execution_async_id != 0) while such a stream logged a server.)
  const log = openSync(logFile, 'a');
  let logOpen = true;
  const child = spawn(process.execPath, [entry], {
    // NODE_V8_COVERAGE (set by tap): the server's coverage counts when it exits on its own (not after SIGKILL).
    env: { PATH: process.env.PATH ?? '', ...coverageEnv(), ...env, HOST: '127.0.0.1', PORT: '0' },
    stdio: ['ignore', 'pipe', log],
  });
  live.add(child);
  const exited = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(signal ?? code);
    });
  });
  // 'close', not 'exit': stdout can still deliver data after 'exit'.
  child.once('close', () => {
    logOpen = false;
    closeSync(log);
  });
  let buffered = '';
  const listening = new Promise<string>((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (logOpen) writeSync(log, chunk);
      buffered += chunk.toString('utf8');
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(buffered);
      if (match) resolve(match[1]!);
      if (buffered.length > 1_000_000) buffered = buffered.slice(-10_000);
    });
  });

  const kill = async () => {
    child.kill('SIGKILL');
    const outcome = await Promise.race([exited, sleep(10_000, 'timeout' as const, { ref: false })]);
    if (outcome === 'timeout') throw new Error(`server ${child.pid} did not exit within 10 s of SIGKILL`);
  };
  const fail = async (why: string): Promise<never> => {
    await kill().catch(() => undefined);
    throw new Error(`server did not start: ${why} (log ${logFile}):\n${await logTail(logFile)}`);
  };

  const deadline = started + timeoutMs;
  const first = await Promise.race([
    listening.then((origin) => ({ origin })),
    exited.then((code) => ({ exited: code })),
    sleep(timeoutMs, { timeout: true as const }, { ref: false }),
  ]);
  if ('timeout' in first) return fail(`no "Server listening" line within ${timeoutMs} ms`);
  if ('exited' in first) return fail(`the process exited (${first.exited})`);
  const { origin } = first;
  for (;;) {
    // reset: each probe's connection is closed once answered, not pooled: a pooled idle connection to a
    // server the test SIGKILLs later would be torn down by the peer's death at any moment of the test.
    const status = await request(`${origin}/readyz`, { reset: true, headersTimeout: 2_000, bodyTimeout: 2_000 })
      .then(async (res) => (await res.body.text(), res.statusCode))
      .catch(() => 0);
    if (status === 200) break;
    if (performance.now() > deadline) return fail(`/readyz did not answer 200 within ${timeoutMs} ms (last ${status})`);
    await sleep(20);
  }
  return { pid: child.pid!, origin, logFile, startMs: performance.now() - started, kill };
}

/** Teardown: SIGKILLs every server this process started that is still running. */
export async function killAllServers(): Promise<void> {
  const waits = [...live].map(
    (child) =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.race([Promise.all(waits), sleep(10_000, undefined, { ref: false })]);
}
