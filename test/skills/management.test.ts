// The registry's side of skill management (src/registry/skill-management.ts), against a real JSON store and
// a machine played by the test: which machine is asked, how the machine's failures answer the owner, what
// a scan answer may hold, and what an import, refresh or removal leaves when the machine or the registry
// disagrees midway. The whole loop with real processes is test/skills/end-to-end.test.ts.
import t, { type Test } from 'tap';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import type { JobAnswer } from '../../src/channel/machine-channels.js';
import { AppError } from '../../src/errors.js';
import { ResourceRegistry } from '../../src/registry/resource-registry.js';
import type { RecordQuota } from '../../src/registry/record-quota.js';
import { SkillManagement } from '../../src/registry/skill-management.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { WITHHELD_TEXT } from '../../src/secrets/withhold.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';

const MACHINE = 'mac-a';
const SKILL = { schemaVersion: 2 as const, name: 'PDF split', sourceContent: '---\nname: PDF split\ndescription: Split PDFs.\n---\n' };
const GITHUB_TOKEN = `ghp_${'A1b2C3d4E5'.repeat(3)}abcdef`;

type Machine = (type: string, payload: Record<string, unknown>) => Promise<JobAnswer> | JobAnswer;

async function setup(t: Test, machine: Machine, defaultMachine: string | null = MACHINE, quota?: RecordQuota) {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  const scanner = new SecretScanner();
  const audit = new AuditTrail(store, { now: () => new Date() });
  const registry = new ResourceRegistry(store, scanner, audit, [], [], quota);
  const jobs: { type: string; payload: Record<string, unknown> }[] = [];
  const skills = new SkillManagement({
    channels: {
      run: async (machineId: string, type: string, payload: unknown = {}) => {
        t.equal(machineId, MACHINE, `the ${type} job goes to the machine asked for`);
        jobs.push({ type, payload: payload as Record<string, unknown> });
        return { jobId: `job-${jobs.length}`, answer: await machine(type, payload as Record<string, unknown>) };
      },
    },
    registry,
    scanner,
    audit,
    defaultMachineId: () => Promise.resolve(defaultMachine ?? undefined),
  });
  return { store, registry, skills, jobs };
}

const failure = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError)) throw new Error(`expected an AppError, got ${String(err)}`);
  return { code: err.code, details: err.details, message: err.message };
};

t.test('no machine named and no default: 503 agentlet_unavailable, nothing sent', async (t) => {
  const { skills, jobs } = await setup(t, () => ({ ok: true, result: {} }), null);
  const err = await failure(skills.scan(undefined, '/skills', 'owner'));
  t.equal(err.code, 'agentlet_unavailable');
  t.match(err.message, /\?agentletId=/);
  t.same(jobs, []);
});

t.test("the machine's failure codes answer the owner with the status they mean, its own code in details", async (t) => {
  let code = 'source_changed';
  const { skills } = await setup(t, () => ({ ok: false, error: { code, message: 'it said no' } }));
  const expected: Record<string, string> = {
    source_changed: 'source_changed',
    secret_detected: 'secret_detected',
    resource_conflict: 'resource_conflict',
    skill_not_found: 'skill_not_found',
    skill_invalid: 'invalid_input',
    skill_unreadable: 'invalid_input',
    invalid_path: 'invalid_input',
    skill_front_matter_missing: 'invalid_input',
    skill_front_matter_invalid: 'invalid_input',
    skill_name_missing: 'invalid_input',
    skill_description_missing: 'invalid_input',
    skill_archive_invalid: 'invalid_input',
    skill_archive_too_large: 'invalid_input',
    disk_full: 'agentlet_job_failed',
  };
  for (const [machineCode, ownerCode] of Object.entries(expected)) {
    code = machineCode;
    const err = await failure(skills.scan(MACHINE, '/skills', 'owner'));
    t.equal(err.code, ownerCode, `${machineCode} → ${ownerCode}`);
    t.match(err.details, { machineId: MACHINE, agentletCode: machineCode, jobId: /^job-/ });
    t.match(err.message, /it said no/);
  }
});

