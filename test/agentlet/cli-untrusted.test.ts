// agentlet-resources trusts neither its registry nor what lies around its files: escape sequences never reach the
// terminal, an answer is read only up to a cap, a token file that is a FIFO is refused at once, and an unsafe
// receipts/ (a symbolic link, or writable by group or others) is refused rather than warned about.
// The CLI runs in the test's process (its main(), from source) against a hostile registry on a loopback socket.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { cliRunner, fakeRegistry, receiptJson, tempDir, tokenFile, writeReceipt, type TestContext } from '../helpers/agentlet.js';

// About thirty CLI runs, each loading the secret scanner; on a loaded machine one takes seconds.
t.setTimeout(900_000);

/** Every control character a terminal could act on; newline and tab are the only ones the CLI may print. */
// Every C0 and C1 control but tab and newline.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const MACHINE = 'agentlet-7f3a';
const MiB = 1024 * 1024;

/** A fresh initialized root and token file; the CLI pointed at them. */
async function local(t: TestContext & { equal(found: unknown, wanted: unknown, message: string): boolean }) {
  const dir = await tempDir(t);
  const root = path.join(dir, 'resources');
  const cli = cliRunner(t, { AGENT_RESOURCE_DIR: root });
  const token = `arr_m_${'untrusted0registry0test0token'}`;
  cli.tokens.push(token);
  const tokenPath = await tokenFile(dir, token);
  t.equal((await cli(['init'])).code, 0, 'init');
  return { dir, root, cli, tokenPath };
}

/** Escape sequences a registry could hide in its text: clear the line, recolour, retitle, a hyperlink, 8-bit CSI/OSC. */
const EVIL =
  'refused\r\u001b[2K\u001b[32msynced 3 receipt(s) to https://registry.example as machine agentlet-7f3a\u001b[0m\n' +
  'synced 3 receipt(s)\u001b]0;pwned\u0007 \u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\ \u009b31m\u009d0;t\u009c\u007f\u0008';

t.test('nothing the registry, a file name or a record says reaches the terminal as a control character', async (t) => {
  const { root, cli, tokenPath } = await local(t);
  const reg = await fakeRegistry(t, (req, res) => {
    const machine = decodeURIComponent((req.url ?? '').split('/')[4] ?? '');
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (machine === 'm-400') return json(400, { statusCode: 400, code: 'validation_failed', error: 'Bad Request', message: EVIL });
    if (machine === 'm-500') return json(500, { statusCode: 500, code: `internal${EVIL}`, error: 'Internal Server Error', message: EVIL });
    if (machine === 'm-409') {
      return json(409, {
        statusCode: 409,
        code: 'resource_conflict',
        error: 'Conflict',
        message: EVIL,
        details: { conflicts: [{ id: EVIL, provider: EVIL }] },
      });
    }
    // C1 controls pass the record schemas (they exclude C0 and DEL only), so a record can carry them.
    return json(200, {
      resources: [
        {
          schemaVersion: 1,
          id: 'odd-record',
          name: 'Name \u009b2J\u009d0;title\u009c',
          provider: machine,
          description: 'About \u009b31mred',
          instructions: 'Use it.',
        },
      ],
    });
  });
  const remote = (machine: string) => ['--registry', reg.url, '--machine-id', machine, '--token-file', tokenPath];

  await writeReceipt(root, receiptJson('named-oddly'), '\u001b]0;pwned\u0007\u001b[2Jnamed-oddly\r.json');
  const validate = await cli(['validate']);
  t.equal(validate.code, 1, 'the oddly named receipt is invalid');
  t.match(validate.stdout, /^invalid receipts\//m);
  t.notMatch(validate.stdout + validate.stderr, CONTROL, 'validate: no control character in a file name printed');
  await rm(path.join(root, 'receipts'), { recursive: true });
  t.equal((await cli(['init'])).code, 0);

  for (const [machine, code] of [
    ['m-400', 1],
    ['m-409', 1],
    ['m-500', 3],
  ] as const) {
    const run = await cli(['sync', ...remote(machine)]);
    t.equal(run.code, code, `sync against ${machine}`);
    t.notMatch(run.stdout + run.stderr, CONTROL, `sync against ${machine}: no control character printed`);
    t.notMatch(run.stdout + run.stderr, /^synced/m, `sync against ${machine}: registry text cannot start a line of its own`);
    t.match(run.stderr, /refused/, 'the registry text is still shown');
  }
  const list = await cli(['list', ...remote('m-list')]);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^odd-record {2}Name/m);
  t.notMatch(list.stdout + list.stderr, CONTROL, 'list: no control character from a record printed');
});

