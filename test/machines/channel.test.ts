// The machine channel (GET /api/acp/providers/:machineId/channel, POST .../jobs/:jobId) over real sockets:
// the test plays the machine with undici and reads the Server-Sent Events itself; the owner runs jobs through
// POST /api/acp/machines/:machineId/jobs. Also the channel service's own rules (src/channel/machine-channels.ts).
// Shapes from microsoft/Huabu: `agentlet_unavailable` (503) as apps/server/src/modules/agent/acp/resources.route.ts
// @0e53b7eb538ed0c1b76c4018daca13e8c8fd82ce answers it; the profile list's `online` and `connectedAt` as
// external/agenetes/packages/protocol/src/agentlet-status.ts @0a318194c735bc45bdd353773a60f78214b488ed defines them.
import t from 'tap';
import { request } from 'undici';
import { EventStreamParser, type ServerSentEvent } from '../../src/agentlet/channel-client.js';
import { MachineChannels, type ChannelSink, type Job } from '../../src/channel/machine-channels.js';
import { AppError } from '../../src/errors.js';
import { build, recordIssuedToken, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';

interface Listening {
  h: TestApp;
  url: string;
}

async function listening(
  t: Parameters<typeof build>[0],
  env: Record<string, string> = {},
  options: { statusEventWindowMs?: number } = {},
): Promise<Listening> {
  const h = await build(t, { env, ...options });
  return { h, url: await listen(h.app) };
}

/** A machine holding its channel: the events it has read so far, and whether the stream has ended. */
interface HeldChannel {
  status: number;
  body: string;
  events: ServerSentEvent[];
  ended: Promise<void>;
  next(event: string): Promise<ServerSentEvent>;
  close(): void;
}

async function openChannel(s: Listening, machineId: string, token: string): Promise<HeldChannel> {
  const abort = new AbortController();
  const res = await request(`${s.url}/api/acp/providers/${machineId}/channel`, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  const events: ServerSentEvent[] = [];
  const waiters: (() => void)[] = [];
  if (res.statusCode !== 200)
    return {
      status: res.statusCode,
      body: await res.body.text(),
      events,
      ended: Promise.resolve(),
      next: () => Promise.reject(new Error('no channel')),
      close: () => {},
    };
  const parser = new EventStreamParser();
  res.body.setEncoding('utf8');
  const ended = (async () => {
    try {
      for await (const chunk of res.body as AsyncIterable<string>) {
        events.push(...parser.feed(chunk));
        for (const w of waiters.splice(0)) w();
      }
    } catch {
      // aborted by the test
    }
  })();
  let seen = 0;
  const next = async (event: string): Promise<ServerSentEvent> => {
    for (;;) {
      const found = events.slice(seen).findIndex((e) => e.event === event);
      if (found >= 0) {
        seen += found + 1;
        return events[seen - 1]!;
      }
      await Promise.race([
        new Promise<void>((r) => waiters.push(r)),
        ended.then(() => Promise.reject(new Error(`the channel ended before ${event}`))),
      ]);
    }
  };
  return { status: 200, body: '', events, ended, next, close: () => abort.abort() };
}

const answer = (s: Listening, machineId: string, token: string, jobId: string, body: unknown) =>
  request(`${s.url}/api/acp/providers/${machineId}/jobs/${jobId}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const runJob = (s: Listening, machineId: string, type = 'ping') =>
  request(`${s.url}/api/acp/machines/${machineId}/jobs`, {
    method: 'POST',
    headers: { ...s.h.owner, 'content-type': 'application/json' },
    body: JSON.stringify({ type }),
  });

async function machineStatus(s: Listening, machineId: string) {
  const res = await s.h.app.inject({ url: '/api/acp/machines', headers: s.h.owner });
  return (res.json().machines as { machineId: string; status: string; statusSince?: string }[]).find((m) => m.machineId === machineId);
}

const agentlet = async (s: Listening) => (await s.h.app.inject({ url: '/api/acp/profiles', headers: s.h.owner })).json().agentlet;

t.test(
  'a machine holds its channel: connected in GET /machines and the profile list, a job goes out and its answer comes back',
  async (t) => {
    const s = await listening(t);
    const token = await s.h.enroll('mac-a');
    t.match(await machineStatus(s, 'mac-a'), { status: 'disconnected' }, 'enrolled, no channel yet');
    t.notOk('statusSince' in (await machineStatus(s, 'mac-a'))!, 'no since before the first channel');
    t.match(
      await agentlet(s),
      { id: 'mac-a', status: 'disconnected', online: false, lastError: /agentlet-resources serve/ },
      'the UI shows it offline',
    );

    const channel = await openChannel(s, 'mac-a', token);
    t.equal(channel.status, 200);
    t.same(JSON.parse((await channel.next('ready')).data), { machineId: 'mac-a', heartbeatSeconds: 15 });
    const connected = await machineStatus(s, 'mac-a');
    t.equal(connected?.status, 'connected');
    t.ok(connected?.statusSince && !Number.isNaN(Date.parse(connected.statusSince)), 'since when');
    t.same(await agentlet(s), { id: 'mac-a', status: 'connected', online: true, connectedAt: connected!.statusSince }, 'online only now');

    const pending = runJob(s, 'mac-a');
    const jobEvent = await channel.next('job');
    const job = JSON.parse(jobEvent.data) as Job;
    t.match(job, { type: 'ping', payload: {} });
    t.equal(jobEvent.id, job.jobId, 'the event id is the job id');
    const delivered = await answer(s, 'mac-a', token, job.jobId, { ok: true, result: { pong: true } });
    t.equal(delivered.statusCode, 204);
    const done = await pending;
    t.equal(done.statusCode, 200);
    t.same(await done.body.json(), { machineId: 'mac-a', jobId: job.jobId, type: 'ping', result: { pong: true } });
    const again = await answer(s, 'mac-a', token, job.jobId, { ok: true });
    t.equal(again.statusCode, 404, 'a second answer to the same job is dropped');
    t.equal(((await again.body.json()) as { code: string }).code, 'job_not_found');

    // A failure the machine reports reaches the owner as 502 with the machine's code.
    const failing = runJob(s, 'mac-a', 'sync');
    const syncJob = JSON.parse((await channel.next('job')).data) as Job;
    await answer(s, 'mac-a', token, syncJob.jobId, { ok: false, error: { code: 'invalid_receipts', message: '1 invalid receipt' } });
    const failed = await failing;
    t.equal(failed.statusCode, 502);
    t.match(await failed.body.json(), {
      code: 'agentlet_job_failed',
      message: /1 invalid receipt/,
      details: { agentletCode: 'invalid_receipts', jobId: syncJob.jobId },
    });

    channel.close();
    await channel.ended;
    await t.resolves(async () => {
      for (let i = 0; i < 50 && (await machineStatus(s, 'mac-a'))?.status !== 'disconnected'; i++)
        await new Promise((r) => setTimeout(r, 20));
    });
    t.equal((await machineStatus(s, 'mac-a'))?.status, 'disconnected', 'disconnected once it hangs up');
    t.match(await agentlet(s), { status: 'disconnected', online: false });
  },
);

t.test("another machine's token can neither open nor answer this machine's channel (403); nor can the host's", async (t) => {
  const s = await listening(t);
  const mine = await s.h.enroll('mac-a');
  const other = await s.h.enroll('mac-b');
  const theirs = await openChannel(s, 'mac-a', other);
  t.equal(theirs.status, 403);
  t.equal(JSON.parse(theirs.body).code, 'forbidden');
  const host = await openChannel(s, 'huabu', s.h.huabu.authorization!.slice(7));
  t.equal(host.status, 403, 'the host provider has no channel');
  const owner = await openChannel(s, 'mac-a', s.h.owner.authorization!.slice(7));
  t.equal(owner.status, 403, 'the owner token is not a machine token');
  const nobody = await openChannel(s, 'mac-a', 'arr_machine_not-a-token');
  t.equal(nobody.status, 401);
  t.equal((await machineStatus(s, 'mac-a'))?.status, 'disconnected', 'none of them connected it');

  const channel = await openChannel(s, 'mac-a', mine);
  await channel.next('ready');
  const pending = runJob(s, 'mac-a');
  const job = JSON.parse((await channel.next('job')).data) as Job;
  const forged = await answer(s, 'mac-a', other, job.jobId, { ok: true, result: { pong: 'forged' } });
  t.equal(forged.statusCode, 403);
  const viaOwnPath = await answer(s, 'mac-b', other, job.jobId, { ok: true, result: { pong: 'forged' } });
  t.equal(viaOwnPath.statusCode, 404, 'on its own path the job is not one of its jobs');
  t.equal((await answer(s, 'mac-a', mine, job.jobId, { ok: true, result: { pong: true } })).statusCode, 204);
  t.same(((await (await pending).body.json()) as { result: unknown }).result, { pong: true }, 'the real answer, not the forged one');
  const bad = await answer(s, 'mac-a', mine, 'x', { ok: 'yes' });
  t.equal(bad.statusCode, 400, 'an answer off the shape is 400');
  channel.close();
});

t.test('jobs fail with 503 when the machine is away, 504 when it does not answer in time; a late answer is dropped', async (t) => {
  const s = await listening(t, { AGENTLET_JOB_TIMEOUT_MS: '300' });
  const token = await s.h.enroll('mac-a');
  const away = await runJob(s, 'mac-a');
  t.equal(away.statusCode, 503);
  t.match(await away.body.json(), { code: 'agentlet_unavailable', details: { machineId: 'mac-a' } });
  const unknown = await runJob(s, 'never-enrolled');
  t.equal(unknown.statusCode, 503, 'an unknown machine is not connected either');

  const channel = await openChannel(s, 'mac-a', token);
  await channel.next('ready');
  const started = Date.now();
  const slow = await runJob(s, 'mac-a');
  t.equal(slow.statusCode, 504);
  const body = (await slow.body.json()) as { code: string; details: { jobId: string } };
  t.equal(body.code, 'agentlet_timeout');
  t.ok(Date.now() - started >= 290, 'after the configured deadline');
  const late = await answer(s, 'mac-a', token, body.details.jobId, { ok: true });
  t.equal(late.statusCode, 404, 'the late answer is dropped');

  // A job waiting when the machine hangs up fails at once with 503.
  const waiting = runJob(s, 'mac-a');
  await channel.next('job');
  await channel.next('job');
  channel.close();
  const lost = await waiting;
  t.equal(lost.statusCode, 503);
  t.equal(((await lost.body.json()) as { code: string }).code, 'agentlet_unavailable');
});

t.test("revoking or rotating a machine's credential closes its channel at once", async (t) => {
  const s = await listening(t);
  const token = await s.h.enroll('mac-a');
  const channel = await openChannel(s, 'mac-a', token);
  await channel.next('ready');
  const rotated = await s.h.app.inject({ method: 'POST', url: '/api/acp/machines/mac-a/rotate', headers: s.h.owner });
  t.equal(rotated.statusCode, 200);
  const fresh = rotated.json().token as string;
  recordIssuedToken(fresh);
  await channel.ended;
  t.pass('rotation ended the channel opened with the old token');
  t.equal((await openChannel(s, 'mac-a', token)).status, 401, 'the old token opens nothing');

  const second = await openChannel(s, 'mac-a', fresh);
  await second.next('ready');
  t.equal((await machineStatus(s, 'mac-a'))?.status, 'connected');
  const revoked = await s.h.app.inject({ method: 'DELETE', url: '/api/acp/machines/mac-a', headers: s.h.owner });
  t.equal(revoked.statusCode, 204);
  await second.ended;
  t.match(await machineStatus(s, 'mac-a'), { status: 'disconnected', revokedAt: String });
});

t.test('a second connection replaces the first; the jobs sent over the first fail with 503', async (t) => {
  const s = await listening(t);
  const token = await s.h.enroll('mac-a');
  const first = await openChannel(s, 'mac-a', token);
  await first.next('ready');
  const pending = runJob(s, 'mac-a');
  await first.next('job');
  const second = await openChannel(s, 'mac-a', token);
  await second.next('ready');
  await first.ended;
  t.pass('the first stream ended');
  t.equal((await pending).statusCode, 503);
  t.equal((await machineStatus(s, 'mac-a'))?.status, 'connected', 'still connected through the second');
  const next = runJob(s, 'mac-a');
  const job = JSON.parse((await second.next('job')).data) as Job;
  await answer(s, 'mac-a', token, job.jobId, { ok: true, result: 1 });
  t.equal((await next).statusCode, 200, 'jobs go to the new stream');
  second.close();
});

t.test('the channel service: status changes told once each, jobs in flight bounded, a closing service ends every channel', async (t) => {
  const told: string[] = [];
  const channels = new MachineChannels({
    maxJobsInFlight: 2,
    jobTimeoutMs: 5_000,
    onMachineStatus: (id, status) => told.push(`${id} ${status}`),
  });
  t.teardown(() => channels.closeAll());
  const written: Job[] = [];
  let ended = 0;
  const sink: ChannelSink = { job: (j) => written.push(j), comment: () => {}, end: () => void ended++ };
  const close = channels.open('m', sink, () => Promise.resolve(true));
  channels.open('m', { ...sink }, () => Promise.resolve(true)); // a replacement is not a new connection
  t.same(told, ['m connected']);
  const a = channels.run('m', 'ping');
  const b = channels.run('m', 'ping');
  const refused = await channels.run('m', 'ping').catch((err: unknown) => err);
  t.ok(refused instanceof AppError && refused.code === 'agentlet_busy' && refused.statusCode === 503, 'the third job in flight is refused');
  t.equal(written.length, 2);
  t.ok(channels.answer('m', written[0]!.jobId, { ok: true, result: 'x' }));
  t.same((await a).answer, { ok: true, result: 'x' });
  t.notOk(channels.answer('m', 'unknown', { ok: true }), 'an unknown job is dropped');
  close(); // the replaced stream's close changes nothing
  t.equal(channels.status('m').status, 'connected');
  channels.closeAll();
  t.match(await b.catch((err: unknown) => err), { code: 'agentlet_unavailable' }, 'its waiter gets 503');
  t.same(told, ['m connected', 'm disconnected']);
  t.throws(() => channels.open('m', sink, () => Promise.resolve(true)), { code: 'unavailable' }, 'a closing service takes no channel');
});

t.test('the heartbeat writes a comment on every channel and closes one whose credential no longer holds', async (t) => {
  const told: string[] = [];
  const channels = new MachineChannels({ heartbeatMs: 20, onMachineStatus: (id, status) => told.push(`${id} ${status}`) });
  t.teardown(() => channels.closeAll());
  const comments: string[] = [];
  let valid = true;
  channels.open('m', { job: () => {}, comment: (c) => comments.push(c), end: () => {} }, () => Promise.resolve(valid));
  await new Promise((r) => setTimeout(r, 70));
  t.ok(comments.length >= 2 && comments.every((c) => c === 'heartbeat'), `heartbeats written (${comments.length})`);
  t.equal(channels.status('m').status, 'connected');
  valid = false; // revoked or rotated through another replica
  await new Promise((r) => setTimeout(r, 70));
  t.equal(channels.status('m').status, 'disconnected', 'closed at the next heartbeat');
  t.same(told, ['m connected', 'm disconnected']);
});

t.test("a machine's channel and its jobs are change events: connected, each job's outcome, disconnected", async (t) => {
  // A machine's status events are a window apart (test/events/connection-bounds.test.ts): a short one here.
  const s = await listening(t, { AGENTLET_JOB_TIMEOUT_MS: '300' }, { statusEventWindowMs: 200 });
  const token = await s.h.enroll('mac-a');
  const changes = async () => {
    const res = await s.h.app.inject({ url: '/api/acp/changes?limit=1000', headers: s.h.owner });
    return (res.json().changes as { type: string; subject: { kind: string; id: string; provider?: string } }[]).map(
      (c) => `${c.type} ${c.subject.kind}:${c.subject.id}${c.subject.provider ? `@${c.subject.provider}` : ''}`,
    );
  };
  const eventually = async (want: (seen: string[]) => boolean) => {
    for (let i = 0; i < 100 && !want(await changes()); i++) await new Promise((r) => setTimeout(r, 20));
    return changes();
  };

  const channel = await openChannel(s, 'mac-a', token);
  await channel.next('ready');
  t.same(await eventually((c) => c.includes('machine.connected machine:mac-a')), [
    'machine.enrolled machine:mac-a',
    'machine.connected machine:mac-a',
  ]);

  const ok = runJob(s, 'mac-a');
  const okJob = JSON.parse((await channel.next('job')).data) as Job;
  await answer(s, 'mac-a', token, okJob.jobId, { ok: true, result: { pong: true } });
  t.equal((await ok).statusCode, 200);
  const failing = runJob(s, 'mac-a', 'sync');
  const failJob = JSON.parse((await channel.next('job')).data) as Job;
  await answer(s, 'mac-a', token, failJob.jobId, { ok: false, error: { code: 'invalid_receipts', message: 'no' } });
  t.equal((await failing).statusCode, 502);
  const slow = await runJob(s, 'mac-a');
  t.equal(slow.statusCode, 504);
  const slowJob = ((await slow.body.json()) as { details: { jobId: string } }).details.jobId;
  t.equal((JSON.parse((await channel.next('job')).data) as Job).jobId, slowJob, 'the job that timed out was sent');
  const lost = runJob(s, 'mac-a');
  const lostJob = JSON.parse((await channel.next('job')).data) as Job;
  channel.close();
  t.equal((await lost).statusCode, 503);

  const seen = await eventually((c) => c.includes('machine.disconnected machine:mac-a'));
  t.same(
    seen.slice(2),
    [
      `job.succeeded job:${okJob.jobId}@mac-a`,
      `job.failed job:${failJob.jobId}@mac-a`,
      `job.failed job:${slowJob}@mac-a`,
      `job.failed job:${lostJob.jobId}@mac-a`,
      'machine.disconnected machine:mac-a',
    ],
    'answered ok, answered with an error, timed out, lost with the channel: one event each, then the disconnect',
  );
  const canvas = await s.h.app.inject({ url: '/api/acp/changes?limit=1000', headers: s.h.owner });
  t.notOk(canvas.body.includes(token), 'no token in any event');
});

t.test(
  "a machine's secret refusal reaches the owner with each finding's fingerprint; the owner's allowlist goes with the import job",
  async (t) => {
    const s = await listening(t);
    const token = await s.h.enroll('mac-a');
    const channel = await openChannel(s, 'mac-a', token);
    await channel.next('ready');
    const fingerprint = `credential-assignment:${'c'.repeat(64)}`;
    const added = await s.h.app.inject({
      method: 'POST',
      url: '/api/acp/secret-allowlist',
      headers: s.h.owner,
      payload: { fingerprint, file: 'go/README.md', reason: 'sample token of the SDK guide' },
    });
    t.equal(added.statusCode, 201);
    const finding = {
      field: '/files/references/setup.md',
      line: 3,
      rule: 'credential-assignment',
      fingerprint: `credential-assignment:${'d'.repeat(64)}`,
    };
    const importing = (id: string) =>
      request(`${s.url}/api/acp/resources/import?agentletId=mac-a`, {
        method: 'POST',
        headers: { ...s.h.owner, 'content-type': 'application/json' },
        body: JSON.stringify({ id, sourcePath: '/skills/guide', expectedRevision: 'a'.repeat(64) }),
      });

    const refused = importing('guide');
    const job = JSON.parse((await channel.next('job')).data) as Job;
    t.match(
      job,
      { type: 'skill.import', payload: { secretAllowlist: [{ fingerprint, file: 'go/README.md' }] } },
      'the entries go with the job',
    );
    const message = 'nothing was copied: references/setup.md line 3 (rule credential-assignment) looks like it holds a secret';
    t.equal(
      (await answer(s, 'mac-a', token, job.jobId, { ok: false, error: { code: 'secret_detected', message, findings: [finding] } }))
        .statusCode,
      204,
    );
    const res = await refused;
    t.equal(res.statusCode, 422);
    const body = (await res.body.json()) as { message: string; details: { findings: unknown[] } };
    t.same(body.details.findings, [finding]);
    t.match(body.message, `/files/references/setup.md line 3: ${finding.fingerprint}`);

    // A file path that itself looks like a secret is not passed on.
    const leaky = importing('guide-2');
    const second = JSON.parse((await channel.next('job')).data) as Job;
    const leakyPath = `/files/ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}.md`;
    await answer(s, 'mac-a', token, second.jobId, {
      ok: false,
      error: { code: 'secret_detected', message: 'nothing was copied', findings: [{ ...finding, field: leakyPath }] },
    });
    const withheld = await leaky;
    t.equal(withheld.statusCode, 422);
    const text = await withheld.body.text();
    t.notOk(text.includes('ghp_'), 'the path is withheld');
    t.notOk('findings' in (JSON.parse(text) as { details: object }).details);

    // A file with many findings: the machine names up to 20 at once, and each reaches the owner.
    const many = importing('guide-3');
    const third = JSON.parse((await channel.next('job')).data) as Job;
    const twenty = Array.from({ length: 20 }, (_, i) => ({
      ...finding,
      line: i + 1,
      fingerprint: `credential-assignment:${i.toString(16).padStart(64, 'e')}`,
    }));
    t.equal(
      (
        await answer(s, 'mac-a', token, third.jobId, {
          ok: false,
          error: { code: 'secret_detected', message: `nothing was copied: references/setup.md lines 1-20 and 5 more`, findings: twenty },
        })
      ).statusCode,
      204,
      'twenty findings are one answer',
    );
    const manyRes = await many;
    t.equal(manyRes.statusCode, 422);
    const manyBody = (await manyRes.body.json()) as { message: string; details: { findings: unknown[] } };
    t.same(manyBody.details.findings, twenty);
    for (const f of twenty) t.match(manyBody.message, `/files/references/setup.md line ${f.line}: ${f.fingerprint}`);
    channel.close();
    await channel.ended;
  },
);
