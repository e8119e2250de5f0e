// Runs documentation as written, as rustdoc and doctest do: the fenced `sh` blocks between
// `<!-- doctest: NAME -->` and `<!-- /doctest -->`, in order, in one bash with `set -euo pipefail`, from a
// temporary directory that mirrors the checkout, on a free port; then checks that the README's stop stopped
// the service (its process gone, its port free).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, symlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { WITHOUT_COVERAGE } from './coverage.js';
import { freePort } from './sockets.js';
import { processAlive } from './wait.js';

const ROOT = process.cwd();
const MARK = '@@doctest-step';

/** The fenced `sh` blocks of one doctest region of a Markdown document, in order. */
export function doctestBlocks(markdown: string, name: string): string[] {
  const start = markdown.indexOf(`<!-- doctest: ${name} -->`);
  const end = markdown.indexOf('<!-- /doctest -->', start);
  if (start < 0 || end < 0) return [];
  return [...markdown.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** The blocks of doctest region `name` of the document at `file` (relative to the checkout). */
export async function docBlocks(file: string, name: string): Promise<string[]> {
  return doctestBlocks(await readFile(path.join(ROOT, file), 'utf8'), name);
}

export interface DoctestRun {
  /** bash's exit code; null when it was killed at the deadline. */
  code: number | null;
  out: string;
  err: string;
  /** The number of the block it stopped in (or `end`). */
  lastStep: string;
  /** The output of block `n` (1-based). */
  step(n: number): string;
  /** registry.log as the blocks left it. */
  log: string;
  port: number;
}

/** Runs `blocks` in one bash, in order, from a temporary mirror of the checkout; kills what is left in teardown. */
export async function runDoctest(t: Test, blocks: string[]): Promise<DoctestRun> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'arr-doctest-'));
  for (const entry of [
    'package.json',
    'package-lock.json',
    'node_modules',
    'dist',
    'src',
    'scripts',
    'test',
    'tsconfig.json',
    'packages',
  ]) {
    await symlink(path.join(ROOT, entry), path.join(dir, entry));
  }
  const port = await freePort();
  // Each mark on a line of its own, even after a block whose output does not end its last line.
  const mark = (what: string | number) => `printf '\\n%s\\n' "${MARK} ${what}"`;
  const script = ['set -euo pipefail', ...blocks.map((b, i) => `${mark(i + 1)}\n${b}`), mark('end')].join('\n');
  const child = spawn('bash', ['-c', script], {
    cwd: dir,
    detached: true, // its own process group: the background server goes with it in teardown
    // Without tap's coverage: the blocks run npm and the bundled server, whose coverage would map to
    // dist/ rather than src/ and is not reported.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      PORT: String(port),
      DATA_DIR: path.join(dir, 'data'),
      LANG: 'C.UTF-8',
      ...WITHOUT_COVERAGE,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      resolve(null);
    }, 500_000);
    child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  const log = await readFile(path.join(dir, 'registry.log'), 'utf8').catch(() => '(no registry.log)');
  const steps = out.split(new RegExp(`^${MARK} `, 'm'));
  return {
    code,
    out,
    err,
    lastStep: steps.at(-1)!.split('\n')[0]!,
    step: (n) => steps.find((s) => s.startsWith(`${n}\n`)) ?? '',
    log,
    port,
  };
}

/** Asserts every block ran, with what went wrong when one did not. */
export function assertRan(t: Test, run: DoctestRun): void {
  t.equal(
    run.code,
    0,
    `every block ran (stopped in block ${run.lastStep}):\n${run.err}\n--- registry.log tail:\n${run.log.split('\n').slice(-6).join('\n')}`,
  );
  t.match(run.out, new RegExp(`${MARK} end`), 'reached the end');
}

/** Asserts the README's stop stopped the service: the processes registry.log names are gone, the port is free. */
export async function assertStopped(t: Test, run: DoctestRun): Promise<void> {
  const pids = [...new Set([...run.log.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1])))];
  t.ok(pids.length > 0, 'registry.log names the server process');
  t.same(pids.filter(processAlive), [], "the server's process has exited");
  const connected = await new Promise<string>((resolve) => {
    const socket = net.connect(run.port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
  t.equal(connected, 'ECONNREFUSED', `nothing listens on port ${run.port} any more`);
}
