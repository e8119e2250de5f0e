// `agentlet-resources serve` (the compiled CLI, a real process) against a hostile or broken registry on a loopback
// socket: it reads no channel message and no answer past the bound the one-shot CLI uses, drops that connection
// with one line saying why and reconnects with a growing delay, runs one publish at a time however many
// `ready` events or sync jobs arrive (later ones share the next publish), runs at most 64 jobs at once, and on a
// terminal prints nothing the registry sends as a control character or as a line of its own.
import t from 'tap';
import type http from 'node:http';
import path from 'node:path';
import { MAX_RESPONSE_BYTES } from '../../src/agentlet/registry-client.js';
import { cliRunner, fakeRegistry, startServe, tempDir, tokenFile, type TestContext } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';

// Every test runs the compiled executable: they need the build (`npm run build`).
const skip = needsBuild();
t.setTimeout(300_000);

const MACHINE = 'agentlet-7f3a';
const MiB = 1024 * 1024;
/** Far past the bound: a client that reads on never drops the connection before this much has been sent. */
const FLOOD_STOP = 4 * MAX_RESPONSE_BYTES;
/** What the kernel's and the client's buffers may hold on top of what the client read before dropping. */
const IN_FLIGHT = 24 * MiB;

/** A fresh initialized root and token file for MACHINE. */
async function local(t: TestContext & { equal(found: unknown, wanted: unknown, message: string): boolean }) {
  const dir = await tempDir(t);
  const root = path.join(dir, 'resources');
  const cli = cliRunner(t, { AGENT_RESOURCE_DIR: root });
  const token = 'arr_m_hostile0registry0serve0token';
  cli.tokens.push(token);
  const tokenPath = await tokenFile(dir, token);
  t.equal((await cli(['init'])).code, 0, 'init');
  return { root, token, remote: (url: string) => ['--registry', url, '--machine-id', MACHINE, '--token-file', tokenPath] };
}

/** Writes `chunk` until the peer hangs up or FLOOD_STOP bytes are out; resolves with the bytes handed to the socket. */
async function flood(res: http.ServerResponse, chunk: Buffer): Promise<number> {
  const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
  let sent = 0;
  while (!res.destroyed && sent < FLOOD_STOP) {
    sent += chunk.length;
    if (!res.write(chunk)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), closed]);
  }
  return sent;
}

const sse = (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
const READY = `event: ready\ndata: ${JSON.stringify({ machineId: MACHINE, heartbeatSeconds: 15 })}\n\n`;
const job = (jobId: string, type: string, payload: unknown = {}) =>
  `event: job\nid: ${jobId}\ndata: ${JSON.stringify({ jobId, type, payload })}\n\n`;
const NOTHING_CHANGED = { dryRun: false, created: [], replaced: [], withdrawn: [], unchanged: [] };

t.test(
  'an endless channel line or event is dropped at the bound, with one line saying so; the bound on the reconnect delay keeps growing',
  { skip },
  async (t) => {
    const { root, remote } = await local(t);
    const sent: number[] = [];
    let connections = 0;
    const reg = await fakeRegistry(t, (req, res) => {
      if (req.method === 'GET') {
        const n = ++connections;
        sse(res);
        res.write(READY);
        // One line without end; then one event of endless short data lines (the bound is on an event too).
        const endless = n % 2 === 1 ? Buffer.alloc(MiB, 'x') : Buffer.from(`data: ${'y'.repeat(64 * 1024)}\n`);
        res.write(n % 2 === 1 ? 'event: job\ndata: ' : 'event: job\n');
        void flood(res, endless).then((bytes) => sent.push(bytes));
        return;
      }
      if (req.method === 'PUT') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(NOTHING_CHANGED));
      res.writeHead(404).end();
    });
    const d = startServe(t, root, remote(reg.url), ['--reconnect-max-ms', '60000', '--timeout-ms', '60000']);
    const drops = [];
    for (let i = 0; i < 3; i++) {
      const before = d.lines.length;
      drops.push(await d.waitFor(/dropped the connection/, 60_000, before));
      const reconnecting = await d.waitFor(/^reconnecting$/, 10_000, before);
      t.equal(reconnecting.attempt, i + 1, `drop ${i + 1}: reconnect attempt ${i + 1} (the count is not reset by the ready event)`);
      t.ok(
        (reconnecting.delayMs as number) < 500 * 2 ** i,
        `drop ${i + 1}: waits ${String(reconnecting.delayMs)} ms, under ${500 * 2 ** i}`,
      );
    }
    t.match(String(drops[0]?.msg), /channel message larger than 32 MiB/, 'the line names the bound');
    t.match(String(drops[1]?.msg), /channel message larger than 32 MiB/, 'an event of many short lines meets the same bound');
    t.same(d.lines.filter((l) => /dropped the connection/.test(l)).length, 3, 'one line per drop');
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.ok(sent.length >= 3, 'the registry saw the connections closed');
    for (const bytes of sent.slice(0, 3))
      t.ok(bytes < MAX_RESPONSE_BYTES + IN_FLIGHT, `dropped after ${(bytes / MiB).toFixed(1)} MiB sent, near the 32 MiB bound`);
    t.equal(await d.stop(), 0, 'stops cleanly');
  },
);

