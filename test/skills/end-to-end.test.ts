// Skill management end to end with real processes: the compiled server, `agentlet-resources serve` on a
// real resource root, and skill folders elsewhere on the disk. The owner scans, imports (the files are
// copied, the receipt written, the record published with the owner's fields and listed as manageable),
// is refused a changed source (409), a source with a secret (422, nothing copied), a symbolic link out of
// the folder and an archive entry climbing out (diagnostics), sees the front matter's warnings beside the
// candidate and an archive as a candidate, gets its scripts with their run bit, refreshes (the owner's fields kept), deletes (folder, receipt and record gone),
// and gets 503 when the machine is not connected. An owner subscribed to the change events sees the import,
// the owner's fields and the delete as they happen.
import t from 'tap';
import { call as httpCall } from '../helpers/http-call.js';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, copyFile, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLI, cliRunner, tempDir, tokenFile } from '../helpers/agentlet.js';
import { needsBuild } from '../helpers/built.js';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { sansDigest } from '../helpers/digest.js';
import { startServer } from '../crash/server-process.js';
import { SseClient } from '../helpers/sse.js';
import { until } from '../helpers/wait.js';
import { readSkill } from '../../src/agentlet/skill-jobs.js';

t.setTimeout(240_000);

const MACHINE = 'agentlet-skills';
const SECRET = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';

/** A call over the socket, its body read as this file's answers. */
const call = (origin: string, method: string, url: string, body?: unknown, token?: string) =>
  httpCall<Body>(origin, method, url, body, token);

/** The members of the answers this file reads (each answer has some of them). */
interface Body {
  token: string;
  code: string;
  message: string;
  machines: unknown[];
  rootPath: string;
  candidates: { id: string; sourceRevision: string; [key: string]: unknown }[];
  diagnostics: { path: string; code: string; message: string }[];
  resource: Record<string, unknown>;
  resources: Record<string, unknown>[];
  manageableResourceIds: string[];
  removed: boolean;
}

