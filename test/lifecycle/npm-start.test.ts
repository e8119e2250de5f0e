// `npm start` as an operator runs it: npm, then the server in its place (the script execs it), so a SIGTERM or
// SIGINT sent to npm's process (a service manager's stop, `kill` of a background job) reaches the server,
// which closes gracefully: npm exits, the server's process is gone and its port is free.
import { spawn } from 'node:child_process';
import net from 'node:net';
import t from 'tap';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { ensureBuilt } from '../helpers/built.js';
import { WITHOUT_COVERAGE } from '../helpers/coverage.js';
import { freePort } from '../helpers/sockets.js';
import { processAlive, until } from '../helpers/wait.js';

t.setTimeout(600_000);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} to npm start stops the server it started`, async (t) => {
    ensureBuilt();
    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: await tempDataDir(),
        PORT: String(port),
        DATA_DIR: await tempDataDir(),
        OWNER_TOKEN: CANARY.owner,
        HUABU_PROVIDER_TOKEN: CANARY.huabu,
        CANVAS_TOKEN_SECRET: CANARY.secret,
        npm_config_update_notifier: 'false',
        ...WITHOUT_COVERAGE,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    npm.stdout.on('data', (c: Buffer) => (log += c.toString()));
    npm.stderr.on('data', (c: Buffer) => (log += c.toString()));
    let exited: number | string | null | undefined;
    npm.once('exit', (code, sig) => (exited = sig ?? code));
    t.teardown(() => void npm.kill('SIGKILL'));

    await until('the server to be ready', () => /agent-resource-registry ready/.test(log) || exited !== undefined, {
      within: 240_000, // npm start builds first when a source is newer than the build
    });
    const pid = Number(/"pid":(\d+)/.exec(log)?.[1]);
    t.ok(pid > 0, pid > 0 ? 'the server logged its process' : `no server process in its log: ${log.slice(-600)}`);
    t.teardown(() => {
      if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    });

    npm.kill(signal);
    await until('npm to exit', () => exited !== undefined, { within: 60_000 });
    await until('the server process to be gone', () => !processAlive(pid), { within: 30_000 });
    t.match(log, new RegExp(`"signal":"${signal}","msg":"closing"`), 'the server received the signal and closed gracefully');
    const connected = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve('connected')));
      socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
    t.equal(connected, 'ECONNREFUSED', 'nothing listens on its port');
  });
}