t.test("an endless answer to a job's answer is read only up to the bound; the daemon says so and keeps serving", { skip }, async (t) => {
  const { root, remote } = await local(t);
  const sent: number[] = [];
  let answered = 0;
  const reg = await fakeRegistry(t, (req, res) => {
    if (req.method === 'GET') {
      sse(res);
      res.write(READY + job('job-1', 'ping'));
      return;
    }
    if (req.method === 'PUT') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(NOTHING_CHANGED));
    if (req.method === 'POST') {
      answered++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"ok": "');
      void flood(res, Buffer.alloc(MiB, 'z')).then((bytes) => sent.push(bytes));
      return;
    }
    res.writeHead(404).end();
  });
  const d = startServe(t, root, remote(reg.url), ['--reconnect-max-ms', '500', '--timeout-ms', '60000']);
  const started = Date.now();
  const refused = await d.waitFor(/could not deliver the answer/, 60_000);
  t.match(String(refused.reason), /larger than 32 MiB/, 'the answer is refused at the bound');
  t.ok(Date.now() - started < 30_000, 'long before the time bound');
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(answered, 1);
  t.ok(
    sent[0] !== undefined && sent[0] < MAX_RESPONSE_BYTES + IN_FLIGHT,
    `its connection dropped after ${((sent[0] ?? 0) / MiB).toFixed(1)} MiB`,
  );
  t.same(
    d.lines.filter((l) => /lost the channel|reconnecting/.test(l)),
    [],
    'the channel itself stays up',
  );
  t.equal(await d.stop(), 0);
});

/** A registry whose channel sends `events` after ready; publishes take 100 ms; every job answer is kept. */
async function floodingRegistry(t: TestContext, events: string) {
  const puts: number[] = [];
  const answers: unknown[] = [];
  let inFlight = 0;
  let overlapped = false;
  const reg = await fakeRegistry(t, (req, res) => {
    if (req.method === 'GET') {
      sse(res);
      res.write(READY + events);
      return;
    }
    if (req.method === 'PUT') {
      puts.push(Date.now());
      if (++inFlight > 1) overlapped = true;
      setTimeout(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(NOTHING_CHANGED));
      }, 100);
      return;
    }
    if (req.method === 'POST') {
      answers.push(req.url);
      return res.writeHead(204).end();
    }
    res.writeHead(404).end();
  });
  return { reg, puts, answers, overlapped: () => overlapped };
}

t.test('5,000 ready events on one channel: one connection, at most two publishes', { skip }, async (t) => {
  const { root, remote } = await local(t);
  const { reg, puts, overlapped } = await floodingRegistry(t, READY.repeat(5000));
  const d = startServe(t, root, remote(reg.url));
  await d.waitFor(/^published 0 receipt/);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  t.ok(puts.length >= 1 && puts.length <= 2, `${puts.length} publish(es) for 5,000 ready events`);
  t.notOk(overlapped(), 'never two publishes at once');
  t.equal(d.lines.filter((l) => /connected to /.test(l)).length, 1, 'one "connected" line');
  t.equal(await d.stop(), 0);
});

