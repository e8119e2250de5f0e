// Helpers for the agentlet-resources tests: a real registry on a loopback socket, the CLI run in the test's
// process through its main() or as the compiled executable in a child process (either way its output is
// checked for every token issued in the test and kept for the canary scan), and resource-root fixtures.
import { execFile, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build, canaryLogFile, CANARY, type TestApp } from './build.js';
import { clientBuilt } from './built.js';
import { listen } from './sockets.js';

/** The part of a tap test these helpers use. */
export interface TestContext {
  same(found: unknown, wanted: unknown, message: string): boolean;
  teardown(fn: () => unknown): void;
}

/**
 * The compiled CLI, not the published bundle (packages/agentlet/dist/cli.js, which starts faster): tap counts the
 * coverage of these child processes through tsc's source maps, and drops a file whose map names any source under
 * node_modules, as the bundle's does. test/packages/pack-and-install.test.ts runs the bundle as installed.
 */
export const CLI = path.resolve('dist', 'src', 'agentlet', 'cli.js');

export interface Registry {
  h: TestApp;
  url: string;
  /** Every request the registry received on the provider routes, as `METHOD url`. */
  providerRequests: string[];
}

export async function startRegistry(t: TestContext, env: Record<string, string> = {}): Promise<Registry> {
  const h = await build(t, { env });
  const providerRequests: string[] = [];
  h.app.addHook('onRequest', (request, _reply, done) => {
    if (request.url.startsWith('/api/acp/providers/')) providerRequests.push(`${request.method} ${request.url}`);
    done();
  });
  return { h, url: await listen(h.app), providerRequests };
}

export interface FakeRegistry {
  url: string;
  /** Every request it received, as `METHOD url`. */
  requests: string[];
}

/**
 * A hostile stand-in for the registry on a loopback socket: `handler` answers every request however it likes
 * (escape sequences, endless bodies). Its connections are cut at teardown.
 */
export async function fakeRegistry(
  t: TestContext,
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<FakeRegistry> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => handler(req, res));
  });
  const url = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url, requests };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliRunner {
  (args: string[], env?: Record<string, string>): Promise<Run>;
  /** Tokens that must never appear in any output of this runner. */
  tokens: string[];
}

/**
 * Where a runner runs the CLI: `in-process` calls its `main()` (the TypeScript source) with the run's
 * arguments, environment and output sinks, as `cli.ts` does for the executable; `process` runs the compiled
 * executable as a child process, for what only a real process shows (its exit status, its argv).
 */
export type CliMode = 'in-process' | 'process';

async function runInProcess(args: string[], env: Record<string, string>): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const sink = {
    out: (text: string) => {
      stdout += text;
    },
    err: (text: string) => {
      stderr += text;
    },
  };
  // The CLI's source imports the typed client by its package name: its dist/ must be there (2 s when not).
  await clientBuilt();
  const { main } = await import('../../src/agentlet/main.js');
  try {
    const code = await main(args, env, sink, () => new Date(), { isTty: false });
    return { code, stdout, stderr };
  } catch (error) {
    // What the executable would do with an error main() lets escape: print it and exit 1.
    return { code: 1, stdout, stderr: stderr + String((error as Error).stack ?? error) };
  }
}

