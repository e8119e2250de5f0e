// The owner's ways out, through a registry and a real `agentlet-resources serve`: a skill whose SKILL.md holds
// a false finding is shown by the scan with its findings (file, line, rule, fingerprint) and revision, so the
// owner allows the fingerprint and imports it without another round; a skill whose folder was deleted by hand
// on the machine is imported again as the docs say, and is then refreshed and deleted like any other.
import t from 'tap';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { machine, startServe, type Machine } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { until } from '../helpers/wait.js';

t.setTimeout(240_000);

// The daemon runs as the compiled executable: `npm run build` first.
const daemonBuild = needsBuild();
const MACHINE = 'agentlet-7f3a';
const VALUE = 'Xk9#mQ2$vL7pR4tZ8wN3';

interface Diagnostic {
  path: string;
  code: string;
  message: string;
  id?: string;
  sourceRevision?: string;
  findings?: { field: string; line: number; rule: string; fingerprint: string }[];
}

async function owner(m: Machine, method: string, url: string, payload?: unknown) {
  const res = await m.reg.h.app.inject({ method: method as 'POST', url, headers: m.reg.h.owner, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json(), text: res.body };
}

async function writeSkill(dir: string, name: string, body: string) {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n${body}`);
}

const ids = async (m: Machine) => ((await owner(m, 'GET', '/api/acp/resources')).body.resources as { id: string }[]).map((r) => r.id);

t.test('a false finding in SKILL.md: scan, allow the fingerprint the scan names, import', { skip: daemonBuild }, async (t) => {
  const m = await machine(t, MACHINE);
  // A loaded machine starts the daemon slowly: its own log line says when it holds its channel.
  await startServe(t, m.root, m.remote).waitFor(/^connected to /, 120_000);
  const sources = path.join(m.dir, 'sources');
  await writeSkill(path.join(sources, 'sign-in'), 'sign-in', `Sign in with the demo account:\n\n    password = "${VALUE}"\n`);
  await writeSkill(path.join(sources, 'plain'), 'plain', 'Nothing to see.\n');

  const scan = await owner(m, 'POST', `/api/acp/resources/import/scan?agentletId=${MACHINE}`, { rootPath: sources });
  t.equal(scan.status, 200, scan.text);
  t.same(
    (scan.body.candidates as { id: string }[]).map((c) => c.id),
    ['plain'],
  );
  const refused = (scan.body.diagnostics as Diagnostic[]).find((d) => d.path === path.join(sources, 'sign-in'))!;
  t.match(refused, {
    code: 'secret_detected',
    id: 'sign-in',
    sourceRevision: /^[a-f0-9]{64}$/,
    findings: [{ field: '/sourceContent', line: 8, rule: 'credential-assignment', fingerprint: /^credential-assignment:[a-f0-9]{64}$/ }],
  });
  t.notOk(scan.text.includes(VALUE), 'the value is never in the answer');

  const allowed = await owner(m, 'POST', '/api/acp/secret-allowlist', {
    fingerprint: refused.findings![0]!.fingerprint,
    file: 'SKILL.md',
    reason: 'The demo account of the public sandbox.',
  });
  t.equal(allowed.status, 201, allowed.text);
  const imported = await owner(m, 'POST', `/api/acp/resources/import?agentletId=${MACHINE}`, {
    id: refused.id,
    sourcePath: refused.path,
    expectedRevision: refused.sourceRevision,
  });
  t.equal(imported.status, 200, imported.text);
  t.ok((await ids(m)).includes('sign-in'), 'published: the registry lets the allowed finding through too');
  t.match(await readFile(path.join(m.root, 'skills', 'sign-in', 'SKILL.md'), 'utf8'), 'demo account');
});

t.test('a skill whose folder was deleted by hand is imported again, then refreshed and deleted', { skip: daemonBuild }, async (t) => {
  const m = await machine(t, MACHINE);
  // A loaded machine starts the daemon slowly: its own log line says when it holds its channel.
  await startServe(t, m.root, m.remote).waitFor(/^connected to /, 120_000);
  const src = path.join(m.dir, 'sources', 'pdf-split');
  await writeSkill(src, 'pdf-split', 'Split PDFs.\n');
  const scan = async () =>
    (await owner(m, 'POST', `/api/acp/resources/import/scan?agentletId=${MACHINE}`, { rootPath: src })).body as {
      candidates: { id: string; sourceRevision: string }[];
      diagnostics: Diagnostic[];
    };
  const body = { id: 'pdf-split', sourcePath: src, expectedRevision: (await scan()).candidates[0]!.sourceRevision, userContent: 'Mine.' };
  t.equal((await owner(m, 'POST', `/api/acp/resources/import?agentletId=${MACHINE}`, body)).status, 200);

  await rm(path.join(m.root, 'skills', 'pdf-split'), { recursive: true });
  await until('the record withdrawn once its folder is gone', async () => !(await ids(m)).includes('pdf-split'), { within: 120_000 });
  t.match(
    (await scan()).diagnostics,
    [{ code: 'entrypoint_missing', path: path.join(m.root, 'receipts', 'pdf-split.json') }],
    'the scan shows what is left',
  );

  const again = await owner(m, 'POST', `/api/acp/resources/import?agentletId=${MACHINE}`, body);
  t.equal(again.status, 200, again.text);
  t.match(again.body.resource, { id: 'pdf-split', provider: MACHINE, userContent: 'Mine.' });
  t.match(await readFile(path.join(m.root, 'skills', 'pdf-split', 'SKILL.md'), 'utf8'), 'Split PDFs.');
  t.same((await scan()).diagnostics, [], 'nothing left over');

  await writeSkill(src, 'pdf-split', 'Split and merge PDFs.\n');
  const refreshScan = await owner(m, 'POST', `/api/acp/resources/pdf-split/refresh/scan?agentletId=${MACHINE}`);
  t.equal(refreshScan.status, 200, refreshScan.text);
  const refreshed = await owner(m, 'POST', `/api/acp/resources/pdf-split/refresh?agentletId=${MACHINE}`, {
    expectedRevision: refreshScan.body.candidates[0].sourceRevision,
  });
  t.equal(refreshed.status, 200, refreshed.text);
  t.equal((await owner(m, 'DELETE', `/api/acp/resources/pdf-split?agentletId=${MACHINE}`)).status, 200);
  t.notOk((await ids(m)).includes('pdf-split'));
});
