// The process start as an operator meets it (refusals) (`node dist/src/server.js`, real sockets, real files): one-line
// refusals without stack traces and without generating credentials, the refusal of a wildcard HOST without
// PUBLIC_BASE_URL, the one-line summary, where each credential comes from, and pretty logs only on a TTY.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { tempDataDir } from '../helpers/build.js';
import { SERVER_ENTRY } from '../crash/server-process.js';

interface Exit {
  code: number | null;
  out: string;
  err: string;
}

/** Runs the server to its exit (bounded) without any credential in the environment unless given. */
function runToExit(env: Record<string, string>, timeoutMs = 90_000): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER_ENTRY], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not exit within ${timeoutMs} ms: ${out}${err}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

// Each case starts a real process; on a loaded machine a start takes tens of seconds.
t.setTimeout(600_000);

const noStack = (text: string) => !/^\s+at /m.test(text) && !/"stack"/.test(text);

t.test('a DATA_DIR that is a file: one line, exit 1, no stack, no credentials generated', async (t) => {
  const dir = await tempDataDir();
  const file = path.join(dir, 'not-a-dir');
  await writeFile(file, 'x');
  const run = await runToExit({ DATA_DIR: file, HOST: '127.0.0.1', PORT: '0' });
  t.equal(run.code, 1);
  const text = run.out + run.err;
  t.match(text, /DATA_DIR .*not-a-dir: is a file, not a directory/);
  t.ok(noStack(text), 'no stack trace');
  t.equal(text.trim().split('\n').length, 1, 'one line');

  const nested = await runToExit({ DATA_DIR: path.join(file, 'data'), HOST: '127.0.0.1', PORT: '0' });
  t.equal(nested.code, 1);
  t.match(nested.out + nested.err, /is a file, not a directory/);
  t.ok(noStack(nested.out + nested.err));
});

t.test('a port already in use: one line, exit 1, and no credentials.json left behind', async (t) => {
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => blocker.close(() => r())));
  const port = (blocker.address() as net.AddressInfo).port;
  const dataDir = await tempDataDir();
  const run = await runToExit({ DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), SEED_HUABU_RESOURCES: 'false' });
  t.equal(run.code, 1);
  t.match(run.out + run.err, new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
  t.ok(noStack(run.out + run.err));
  t.notOk(existsSync(path.join(dataDir, 'credentials.json')), 'credentials are generated only once the server listens');
});

t.test('a wildcard HOST without PUBLIC_BASE_URL is refused; with it the server starts', async (t) => {
  for (const host of ['0.0.0.0', '::']) {
    const run = await runToExit({ DATA_DIR: await tempDataDir(), HOST: host, PORT: '0' });
    t.equal(run.code, 2, host);
    t.match(run.err, /listens on every interface, so PUBLIC_BASE_URL must say how clients reach this registry/);
    t.ok(noStack(run.err));
  }
  const { loadConfig } = await import('../../src/config.js');
  t.equal(loadConfig({ HOST: '0.0.0.0', PUBLIC_BASE_URL: 'http://registry.example:8787' }).publicBaseUrl, 'http://registry.example:8787');
});

t.test('a PUBLIC_BASE_URL with a user name or password is refused, without echoing it', async (t) => {
  const password = 'S3cr3t-Passw0rd-in-url';
  const dataDir = await tempDataDir();
  // Bounded well below runToExit's default: a refusal comes before anything starts listening.
  const run = await runToExit(
    { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', PUBLIC_BASE_URL: `https://alice:${password}@registry.example:8787` },
    60_000,
  );
  t.equal(run.code, 2);
  t.match(run.err, /PUBLIC_BASE_URL must not carry a user name or password/);
  t.ok(noStack(run.err));
  t.notOk((run.out + run.err).includes(password), 'the password is not echoed');
  t.notOk((run.out + run.err).includes('alice'), 'nor the user name');
  t.notOk(existsSync(path.join(dataDir, 'credentials.json')), 'nothing was generated');

  const { ConfigError, loadConfig } = await import('../../src/config.js');
  for (const url of ['http://alice@registry.example', 'http://:pw@registry.example/prefix', 'https://alice:pw@[::1]:8787']) {
    t.throws(() => loadConfig({ PUBLIC_BASE_URL: url }), ConfigError, url);
  }
  t.equal(
    loadConfig({ PUBLIC_BASE_URL: 'https://registry.example/a@b' }).publicBaseUrl,
    'https://registry.example/a@b',
    'an @ in the path is no user name',
  );
});

t.test('HUABU_COMPAT is off unless set to 1 or true; any other value stops the start, naming the variable', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.equal(loadConfig({}).huabuCompat, false, 'off by default');
  t.equal(loadConfig({ HUABU_COMPAT: '' }).huabuCompat, false, 'empty is unset');
  for (const on of ['1', 'true']) t.equal(loadConfig({ HUABU_COMPAT: on }).huabuCompat, true, on);
  for (const off of ['0', 'false']) t.equal(loadConfig({ HUABU_COMPAT: off }).huabuCompat, false, off);
  for (const bad of ['yes', 'on', 'TRUE', '2'])
    t.throws(() => loadConfig({ HUABU_COMPAT: bad }), { name: 'ConfigError', message: /HUABU_COMPAT/ }, bad);
});
