// The representations of one stored resource record, as pure functions: v1 → v2 is upstream's own
// conversion; v2 → v1 is this service's (docs/decisions/record-v2.md). Framework-free; every
// reader (routes, capability projection, PostgreSQL and JSON stores) goes through here.
import {
  type AgentResource,
  type AgentResourceV2,
  type Representation,
  type StoredResource,
  type StoredResourceV1,
  type StoredResourceV2,
} from '../schemas/resource.js';
import { HOST_PROVIDER } from '../schemas/common.js';
import { readFrontMatter } from '../text/front-matter.js';
import { cutMarkdownAtBlock } from '../text/markdown-cut.js';
import { digestOf } from './record-digest.js';

export const V1_DESCRIPTION_MAX = 512;
export const V1_INSTRUCTIONS_MAX = 4000;

/** The owner's customization of a record, whichever version it was written in, and the owner-side import mark. */
export interface OwnerFields {
  displayName?: string;
  /** `''` means none. */
  userContent: string;
  /** The owner imported this skill onto its machine (never rendered; see src/registry/manageable.ts). */
  imported?: true;
}

export function ownerFieldsOf(record: StoredResource): OwnerFields {
  return {
    ...(record.displayName !== undefined ? { displayName: record.displayName } : {}),
    userContent: record.userContent ?? '',
    ...(record.imported ? { imported: true as const } : {}),
  };
}

/** The record with the owner's fields replaced by `owner` (a v1 record keeps `userContent` only when non-empty). */
export function withOwnerFields<R extends StoredResource>(record: R, owner: OwnerFields): R {
  const { displayName: _d, userContent: _u, imported: _i, ...rest } = record;
  const mark = owner.imported ? { imported: true as const } : {};
  if (record.schemaVersion === 2) {
    // Upstream's key order: schemaVersion, id, name, displayName?, provider, sourceContent, userContent; then ours.
    const v2 = rest as Omit<StoredResourceV2, 'displayName' | 'userContent' | 'imported'>;
    return {
      schemaVersion: 2,
      id: v2.id,
      name: v2.name,
      ...(owner.displayName !== undefined ? { displayName: owner.displayName } : {}),
      provider: v2.provider,
      sourceContent: v2.sourceContent,
      userContent: owner.userContent,
      ...(v2.sourceRevision !== undefined ? { sourceRevision: v2.sourceRevision } : {}),
      ...mark,
    } as R;
  }
  return {
    ...rest,
    ...(owner.displayName !== undefined ? { displayName: owner.displayName } : {}),
    ...(owner.userContent !== '' ? { userContent: owner.userContent } : {}),
    ...mark,
  } as R;
}

/** The v1 record exactly as the provider wrote it (the owner's fields left out). */
function v1AsWritten(record: StoredResourceV1): AgentResource {
  return {
    schemaVersion: 1,
    id: record.id,
    name: record.name,
    provider: record.provider,
    description: record.description,
    instructions: record.instructions,
  };
}

/** Upstream's v1 → v2 (resource-registry `migrateLegacyResource`): description and instructions joined by a blank line. */
export function sourceContentOfV1(description: string, instructions: string): string {
  return `${description.trim()}\n\n${instructions.trim()}`;
}

/** Record v2 as every reader gets it: the owner-side import mark is never part of it. */
export function toV2(record: StoredResource): AgentResourceV2 {
  if (record.schemaVersion === 2) {
    if (!record.imported) return record;
    const { imported: _i, ...rendered } = record;
    return rendered;
  }
  const { imported: _i, ...owner } = ownerFieldsOf(record);
  return withOwnerFields(
    {
      schemaVersion: 2,
      id: record.id,
      name: record.name.trim(),
      provider: record.provider,
      sourceContent: sourceContentOfV1(record.description, record.instructions),
      userContent: '',
    },
    owner,
  );
}

/** Cuts `text` to at most `max` UTF-16 units without splitting a surrogate pair, then drops trailing space. */
function cut(text: string, max: number): string {
  let head = text.slice(0, max);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1);
  return head.trimEnd();
}

/** The whole guidance an agent gets from a v2 record: the provider's content, then the owner's, clearly delimited. */
export function guidanceOfV2(record: AgentResourceV2): string {
  return record.userContent === ''
    ? record.sourceContent
    : `${record.sourceContent}\n\n## Instructions from the owner\n\n${record.userContent}`;
}

/** A record's source content read as a skill's `SKILL.md`: its front matter's description and the body after it. */
interface SkillText {
  /** The front matter's `description` as one line, or undefined when it has none. */
  description?: string;
  body: string;
}

/** The source content as a skill, when it opens with a front matter block (one that is not valid YAML gives only its body). */
function skillTextOf(sourceContent: string): SkillText | undefined {
  const split = readFrontMatter(sourceContent);
  if (!split.ok) return split.problem === 'invalid' ? { body: split.body.trim() } : undefined;
  const { description } = split.data;
  const line = typeof description === 'string' ? description.replace(/\s+/g, ' ').trim() : '';
  return { ...(line !== '' ? { description: line } : {}), body: split.body.trim() };
}

/** A Markdown thematic break (`---`, `***`, `___`), which says nothing as a summary. */
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;

/** The first line of `text` that says something (not blank, not a thematic break), trimmed; else the first non-empty one. */
function firstLineOf(text: string): string {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return (lines.find((line) => !THEMATIC_BREAK.test(line)) ?? lines[0] ?? '').trim();
}

/** `text` cut to at most `max` characters at a word boundary, ending with `…` when cut. */
function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = cut(text, max - 1);
  const space = head.search(/\s\S*$/);
  return `${space > max / 2 ? head.slice(0, space).trimEnd() : head}…`;
}

