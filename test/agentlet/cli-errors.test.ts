// agentlet-resources with an unreachable or silent registry, usage errors, and init.
// The CLI runs in the test's process (its main(), from source) against a real registry on a loopback socket (fresh
// DATA_DIR), and once as the compiled executable for its exit status; every run is checked for leaked tokens
// (test/helpers/agentlet.ts).
import t from 'tap';
import { chmod, mkdir, stat } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { PUBLISH_TIMEOUT_MS } from '../../src/agentlet/registry-client.js';
import { LARGE_BODY_WAIT_MS } from '../../src/http/large-bodies.js';
import { addSkill, catalogue, cliRunner, machine, tempDir } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { freePort, listen } from '../helpers/sockets.js';

t.test('an unreachable registry is named with a hint', async (t) => {
  const m = await machine(t);
  const url = `http://127.0.0.1:${await freePort()}`;
  for (const command of ['sync', 'list']) {
    const run = await m.cli([command, '--registry', url, '--machine-id', 'agentlet-7f3a', '--token-file', m.tokenPath]);
    t.equal(run.code, 3, command);
    t.match(
      run.stderr,
      `cannot reach the registry at ${url} (connection refused); check that the registry is running and that --registry is its base URL`,
    );
  }
});

t.test('a URL that is not the registry base URL is named as such', async (t) => {
  const m = await machine(t);
  const run = await m.cli(['list', '--registry', `${m.reg.url}/some/prefix`, '--machine-id', 'agentlet-7f3a', '--token-file', m.tokenPath]);
  t.equal(run.code, 3);
  t.match(
    run.stderr,
    `unexpected answer from ${m.reg.url}/some/prefix: 404 not_found for /api/acp/providers/{provider}/resources; is --registry the registry's base URL`,
  );
});

