// A canvas token is bound to the enrollment it was minted under (the machine record's
// `enrolledAt`); revoking and enrolling the machine again never brings an old token back.
import t from 'tap';
import { build } from '../helpers/build.js';

const FROZEN = new Date('2026-03-01T12:00:00.000Z');

t.test('a canvas token minted before a revoke stays dead after the machine is enrolled again (frozen clock)', async (t) => {
  const h = await build(t, { now: () => FROZEN });
  await h.enroll('agentlet-a');
  const old = await h.canvasToken('canvas-1', 'agentlet-a');
  const before = await h.app.inject({ url: '/api/rfs/canvas-1/resources', headers: h.bearer(old) });
  t.equal(before.statusCode, 200, 'works while its enrollment is active');
  const revoke = await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner });
  t.equal(revoke.statusCode, 204);
  await h.enroll('agentlet-a');
  const after = await h.app.inject({ url: '/api/rfs/canvas-1/resources', headers: h.bearer(old) });
  t.equal(after.statusCode, 401, 'the old token does not come back to life');
  t.equal(after.json().code, 'unauthorized');
  const fresh = await h.canvasToken('canvas-1', 'agentlet-a');
  t.equal(
    (await h.app.inject({ url: '/api/rfs/canvas-1/resources', headers: h.bearer(fresh) })).statusCode,
    200,
    'a token of the new enrollment works',
  );
});

t.test('activeEnrollment: a re-enrollment always gets a strictly later enrolledAt, even with a frozen clock', async (t) => {
  const h = await build(t, { now: () => FROZEN });
  await h.enroll('agentlet-a');
  const seen: string[] = [];
  for (let i = 0; i < 3; i++) {
    const list = (await h.app.inject({ url: '/api/acp/machines', headers: h.owner })).json().machines as {
      machineId: string;
      enrolledAt: string;
    }[];
    seen.push(list.find((m) => m.machineId === 'agentlet-a')!.enrolledAt);
    await h.app.inject({ method: 'DELETE', url: '/api/acp/machines/agentlet-a', headers: h.owner });
    await h.enroll('agentlet-a');
  }
  for (let i = 1; i < seen.length; i++) t.ok(seen[i]! > seen[i - 1]!, `${seen[i]} is after ${seen[i - 1]}`);
});