/**
 * Where the files of a machine's skill are: `$AGENT_RESOURCE_DIR/skills/<id>/` on that machine (the Agentlet
 * installs and imports skills there; docs/decisions/skill-views.md).
 */
export function skillFolderNote(record: Pick<AgentResourceV2, 'id' | 'provider'>): string {
  return (
    `This skill's files are in $AGENT_RESOURCE_DIR/skills/${record.id}/ on the machine ${record.provider} ` +
    `(SKILL.md, and its scripts/, references/ and assets/ when it has them); run its scripts from there.`
  );
}

/**
 * v2 → v1. A skill (source content opening with YAML front matter, any provider): `description` is the front
 * matter's description, `instructions` the body after it (a machine's skill first names the folder its files
 * are in). Any other record: `description` is the first non-empty line of `sourceContent`, `instructions`
 * the whole source content. The owner's user content follows under a heading; a description longer than
 * 512 is cut at a word with `…`. Instructions longer than v1's 4000 characters are cut where a Markdown block
 * ends (never inside a code fence) and end with a note telling the agent where to read the whole record
 * (`?schemaVersion=2`), so nothing of the guidance is out of its reach.
 */
export function v2ToV1(record: AgentResourceV2): AgentResource {
  const skillText = skillTextOf(record.sourceContent);
  let source = record.sourceContent;
  let summary = firstLineOf(record.sourceContent);
  if (skillText) {
    summary = skillText.description ?? firstLineOf(skillText.body);
    source = skillText.body === '' ? summary : skillText.body;
    if (record.provider !== HOST_PROVIDER) source = `${skillFolderNote(record)}\n\n${source}`;
  }
  const description = cutAtWord(summary, V1_DESCRIPTION_MAX);
  const whole = guidanceOfV2({ ...record, sourceContent: source });
  let instructions = whole;
  if (whole.length > V1_INSTRUCTIONS_MAX) {
    const note =
      `\n\n[Shortened for schemaVersion 1: this is the start of ${whole.length} characters of guidance. ` +
      `Read all of it with GET $HUABU_RFS_URL/resources/${record.id}?schemaVersion=2 (header Authorization: Bearer $AGENTLET_TOKEN).]`;
    instructions = cutMarkdownAtBlock(whole, V1_INSTRUCTIONS_MAX - note.length) + note;
  }
  return { schemaVersion: 1, id: record.id, name: record.name, provider: record.provider, description, instructions };
}

export function toV1(record: StoredResource): AgentResource {
  return record.schemaVersion === 1 ? v1AsWritten(record) : v2ToV1(record);
}

/** Record v2 as every answer carries it: `toV2` with the record's content digest last. */
export function answerV2(record: StoredResource): AgentResourceV2 {
  return { ...toV2(record), digest: digestOf(record) };
}

/** A record as a reader asked for it: v1 bodies exactly as ever, v2 with its digest. */
export function represent(record: StoredResource, as: Representation): AgentResource | AgentResourceV2 {
  return as === 2 ? answerV2(record) : toV1(record);
}

/** What people and agents see as the record's name: `displayName ?? name`. */
export function labelOf(record: StoredResource): string {
  return record.displayName ?? record.name;
}

/** The short summary of a record (v1's description; for v2, the first line of its source content). */
export function summaryOf(record: StoredResource): string {
  return record.schemaVersion === 1 ? record.description : v2ToV1(record).description;
}

/** Every text an agent reads from the record (for variable checks): v1 instructions, or the whole v2 guidance. */
export function guidanceOf(record: StoredResource): string {
  return record.schemaVersion === 1 ? [record.instructions, record.userContent ?? ''].join('\n') : guidanceOfV2(record);
}

/** Every text field of a stored record with its JSON pointer, for the secret scanner. */
export function textFieldsOf(record: StoredResource, at = ''): [string, string][] {
  const fields: [string, string][] =
    record.schemaVersion === 1
      ? [
          [`${at}/name`, record.name],
          [`${at}/description`, record.description],
          [`${at}/instructions`, record.instructions],
        ]
      : [
          [`${at}/name`, record.name],
          [`${at}/sourceContent`, record.sourceContent],
        ];
  if (record.schemaVersion === 2 && record.sourceRevision !== undefined) fields.push([`${at}/sourceRevision`, record.sourceRevision]);
  if (record.displayName !== undefined) fields.push([`${at}/displayName`, record.displayName]);
  if (record.userContent) fields.push([`${at}/userContent`, record.userContent]);
  return fields;
}

/** True when two stored records are the same in every field (the owner's included). */
export function sameStored(a: StoredResource, b: StoredResource): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if ((a as Record<string, unknown>)[k] !== (b as Record<string, unknown>)[k]) return false;
  return true;
}

/** An owner's change: `displayName` null clears it, `userContent` '' clears it; absent keeps either. */
export interface CustomizationPatch {
  displayName?: string | null;
  userContent?: string;
  /** Sets (true) or clears (false) the owner-side import mark; absent keeps it. */
  imported?: boolean;
}

/** The record with the owner's patch applied (values already trimmed and checked), and whether it changed. */
export function applyCustomization(record: StoredResource, patch: CustomizationPatch): { record: StoredResource; changed: boolean } {
  const current = ownerFieldsOf(record);
  const displayName = patch.displayName === undefined ? current.displayName : (patch.displayName ?? undefined);
  const userContent = patch.userContent ?? current.userContent;
  const imported = patch.imported ?? current.imported === true;
  const next = withOwnerFields(record, {
    ...(displayName !== undefined ? { displayName } : {}),
    userContent,
    ...(imported ? { imported: true as const } : {}),
  });
  return { record: next, changed: !sameStored(record, next) };
}