t.test("a publish may wait beyond --timeout-ms for its turn among other machines' large publishes", async (t) => {
  const m = await machine(t);
  // In front of the real registry: holds each request for the machine's set 1.5 s before passing it on, as the
  // registry holds a whole-set publish while other machines' large sets are handled one at a time (up to 20 s).
  const held: string[] = [];
  const proxy = http.createServer((req, res) => {
    const forward = () => {
      const up = http.request(`${m.reg.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      // A held request whose caller gave up may reach the registry after the test closed it.
      up.on('error', () => res.destroy());
      req.pipe(up);
    };
    if (/\/resources(\?|$)/.test(req.url!)) {
      if (req.method === 'PUT') held.push(req.url!);
      setTimeout(forward, 1500);
    } else forward();
  });
  const url = await listen(proxy);
  t.teardown(() => proxy.close());
  await addSkill(m, 'held-skill');
  const remote = ['--registry', url, '--machine-id', 'agentlet-7f3a', '--token-file', m.tokenPath, '--timeout-ms', '300'];
  const sync = await m.cli(['sync', ...remote]);
  t.equal(sync.code, 0, sync.stderr);
  t.match(sync.stdout, /created: +held-skill/);
  t.equal(held.length, 1, 'one publish, not given up and sent again');
  t.same(
    (await catalogue(m)).resources.map((r) => r.id),
    ['held-skill'],
  );
  const list = await m.cli(['list', ...remote]);
  t.equal(list.code, 3, 'any other request keeps --timeout-ms');
  t.match(list.stderr, `the registry at ${url} did not answer within 300 ms`);
  t.ok(
    PUBLISH_TIMEOUT_MS > LARGE_BODY_WAIT_MS + 20_000,
    "a publish waits longer than the registry's turn may take, with time to be handled",
  );
});

t.test('a registry that does not answer times out within --timeout-ms', async (t) => {
  const m = await machine(t);
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((socket) => sockets.add(socket));
  const url = await listen(silent);
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const started = Date.now();
  const run = await m.cli(['list', '--registry', url, '--machine-id', 'agentlet-7f3a', '--token-file', m.tokenPath, '--timeout-ms', '300']);
  t.equal(run.code, 3);
  t.match(run.stderr, `the registry at ${url} did not answer within 300 ms`);
  t.ok(Date.now() - started < 10_000, 'bounded');
  const env = await m.cli(['list', '--registry', url, '--machine-id', 'agentlet-7f3a', '--token-file', m.tokenPath], {
    AGENTLET_TIMEOUT_MS: '200',
  });
  t.match(env.stderr, /did not answer within 200 ms/, 'AGENTLET_TIMEOUT_MS sets it too');
});

t.test('usage errors exit 2 and say what to do', async (t) => {
  const dir = await tempDir(t);
  const cli = cliRunner(t);
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['validate', '--resource-dir', 'relative/dir'], {}, /--resource-dir must be an absolute path/],
    [['validate'], { AGENT_RESOURCE_DIR: 'relative' }, /AGENT_RESOURCE_DIR must be an absolute path/],
    [
      ['validate', '--resource-dir', path.join(dir, 'missing')],
      {},
      /does not exist or is not a directory; run `agentlet-resources init` first/,
    ],
    [['frobnicate'], {}, /unknown command "frobnicate"/],
    [['toString'], {}, /unknown command "toString"/],
    [['sync', '--bogus'], {}, /sync: Unknown option '--bogus'/],
    [['receipt', 'add', 'x', '--kind', 'plugin'], { AGENT_RESOURCE_DIR: dir }, /--kind must be one of skill, tool, connector/],
    [['list', '--registry', 'ftp://x', '--machine-id', 'm', '--token-file', 'f'], {}, /--registry must be an http/],
    [['list', '--registry', 'http://x', '--machine-id', 'huabu', '--token-file', 'f'], {}, /--machine-id must be the exact machine ID/],
    [
      ['list', '--registry', 'http://x', '--machine-id', 'm', '--token-file', 'f', '--timeout-ms', '0'],
      {},
      /--timeout-ms must be a whole number/,
    ],
    [[], {}, /Usage: agentlet-resources/],
  ];
  for (const [args, env, message] of cases) {
    const run = await cli(args, env);
    t.equal(run.code, 2, args.join(' ') || '(no arguments)');
    t.match(run.stderr, message);
  }
  const help = await cli(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /Exit codes\n {2}0 {2}success[\s\S]*3 {2}registry unavailable/);
});

t.test('the executable exits with the status main() returns', { skip: needsBuild() }, async (t) => {
  // What a shell script or a systemd unit sees: the compiled executable in a process of its own.
  const cli = cliRunner(t, {}, 'process');
  const unknown = await cli(['frobnicate']);
  t.equal(unknown.code, 2, 'a usage error');
  t.match(unknown.stderr, /unknown command "frobnicate"/);
  const help = await cli(['--help']);
  t.equal(help.code, 0, 'help');
  t.match(help.stdout, /^Usage: agentlet-resources/);
});

t.test('init is idempotent and tightens a loose root', async (t) => {
  const dir = await tempDir(t);
  const root = path.join(dir, 'res');
  const cli = cliRunner(t);
  await mkdir(path.join(root, 'receipts'), { recursive: true, mode: 0o777 });
  await chmod(path.join(root, 'receipts'), 0o777);
  const init = await cli(['init', '--resource-dir', root]);
  t.equal(init.code, 0, init.stderr);
  t.match(init.stdout, `tightened ${path.join(root, 'receipts')} to mode 0700`);
  t.equal((await stat(path.join(root, 'receipts'))).mode & 0o777, 0o700);
  const again = await cli(['init', '--resource-dir', root]);
  t.equal(again.code, 0);
  t.notMatch(again.stdout, /created|tightened/);
});

t.test('init tightens a root and receipts/ that only the group may write, and leaves a read-only group alone', async (t) => {
  const dir = await tempDir(t);
  const root = path.join(dir, 'res');
  const cli = cliRunner(t);
  await mkdir(path.join(root, 'receipts'), { recursive: true });
  await mkdir(path.join(root, 'skills'));
  await chmod(root, 0o770);
  await chmod(path.join(root, 'receipts'), 0o730);
  await chmod(path.join(root, 'skills'), 0o750);
  const init = await cli(['init', '--resource-dir', root]);
  t.equal(init.code, 0, init.stderr);
  t.match(init.stdout, `tightened ${root} to mode 0700`);
  t.match(init.stdout, `tightened ${path.join(root, 'receipts')} to mode 0700`);
  t.notMatch(init.stdout, `tightened ${path.join(root, 'skills')}`, 'group may read, not write: nothing to tighten');
  t.equal((await stat(root)).mode & 0o777, 0o700, 'the root');
  t.equal((await stat(path.join(root, 'receipts'))).mode & 0o777, 0o700, 'receipts/');
  t.equal((await stat(path.join(root, 'skills'))).mode & 0o777, 0o750, 'skills/ as it was');
});
