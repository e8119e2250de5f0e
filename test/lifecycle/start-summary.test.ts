// The process start as an operator meets it (the summary and the terminal) (`node dist/src/server.js`, real sockets, real files): one-line
// refusals without stack traces and without generating credentials, the refusal of a wildcard HOST without
// PUBLIC_BASE_URL, the one-line summary, where each credential comes from, and pretty logs only on a TTY.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { SERVER_ENTRY, startServer } from '../crash/server-process.js';

t.setTimeout(600_000);

t.test(
  'the start-up summary names the listening URL, PUBLIC_BASE_URL, store, data directory and /docs; credential sources, never values',
  async (t) => {
    const dataDir = await tempDataDir();
    // The owner token from the environment, the other two from the file (generated on the first start).
    const first = await startServer({ DATA_DIR: dataDir, OWNER_TOKEN: CANARY.owner, SEED_HUABU_RESOURCES: 'false' }, 90_000);
    await first.kill();
    const { readFile } = await import('node:fs/promises');
    // PORT=0 without PUBLIC_BASE_URL: the public address is the one actually bound, not port 0.
    const firstSummary = (await readFile(first.logFile, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => typeof l.msg === 'string' && l.msg.startsWith('agent-resource-registry ready'));
    t.match(firstSummary, { listening: first.origin, publicBaseUrl: first.origin }, 'PUBLIC_BASE_URL unset: the bound address');
    t.ok(existsSync(path.join(dataDir, 'credentials.json')), 'generated once listening');
    const server = await startServer(
      { DATA_DIR: dataDir, OWNER_TOKEN: CANARY.owner, SEED_HUABU_RESOURCES: 'false', PUBLIC_BASE_URL: 'http://registry.example' },
      90_000,
    );
    t.teardown(() => server.kill());
    const lines = (await readFile(server.logFile, 'utf8')).trim().split('\n');
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    t.ok(parsed.length === lines.length, 'not a TTY: every line is JSON');
    const summary = parsed.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('agent-resource-registry ready')).pop();
    t.ok(summary, 'a summary line');
    t.match(
      summary!.msg,
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
