// Installation receipts (`receipts/<id>.json`): their format, and the validation every receipt passes before
// it is written or published. Record fields are checked with the registry's own TypeBox rules, so a receipt
// that validates here is one the server accepts.
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { HOST_PROVIDER, ProviderId, RESOURCE_ID_PATTERN, ResourceId, SINGLE_LINE_PATTERN } from '../schemas/common.js';
import { DEFAULT_REQUIRED_RESOURCE_IDS, recordProblems, reservedIdProblems } from '../schemas/record-rules.js';
import { MAX_MACHINE_PROBLEMS, MAX_PROBLEM_MESSAGE, type MachineProblem } from '../schemas/machine.js';
import {
  ReconcileEntry,
  ReconcileEntryV2,
  MAX_RECONCILE_RESOURCES,
  SOURCE_REVISION_PATTERN,
  type ReconcileEntryV1,
} from '../schemas/resource.js';
import { namedFindings, type SecretScanner } from '../secrets/secret-scanner.js';
import { TEMP_SUFFIX } from '../storage/durable-file.js';
import { escapeControlCharacters } from '../text/control-characters.js';
import { KIND_DIRS, RECEIPTS_DIR, type ReceiptKind } from './resource-root.js';

/** The version `receipt add` writes: v1, which upstream's Agentlet reads in both its receipt versions. */
export const RECEIPT_SCHEMA_VERSION = 1;
/** The versions read: upstream Agentlet's receipts v1 and v2 (`agentlet/resources/src/receipts.ts`). */
export const RECEIPT_SCHEMA_VERSIONS = [1, 2] as const;
/**
 * Far above any valid receipt (v2 `sourceContent` stops at 100,000 characters, up to 4 bytes each in UTF-8);
 * protects against reading junk.
 */
export const MAX_RECEIPT_BYTES = 1024 * 1024;

const receiptKind = Type.Union([Type.Literal('skill'), Type.Literal('tool'), Type.Literal('connector')]);
const entrypoint = Type.String({ minLength: 1, maxLength: 4096, pattern: SINGLE_LINE_PATTERN });
const source = Type.Optional(Type.String({ minLength: 1, maxLength: 2048, pattern: SINGLE_LINE_PATTERN }));
/** Upstream requires `provider` (`huabu` or the exact machine ID); we accept its absence (receipts we wrote before). */
const provider = Type.Optional(ProviderId);
const installedAt = Type.String({ format: 'date-time' });

/** Receipt v1: publishes record v1 `{name, description, instructions}`. */
export const ReceiptV1 = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    id: ResourceId,
    kind: receiptKind,
    name: ReconcileEntry.properties.name,
    provider,
    description: ReconcileEntry.properties.description,
    instructions: ReconcileEntry.properties.instructions,
    entrypoint,
    source,
    installedAt,
  },
  { additionalProperties: false, title: 'ReceiptV1' },
);
export type ReceiptV1 = Static<typeof ReceiptV1>;

/** Receipt v2 (upstream's current one): publishes record v2 `{name, sourceContent}`. */
export const ReceiptV2 = Type.Object(
  {
    schemaVersion: Type.Literal(2),
    id: ResourceId,
    kind: receiptKind,
    name: ReconcileEntryV2.properties.name,
    provider,
    sourceContent: ReconcileEntryV2.properties.sourceContent,
    entrypoint,
    source,
    sourceRevision: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: SINGLE_LINE_PATTERN })),
    installedAt,
  },
  { additionalProperties: false, title: 'ReceiptV2' },
);
export type ReceiptV2 = Static<typeof ReceiptV2>;
export type Receipt = ReceiptV1 | ReceiptV2;

const FOLDER_REVISION = new RegExp(SOURCE_REVISION_PATTERN);

const checkReceiptV1 = Compile(ReceiptV1);
const checkReceiptV2 = Compile(ReceiptV2);
const checkEntryV1 = Compile(ReconcileEntry);
const checkEntryV2 = Compile(ReconcileEntryV2);

/**
 * The one record a receipt publishes, in the receipt's version: nothing about kind, entrypoint, provenance or
 * installation leaves the machine (the provider is the URL's, never the body's).
 */
