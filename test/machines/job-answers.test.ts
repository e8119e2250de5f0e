// A machine's answer to a job, however odd its result, reaches the owner as a 200 or a clear 4xx/5xx with a
// stable code, never a 500: deep nesting, and results that cannot be sent on as JSON.
import t, { type Test } from 'tap';
import { request } from 'undici';
import { MAX_JOB_RESULT_DEPTH } from '../../src/schemas/channel.js';
import { build } from '../helpers/build.js';
import { holdChannel } from '../helpers/channel.js';
import { listen } from '../helpers/sockets.js';

async function setUp(t: Test) {
  const h = await build(t);
  const url = await listen(h.app);
  const token = await h.enroll('mac-deep');
  const { nextJob } = await holdChannel(t, url, 'mac-deep', token);
  /** The owner runs a ping; the machine answers it with `body` (raw JSON text); both answers. */
  const exchange = async (body: string) => {
    const run = request(`${url}/api/acp/machines/mac-deep/jobs`, {
      method: 'POST',
      headers: { ...h.owner, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'ping' }),
    });
    const job = await nextJob();
    const answered = await request(`${url}/api/acp/providers/mac-deep/jobs/${job.jobId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    const owner = await run;
    const text = await answered.body.text();
    return {
      machine: { status: answered.statusCode, body: (text === '' ? null : JSON.parse(text)) as { code?: string } | null },
      owner: { status: owner.statusCode, body: (await owner.body.json()) as { code?: string; result?: unknown } },
    };
  };
  return { h, exchange };
}

t.test('a job result nested 100,000 levels deep is refused at the channel with 400; the owner is never answered 500', async (t) => {
  const { exchange } = await setUp(t);
  const depth = 100_000;
  const deep = `{"ok":true,"result":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  t.ok(Buffer.byteLength(deep) < 1024 * 1024, 'inside the body limit');
  const { machine, owner } = await exchange(deep);
  t.equal(machine.status, 400, 'the machine is told its answer is refused');
  t.equal(machine.body?.code, 'validation_failed');
  t.not(owner.status, 500, 'the owner gets no 500');
  t.equal(owner.status, 502, 'the owner is told the machine answered badly');
  t.equal(owner.body.code, 'agentlet_job_failed');
});

t.test('a result exactly at the depth bound still reaches the owner; one level more is refused', async (t) => {
  const { exchange } = await setUp(t);
  const inner = MAX_JOB_RESULT_DEPTH - 1;
  const tooDeep = await exchange(`{"ok":true,"result":{"a":${'['.repeat(inner + 1)}1${']'.repeat(inner + 1)}}}`);
  t.equal(tooDeep.machine.status, 400);
  t.match(tooDeep.owner.body, { code: 'agentlet_job_failed', details: { agentletCode: 'answer_refused' } });
  const { machine, owner } = await exchange(`{"ok":true,"result":{"a":${'['.repeat(inner)}1${']'.repeat(inner)}}}`);
  t.equal(machine.status, 204);
  t.equal(owner.status, 200);
  let v: unknown = (owner.body.result as { a: unknown }).a;
  let levels = 0;
  while (Array.isArray(v)) {
    v = v[0];
    levels++;
  }
  t.equal(levels, inner);
});
