// Skill management: the owner scans a folder on a machine, imports a skill from it, refreshes it from its
// source and removes it, each through a job on the machine's channel (src/agentlet/skill-jobs.ts does the
// file work there and publishes the receipt). The registry keeps which records the owner imported (the
// stored import mark, src/registry/manageable.ts) and audits every step. Framework-free.
import { Compile } from 'typebox/compile';
import type { AuditTrail } from '../audit/audit-trail.js';
import type { JobAnswer, MachineChannels } from '../channel/machine-channels.js';
import { AppError, type ErrorCode } from '../errors.js';
import type { AgentResourceV2 } from '../schemas/resource.js';
import { ScanSkillsResult, SKILL_DIAGNOSTIC_CODES, type ImportSkillBody } from '../schemas/skill.js';
import { namedFindings, type AllowedFinding, type SecretScanner } from '../secrets/secret-scanner.js';
import { WITHHELD_TEXT, withholdSecrets } from '../secrets/withhold.js';
import type { ResourceRegistry } from './resource-registry.js';
import { answerV2 } from './resource-versions.js';

export const SKILL_ACTIONS = {
  scan: 'resource.import.scan',
  import: 'resource.import',
  refreshScan: 'resource.refresh.scan',
  refresh: 'resource.refresh',
  remove: 'resource.remove',
} as const;

/** How the machine's failure codes answer the owner; any other is 502 `agentlet_job_failed`. */
const MACHINE_CODES: Record<string, ErrorCode> = {
  source_changed: 'source_changed',
  secret_detected: 'secret_detected',
  resource_conflict: 'resource_conflict',
  skill_not_found: 'skill_not_found',
  invalid_path: 'invalid_input',
  ...Object.fromEntries(SKILL_DIAGNOSTIC_CODES.map((code) => [code, 'invalid_input' as const])),
};

const checkScan = Compile(ScanSkillsResult);

export interface SkillManagementDeps {
  channels: Pick<MachineChannels, 'run'>;
  registry: ResourceRegistry;
  scanner: SecretScanner;
  /** The owner's secret allowlist: the machine's import scan receives its entries with the job. */
  allowlist?: () => Promise<readonly AllowedFinding[]>;
  audit: AuditTrail;
  /** The machine when the request names none (the profiles' default machine rule). */
  defaultMachineId: () => Promise<string | undefined>;
}

export class SkillManagement {
  constructor(private readonly deps: SkillManagementDeps) {}