export function toReconcileEntry(receipt: ReceiptV1): ReconcileEntryV1;
export function toReconcileEntry(receipt: ReceiptV2): ReconcileEntryV2;
export function toReconcileEntry(receipt: Receipt): ReconcileEntryV1 | ReconcileEntryV2;
export function toReconcileEntry(receipt: Receipt): ReconcileEntryV1 | ReconcileEntryV2 {
  if (receipt.schemaVersion === 2) {
    // An imported skill's folder revision goes with its record (part of its digest); a receipt's other
    // `sourceRevision` (upstream sets no form) stays on the machine.
    const folder =
      receipt.sourceRevision !== undefined && FOLDER_REVISION.test(receipt.sourceRevision)
        ? { sourceRevision: receipt.sourceRevision }
        : {};
    return { schemaVersion: 2, id: receipt.id, name: receipt.name, sourceContent: receipt.sourceContent, ...folder };
  }
  return { schemaVersion: 1, id: receipt.id, name: receipt.name, description: receipt.description, instructions: receipt.instructions };
}

/** Key order of a written receipt (upstream's order, either version), so files diff cleanly. */
export function serializeReceipt(receipt: Receipt): string {
  const { schemaVersion, id, kind, name, provider, entrypoint, source, installedAt } = receipt;
  const optional = <K extends string>(key: K, value: string | undefined) => (value === undefined ? {} : { [key]: value });
  const body =
    receipt.schemaVersion === 2
      ? { sourceContent: receipt.sourceContent }
      : { description: receipt.description, instructions: receipt.instructions };
  const ordered = {
    schemaVersion,
    id,
    kind,
    name,
    ...optional('provider', provider),
    ...body,
    entrypoint,
    ...optional('source', source),
    ...(receipt.schemaVersion === 2 ? optional('sourceRevision', receipt.sourceRevision) : {}),
    installedAt,
  };
  return JSON.stringify(ordered, null, 2) + '\n';
}

/**
 * Why a receipt is not published: `entrypoint_missing` when the files it names are gone (its only problem),
 * `receipt_invalid` for anything else, `too_many_receipts` for the receipts past the registry's bound.
 */
export type ReceiptProblemCode = 'entrypoint_missing' | 'receipt_invalid' | 'too_many_receipts';

export interface ReceiptReport {
  /** Path relative to the root, e.g. `receipts/web-search.json`. */
  file: string;
  /** Empty when the receipt is valid. */
  problems: string[];
  /** Set only when the receipt is invalid. */
  code?: ReceiptProblemCode;
  /** Set only when the receipt is valid. */
  receipt?: Receipt;
}

const PATTERN_HINTS: Record<string, string> = {
  '/id': 'must be kebab-case: lower-case letters and digits in groups joined by single hyphens',
  '/name': 'must not be blank or hold control characters other than newline and tab',
  '/description': 'must not be blank or hold control characters other than newline and tab',
  '/instructions': 'must not be blank or hold control characters other than newline and tab',
  '/sourceContent': 'must not be blank or hold control characters other than newline and tab',
  '/provider': 'must be a provider ID: a letter or digit, then letters, digits, . _ - (at most 128 characters)',
  '/sourceRevision': 'must be one line without control characters',
  '/entrypoint': 'must be one line without control characters',
  '/source': 'must be one line without control characters',
};

/** Schema errors as short sentences naming the field and the rule, never the value. */
function schemaProblems(value: Record<string, unknown>): string[] {
  const problems = new Set<string>();
  // Without a known version the other fields cannot be judged: their shape depends on it.
  if (!(RECEIPT_SCHEMA_VERSIONS as readonly unknown[]).includes(value.schemaVersion))
    return [`/schemaVersion must be ${RECEIPT_SCHEMA_VERSIONS.join(' or ')}`];
  const check = value.schemaVersion === 2 ? checkReceiptV2 : checkReceiptV1;
  for (const e of check.Errors(value)) {
    const field = e.instancePath || 'receipt';
    const params = e.params as { additionalProperties?: string[]; requiredProperties?: string[] };
    switch (e.keyword) {
      case 'boolean':
      case 'const':
        break; // /kind is reported by anyOf, /schemaVersion above
      case 'anyOf':
        problems.add(e.instancePath === '/kind' ? `/kind must be one of ${Object.keys(KIND_DIRS).join(', ')}` : `${field} ${e.message}`);
        break;
      case 'additionalProperties':
        problems.add(`unknown field(s): ${(params.additionalProperties ?? []).join(', ')}`);
        break;
      case 'required':
        problems.add(`missing field(s): ${(params.requiredProperties ?? []).join(', ')}`);
        break;
      case 'pattern':
        problems.add(`${field} ${PATTERN_HINTS[field] ?? 'has an invalid format'}`);
        break;
      case 'format':
        problems.add(`${field} must be an RFC 3339 date-time, e.g. 2026-01-31T12:00:00.000Z`);
        break;
      default:
        problems.add(`${field} ${e.message}`);
    }
  }
  return [...problems];
}