t.test('a scan answer is checked; a candidate whose text holds a secret becomes a diagnostic', async (t) => {
  let result: unknown = { nonsense: true };
  const { skills } = await setup(t, () => ({ ok: true, result }));
  t.equal((await failure(skills.scan(MACHINE, '/skills', 'owner'))).code, 'agentlet_job_failed', 'an answer not shaped as a scan');

  const candidate = (id: string, sourceContent: string) => ({
    id,
    name: id,
    sourcePath: `/skills/${id}`,
    sourceContent,
    sourceRevision: 'a'.repeat(64),
  });
  result = {
    rootPath: '/skills',
    candidates: [candidate('clean', SKILL.sourceContent.trim()), candidate('leaky', `Use token ${GITHUB_TOKEN} to push.`)],
    diagnostics: [],
  };
  const scan = await skills.scan(MACHINE, '  /skills  ', 'owner');
  t.same(
    scan.candidates.map((c) => c.id),
    ['clean'],
    'only the clean candidate is offered',
  );
  t.match(scan.diagnostics, [
    {
      path: '/skills/leaky',
      code: 'secret_detected',
      message: /secret/,
      id: 'leaky',
      sourceRevision: 'a'.repeat(64),
      findings: [{ field: '/sourceContent', line: 1, rule: 'github-pat', fingerprint: /^github-pat:[a-f0-9]{64}$/ }],
    },
  ]);
  t.notOk(JSON.stringify(scan).includes(GITHUB_TOKEN), 'the secret is not echoed');

  // The machine's own secret refusal: its fingerprints and revision reach the owner as sent (the schema holds
  // them to their patterns); its words, finding fields included, are scanned.
  const refusal = {
    path: '/skills/sign-in',
    code: 'secret_detected',
    message: 'SKILL.md looks like it contains a secret (line 8, rule credential-assignment)',
    id: 'sign-in',
    sourceRevision: 'b'.repeat(64),
    findings: [{ field: '/sourceContent', line: 8, rule: 'credential-assignment', fingerprint: `credential-assignment:${'c'.repeat(64)}` }],
  };
  result = {
    rootPath: '/skills',
    candidates: [],
    diagnostics: [
      refusal,
      { ...refusal, message: `token ${GITHUB_TOKEN}`, findings: [{ ...refusal.findings[0]!, field: `/files/${GITHUB_TOKEN}` }] },
    ],
  };
  const passed = await skills.scan(MACHINE, '/skills', 'owner');
  t.same(passed.diagnostics[0], refusal, 'a clean refusal arrives as the machine sent it');
  t.match(passed.diagnostics[1], {
    message: WITHHELD_TEXT,
    findings: [{ field: WITHHELD_TEXT, fingerprint: refusal.findings[0]!.fingerprint }],
  });
  t.notOk(JSON.stringify(passed).includes(GITHUB_TOKEN), 'a secret in its words is withheld');

  // The front matter's warnings ride with their candidate; its refusals and an archive's are diagnostics.
  const warnings = [
    { code: 'skill_name_mismatch', message: 'the name "clean" differs from its folder\'s name "clean-skill"' },
    { code: 'skill_field_unknown', message: 'the format defines no field "version"' },
  ];
  const diagnostics = [
    { path: '/skills/a', code: 'skill_front_matter_missing', message: 'SKILL.md has no YAML front matter' },
    { path: '/skills/b.zip', code: 'skill_archive_invalid', message: 'an entry leads outside the folder' },
  ];
  result = { rootPath: '/skills', candidates: [{ ...candidate('clean', SKILL.sourceContent.trim()), warnings }], diagnostics };
  t.same(await skills.scan(MACHINE, '/skills', 'owner'), result, 'warnings and the new codes are a scan answer');
  result = {
    rootPath: '/skills',
    candidates: [{ ...candidate('clean', 'x'), warnings: [{ code: 'skill_bogus', message: 'm' }] }],
    diagnostics: [],
  };
  t.equal((await failure(skills.scan(MACHINE, '/skills', 'owner'))).code, 'agentlet_job_failed', 'a warning code not in the list');
});