t.test('60 sync jobs at once: each is answered with a publish, and the publishes are shared (at most two)', { skip }, async (t) => {
  const { root, remote } = await local(t);
  const jobs = Array.from({ length: 60 }, (_, i) => job(`sync-${i}`, 'sync')).join('');
  const { reg, puts, answers, overlapped } = await floodingRegistry(t, jobs);
  const d = startServe(t, root, remote(reg.url));
  const done = () => d.lines.filter((l) => /job sync done/.test(l)).length;
  const deadline = Date.now() + 20_000;
  while ((answers.length < 60 || done() < 60) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(answers.length, 60, 'every sync job is answered');
  t.equal(done(), 60, 'and logged done');
  t.ok(puts.length >= 1 && puts.length <= 2, `${puts.length} publish(es) for the connect and 60 sync jobs`);
  t.notOk(overlapped(), 'never two publishes at once');
  t.equal(await d.stop(), 0);
});

t.test('a flood of jobs: at most 64 run at once, the rest are not started, and the log says so in two lines', { skip }, async (t) => {
  const { root, remote } = await local(t);
  let answering = 0;
  let most = 0;
  let answers = 0;
  const reg = await fakeRegistry(t, (req, res) => {
    if (req.method === 'GET') {
      sse(res);
      res.write(READY + Array.from({ length: 300 }, (_, i) => job(`ping-${i}`, 'ping')).join(''));
      return;
    }
    if (req.method === 'PUT') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(NOTHING_CHANGED));
    if (req.method === 'POST') {
      // Each answer is held a second: its job stays in flight that long.
      answers++;
      most = Math.max(most, ++answering);
      setTimeout(() => {
        answering--;
        res.writeHead(204).end();
      }, 1000);
      return;
    }
    res.writeHead(404).end();
  });
  const d = startServe(t, root, remote(reg.url));
  const busy = await d.waitFor(/jobs in flight/);
  t.match(busy.msg, /^64 jobs in flight/, 'the line names the bound');
  const refused = await d.waitFor(/^refused \d+ job/);
  t.match(refused.msg, /^refused 236 job\(s\)/, 'and, once one finishes, how many were not started');
  t.equal(answers, 64, 'only the jobs started were answered');
  t.ok(most <= 64, `at most 64 answers at once (${most})`);
  t.equal(d.lines.filter((l) => /jobs in flight|^refused/.test(JSON.parse(l).msg as string)).length, 2, 'two lines for the whole flood');
  t.equal(await d.stop(), 0);
});

// Every C0 and C1 control but tab and newline.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

t.test(
  "on a terminal, a job's type and a scan's root path print as text on their own line, never as control sequences",
  { skip },
  async (t) => {
    const { root, remote } = await local(t);
    const evilType = '\u001b]0;pwned\u0007x\nFAKE LINE';
    const evilRoot = '/nowhere/\u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\\r\nFAKE ROOT \u009b31m';
    const reg = await fakeRegistry(t, (req, res) => {
      if (req.method === 'GET') {
        sse(res);
        res.write(READY + job('job-type', evilType) + job('job-scan', 'skill.scan', { rootPath: evilRoot }));
        return;
      }
      if (req.method === 'PUT') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(NOTHING_CHANGED));
      if (req.method === 'POST') return res.writeHead(204).end();
      res.writeHead(404).end();
    });
    const d = startServe(t, root, remote(reg.url), ['--reconnect-max-ms', '500'], { tty: true });
    await d.waitForLine(/job skill\.scan failed/);
    await d.waitForLine(/pwned/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = d.lines.join('\n');
    t.notOk(CONTROL.test(text), `no control character reaches the terminal: ${JSON.stringify(d.lines.filter((l) => CONTROL.test(l)))}`);
    t.notOk(/[\u202a-\u202e\u2066-\u2069]/.test(text), 'no bidi override');
    t.same(
      d.lines.filter((l) => /^\s*FAKE/.test(l)),
      [],
      'no line of its own for what the registry sent',
    );
    t.ok(
      d.lines.some((l) => /job .*pwned.*FAKE LINE/.test(l)),
      'the job type is shown, as text, on the line that names it',
    );
    t.ok(
      d.lines.some((l) => /job skill\.scan failed: .*nowhere.*FAKE ROOT/.test(l)),
      'the root path likewise',
    );
    t.equal(await d.stop(), 0);
  },
);