/**
 * The entrypoint is relative to the root, has no `..` segment, lies under its kind's directory, exists, and
 * its real path (symbolic links resolved) stays inside that directory of the real root.
 */
export async function entrypointProblems(realRoot: string, kind: ReceiptKind, entrypoint: string): Promise<string[]> {
  return (await checkEntrypoint(realRoot, kind, entrypoint)).problems;
}

async function checkEntrypoint(realRoot: string, kind: ReceiptKind, entrypoint: string): Promise<{ problems: string[]; missing?: true }> {
  const problems = await entrypointCheck(realRoot, kind, entrypoint);
  return typeof problems === 'string' ? { problems: [problems], missing: true } : { problems };
}

/** The entrypoint's problems, or the one problem as a bare string when what it names does not exist. */
async function entrypointCheck(realRoot: string, kind: ReceiptKind, entrypoint: string): Promise<string[] | string> {
  if (path.isAbsolute(entrypoint)) return ['/entrypoint must be relative to the resource root, not absolute'];
  const segments = entrypoint.split(/[\\/]/);
  if (segments.includes('..')) return ['/entrypoint must not contain ".." segments'];
  const normalized = path.posix.normalize(entrypoint).replace(/\/+$/, '');
  const kindDir = KIND_DIRS[kind];
  if (normalized.split('/')[0] !== kindDir || normalized === kindDir) {
    return [`/entrypoint of a ${kind} must lie under ${kindDir}/ (got ${entrypoint})`];
  }
  let real: string;
  try {
    real = await realpath(path.join(realRoot, normalized));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `/entrypoint ${entrypoint} does not exist`;
    if (code === 'ELOOP') return [`/entrypoint ${entrypoint} is a symbolic link loop`];
    return [`/entrypoint ${entrypoint} cannot be resolved (${code ?? 'error'})`];
  }
  const relative = path.relative(realRoot, real);
  if (relative === '' || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
    return [`/entrypoint ${entrypoint} resolves outside the resource root (to ${real}); symbolic links must stay inside it`];
  }
  const realSegments = relative.split(path.sep);
  if (realSegments[0] !== kindDir || realSegments.length < 2) {
    return [`/entrypoint ${entrypoint} resolves to ${relative}, which is not under ${kindDir}/`];
  }
  const target = await stat(real);
  if (!target.isFile() && !target.isDirectory()) return [`/entrypoint ${entrypoint} is neither a file nor a directory`];
  return [];
}

/** The host's IDs a receipt is refused without asking the server: its default required IDs. */
const LOCALLY_RESERVED = { required: DEFAULT_REQUIRED_RESOURCE_IDS, hosted: [] };

/** Text fields a receipt could leak a secret through. */
function textFields(value: Record<string, unknown>): [string, string][] {
  return ['id', 'name', 'provider', 'description', 'instructions', 'sourceContent', 'entrypoint', 'source', 'sourceRevision']
    .filter((k) => typeof value[k] === 'string')
    .map((k) => [`/${k}`, value[k] as string]);
}

/**
 * A receipt publishes as this machine, so its `provider` (upstream's "stable authority ID"), when present, must
 * be this machine's ID. Without a machine ID (`validate` run without `--machine-id`) only the host's ID is refused.
 */
function providerProblems(provider: unknown, machineId: string | undefined): string[] {
  if (typeof provider !== 'string') return [];
  if (machineId !== undefined && provider !== machineId) {
    return [
      `/provider is "${provider}" but this machine is "${machineId}"; a receipt publishes as the machine that holds it, so its provider must be this machine's ID`,
    ];
  }
  if (provider === HOST_PROVIDER)
    return [`/provider is "${HOST_PROVIDER}", the host's ID; a receipt on a machine must name this machine's ID`];
  return [];
}

/**
 * Validates one parsed receipt against everything but the file itself: schema, ID = file name, provider =
 * machine ID, entrypoint, secrets. Returns the problems, empty when valid.
 */
export async function receiptProblems(
  realRoot: string,
  expectedId: string,
  value: unknown,
  scanner: SecretScanner,
  machineId?: string,
): Promise<string[]> {
  return (await checkReceipt(realRoot, expectedId, value, scanner, machineId)).problems;
}

