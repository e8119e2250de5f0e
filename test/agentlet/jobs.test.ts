// The jobs `agentlet-resources serve` runs: one registration per type, and every outcome becomes an answer
// the registry reads (`{ok: true, result}` or `{ok: false, error: {code, message}}`), never a throw.
import t from 'tap';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { JobError, JobRegistry, JOBS, type JobContext } from '../../src/agentlet/jobs.js';

const context = (published: unknown = { created: ['a'] }): JobContext => ({
  machineId: 'm',
  root: '/nowhere',
  publish: () => Promise.resolve(published as never),
  scanner: new SecretScanner([]),
});

t.test('the built-in jobs: ping answers at once, sync publishes the root', async (t) => {
  t.same(JOBS.types(), ['ping', 'skill.import', 'skill.remove', 'skill.scan', 'sync']);
  t.same(await JOBS.run('ping', {}, context()), { ok: true, result: { pong: true } });
  t.same(await JOBS.run('sync', {}, context({ created: ['x'] })), { ok: true, result: { created: ['x'] } });
});

t.test('an unknown type, a JobError and any other failure are answers', async (t) => {
  const jobs = new JobRegistry()
    .register('refuses', () => Promise.reject(new JobError('not_here', 'No such skill folder.')))
    .register('breaks', () => Promise.reject(new Error('disk full')));
  t.same(await jobs.run('scan', {}, context()), {
    ok: false,
    error: { code: 'unknown_job_type', message: 'This Agentlet does not run scan jobs (it runs: breaks, refuses).' },
  });
  t.same(await jobs.run('refuses', {}, context()), { ok: false, error: { code: 'not_here', message: 'No such skill folder.' } });
  t.same(await jobs.run('breaks', {}, context()), { ok: false, error: { code: 'job_failed', message: 'disk full' } });
  t.throws(() => jobs.register('breaks', () => Promise.resolve(null)), /registered twice/, 'one handler per type');
});