t.test('import: an ID already held is refused before the machine copies anything; a secret in the owner fields too', async (t) => {
  const { registry, skills, jobs } = await setup(t, () => ({ ok: true, result: {} }));
  await registry.register('huabu', 'pdf-split', SKILL, 'provider:huabu');
  const body = { id: 'pdf-split', sourcePath: '/skills/pdf-split', expectedRevision: 'a'.repeat(64) };
  t.match(await failure(skills.import(MACHINE, body, 'owner')), { code: 'resource_conflict', details: { ids: ['pdf-split'] } });
  t.equal(
    (await failure(skills.import(MACHINE, { ...body, id: 'other', userContent: `token ${GITHUB_TOKEN}` }, 'owner'))).code,
    'secret_detected',
  );
  t.same(jobs, [], 'no job was sent');
});

t.test(
  'import: the record the machine publishes is marked with the owner fields; if another provider took the ID meanwhile, the copy is removed again',
  async (t) => {
    let publishAs = MACHINE;
    const { registry, skills, jobs } = await setup(t, async (type, payload) => {
      if (type === 'skill.import') await registry.register(publishAs, payload.id as string, SKILL, `provider:${publishAs}`);
      return { ok: true, result: { removed: true } };
    });
    const record = await skills.import(
      MACHINE,
      { id: 'pdf-split', sourcePath: ' /skills/pdf-split ', expectedRevision: 'a'.repeat(64), displayName: 'PDF tools' },
      'owner',
    );
    t.match(record, { schemaVersion: 2, id: 'pdf-split', provider: MACHINE, displayName: 'PDF tools', userContent: '' });
    t.notOk('imported' in record, 'the mark is never shown');
    t.ok(registry.isManageable(await registry.get('pdf-split')), 'manageable now');
    t.same(
      jobs.at(-1),
      { type: 'skill.import', payload: { id: 'pdf-split', sourcePath: '/skills/pdf-split', expectedRevision: 'a'.repeat(64) } },
      'the path trimmed',
    );

    publishAs = 'mac-b';
    const err = await failure(
      skills.import(MACHINE, { id: 'raced', sourcePath: '/skills/raced', expectedRevision: 'b'.repeat(64) }, 'owner'),
    );
    t.equal(err.code, 'resource_conflict');
    t.match(err.message, /registered by mac-b meanwhile/);
    t.same(jobs.at(-1), { type: 'skill.remove', payload: { id: 'raced' } }, "the machine's copy is removed again");
    t.equal((await registry.get('raced')).provider, 'mac-b', "the other provider's record is untouched");
  },
);

t.test('refresh and remove only for a skill the owner imported onto that machine', async (t) => {
  const { registry, skills, jobs } = await setup(t, () => ({ ok: true, result: { removed: false } }));
  await registry.register('huabu', 'host-skill', SKILL, 'provider:huabu');
  await registry.register(MACHINE, 'published', SKILL, `provider:${MACHINE}`);
  const host = await failure(skills.refresh(MACHINE, 'host-skill', 'a'.repeat(64), 'owner'));
  t.match(host, { code: 'resource_not_manageable', details: { id: 'host-skill', provider: 'huabu' }, message: /belongs to huabu/ });
  const own = await failure(skills.remove(MACHINE, 'published', 'owner'));
  t.match(own, { code: 'resource_not_manageable', message: /published by machine mac-a, not imported/ });
  t.equal((await failure(skills.refreshScan(MACHINE, 'nothing-here', 'owner'))).code, 'resource_not_found');
  t.same(jobs, [], 'no job was sent for any of them');

  // An imported skill whose copy the machine no longer has: the record is withdrawn by the registry.
  await registry.markImported('published', {});
  t.equal(await skills.remove(MACHINE, 'published', 'owner'), true);
  t.same(jobs, [{ type: 'skill.remove', payload: { id: 'published' } }]);
  t.equal((await failure(registry.get('published'))).code, 'resource_not_found', 'withdrawn');
});