async function checkReceipt(
  realRoot: string,
  expectedId: string,
  value: unknown,
  scanner: SecretScanner,
  machineId?: string,
): Promise<{ problems: string[]; code?: ReceiptProblemCode }> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { problems: ['a receipt must be a JSON object'], code: 'receipt_invalid' };
  const v = value as Record<string, unknown>;
  // Scan first: a field that holds a secret is never quoted in a later message.
  const findings = await scanner.scan(textFields(v));
  const secretFields = new Set(findings.map((f) => f.field));
  const problems = schemaProblems(v);
  if (!secretFields.has('/provider') && !problems.some((p) => p.startsWith('/provider')))
    problems.push(...providerProblems(v.provider, machineId));
  if (typeof v.id === 'string' && v.id !== expectedId) problems.push(`/id does not match the file name (expected "${expectedId}")`);
  const entrypointChecked =
    typeof v.entrypoint === 'string' &&
    typeof v.kind === 'string' &&
    v.kind in KIND_DIRS &&
    !secretFields.has('/entrypoint') &&
    !problems.some((p) => p.startsWith('/entrypoint'));
  let missing = false;
  if (entrypointChecked) {
    const checked = await checkEntrypoint(realRoot, v.kind as ReceiptKind, v.entrypoint as string);
    problems.push(...checked.problems);
    missing = checked.missing === true;
  }
  const { named, more } = namedFindings(findings);
  for (const finding of named) {
    problems.push(
      `${finding.field} looks like it contains a secret (line ${finding.line}, rule ${finding.rule}, fingerprint ${finding.fingerprint}); secrets never belong in a receipt`,
    );
  }
  if (more > 0) problems.push(`${more} more finding(s) of the secret scan`);
  const entry = problems.length === 0 ? toReconcileEntry(value as Receipt) : undefined;
  if (entry && !(entry.schemaVersion === 2 ? checkEntryV2.Check(entry) : checkEntryV1.Check(entry))) {
    problems.push('the record it publishes does not pass the registry rules'); // defensive: the schemas share fields
  }
  // The registry's rules beyond the schema, as its write applies them (the provider checked above). Of the
  // host's reserved IDs the machine knows the defaults; a server configured with others refuses those when
  // the set is published (403, reported as the receipt's problem).
  if (entry) {
    const ruled = [
      ...recordProblems(machineId ?? '', { name: entry.name }),
      ...reservedIdProblems(machineId ?? '', [entry.id], LOCALLY_RESERVED),
    ];
    for (const p of ruled) problems.push(`${p.field}: ${p.message}`);
  }
  if (problems.length === 0) return { problems };
  return { problems, code: missing && problems.length === 1 ? 'entrypoint_missing' : 'receipt_invalid' };
}

