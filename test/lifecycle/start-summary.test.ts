// The process start as an operator meets it (the summary and the terminal) (`node dist/src/server.js`, real sockets, real files): one-line
// refusals without stack traces and without generating credentials, the refusal of a wildcard HOST without
// PUBLIC_BASE_URL, the one-line summary, where each credential comes from, and pretty logs only on a TTY.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { SERVER_ENTRY, startServer } from '../crash/server-process.js';
import { until } from '../helpers/wait.js';

t.setTimeout(600_000);

/** A server's log once it holds the start-up summary: its lines, each parsed as JSON, and the summary's. */
async function summaryOf(logFile: string) {
  return until('the start-up summary in the log', async () => {
    const text = await readFile(logFile, 'utf8');
    // A line still being written is waited for too.
    if (!text.endsWith('\n')) return undefined;
    const lines = text.trim().split('\n');
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = parsed.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('agent-resource-registry ready')).pop();
    return summary && { lines, parsed, summary: summary as Record<string, unknown> & { msg: string } };
  });
}

t.test(
  'the start-up summary names the listening URL, PUBLIC_BASE_URL, store, data directory and /docs; credential sources, never values',
  async (t) => {
    const dataDir = await tempDataDir();
    // The owner token from the environment, the other two from the file (generated on the first start).
    const first = await startServer({ DATA_DIR: dataDir, OWNER_TOKEN: CANARY.owner, SEED_HUABU_RESOURCES: 'false' }, 90_000);
    // /readyz answers once the port is bound; the summary follows the credentials' write, and reaches the log
    // through this process's pipe: it is waited for, not expected at once.
    const firstSummary = (await summaryOf(first.logFile)).summary;
    await first.kill();
    // PORT=0 without PUBLIC_BASE_URL: the public address is the one actually bound, not port 0.
    t.match(firstSummary, { listening: first.origin, publicBaseUrl: first.origin }, 'PUBLIC_BASE_URL unset: the bound address');
    t.ok(existsSync(path.join(dataDir, 'credentials.json')), 'generated once listening');
    const server = await startServer(
      { DATA_DIR: dataDir, OWNER_TOKEN: CANARY.owner, SEED_HUABU_RESOURCES: 'false', PUBLIC_BASE_URL: 'http://registry.example' },
      90_000,
    );
    t.teardown(() => server.kill());
    const { lines, parsed, summary } = await summaryOf(server.logFile);
    t.ok(parsed.length === lines.length, 'not a TTY: every line is JSON');
    t.ok(summary, 'a summary line');
    t.match(
      summary.msg,
      new RegExp(
        `listening on ${server.origin.replace(/\./g, '\\.')}, PUBLIC_BASE_URL http://registry\\.example, store json in ${dataDir.replace(/[.\\/]/g, '\\$&')}, docs http://registry\\.example/docs`,
      ),
    );
    t.match(summary, {
      listening: server.origin,
      publicBaseUrl: 'http://registry.example',
      store: 'json',
      dataDir,
      docs: 'http://registry.example/docs',
    });
    const sources = parsed.find((l) => l.credentialSources);
    t.same(sources?.credentialSources, { owner: 'environment', huabu: 'file', canvasSecret: 'file' });
    t.notMatch(lines.join('\n'), CANARY.owner.slice(10));
  },
);

t.test(
  'on a terminal the logs are pretty (pino-pretty), not JSON',
  { skip: existsSync('/usr/bin/script') ? false : 'no script(1) to give the server a TTY' },
  async (t) => {
    const dataDir = await tempDataDir();
    await mkdir(dataDir, { recursive: true });
    // script(1) runs the server on a pseudo-terminal, in its own process group, stopped once it is ready.
    const cmd = `DATA_DIR=${dataDir} OWNER_TOKEN=${CANARY.owner} HUABU_PROVIDER_TOKEN=${CANARY.huabu} CANVAS_TOKEN_SECRET=${CANARY.secret} HOST=127.0.0.1 PORT=0 SEED_HUABU_RESOURCES=false ${process.execPath} ${SERVER_ENTRY}`;
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line on the terminal: ${stdout}`)), 90_000);
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
        if (/agent-resource-registry ready/.test(stdout)) {
          clearTimeout(timer);
          resolve();
        }
      });
    }).finally(() => process.kill(-child.pid!, 'SIGINT'));
    await new Promise((r) => child.once('exit', r));
    const run = { stdout };
    // eslint-disable-next-line no-control-regex -- removes the colours' escape sequences, which start with ESC
    const out = run.stdout.replace(/\x1b\[[0-9;]*m/g, '');
    t.match(out, /INFO.*agent-resource-registry ready: listening on http:\/\/127\.0\.0\.1:\d+/);
    t.notMatch(out, /^\{"level"/m, 'no JSON lines');
    t.notMatch(out, CANARY.owner.slice(10));
  },
);