function runProcess(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise<Run>((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the CLI; every run asserts that no known token appears in its stdout or stderr. */
export function cliRunner(t: TestContext, baseEnv: Record<string, string> = {}, mode: CliMode = 'in-process'): CliRunner {
  const tokens: string[] = [CANARY.owner, CANARY.huabu, CANARY.secret];
  const logFile = canaryLogFile();
  const run = (async (args: string[], env: Record<string, string> = {}) => {
    const fullEnv = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...baseEnv, ...env };
    const result = mode === 'process' ? await runProcess(args, fullEnv) : await runInProcess(args, fullEnv);
    // The command line is the test's own (some tests pass a token in argv on purpose to see it refused):
    // record it with tokens masked, and the CLI's output as it is, for the end-of-suite leak scan.
    const shown = args.map((a) =>
      tokens.reduce((text, tok) => text.replaceAll(tok, '<token>'), a.replace(/arr_[a-z]+_[A-Za-z0-9_.-]+/g, '<token>')),
    );
    appendFileSync(logFile, `$ agentlet-resources ${shown.join(' ')}\n${result.stdout}${result.stderr}`);
    const leaked = tokens.filter((tok) => result.stdout.includes(tok) || result.stderr.includes(tok));
    t.same(leaked, [], `no token in the output of: ${args.slice(0, 2).join(' ')}`);
    return result;
  }) as CliRunner;
  run.tokens = tokens;
  return run;
}

/** A fresh temporary directory, removed at teardown. */
export async function tempDir(t: TestContext, prefix = 'agentlet-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes a token file (mode 0600 unless told) and returns its path. */
export async function tokenFile(dir: string, token: string, mode = 0o600, name = 'machine.token'): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, token + '\n', { mode });
  await chmod(file, mode);
  return file;
}

/** Creates `<root>/<rel>` as a small file (and its parents). */
export async function installFile(root: string, rel: string, content = '#!/bin/sh\necho hello\n'): Promise<string> {
  const file = path.join(root, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  return file;
}

export function receiptJson(id: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schemaVersion: 1,
    id,
    kind: 'skill',
    name: `Name of ${id}`,
    description: `About ${id}.`,
    instructions: `Read $AGENT_RESOURCE_DIR/skills/${id}/SKILL.md before using ${id}.`,
    entrypoint: `skills/${id}/SKILL.md`,
    installedAt: '2026-01-31T12:00:00.000Z',
    ...overrides,
  };
}

/** Writes `receipts/<file>` as given, bypassing `receipt add` (to plant invalid receipts). */
export async function writeReceipt(root: string, value: unknown, file?: string): Promise<string> {
  const name = file ?? `${(value as { id: string }).id}.json`;
  const full = path.join(root, 'receipts', name);
  await writeFile(full, typeof value === 'string' ? value : JSON.stringify(value, null, 2), { mode: 0o600 });
  return full;
}

/** A GitHub token shape (`ghp_` + 36 alphanumerics) that secret scanners recognize; not a real credential. */
export const FAKE_GITHUB_TOKEN = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

export interface Machine {
  reg: Registry;
  cli: CliRunner;
  root: string;
  dir: string;
  token: string;
  tokenPath: string;
  /** `--registry URL --machine-id ID --token-file FILE` for this machine. */
  remote: string[];
}

/** A registry, an enrolled machine with its token file, and an initialized resource root. */
export async function machine(
  t: TestContext & { equal(found: unknown, wanted: unknown, message: string): boolean },
  machineId = 'agentlet-7f3a',
  /** The registry's environment beside the tests' (e.g. a record quota). */
  env: Record<string, string> = {},
): Promise<Machine> {
  const reg = await startRegistry(t, env);
  const dir = await tempDir(t);
  const root = path.join(dir, 'resources');
  const cli = cliRunner(t, { AGENT_RESOURCE_DIR: root });
  const token = await reg.h.enroll(machineId);
  cli.tokens.push(token);
  const tokenPath = await tokenFile(dir, token);
  const init = await cli(['init']);
  t.equal(init.code, 0, 'init');
  return { reg, cli, root, dir, token, tokenPath, remote: ['--registry', reg.url, '--machine-id', machineId, '--token-file', tokenPath] };
}

export async function catalogue(m: Machine): Promise<{ body: string; resources: { id: string; provider: string }[] }> {
  const res = await m.reg.h.app.inject({ url: '/api/acp/resources', headers: m.reg.h.owner });
  return { body: res.body, resources: res.json().resources };
}

/** Installs `skills/<id>/SKILL.md` and adds its receipt through the CLI. */
export async function addSkill(m: Machine, id: string, extra: string[] = []) {
  await installFile(m.root, `skills/${id}/SKILL.md`, `# ${id}\n`);
  const instructions = path.join(m.dir, `${id}.md`);
  await writeFile(instructions, `Read $AGENT_RESOURCE_DIR/skills/${id}/SKILL.md before using ${id}.\n`);
  return m.cli([
    'receipt',
    'add',
    id,
    '--kind',
    'skill',
    '--entrypoint',
    `skills/${id}`,
    '--name',
    `Skill ${id}`,
    '--description',
    `What ${id} does.`,
    '--instructions-file',
    instructions,
    ...extra,
  ]);
}

export interface Daemon {
  /** Every line it wrote (stdout and stderr), without line ends. */
  lines: string[];
  /** Resolves with the first log line (parsed) whose `msg` matches, waiting up to `ms`. */
  waitFor(msg: RegExp, ms?: number, after?: number): Promise<{ msg: string; [key: string]: unknown }>;
  /** Resolves with the first line whose raw text matches (a terminal's readable lines are not JSON). */
  waitForLine(text: RegExp, ms?: number): Promise<string>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `agentlet-resources serve` as a real process (the compiled CLI) for the machine `remote` names, in `root`.
 * With `tty`, it runs on a pseudo-terminal (util-linux `script`), so it writes its terminal lines, and the
 * terminal's line ends (CR LF) come back as LF.
 */
export function startServe(
  t: TestContext,
  root: string,
  remote: string[],
  extra: string[] = ['--reconnect-max-ms', '500'],
  options: { tty?: boolean } = {},
): Daemon {
  const argv = [CLI, 'serve', ...remote, ...extra];
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), AGENT_RESOURCE_DIR: root };
  const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
  const child = options.tty
    ? spawn('script', ['-qefc', [process.execPath, ...argv].map(quote).join(' '), '/dev/null'], {
        env: { ...env, TERM: 'xterm' },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let partial = '';
  const take = (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8').replaceAll(options.tty ? '\r\n' : '\n', '\n');
    const parts = text.split('\n');
    partial = parts.pop()!;
    lines.push(...parts.filter((l) => l !== ''));
    for (const w of waiters) w();
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await exited;
    appendFileSync(canaryLogFile(), `$ agentlet-resources serve\n${lines.join('\n')}\n`);
  });
  const parsed = (line: string) => {
    try {
      return JSON.parse(line) as { msg: string; [key: string]: unknown };
    } catch {
      return { msg: '' };
    }
  };
  const wait = <T>(find: () => T | undefined, what: string, ms: number) =>
    new Promise<T>((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found === undefined) return false;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no log line matching ${what} within ${ms} ms; lines:\n${lines.join('\n').slice(-20_000)}`));
      }, ms);
      waiters.add(check);
      check();
    });
  return {
    lines,
    waitFor: (msg, ms = 20_000, after = 0) =>
      wait(
        () =>
          lines
            .slice(after)
            .map(parsed)
            .find((l) => msg.test(l.msg ?? '')),
        String(msg),
        ms,
      ),
    waitForLine: (text, ms = 20_000) => wait(() => lines.find((l) => text.test(l)), String(text), ms),
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
