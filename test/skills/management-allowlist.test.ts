// The registry's side of a machine's secret refusal: the owner's allowlist entries for the route go with
// the scan and import jobs, and a machine's `secret_detected` answers the owner with each finding's file,
// line, rule and fingerprint (in the message and in `details.findings`), never a value.
import t, { type Test } from 'tap';
import { AuditTrail } from '../../src/audit/audit-trail.js';
import type { JobAnswer } from '../../src/channel/machine-channels.js';
import { AppError } from '../../src/errors.js';
import { ResourceRegistry } from '../../src/registry/resource-registry.js';
import { SkillManagement } from '../../src/registry/skill-management.js';
import { SecretScanner, secretFingerprint, type AllowedFinding } from '../../src/secrets/secret-scanner.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';

const FINGERPRINT = secretFingerprint('credential-assignment', 'Xk9#mQ2$vL7pR4tZ8wN3');
const FINDING = {
  field: '/files/references/setup.md',
  line: 3,
  rule: 'credential-assignment',
  fingerprint: FINGERPRINT,
  route: 'resource.import',
};

async function setup(t: Test, answer: JobAnswer, allowlist: AllowedFinding[]) {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  const scanner = new SecretScanner();
  const audit = new AuditTrail(store, { now: () => new Date() });
  const jobs: { type: string; payload: Record<string, unknown> }[] = [];
  const skills = new SkillManagement({
    channels: {
      run: (_machineId: string, type: string, payload: unknown = {}) => {
        jobs.push({ type, payload: payload as Record<string, unknown> });
        return Promise.resolve({ jobId: `job-${jobs.length}`, answer });
      },
    },
    registry: new ResourceRegistry(store, scanner, audit),
    scanner,
    allowlist: () => Promise.resolve(allowlist),
    audit,
    defaultMachineId: () => Promise.resolve('mac-a'),
  });
  return { skills, jobs };
}

t.test("a machine's secret refusal names file, line, rule and fingerprint to the owner", async (t) => {
  const { skills } = await setup(
    t,
    {
      ok: false,
      error: {
        code: 'secret_detected',
        message: 'nothing was copied: references/setup.md line 3 (rule credential-assignment) looks like it holds a secret',
        findings: [FINDING],
      },
    },
    [],
  );
  const err = await skills.import('mac-a', { id: 'guide', sourcePath: '/skills/guide', expectedRevision: 'a'.repeat(64) }, 'owner').then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof AppError);
  const e = err as AppError;
  t.equal(e.code, 'secret_detected');
  t.match(e.message, 'references/setup.md line 3 (rule credential-assignment)');
  t.match(e.message, `/files/references/setup.md line 3: ${FINGERPRINT}`);
  t.match(e.details, { findings: [FINDING], agentletCode: 'secret_detected' });
});

t.test("the owner's entries for the route go with the scan, import and refresh jobs", async (t) => {
  const entries: AllowedFinding[] = [
    { fingerprint: FINGERPRINT, file: 'references/setup.md' },
    { fingerprint: FINGERPRINT, route: 'resource.import' },
    { fingerprint: FINGERPRINT, route: 'resource.refresh' },
    { fingerprint: FINGERPRINT, route: 'resource.register' },
  ];
  const { skills, jobs } = await setup(t, { ok: true, result: { rootPath: '/skills', candidates: [], diagnostics: [] } }, entries);
  await skills.scan('mac-a', '/skills', 'owner');
  t.same(jobs[0]!.payload.secretAllowlist, [entries[0], entries[1]], 'scan: no route, or resource.import');
  await skills
    .import('mac-a', { id: 'guide', sourcePath: '/skills/guide', expectedRevision: 'a'.repeat(64) }, 'owner')
    .catch(() => undefined);
  t.same(jobs[1]!.payload.secretAllowlist, [entries[0], entries[1]], 'import');
});
