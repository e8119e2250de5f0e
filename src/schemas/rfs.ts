// What an agent sends and reads on RFS besides the catalogue: local receipts, the profiles it may know
// about, and the host skills. Shapes follow upstream Huabu's shared API types
// (packages/shared/src/types/api/agent-resource.ts @a8514a7, `localResourceReceipt*`; the RFS profile list
// of rfs.route.ts @99a827dd, `rfsAvailableAgentProfileSchema`).
import Type, { type Static } from 'typebox';
import { ResourceId, SafeText, SINGLE_LINE_PATTERN } from './common.js';
import { AgentResourceV2, V2_BOUNDS } from './resource.js';
import { LINE_CONTROLS } from '../text/text-rules.js';

/** A relative path inside `$AGENT_RESOURCE_DIR`: not absolute, no `..` segment, no backslash, one line. */
export const ENTRYPOINT_PATTERN = `^(?![/\\\\])(?!.*(?:^|/)\\.\\.(?:/|$))(?!.*\\\\)(?!.*\\s$)(?!\\s)[^${LINE_CONTROLS}]+$`;

/** Body of `POST $HUABU_RFS_URL/resources/local/receipts`: what an agent installed on its machine. */
export const LocalReceiptBody = Type.Object(
  {
    id: ResourceId,
    kind: Type.Union([Type.Literal('skill'), Type.Literal('tool'), Type.Literal('connector')], { description: 'What was installed.' }),
    name: SafeText(1, V2_BOUNDS.name, 'What agents call it (trimmed when stored).'),
    sourceContent: SafeText(1, V2_BOUNDS.sourceContent, 'How an agent uses it (trimmed when stored); never a secret value.'),
    entrypoint: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: ENTRYPOINT_PATTERN,
      description: 'The entrypoint, relative to `$AGENT_RESOURCE_DIR` (no leading `/`, no `..`).',
    }),
    source: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        pattern: SINGLE_LINE_PATTERN,
        description: 'Where it came from (a URL or a description).',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'LocalReceipt',
    examples: [
      {
        id: 'pdf-grep',
        kind: 'tool',
        name: 'PDF grep',
        sourceContent: 'Searches text in PDF files.\n\nRun $AGENT_RESOURCE_DIR/tools/pdf-grep/pdf-grep.sh PATTERN FILE.',
        entrypoint: 'tools/pdf-grep/pdf-grep.sh',
      },
    ],
  },
);
export type LocalReceiptBody = Static<typeof LocalReceiptBody>;

export const LocalReceiptResult = Type.Object({ resource: AgentResourceV2 }, { additionalProperties: false, title: 'LocalReceiptResult' });
export const LocalReceiptRemoval = Type.Object(
  {
    removed: Type.Boolean({
      description: "True when the machine's record was withdrawn; false when the machine held no record with that ID.",
    }),
  },
  { additionalProperties: false, title: 'LocalReceiptRemoval' },
);

export const RfsAgentProfile = Type.Object(
  {
    id: Type.String({ description: 'Profile ID.' }),
    alias: Type.String({ description: 'Profile alias.' }),
    default: Type.Optional(
      Type.Literal(true, { description: 'Present on the one profile to start when none is named: the first one listed.' }),
    ),
  },
  { additionalProperties: false, title: 'RfsAgentProfile' },
);
export const RfsAgentProfiles = Type.Object(
  { profiles: Type.Array(RfsAgentProfile) },
  { additionalProperties: false, title: 'RfsAgentProfiles' },
);
export type RfsAgentProfiles = Static<typeof RfsAgentProfiles>;

export const SkillName = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[a-z0-9]+(-[a-z0-9]+)*$',
  description: 'A host skill: `huabu-access` or `local-resource-management`.',
});