  async #machine(agentletId: string | undefined): Promise<string> {
    const machineId = agentletId ?? (await this.deps.defaultMachineId());
    if (machineId === undefined) {
      throw new AppError(
        'agentlet_unavailable',
        'No Agentlet to manage skills on: name one with ?agentletId=, set DEFAULT_AGENTLET_ID, or enroll exactly one machine.',
      );
    }
    return machineId;
  }

  /** Runs the job; the machine's failure becomes the owner's error (its code in `details.agentletCode`). */
  async #run(machineId: string, type: string, payload: unknown): Promise<unknown> {
    const { jobId, answer }: { jobId: string; answer: JobAnswer } = await this.deps.channels.run(machineId, type, payload);
    if (answer.ok) return answer.result;
    const code = MACHINE_CODES[answer.error.code] ?? 'agentlet_job_failed';
    const findings = code === 'secret_detected' ? answer.error.findings : undefined;
    // The machine's message names file, line and rule; the fingerprints (which its words may not carry) are added here.
    const fingerprints = findings?.length
      ? `. Fingerprints: ${findings.map((f) => `${f.field} line ${f.line}: ${f.fingerprint}`).join('; ')} (if one is no secret, the owner can allow it: POST /api/acp/secret-allowlist)`
      : '';
    throw new AppError(code, `Agentlet ${machineId}: ${answer.error.message}${fingerprints}`, {
      machineId,
      jobId,
      agentletCode: answer.error.code,
      ...(findings?.length ? { findings } : {}),
    });
  }

  /** The owner's allowlist entries that apply on the machine for this route, as the job carries them (none: no field). */
  async #allowed(route: 'resource.import' | 'resource.refresh'): Promise<{ secretAllowlist?: AllowedFinding[] }> {
    const entries = ((await this.deps.allowlist?.()) ?? [])
      .filter((e) => e.route === undefined || e.route === route)
      .map(({ fingerprint, file, route }) => ({
        fingerprint,
        ...(file === undefined ? {} : { file }),
        ...(route === undefined ? {} : { route }),
      }));
    return entries.length > 0 ? { secretAllowlist: entries } : {};
  }

  /**
   * A scan answer, checked, with every text of the machine's scanned before it reaches the owner: a candidate
   * whose SKILL.md or name looks like a secret becomes a diagnostic naming the finding (the owner may allow
   * its fingerprint); a candidate with one in any other field (its path, ID, a warning) becomes a
   * diagnostic too, its path withheld when that is where it is; the root path and the machine's own
   * diagnostics have any such text withheld (src/secrets/withhold.ts).
   */
  async #scanResult(machineId: string, result: unknown, route: 'resource.import' | 'resource.refresh'): Promise<ScanSkillsResult> {
    if (!checkScan.Check(result))
      throw new AppError('agentlet_job_failed', `Agentlet ${machineId} answered the scan with an unexpected result.`, { machineId });
    const { scanner } = this.deps;
    const candidates = [];
    const diagnostics = await this.#scannedDiagnostics(result.diagnostics, route);
    for (const candidate of result.candidates) {
      const findings = await scanner.scan(
        [
          ['/name', candidate.name],
          ['/sourceContent', candidate.sourceContent],
          ['/sourcePath', candidate.sourcePath],
          ['/id', candidate.id],
          ...(candidate.warnings ?? []).map((w, i): [string, string] => [`/warnings/${i}/message`, w.message]),
        ],
        { route },
      );
      if (findings.length === 0) {
        candidates.push(candidate);
        continue;
      }
      if (diagnostics.length >= 256) continue;
      const f = findings.find((x) => x.field === '/name' || x.field === '/sourceContent');
      const path = findings.some((x) => x.field === '/sourcePath') ? WITHHELD_TEXT : candidate.sourcePath;
      diagnostics.push({
        path,
        code: 'secret_detected',
        message: f
          ? `SKILL.md looks like it contains a secret (${f.field === '/name' ? 'its name' : `line ${f.line}`}, rule ${f.rule}, fingerprint ${f.fingerprint}); remove it, or if it is none, allow the fingerprint (POST /api/acp/secret-allowlist) and import it with this sourceRevision`
          : `the candidate's ${findings[0]!.field.slice(1)} looks like it contains a secret (rule ${findings[0]!.rule}, fingerprint ${findings[0]!.fingerprint}); it was withheld`,
        ...(findings.some((x) => x.field === '/id') ? {} : { id: candidate.id }),
        sourceRevision: candidate.sourceRevision,
        findings: namedFindings(findings).named,
      });
    }
    const rootPath = (await withholdSecrets(scanner, result.rootPath, { route })).value;
    return { rootPath, candidates, diagnostics };
  }

  /**
   * The machine's diagnostics with its words scanned (src/secrets/withhold.ts): every text but a secret
   * refusal's fingerprints, rules and revision, which their schema patterns already hold to a digest and a
   * rule name (a fingerprint is itself a finding of gitleaks' generic rule).
   */
  async #scannedDiagnostics(machine: ScanSkillsResult['diagnostics'], route: string): Promise<ScanSkillsResult['diagnostics']> {
    type Words = Omit<ScanSkillsResult['diagnostics'][number], 'sourceRevision' | 'findings'> & { findings?: { field: string }[] };
    const words = machine.map(({ sourceRevision: _revision, findings, ...d }): Words =>
      findings ? { ...d, findings: findings.map((f) => ({ field: f.field })) } : d,
    );
    const scanned = (await withholdSecrets(this.deps.scanner, words, { route })).value;
    return scanned.map(({ findings: fields, ...d }, i) => {
      const { sourceRevision, findings } = machine[i]!;
      return {
        ...d,
        ...(sourceRevision === undefined ? {} : { sourceRevision }),
        ...(findings === undefined ? {} : { findings: findings.map((f, j) => ({ ...f, field: fields![j]!.field })) }),
      };
    });
  }

  /** The machine's imported skill `id`: 404 when no record, 409 `resource_not_manageable` when it is not one the owner imported there. */
  async #imported(machineId: string, id: string) {
    const record = await this.deps.registry.get(id);
    if (record.provider !== machineId || !this.deps.registry.isManageable(record)) {
      throw new AppError(
        'resource_not_manageable',
        record.provider !== machineId
          ? `${id} belongs to ${record.provider}, not to machine ${machineId}; only skills the owner imported onto a machine are refreshed or removed here.`
          : `${id} was published by machine ${machineId}, not imported by the owner; only imported skills are refreshed or removed here (its publisher withdraws it).`,
        { id, provider: record.provider },
      );
    }
    return record;
  }

  async scan(agentletId: string | undefined, rootPath: string, actor: string): Promise<ScanSkillsResult> {
    const action = SKILL_ACTIONS.scan;
    try {
      const machineId = await this.#machine(agentletId);
      const result = await this.#scanResult(
        machineId,
        await this.#run(machineId, 'skill.scan', { rootPath: rootPath.trim(), ...(await this.#allowed('resource.import')) }),
        'resource.import',
      );
      await this.deps.audit.record([
        {
          actor,
          action,
          id: machineId,
          outcome: 'scanned',
          details: { candidates: result.candidates.length, diagnostics: result.diagnostics.length },
        },
      ]);
      return result;
    } catch (err) {
      return this.deps.audit.failure(actor, action, agentletId ?? '(default machine)', err);
    }
  }

  async import(agentletId: string | undefined, body: ImportSkillBody, actor: string): Promise<AgentResourceV2> {
    const action = SKILL_ACTIONS.import;
    const { id } = body;
    try {
      const owner = { ...(body.displayName !== undefined ? { displayName: body.displayName } : {}), userContent: body.userContent ?? '' };
      // The owner's fields are checked before the machine copies anything.
      await this.deps.scanner.assertClean([
        ...(owner.displayName !== undefined ? [['/displayName', owner.displayName] as [string, string]] : []),
        ['/userContent', owner.userContent],
      ]);
      const machineId = await this.#machine(agentletId);
      const held = await this.deps.registry.get(id).catch(() => undefined);
      // A skill the owner imported onto this machine may be imported again: a replace, guarded by the revision.
      const replace = held !== undefined && held.provider === machineId && this.deps.registry.isManageable(held);
      if (held && !replace) {
        throw new AppError(
          'resource_conflict',
          `Resource ${id} is already registered (provider ${held.provider}) and is not a skill the owner imported onto machine ${machineId}; import it under another ID.`,
          { ids: [id] },
        );
      }
      // A new record must fit the machine's record quota: refused before the machine copies anything (the
      // bytes it will add are known only once it reads the skill; its publish is checked again in full).
      if (!replace) await this.deps.registry.assertRoomForRecord(machineId);
      await this.#run(machineId, 'skill.import', {
        id,
        sourcePath: body.sourcePath.trim(),
        expectedRevision: body.expectedRevision,
        ...(replace ? { replace: true } : {}),
        ...(await this.#allowed('resource.import')),
      });
      let record;
      try {
        const published = await this.deps.registry.get(id);
        if (published.provider !== machineId)
          throw new AppError('resource_conflict', `Resource ${id} was registered by ${published.provider} meanwhile.`, { ids: [id] });
        // A replace keeps the owner's fields the body leaves out; a new import starts from empty ones.
        const { userContent: _empty, ...given } = owner;
        record = await this.deps.registry.markImported(id, replace && body.userContent === undefined ? given : owner);
      } catch (err) {
        // The copy on the machine is not left behind without its record (a replaced one keeps its record).
        if (!replace) await this.#run(machineId, 'skill.remove', { id }).catch(() => undefined);
        throw err;
      }
      await this.deps.audit.record([{ actor, action, id, outcome: replace ? 'replaced' : 'imported', details: { machineId } }]);
      return answerV2(record);
    } catch (err) {
      return this.deps.audit.failure(actor, action, id, err);
    }
  }

  async refreshScan(agentletId: string | undefined, id: string, actor: string): Promise<ScanSkillsResult> {
    const action = SKILL_ACTIONS.refreshScan;
    try {
      const machineId = await this.#machine(agentletId);
      await this.#imported(machineId, id);
      const result = await this.#scanResult(
        machineId,
        await this.#run(machineId, 'skill.scan', { id, ...(await this.#allowed('resource.refresh')) }),
        'resource.refresh',
      );
      await this.deps.audit.record([
        {
          actor,
          action,
          id,
          outcome: 'scanned',
          details: { machineId, candidates: result.candidates.length, diagnostics: result.diagnostics.length },
        },
      ]);
      return result;
    } catch (err) {
      return this.deps.audit.failure(actor, action, id, err);
    }
  }

  async refresh(agentletId: string | undefined, id: string, expectedRevision: string, actor: string): Promise<AgentResourceV2> {
    const action = SKILL_ACTIONS.refresh;
    try {
      const machineId = await this.#machine(agentletId);
      await this.#imported(machineId, id);
      await this.#run(machineId, 'skill.import', {
        id,
        expectedRevision,
        refresh: true,
        ...(await this.#allowed('resource.refresh')),
      });
      // The provider's replace kept the owner's fields and the import mark; marking again is a no-op then.
      const record = await this.deps.registry.markImported(id, {});
      await this.deps.audit.record([{ actor, action, id, outcome: 'refreshed', details: { machineId } }]);
      return answerV2(record);
    } catch (err) {
      return this.deps.audit.failure(actor, action, id, err);
    }
  }

  async remove(agentletId: string | undefined, id: string, actor: string): Promise<boolean> {
    const action = SKILL_ACTIONS.remove;
    try {
      const record = await this.deps.registry.get(id).catch((err: unknown) => {
        if (err instanceof AppError && err.code === 'resource_not_found') return undefined;
        throw err;
      });
      const machineId = await this.#machine(agentletId).catch((err: unknown) => {
        if (record) throw err;
        return this.#nothingToRemove(id, err);
      });
      if (!record) return await this.#removeLeftover(machineId, id, actor);
      await this.#imported(machineId, id);
      const result = (await this.#run(machineId, 'skill.remove', { id })) as { removed?: unknown } | undefined;
      // The machine published its set without the skill; a record still there (its copy was already gone) is withdrawn here.
      const still = await this.deps.registry.get(id).catch(() => undefined);
      if (still && still.provider === machineId) await this.deps.registry.withdraw(machineId, id, actor, action);
      await this.deps.audit.record([
        { actor, action, id, outcome: 'removed', details: { machineId, onMachine: result?.removed === true ? 'removed' : 'absent' } },
      ]);
      return true;
    } catch (err) {
      return this.deps.audit.failure(actor, action, id, err);
    }
  }

  /**
   * No record has the ID: what the machine may still hold of an imported skill (its receipt and folder, or a
   * folder no receipt names) is cleared; 404 when it holds nothing, or cannot be asked.
   */
  async #removeLeftover(machineId: string, id: string, actor: string): Promise<boolean> {
    const result = (await this.#run(machineId, 'skill.remove', { id }).catch((err: unknown) => this.#nothingToRemove(id, err))) as
      { removed?: unknown } | undefined;
    if (result?.removed !== true)
      throw new AppError('resource_not_found', `No resource with ID ${id}, and nothing of it on machine ${machineId}.`, { id });
    await this.deps.audit.record([
      { actor, action: SKILL_ACTIONS.remove, id, outcome: 'removed', details: { machineId, onMachine: 'removed', record: 'absent' } },
    ]);
    return true;
  }

  /** Without a record, a machine that cannot be asked means nothing to remove: 404, saying why. */
  #nothingToRemove(id: string, err: unknown): never {
    if (err instanceof AppError && err.code === 'agentlet_unavailable')
      throw new AppError(
        'resource_not_found',
        `No resource with ID ${id}; ${err.message.replace(/\.$/, '')}, so nothing left of it there could be cleared.`,
        { id },
      );
    throw err;
  }
}
