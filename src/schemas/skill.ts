// Skill management, as upstream's UI calls it (`packages/shared/src/types/api/agent-resource.ts`): scan a
// folder on a machine, import a skill from it, refresh it from its source, remove it. Bodies are strict, as
// upstream's are.
import Type, { type Static } from 'typebox';
import { MachineId, ResourceId, SINGLE_LINE_PATTERN, TrimmedText } from './common.js';
import { SourceRevision, V2_BOUNDS } from './resource.js';
import { OPTIONAL_TEXT_PATTERN, VISIBLE_LINE_PATTERN } from '../text/text-rules.js';
import { SKILL_FRONT_MATTER_ERRORS, SKILL_FRONT_MATTER_WARNINGS } from '../text/front-matter.js';
import { JobSecretFinding } from './channel.js';
import { MAX_NAMED_FINDINGS } from './secret-allowlist.js';

/** Why a folder or archive is no candidate: each is a diagnostic of a scan, and 400 `invalid_input` at import. */
export const SKILL_DIAGNOSTIC_CODES = [
  'skill_unreadable',
  'skill_invalid',
  ...SKILL_FRONT_MATTER_ERRORS,
  'skill_archive_invalid',
  'skill_archive_too_large',
] as const;
export type SkillDiagnosticCode = (typeof SKILL_DIAGNOSTIC_CODES)[number];
/**
 * What every folder scan says first about the machine's own resource root: a folder in `skills/` no receipt
 * names (`skill_orphaned`; DELETE clears it), and a receipt the machine cannot publish.
 */
export const ROOT_DIAGNOSTIC_CODES = ['skill_orphaned', 'entrypoint_missing', 'receipt_invalid', 'too_many_receipts'] as const;

const NOT_BLANK_LINE = VISIBLE_LINE_PATTERN;

const Path = (description: string) => Type.String({ minLength: 1, maxLength: 4096, pattern: NOT_BLANK_LINE, description });
export { SourceRevision };

/** `?agentletId=`: the machine; without it the default machine (`DEFAULT_AGENTLET_ID`, else the one enrolled). */
export const SkillMachineQuery = Type.Object(
  {
    agentletId: Type.Optional({
      ...MachineId,
      description: 'The machine to act on; without it `DEFAULT_AGENTLET_ID`, else the only enrolled machine.',
    }),
  },
  { additionalProperties: false },
);

export const ScanSkillsBody = Type.Object(
  { rootPath: Path('Absolute path of a folder on the machine: a skill folder (with `SKILL.md`) or a folder of skill folders.') },
  { additionalProperties: false, title: 'ScanAgentResourcesBody' },
);

export const SkillCandidate = Type.Object(
  {
    id: ResourceId,
    name: TrimmedText(1, V2_BOUNDS.name, "The skill's name (`SKILL.md` front matter)."),
    sourcePath: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: SINGLE_LINE_PATTERN,
      description: 'The skill folder on the machine.',
    }),
    sourceContent: TrimmedText(1, V2_BOUNDS.sourceContent, '`SKILL.md` as the record would carry it.'),
    sourceRevision: SourceRevision,
    warnings: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.Enum(SKILL_FRONT_MATTER_WARNINGS),
            message: Type.String({ description: 'What departs from the format, for a person.' }),
          },
          { additionalProperties: false, title: 'AgentResourceImportWarning' },
        ),
        {
          maxItems: 16,
          description:
            "Where `SKILL.md` departs from the Agent Skills format without being refused (a `name` unlike its folder's, a bound exceeded, a field the format does not define); absent when it does not.",
        },
      ),
    ),
  },
  { additionalProperties: false, title: 'AgentResourceImportCandidate' },
);

export const SkillScanDiagnostic = Type.Object(
  {
    path: Type.String({ description: 'The folder the diagnostic is about.' }),
    code: Type.Enum([...SKILL_DIAGNOSTIC_CODES, 'secret_detected', 'skill_not_listed', ...ROOT_DIAGNOSTIC_CODES], {
      description:
        "Why it is no candidate (docs/decisions/skill-management.md lists the codes): `secret_detected` when its `SKILL.md` looks like it holds a secret (`findings` say where); `skill_not_listed` when the scan was full (256 skills, or 768 KiB of them): scan that folder on its own; or, about the machine's own resource root, `skill_orphaned` (a folder in `skills/` no receipt names; DELETE clears it) and `entrypoint_missing` (its files are gone), `receipt_invalid`, `too_many_receipts` for a receipt it cannot publish.",
    }),
    message: Type.String({ description: 'What is wrong, for a person.' }),
    id: Type.Optional({ ...ResourceId, description: '`secret_detected`: the ID the skill would be imported under.' }),
    sourceRevision: Type.Optional({
      ...SourceRevision,
      description: '`secret_detected`: what `POST /resources/import` expects back once the owner has allowed the findings.',
    }),
    findings: Type.Optional(
      Type.Array(JobSecretFinding, {
        maxItems: MAX_NAMED_FINDINGS,
        description:
          '`secret_detected`: where the secrets look to be (`/sourceContent` is `SKILL.md`), each with the `fingerprint` `POST /api/acp/secret-allowlist` takes; never the value.',
      }),
    ),
  },
  { additionalProperties: false, title: 'AgentResourceScanDiagnostic' },
);

export const ScanSkillsResult = Type.Object(
  {
    rootPath: Type.String({ description: 'The folder scanned.' }),
    candidates: Type.Array(SkillCandidate, { maxItems: 256 }),
    diagnostics: Type.Array(SkillScanDiagnostic, { maxItems: 256 }),
  },
  { additionalProperties: false, title: 'ScanAgentResourcesResponse' },
);
export type ScanSkillsResult = Static<typeof ScanSkillsResult>;

export const ImportSkillBody = Type.Object(
  {
    id: ResourceId,
    sourcePath: Path("The candidate's `sourcePath`."),
    expectedRevision: {
      ...SourceRevision,
      description: "The candidate's `sourceRevision`: the import fails with 409 `source_changed` when the folder no longer has it.",
    },
    displayName: Type.Optional(TrimmedText(1, V2_BOUNDS.displayName, "The owner's presentation name.")),
    userContent: Type.Optional(
      Type.String({
        maxLength: V2_BOUNDS.userContent,
        pattern: OPTIONAL_TEXT_PATTERN,
        description: "The owner's instructions for every agent that selects the skill (trimmed when stored; `''` by default).",
      }),
    ),
  },
  { additionalProperties: false, title: 'ImportAgentResourceBody' },
);
export type ImportSkillBody = Static<typeof ImportSkillBody>;

export const RefreshSkillBody = Type.Object(
  { expectedRevision: { ...SourceRevision, description: 'The `sourceRevision` of the refresh scan.' } },
  { additionalProperties: false, title: 'RefreshAgentResourceBody' },
);

export const SkillRemovalResult = Type.Object(
  { removed: Type.Boolean({ description: 'True: the skill was removed from the machine and its record withdrawn.' }) },
  { additionalProperties: false, title: 'SkillRemovalResult' },
);