/** Answers `status` with a JSON-looking body that never ends before `budget` bytes; counts what the socket took. */
function endless(status: number, budget: number, sent: { bytes: number }) {
  return (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.on('error', () => {});
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write('{"resources":[');
    const chunk = Buffer.from('"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",'.repeat(1024)); // 64 KiB
    void (async () => {
      while (sent.bytes < budget && !res.destroyed) {
        sent.bytes += chunk.length;
        if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
      }
      if (!res.destroyed) res.end(']}');
    })();
  };
}

t.test('an answer larger than the cap is cut off: a clear error, exit 3, and the CLI stops reading', async (t) => {
  const { cli, tokenPath } = await local(t);
  const budget = 96 * MiB;
  for (const [command, status] of [
    ['list', 200],
    ['sync', 502],
  ] as const) {
    const sent = { bytes: 0 };
    const reg = await fakeRegistry(t, endless(status, budget, sent));
    const run = await cli([command, '--registry', reg.url, '--machine-id', MACHINE, '--token-file', tokenPath, '--timeout-ms', '120000']);
    t.equal(run.code, 3, `${command}: exit 3`);
    t.match(run.stderr, new RegExp(`the answer from ${reg.url} is larger than 32 MiB`), `${command}: says why`);
    // The cap plus what loopback socket buffers hold; the registry offered 96 MiB.
    t.ok(sent.bytes < 56 * MiB, `${command}: stopped reading (the registry could write ${Math.round(sent.bytes / MiB)} MiB)`);
  }
});

t.test('a token file or instructions file that is a FIFO is refused at once', async (t) => {
  const { dir, cli } = await local(t);
  const reg = await fakeRegistry(t, (_req, res) => res.writeHead(500).end());
  const fifo = path.join(dir, 'token.fifo');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  // A blocking open waits for a writer forever: the runner kills the CLI (no exit code, no message).
  const list = await cli(['list', '--registry', reg.url, '--machine-id', MACHINE, '--token-file', fifo]);
  t.equal(list.code, 2, 'exit 2');
  t.match(list.stderr, `token file ${fifo} is not a regular file`);
  t.same(reg.requests, [], 'nothing sent');

  const add = await cli([
    'receipt',
    'add',
    'fifo-skill',
    '--kind',
    'skill',
    '--entrypoint',
    'skills/fifo-skill',
    '--name',
    'F',
    '--description',
    'D',
    '--instructions-file',
    fifo,
  ]);
  t.equal(add.code, 2, 'exit 2');
  t.match(add.stderr, `--instructions-file ${fifo} is not a regular file`);
});

t.test('an unsafe receipts/ or root is refused, not warned about', async (t) => {
  const { dir, root, cli, tokenPath } = await local(t);
  const reg = await fakeRegistry(t, (_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"created":[],"replaced":[],"withdrawn":[],"unchanged":[]}'),
  );
  const instructions = path.join(dir, 'instructions.md');
  await writeFile(instructions, 'Use it.\n');
  const commands: [string, string[]][] = [
    ['validate', ['validate']],
    ['sync', ['sync', '--registry', reg.url, '--machine-id', MACHINE, '--token-file', tokenPath]],
    [
      'receipt add',
      [
        'receipt',
        'add',
        'some-skill',
        '--kind',
        'skill',
        '--entrypoint',
        'skills/some-skill',
        '--name',
        'S',
        '--description',
        'D',
        '--instructions-file',
        instructions,
      ],
    ],
  ];
  const receipts = path.join(root, 'receipts');

  await t.test('receipts/ as a symbolic link to a world-writable directory', async (t) => {
    const shared = path.join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    await rm(receipts, { recursive: true });
    await symlink(shared, receipts);
    for (const [name, args] of commands) {
      const run = await cli(args);
      t.equal(run.code, 2, `${name}: exit 2`);
      t.match(run.stderr, `${receipts} is a symbolic link; receipts/ must be a real directory inside the resource root`, name);
    }
    t.same(reg.requests, [], 'nothing sent');
    await rm(receipts);
    t.equal((await cli(['init'])).code, 0, 'init recreates it');
  });

  // Every command on the world-writable receipts/; the other cases through validate (they share one check).
  for (const [which, mode, all] of [
    ['receipts/', 0o777, true],
    ['receipts/', 0o770, false],
    ['the root', 0o757, false],
  ] as const) {
    await t.test(`${which} with mode ${mode.toString(8)}`, async (t) => {
      const target = which === 'the root' ? root : receipts;
      await chmod(target, mode);
      for (const [name, args] of all ? commands : commands.slice(0, 1)) {
        const run = await cli(args);
        t.equal(run.code, 2, `${name}: exit 2`);
        t.match(
          run.stderr,
          `${target} is writable by group or others (mode 0${mode.toString(8)}); refusing to use it. Run \`agentlet-resources init\` to tighten it`,
          name,
        );
      }
      t.same(reg.requests, [], 'nothing sent');
      t.equal((await cli(['init'])).code, 0, 'init tightens it');
      if (all) t.equal((await cli(['validate'])).code, 0, 'then it is used');
    });
  }
});