/** Reads and validates `receipts/<file>`. */
export async function validateReceiptFile(
  realRoot: string,
  fileName: string,
  scanner: SecretScanner,
  machineId?: string,
): Promise<ReceiptReport> {
  const file = `${RECEIPTS_DIR}/${fileName}`;
  const fail = (...problems: string[]): ReceiptReport => ({ file, problems, code: 'receipt_invalid' });
  if (!fileName.endsWith('.json')) return fail('not a receipt: receipt files are named <id>.json');
  const expectedId = fileName.slice(0, -'.json'.length);
  const full = path.join(realRoot, RECEIPTS_DIR, fileName);
  const st = await lstat(full);
  if (st.isSymbolicLink()) return fail('a receipt must be a regular file, not a symbolic link');
  if (!st.isFile()) return fail('a receipt must be a regular file');
  if (st.size > MAX_RECEIPT_BYTES) return fail(`larger than ${MAX_RECEIPT_BYTES} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(await readFile(full, 'utf8'));
  } catch {
    return fail('not valid JSON'); // the parser's message may quote the content, which could be a secret
  }
  const { problems, code } = await checkReceipt(realRoot, expectedId, value, scanner, machineId);
  return code !== undefined ? { file, problems, code } : { file, problems, receipt: value as Receipt };
}

export interface RootReport {
  realRoot: string;
  reports: ReceiptReport[];
  valid: boolean;
}

/**
 * Validates every entry of `receipts/`, sorted by name. Dotfiles and leftover temp files of an interrupted
 * write are skipped; anything else that is not a valid `<id>.json` is reported, because `sync` would
 * otherwise withdraw the record it was meant to keep.
 */
export async function validateResourceRoot(
  root: string,
  scanner: SecretScanner,
  machineId?: string,
  /** `serve`'s: each receipt is checked by `validateReceiptFile` through it (src/agentlet/receipt-cache.ts). */
  check: (realRoot: string, name: string) => Promise<ReceiptReport> = (realRoot, name) =>
    validateReceiptFile(realRoot, name, scanner, machineId),
): Promise<RootReport> {
  const realRoot = await realpath(root);
  const names = (await readdir(path.join(realRoot, RECEIPTS_DIR))).filter((n) => !n.startsWith('.') && !n.endsWith(TEMP_SUFFIX)).sort();
  const reports: ReceiptReport[] = [];
  for (const name of names) reports.push(await check(realRoot, name));
  let valid = reports.every((r) => r.problems.length === 0);
  if (reports.length > MAX_RECONCILE_RESOURCES) {
    valid = false;
    reports.push({
      file: RECEIPTS_DIR,
      problems: [`${reports.length} receipts; the registry accepts at most ${MAX_RECONCILE_RESOURCES} per machine`],
      code: 'too_many_receipts',
    });
  }
  return { realRoot, reports, valid };
}

/** `ok <id>` or `invalid <file>: <problem>; <problem>`. */
export function formatReport(report: ReceiptReport): string {
  return report.receipt ? `ok ${report.receipt.id}` : `invalid ${report.file}: ${report.problems.join('; ')}`;
}

/** What a machine publishes of its root: the valid receipts' records, and a problem for each receipt left out. */
export interface PublishableSet {
  entries: (ReconcileEntryV1 | ReconcileEntryV2)[];
  problems: (MachineProblem & { code: ReceiptProblemCode })[];
}

const ID = new RegExp(RESOURCE_ID_PATTERN);

function oneLineOf(text: string, max: number): string {
  const line = escapeControlCharacters(text);
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/**
 * The set `serve` publishes: every valid receipt (up to the registry's bound), never blocked by an invalid one,
 * and the invalid ones as problems the registry shows for this machine. Their records are left out, so the
 * registry withdraws them: what they describe is not usable as it is. Problems are one line each, bounded in
 * count and length, and any that looks like it holds a secret (to this machine's scanner) is not quoted.
 */
export async function publishableSet(reports: readonly ReceiptReport[], scanner: SecretScanner): Promise<PublishableSet> {
  const valid = reports.flatMap((r) => (r.receipt ? [r] : []));
  const entries = valid.slice(0, MAX_RECONCILE_RESOURCES).map((r) => toReconcileEntry(r.receipt!));
  const problems: PublishableSet['problems'] = [];
  for (const r of reports) {
    if (r.receipt || r.code === 'too_many_receipts') continue;
    const fileId = r.file.startsWith(`${RECEIPTS_DIR}/`) && r.file.endsWith('.json') ? r.file.slice(RECEIPTS_DIR.length + 1, -5) : '';
    problems.push({
      receipt: oneLineOf(r.file, 256),
      ...(ID.test(fileId) && fileId.length <= 128 ? { id: fileId } : {}),
      code: r.code ?? 'receipt_invalid',
      message: oneLineOf(r.problems.join('; ') || 'invalid', MAX_PROBLEM_MESSAGE),
    });
  }
  if (valid.length > MAX_RECONCILE_RESOURCES) {
    problems.push({
      receipt: RECEIPTS_DIR,
      code: 'too_many_receipts',
      message: `${valid.length} valid receipts; the registry takes at most ${MAX_RECONCILE_RESOURCES} per machine: those after ${valid[MAX_RECONCILE_RESOURCES - 1]!.file} are not published`,
    });
  }
  if (problems.length > MAX_MACHINE_PROBLEMS) {
    const rest = problems.splice(MAX_MACHINE_PROBLEMS - 1);
    problems.push({
      receipt: RECEIPTS_DIR,
      code: 'receipt_invalid',
      message: oneLineOf(`${rest.length} more receipt(s) not published: ${rest.map((p) => p.receipt).join(', ')}`, MAX_PROBLEM_MESSAGE),
    });
  }
  const findings = await scanner.scan(
    problems.flatMap((p, i): [string, string][] => [
      [`${i}/receipt`, p.receipt],
      [`${i}/message`, p.message],
    ]),
  );
  for (const finding of findings) {
    const [index, field] = finding.field.split('/') as [string, 'receipt' | 'message'];
    const problem = problems[Number(index)]!;
    if (field === 'message') problem.message = `not shown: it looks like it contains a secret (rule ${finding.rule})`;
    else {
      problem.receipt = `${RECEIPTS_DIR}/(a file whose name is not shown: it looks like a secret)`;
      delete problem.id;
    }
  }
  return { entries, problems };
}
