// The README is tested, as rustdoc and doctest test theirs: the shell blocks of its quick start, then those
// of the Agentlet walk-through (docs/agentlet-walkthrough.md), then the README's stop, each between
// `<!-- doctest: NAME -->` and `<!-- /doctest -->`, run in order, in one bash with `set -euo pipefail`, against
// the real server the quick start starts, on a free port, from a temporary directory that mirrors the
// checkout. A broken step fails this test, so it fails CI; after the stop, nothing listens on the port and the
// server's process is gone.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, symlink } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { WITHOUT_COVERAGE } from '../helpers/coverage.js';
import { freePort } from '../helpers/sockets.js';
import { processAlive } from '../helpers/wait.js';

t.setTimeout(600_000);

const ROOT = process.cwd();
const MARK = '@@doctest-step';

/** The fenced `sh` blocks of one doctest region of a Markdown document, in order. */
export function doctestBlocks(markdown: string, name: string): string[] {
  const start = markdown.indexOf(`<!-- doctest: ${name} -->`);
  const end = markdown.indexOf('<!-- /doctest -->', start);
  if (start < 0 || end < 0) return [];
  return [...markdown.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

t.test('the README quick start and Agentlet walk-through run top to bottom', async (t) => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const walkthrough = await readFile(path.join(ROOT, 'docs', 'agentlet-walkthrough.md'), 'utf8');
  const quick = doctestBlocks(readme, 'quickstart');
  const agentlet = doctestBlocks(walkthrough, 'agentlet');
  const stop = doctestBlocks(readme, 'stop');
  t.ok(quick.length >= 10, `the quick start has its blocks (${quick.length})`);
  t.ok(agentlet.length >= 5, `the Agentlet walk-through has its blocks (${agentlet.length})`);
  t.equal(stop.length, 1, 'the README says how to stop the service');
  const blocks = [...quick, ...agentlet, ...stop];

  const dir = await mkdtemp(path.join(os.tmpdir(), 'arr-readme-'));
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
  const script = ['set -euo pipefail', ...blocks.map((b, i) => `echo "${MARK} ${i + 1}"\n${b}`), `echo "${MARK} end"`].join('\n');
  const child = spawn('bash', ['-c', script], {
    cwd: dir,
    detached: true, // its own process group: the background server goes with it in teardown
    // Without tap's coverage: the quick start runs npm and the bundled server, whose coverage would map to
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
  const lastStep = steps.at(-1)!.split('\n')[0];
  t.equal(
    code,
    0,
    `every block ran (stopped in block ${lastStep}):\n${err}\n--- registry.log tail:\n${log.split('\n').slice(-6).join('\n')}`,
  );
  t.match(out, new RegExp(`${MARK} end`), 'reached the end');

  const step = (n: number) => steps.find((s) => s.startsWith(`${n}\n`)) ?? '';
  t.match(step(3), /"id":"web-search"/, 'huabu registered web-search');
  t.match(step(5), /"created":\["pdf-tools"\]/, 'the machine published pdf-tools (a real reconcile, not a dry run)');
  t.match(step(6), /"id":"pdf-tools"[\s\S]*"id":"web-search"|"id":"web-search"[\s\S]*"id":"pdf-tools"/);
  t.match(
    step(8),
    /"resourceIds":\["huabu-access","local-resource-management","web-search","pdf-tools"\]/,
    'the launch pinned the defaults and the selection',
  );
  const agentView = step(10);
  t.match(agentView, /"id":"pdf-tools"/, "the agent sees its machine's record");
  t.match(agentView, /"id":"web-search"/, "and huabu's");
  const q = quick.length;
  t.match(step(q + 4), /ok summarize-pdf/, 'the receipt validates');
  t.match(step(q + 5), /summarize-pdf/, 'sync published it and list shows it');
  t.notMatch(out + err, /arr_owner_|arr_huabu_|arr_machine_|arr_canvas_/, 'no token printed by any step');

  // What the README says a first start logs: three JSON lines, the last one the ready line.
  const startLines = log
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { level: number; msg: string }).msg)
    .slice(0, 3);
  t.match(
    startLines,
    [
      /^Server listening at http:\/\/127\.0\.0\.1:\d+$/,
      /^generated missing credentials; read them from this file/,
      /^agent-resource-registry ready: listening on /,
    ],
    'a first start logs: listening, credentials generated, ready',
  );

  // The README's stop stopped the service: its process is gone and its port is free.
  const pids = [...new Set([...log.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1])))];
  t.ok(pids.length > 0, 'registry.log names the server process');
  t.same(pids.filter(processAlive), [], "the server's process has exited");
  const connected = await new Promise<string>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
  t.equal(connected, 'ECONNREFUSED', `nothing listens on port ${port} any more`);
});
