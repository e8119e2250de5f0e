// A skill job of `agentlet-resources serve` (import, refresh, delete) publishes that one skill through the
// registry's one-record path: the machine's other receipts are not sent again, so the job costs what the
// skill costs, not what the machine holds. A refusal of the one record
// (here the machine's record quota) still refuses the job with the whole set's refusal, and leaves nothing on
// the machine or in the registry.
import t from 'tap';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readSkill } from '../../src/agentlet/skill-jobs.js';
import { addSkill, machine, startServe, type Machine } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { until } from '../helpers/wait.js';

const daemonBuild = needsBuild();
const MACHINE = 'agentlet-7f3a';

async function sourceSkill(m: Machine, id: string, body = 'Split and merge PDFs.\n'): Promise<{ sourcePath: string; revision: string }> {
  const sourcePath = path.join(m.dir, 'sources', id);
  await mkdir(sourcePath, { recursive: true });
  await writeFile(path.join(sourcePath, 'SKILL.md'), `---\nname: ${id}\ndescription: What ${id} does.\n---\n\n# ${id}\n\n${body}`);
  return { sourcePath, revision: (await readSkill(sourcePath)).candidate.sourceRevision };
}

const ids = async (m: Machine) =>
  ((await m.reg.h.app.inject({ url: '/api/acp/resources', headers: m.reg.h.owner })).json().resources as { id: string; provider: string }[])
    .map((r) => `${r.id} (${r.provider})`)
    .sort();

/** The provider requests since `from`, but the channel's and the job answers'. */
const publishes = (m: Machine, from: number) =>
  m.reg.providerRequests.slice(from).filter((r) => !r.includes('/jobs/') && !r.includes('/channel'));

async function connected(t: Parameters<typeof machine>[0], m: Machine, skills: string[]) {
  for (const id of skills) t.equal((await addSkill(m, id)).code, 0, `receipt ${id}`);
  const d = startServe(t, m.root, m.remote);
  await d.waitFor(/^connected to /);
  await until('the first publish', async () => (await ids(m)).length === skills.length);
  return d;
}

t.test('import, refresh and delete each publish only that skill', { skip: daemonBuild }, async (t) => {
  const m = await machine(t);
  await connected(t, m, ['first-skill', 'second-skill', 'third-skill']);
  const api = (method: 'POST' | 'DELETE', url: string, payload?: unknown) =>
    m.reg.h.app.inject({ method, url, headers: m.reg.h.owner, ...(payload ? { payload } : {}) });

  const pdf = await sourceSkill(m, 'pdf-split');
  let from = m.reg.providerRequests.length;
  const imported = await api('POST', `/api/acp/resources/import?agentletId=${MACHINE}`, {
    id: 'pdf-split',
    sourcePath: pdf.sourcePath,
    expectedRevision: pdf.revision,
  });
  t.equal(imported.statusCode, 200, imported.body);
  t.same(publishes(m, from), [`PUT /api/acp/providers/${MACHINE}/resources/pdf-split`], 'the import sent its one record');

  await writeFile(path.join(pdf.sourcePath, 'NOTES.md'), 'More notes.\n');
  const changed = (await readSkill(pdf.sourcePath)).candidate.sourceRevision;
  from = m.reg.providerRequests.length;
  const refreshed = await api('POST', `/api/acp/resources/pdf-split/refresh?agentletId=${MACHINE}`, { expectedRevision: changed });
  t.equal(refreshed.statusCode, 200, refreshed.body);
  // The same SKILL.md, another file: the record's folder revision (part of its digest) is new, so it is sent.
  t.same(publishes(m, from), [`PUT /api/acp/providers/${MACHINE}/resources/pdf-split`], 'a refresh of another file sends its one record');
  t.equal(refreshed.json().resource.sourceRevision, changed, "with the folder's new revision");
  from = m.reg.providerRequests.length;
  const again = await api('POST', `/api/acp/resources/pdf-split/refresh?agentletId=${MACHINE}`, { expectedRevision: changed });
  t.equal(again.statusCode, 200, again.body);
  t.same(publishes(m, from), [], 'a refresh that leaves the record as it is sends nothing');

  from = m.reg.providerRequests.length;
  const removed = await api('DELETE', `/api/acp/resources/pdf-split?agentletId=${MACHINE}`);
  t.ok(removed.statusCode < 300, removed.body);
  t.same(publishes(m, from), [`DELETE /api/acp/providers/${MACHINE}/resources/pdf-split`], 'the delete withdrew its one record');
  t.same(await ids(m), [`first-skill (${MACHINE})`, `second-skill (${MACHINE})`, `third-skill (${MACHINE})`]);

  // A sync job still publishes the whole set, and finds it as the single publishes left it.
  const sync = await m.reg.h.app.inject({
    method: 'POST',
    url: `/api/acp/machines/${MACHINE}/jobs`,
    headers: m.reg.h.owner,
    payload: { type: 'sync' },
  });
  t.same(sync.json().result, {
    dryRun: false,
    created: [],
    replaced: [],
    withdrawn: [],
    unchanged: ['first-skill', 'second-skill', 'third-skill'],
  });
});

t.test("an import past the machine's record quota is refused and leaves nothing behind", { skip: daemonBuild }, async (t) => {
  const m = await machine(t, MACHINE, { RECORD_BYTES_PER_MACHINE: '4000', RECORDS_PER_MACHINE: '10' });
  await connected(t, m, ['first-skill']);
  const big = await sourceSkill(m, 'big-skill', 'Many words about PDFs.\n'.repeat(300));
  const imported = await m.reg.h.app.inject({
    method: 'POST',
    url: `/api/acp/resources/import?agentletId=${MACHINE}`,
    headers: m.reg.h.owner,
    payload: { id: 'big-skill', sourcePath: big.sourcePath, expectedRevision: big.revision },
  });
  t.match(
    imported.json(),
    {
      code: 'agentlet_job_failed',
      message: /the registry rejected the request \(409 record_quota_exceeded\): Machine agentlet-7f3a would hold \d+ bytes/,
    },
    'the refusal of the whole set, as before',
  );
  t.same(await readdir(path.join(m.root, 'receipts')), ['first-skill.json'], 'no receipt left');
  t.same(
    (await readdir(path.join(m.root, 'skills'))).filter((n) => !n.startsWith('.')),
    ['first-skill'],
    'no folder left',
  );
  t.same(await ids(m), ['first-skill (agentlet-7f3a)'], 'the registry holds what it held');
});