async function writeSkill(dir: string, name: string, body = 'Use it well.\n', extra: Record<string, string> = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: What ${name} does.\n---\n\n# ${name}\n\n${body}`);
  for (const [rel, content] of Object.entries(extra)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
}

t.test('scan, import, refuse, refresh and delete a skill through a running Agentlet', { skip: needsBuild() }, async (t) => {
  const dataDir = await tempDataDir();
  const server = await startServer({
    DATA_DIR: dataDir,
    OWNER_TOKEN: CANARY.owner,
    HUABU_PROVIDER_TOKEN: CANARY.huabu,
    CANVAS_TOKEN_SECRET: CANARY.secret,
    SEED_HUABU_RESOURCES: 'false',
    MAX_EVENT_LOOP_DELAY_MS: '0',
  });
  t.teardown(() => server.kill());
  const api = (method: string, url: string, body?: unknown) => call(server.origin, method, url, body);

  const enrolled = await api('POST', '/api/acp/machines', { machineId: MACHINE });
  t.equal(enrolled.status, 201, enrolled.text);
  const dir = await tempDir(t, 'skills-e2e-');
  const root = path.join(dir, 'resources');
  const cli = cliRunner(t, { AGENT_RESOURCE_DIR: root });
  cli.tokens.push(enrolled.body.token, SECRET);
  t.equal((await cli(['init'])).code, 0, 'init');
  const tokenPath = await tokenFile(dir, enrolled.body.token);

  // The sources: a folder of skill folders outside the resource root.
  const sources = path.join(dir, 'sources');
  const outside = path.join(dir, 'outside.txt');
  await writeFile(outside, 'not part of any skill\n');
  await writeSkill(path.join(sources, 'pdf-helper'), 'PDF helper', 'Split and merge PDFs.\n', {
    'scripts/run.sh': '#!/bin/sh\necho pdf\n',
  });
  await chmod(path.join(sources, 'pdf-helper', 'scripts', 'run.sh'), 0o755);
  // A skill archive beside the folders, and one with an entry that climbs out.
  await copyFile(path.join('test', 'fixtures', 'skill-archives', 'pdf-tools.skill'), path.join(sources, 'pdf-tools.skill'));
  await copyFile(path.join('test', 'fixtures', 'skill-archives', 'zip-slip.zip'), path.join(sources, 'zip-slip.zip'));
  await writeSkill(path.join(sources, 'leaky'), 'Leaky', 'Harmless text.\n', { 'notes/env.txt': `GITHUB_TOKEN=${SECRET}\n` });
  await writeSkill(path.join(sources, 'escaping'), 'Escaping');
  await symlink(outside, path.join(sources, 'escaping', 'linked.txt'));
  await mkdir(path.join(sources, 'broken'));
  await writeFile(path.join(sources, 'broken', 'SKILL.md'), '# no front matter\n');
  await mkdir(path.join(sources, 'not-a-skill'));

  // Not connected yet: 503.
  const away = await api('POST', '/api/acp/resources/import/scan', { rootPath: sources });
  t.equal(away.status, 503, away.text);
  t.equal(away.body.code, 'agentlet_unavailable', 'a machine without its channel is 503 agentlet_unavailable');

  const daemon = spawn(
    process.execPath,
    [CLI, 'serve', '--registry', server.origin, '--machine-id', MACHINE, '--token-file', tokenPath, '--reconnect-max-ms', '500'],
    {
      env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), AGENT_RESOURCE_DIR: root },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  daemon.stdout.on('data', (c: Buffer) => (log += c.toString()));
  daemon.stderr.on('data', (c: Buffer) => (log += c.toString()));
  const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
  t.teardown(async () => {
    if (daemon.exitCode === null) daemon.kill('SIGKILL');
    await exited;
  });
  await until('the machine connected', async () =>
    ((await api('GET', '/api/acp/machines')).body.machines as { machineId: string; status: string }[]).some(
      (m) => m.machineId === MACHINE && m.status === 'connected',
    ),
  );

  const events = await SseClient.open(server.origin, '/api/acp/events', { authorization: `Bearer ${CANARY.owner}` });
  t.teardown(() => events.close());
  t.equal(events.status, 200, 'an owner subscribed to the change events');
  const seen = (type: string) => events.events.some((e) => e.event === type && e.data.subject.id === 'pdf-helper');

  // Scan: two candidates, the broken and the escaping folder as diagnostics, the folder without SKILL.md ignored.
  const scan = await api('POST', `/api/acp/resources/import/scan?agentletId=${MACHINE}`, { rootPath: sources });
  t.equal(scan.status, 200, scan.text);
  t.same(scan.body.rootPath, sources);
  t.same(
    scan.body.candidates.map((c: { id: string }) => c.id),
    ['leaky', 'pdf-helper', 'pdf-tools'],
    'each skill folder and skill archive is a candidate',
  );
  const pdf = scan.body.candidates.find((c: { id: string }) => c.id === 'pdf-helper')!;
  t.match(pdf, { name: 'PDF helper', sourcePath: path.join(sources, 'pdf-helper'), sourceRevision: /^[a-f0-9]{64}$/ });
  t.match(pdf.sourceContent, /^---\nname: PDF helper\n[\s\S]*Split and merge PDFs\.$/, 'sourceContent is SKILL.md');
  t.match(
    pdf.warnings,
    [{ code: 'skill_name_format' }, { code: 'skill_name_mismatch', message: /"PDF helper" differs from its folder's name "pdf-helper"/ }],
    "the format's warnings reach the owner beside the candidate",
  );
  const diagnostics = Object.fromEntries(
    scan.body.diagnostics.map((d: { path: string; code: string; message: string }) => [path.basename(d.path), d]),
  );
  t.same(Object.keys(diagnostics).sort(), ['broken', 'escaping', 'zip-slip.zip']);
  t.match(diagnostics['zip-slip.zip'], { code: 'skill_archive_invalid', message: /invalid relative path/ });
  t.match(
    diagnostics.escaping,
    { code: 'skill_invalid', message: /linked\.txt is a symbolic link that leads outside the skill folder/ },
    'a symbolic link out of the folder is refused',
  );
  t.match(diagnostics.broken, { code: 'skill_front_matter_missing', message: /no YAML front matter/ });

  // The default machine (the only one enrolled) is used without ?agentletId=.
  t.equal(
    (await api('POST', '/api/acp/resources/import/scan', { rootPath: path.join(sources, 'pdf-helper') })).body.candidates[0]!
      .sourceRevision,
    pdf.sourceRevision,
    'the default machine; a skill folder scans as itself',
  );

  // A source changed since the scan: 409, nothing copied.
  const before = await api('GET', '/api/acp/resources?schemaVersion=2');
  await appendFile(path.join(sources, 'pdf-helper', 'scripts', 'run.sh'), 'echo changed\n');
  const stale = await api('POST', '/api/acp/resources/import', {
    id: 'pdf-helper',
    sourcePath: pdf.sourcePath,
    expectedRevision: pdf.sourceRevision,
  });
  t.equal(stale.status, 409, stale.text);
  t.equal(stale.body.code, 'source_changed');
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-helper')), 'nothing copied after a refused import');

  // Import with the current revision.
  const fresh = (await api('POST', '/api/acp/resources/import/scan', { rootPath: sources })).body.candidates.find(
    (c: { id: string }) => c.id === 'pdf-helper',
  )!;
  t.not(fresh.sourceRevision, pdf.sourceRevision, 'a changed file changes the revision');
  const imported = await api('POST', '/api/acp/resources/import', {
    id: 'pdf-helper',
    sourcePath: fresh.sourcePath,
    expectedRevision: fresh.sourceRevision,
    displayName: 'PDF tools',
    userContent: 'Prefer the split command.',
  });
  t.equal(imported.status, 200, imported.text);
  t.same(
    sansDigest(imported.body),
    {
      resource: {
        schemaVersion: 2,
        id: 'pdf-helper',
        name: 'PDF helper',
        displayName: 'PDF tools',
        provider: MACHINE,
        sourceContent: fresh.sourceContent,
        userContent: 'Prefer the split command.',
        sourceRevision: fresh.sourceRevision,
      },
    },
    "{resource}: the machine's record v2 with the owner's fields and the folder's revision, nothing else",
  );
  t.equal(
    (await readSkill(path.join(root, 'skills', 'pdf-helper'))).candidate.sourceRevision,
    fresh.sourceRevision,
    'the installed folder has the revision it was imported at (what verify-launch recomputes)',
  );
  const script = path.join(root, 'skills', 'pdf-helper', 'scripts', 'run.sh');
  t.equal((await stat(script)).mode & 0o777, 0o755, 'the script keeps its run bit');
  t.equal(spawnSync(script, { encoding: 'utf8' }).stdout, 'pdf\nchanged\n', 'and runs');
  t.equal(
    await readFile(path.join(root, 'skills', 'pdf-helper', 'scripts', 'run.sh'), 'utf8'),
    '#!/bin/sh\necho pdf\necho changed\n',
    'the files are copied into the root',
  );
  const receipt = JSON.parse(await readFile(path.join(root, 'receipts', 'pdf-helper.json'), 'utf8'));
  t.match(receipt, {
    schemaVersion: 2,
    id: 'pdf-helper',
    kind: 'skill',
    provider: MACHINE,
    entrypoint: 'skills/pdf-helper/SKILL.md',
    source: fresh.sourcePath,
    sourceRevision: fresh.sourceRevision,
  });
  const after = await api('GET', '/api/acp/resources?schemaVersion=2');
  t.same(after.body.manageableResourceIds, ['pdf-helper'], 'the imported skill is manageable');
  t.same(after.body.resources, [imported.body.resource], 'the record is in the catalogue, without any internal mark');
  t.not(after.etag, before.etag, 'the catalogue ETag moved');
  await events.waitFor(() => seen('resource.created') && seen('resource.customized'));
  t.match(
    events.events.find((e) => e.event === 'resource.created' && e.data.subject.id === 'pdf-helper')!.data.subject,
    { kind: 'resource', id: 'pdf-helper', provider: MACHINE },
    'the subscriber sees the import (the machine published the record)',
  );
  t.notMatch(JSON.stringify(events.events), /Split and merge|imported/, 'events name the change, never the content or the mark');
  const again = await api('POST', '/api/acp/resources/import', {
    id: 'pdf-helper',
    sourcePath: fresh.sourcePath,
    expectedRevision: fresh.sourceRevision,
  });
  t.equal(again.status, 200, again.text);
  t.match(
    again.body.resource,
    { id: 'pdf-helper', provider: MACHINE, displayName: 'PDF tools', userContent: 'Prefer the split command.' },
    "importing a skill the owner imported again replaces it; the owner's fields it leaves out are kept",
  );
  t.same((await api('GET', '/api/acp/resources?schemaVersion=2')).body.manageableResourceIds, ['pdf-helper'], 'still manageable');

  // A secret in any file: 422, nothing copied, the secret never echoed.
  const leaky = scan.body.candidates.find((c: { id: string }) => c.id === 'leaky')!;
  const refused = await api('POST', '/api/acp/resources/import', {
    id: 'leaky',
    sourcePath: leaky.sourcePath,
    expectedRevision: leaky.sourceRevision,
  });
  t.equal(refused.status, 422, refused.text);
  t.equal(refused.body.code, 'secret_detected');
  t.match(refused.body.message, /notes\/env\.txt/);
  t.notMatch(refused.text, /ghp_/, 'the secret is never echoed');
  t.notOk(
    existsSync(path.join(root, 'skills', 'leaky')) || existsSync(path.join(root, 'receipts', 'leaky.json')),
    'nothing copied, no receipt',
  );

  // Refresh: the source changed; the scan shows the new revision, the refresh keeps the owner's fields.
  await writeSkill(path.join(sources, 'pdf-helper'), 'PDF helper', 'Split, merge and rotate PDFs.\n');
  const stillOld = await api('POST', '/api/acp/resources/pdf-helper/refresh', { expectedRevision: fresh.sourceRevision });
  t.equal(stillOld.body.code, 'source_changed', 'a refresh with a revision the source no longer has is 409');
  const refreshScan = await api('POST', '/api/acp/resources/pdf-helper/refresh/scan');
  t.equal(refreshScan.status, 200, refreshScan.text);
  t.equal(refreshScan.body.candidates.length, 1);
  const next = refreshScan.body.candidates[0]!;
  t.match(next, { id: 'pdf-helper', sourcePath: fresh.sourcePath, sourceContent: /rotate/ });
  const refreshed = await api('POST', '/api/acp/resources/pdf-helper/refresh', { expectedRevision: next.sourceRevision });
  t.equal(refreshed.status, 200, refreshed.text);
  t.match(
    refreshed.body.resource,
    { displayName: 'PDF tools', userContent: 'Prefer the split command.', sourceContent: /rotate/ },
    "the owner's fields are kept",
  );
  t.match(await readFile(path.join(root, 'skills', 'pdf-helper', 'SKILL.md'), 'utf8'), /rotate/, 'the copy is refreshed');
  t.same(
    (await api('GET', '/api/acp/resources?schemaVersion=2')).body.manageableResourceIds,
    ['pdf-helper'],
    'still manageable after the refresh',
  );

  // A record that is not an imported skill is not deleted here.
  const host = await call(
    server.origin,
    'PUT',
    '/api/acp/providers/huabu/resources/host-thing',
    { schemaVersion: 1, name: 'Host thing', description: 'A host record.', instructions: 'Use it.' },
    CANARY.huabu,
  );
  t.equal(host.status, 201, host.text);
  const notMine = await api('DELETE', '/api/acp/resources/host-thing');
  t.equal(notMine.status, 409, notMine.text);
  t.equal(notMine.body.code, 'resource_not_manageable');
  t.equal((await api('DELETE', '/api/acp/resources/no-such-thing')).status, 404);

  // Delete: folder, receipt and record gone.
  const removed = await api('DELETE', '/api/acp/resources/pdf-helper');
  t.equal(removed.status, 200, removed.text);
  t.same(removed.body, { removed: true });
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-helper')), 'the folder is removed');
  t.notOk(existsSync(path.join(root, 'receipts', 'pdf-helper.json')), 'the receipt is removed');
  t.equal((await api('GET', '/api/acp/resources/pdf-helper')).status, 404, 'the record is withdrawn');
  await events.waitFor(() => seen('resource.withdrawn'));
  t.pass('the subscriber sees the delete');
  t.same((await api('GET', '/api/acp/resources?schemaVersion=2')).body.manageableResourceIds, []);
  t.ok(existsSync(path.join(sources, 'pdf-helper', 'SKILL.md')), 'the source folder is untouched');

  // The receipt deleted by hand: serve withdraws the record, the folder is left with nothing naming it; a scan
  // shows it, DELETE clears it, and the skill imports again.
  const importAgain = async () => {
    const candidate = (await api('POST', '/api/acp/resources/import/scan', { rootPath: sources })).body.candidates.find(
      (c: { id: string }) => c.id === 'pdf-helper',
    )!;
    return api('POST', '/api/acp/resources/import', {
      id: 'pdf-helper',
      sourcePath: candidate.sourcePath,
      expectedRevision: candidate.sourceRevision,
    });
  };
  t.equal((await importAgain()).status, 200, 'imported again after its delete');
  await rm(path.join(root, 'receipts', 'pdf-helper.json'));
  await until('the record withdrawn', async () => (await api('GET', '/api/acp/resources/pdf-helper')).status === 404);
  const orphanScan = await api('POST', '/api/acp/resources/import/scan', { rootPath: sources });
  t.match(
    orphanScan.body.diagnostics.find((d: { path: string }) => d.path === path.join(root, 'skills', 'pdf-helper')),
    { code: 'skill_orphaned', message: /DELETE \/api\/acp\/resources\/pdf-helper/ },
    'a scan shows the folder no receipt names',
  );
  const blocked = await importAgain();
  t.equal(blocked.status, 409, blocked.text);
  t.match(blocked.body.message, /DELETE \/api\/acp\/resources\/pdf-helper/, 'an import over it names the way out');
  const cleared = await api('DELETE', '/api/acp/resources/pdf-helper');
  t.equal(cleared.status, 200, cleared.text);
  t.notOk(existsSync(path.join(root, 'skills', 'pdf-helper')), 'DELETE without the receipt clears the folder');
  t.equal((await importAgain()).status, 200, 'and the skill imports again');

  // The folder deleted by hand: its record is withdrawn, the machine shows the problem (and an event says so),
  // and DELETE clears the receipt left behind.
  await rm(path.join(root, 'skills', 'pdf-helper'), { recursive: true });
  await until('the record withdrawn', async () => (await api('GET', '/api/acp/resources/pdf-helper')).status === 404);
  const machineOf = async () =>
    ((await api('GET', '/api/acp/machines')).body.machines as { machineId: string; status: string; problems?: unknown[] }[]).find(
      (m) => m.machineId === MACHINE,
    )!;
  await until('the problem shown', async () => (await machineOf()).problems !== undefined);
  t.match(await machineOf(), {
    status: 'connected',
    problems: [{ receipt: 'receipts/pdf-helper.json', id: 'pdf-helper', code: 'entrypoint_missing', message: /does not exist/ }],
  });
  await events.waitFor(() => events.events.some((e) => e.event === 'machine.problems' && e.data.subject.id === MACHINE));
  t.pass('a machine.problems event');
  t.equal((await api('DELETE', '/api/acp/resources/pdf-helper')).status, 200, 'DELETE clears the receipt left behind');
  t.notOk(existsSync(path.join(root, 'receipts', 'pdf-helper.json')));
  await until('the problem cleared', async () => (await machineOf()).problems === undefined);
  t.pass('and the problem is gone');

  // Every step audited, without file contents or the secret.
  const audit = await readFile(path.join(dataDir, 'audit.jsonl'), 'utf8');
  {
    const actions = audit
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { action: string; outcome: string });
    for (const [action, outcome] of [
      ['resource.import.scan', 'scanned'],
      ['resource.import', 'source_changed'],
      ['resource.import', 'imported'],
      ['resource.import', 'secret_detected'],
      ['resource.refresh.scan', 'scanned'],
      ['resource.refresh', 'refreshed'],
      ['resource.remove', 'resource_not_manageable'],
      ['resource.remove', 'removed'],
    ]) {
      t.ok(
        actions.some((a) => a.action === action && a.outcome === outcome),
        `audited: ${action} ${outcome}`,
      );
    }
    t.notMatch(audit, /ghp_|Split and merge|echo pdf/, 'no file content or secret in the audit log');
  }

  // The machine goes away: 503 again.
  daemon.kill('SIGTERM');
  t.equal(await exited, 0, 'serve exits 0 on SIGTERM');
  const gone = await api('POST', '/api/acp/resources/pdf-helper/refresh/scan');
  t.equal(gone.status, 404, 'an ID with no record is 404 first');
  const goneScan = await api('POST', '/api/acp/resources/import/scan', { rootPath: sources });
  t.equal(goneScan.body.code, 'agentlet_unavailable', 'a stopped machine is 503 agentlet_unavailable');
  t.notMatch(log, new RegExp(enrolled.body.token), 'the daemon never logged its token');
});
