// Skill management, as upstream's UI calls it (`packages/shared/src/types/api/agent-resource.ts`): scan a
// folder on a machine, import a skill from it, refresh it from its source, remove it. Bodies are strict, as
// upstream's are.
import Type, { type Static } from 'typebox';
import { MachineId, ResourceId, SINGLE_LINE_PATTERN, TrimmedText } from './common.js';
import { V2_BOUNDS } from './resource.js';

const REVISION_PATTERN = '^[a-f0-9]{64}$';
const NOT_BLANK_LINE = '^(?=[\\s\\S]*\\S)[^\\u0000-\\u001F\\u007F]*$';

const Path = (description: string) => Type.String({ minLength: 1, maxLength: 4096, pattern: NOT_BLANK_LINE, description });
export const SourceRevision = Type.String({
  pattern: REVISION_PATTERN,
  description:
    "SHA-256 (hex) of the skill folder's files: each file's relative path, a NUL, its length, a NUL and its bytes, in path order.",
});

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
  },
  { additionalProperties: false, title: 'AgentResourceImportCandidate' },
);

export const SkillScanDiagnostic = Type.Object(
  {
    path: Type.String({ description: 'The folder the diagnostic is about.' }),
    code: Type.Union(
      [
        Type.Literal('skill_unreadable'),
        Type.Literal('skill_invalid'),
        Type.Literal('skill_orphaned'),
        Type.Literal('entrypoint_missing'),
        Type.Literal('receipt_invalid'),
        Type.Literal('too_many_receipts'),
      ],
      {
        description:
          "`skill_unreadable`, `skill_invalid`: a folder scanned. About the machine's own resource root, in every folder scan: `skill_orphaned` (a folder in `skills/` no receipt names; DELETE clears it), and a receipt it cannot publish: `entrypoint_missing` (its files are gone), `receipt_invalid`, `too_many_receipts`.",
      },
    ),
    message: Type.String({ description: 'What is wrong, for a person.' }),
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
        pattern: '^[^\\u0000-\\u0008\\u000B-\\u001F\\u007F]*$',
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