t.test('import again under a manageable ID is a replace on that machine; any other record with the ID stays 409', async (t) => {
  const { registry, skills, jobs } = await setup(t, async (type, payload) => {
    if (type === 'skill.import') await registry.register(MACHINE, payload.id as string, SKILL, `provider:${MACHINE}`);
    return { ok: true, result: {} };
  });
  const body = { id: 'pdf-split', sourcePath: '/skills/pdf-split', expectedRevision: 'a'.repeat(64), displayName: 'PDF tools' };
  await skills.import(MACHINE, { ...body, userContent: 'Prefer split.' }, 'owner');
  const again = await skills.import(
    MACHINE,
    { ...body, sourcePath: '/elsewhere/pdf-split', expectedRevision: 'b'.repeat(64), displayName: 'PDF' },
    'owner',
  );
  t.match(
    again,
    { id: 'pdf-split', provider: MACHINE, displayName: 'PDF', userContent: 'Prefer split.' },
    "the owner's fields the new import gives apply; the others are kept",
  );
  t.same(
    jobs.at(-1),
    {
      type: 'skill.import',
      payload: { id: 'pdf-split', sourcePath: '/elsewhere/pdf-split', expectedRevision: 'b'.repeat(64), replace: true },
    },
    'the machine is asked to replace, with the revision the owner scanned',
  );
  t.ok(registry.isManageable(await registry.get('pdf-split')), 'still manageable');

  await registry.register(MACHINE, 'published', SKILL, `provider:${MACHINE}`);
  const sent = jobs.length;
  const own = await failure(skills.import(MACHINE, { ...body, id: 'published' }, 'owner'));
  t.match(own, { code: 'resource_conflict', details: { ids: ['published'] } }, "a machine's own receipt is not the owner's to replace");
  await registry.register('huabu', 'huabu-skill', SKILL, 'provider:huabu');
  const other = await failure(skills.import(MACHINE, { ...body, id: 'huabu-skill' }, 'owner'));
  t.equal(other.code, 'resource_conflict', "another provider's record is 409");
  t.notOk(
    jobs.slice(sent).some((j) => j.payload.id === 'published' || j.payload.id === 'huabu-skill'),
    'no job for a refused ID',
  );
});

t.test('remove without a record asks the machine to clear what is left of the skill; 404 when nothing is', async (t) => {
  let answer: JobAnswer = { ok: true, result: { removed: true } };
  let away = false;
  const { skills, jobs } = await setup(t, () => {
    if (away) throw new AppError('agentlet_unavailable', 'Agentlet mac-a is not connected.');
    return answer;
  });
  t.equal(await skills.remove(MACHINE, 'left-over', 'owner'), true, "the machine's leftover folder is cleared");
  t.same(jobs, [{ type: 'skill.remove', payload: { id: 'left-over' } }]);
  answer = { ok: true, result: { removed: false } };
  t.equal((await failure(skills.remove(MACHINE, 'nothing-here', 'owner'))).code, 'resource_not_found', 'nothing anywhere: 404');
  away = true;
  const unreachable = await failure(skills.remove(MACHINE, 'nothing-here', 'owner'));
  t.equal(unreachable.code, 'resource_not_found', 'no record, and the machine cannot be asked: 404');
  t.match(unreachable.message, /not connected/);
});

t.test('import: a machine at its record quota is refused before it copies anything; a replace still goes to the machine', async (t) => {
  const { registry, skills, jobs } = await setup(
    t,
    async (type, payload) => {
      if (type === 'skill.import') await registry.register(MACHINE, payload.id as string, SKILL, `provider:${MACHINE}`);
      return { ok: true, result: {} };
    },
    MACHINE,
    { maxRecords: 1, maxBytes: 0 },
  );
  const body = { id: 'pdf-split', sourcePath: '/skills/pdf-split', expectedRevision: 'a'.repeat(64) };
  await skills.import(MACHINE, body, 'owner');
  const sent = jobs.length;
  const over = await failure(skills.import(MACHINE, { ...body, id: 'second' }, 'owner'));
  t.match(over, { code: 'record_quota_exceeded', details: { provider: MACHINE, limit: 'records', records: { held: 1, max: 1 } } });
  t.same(jobs.slice(sent), [], 'no job was sent: nothing copied on the machine');
  t.match(await skills.import(MACHINE, { ...body, expectedRevision: 'b'.repeat(64) }, 'owner'), { id: 'pdf-split' }, 'a replace');
  t.equal(jobs.at(-1)?.payload.replace, true);
});
