// The commands of `agentlet-resources`, free of argument parsing and of the process: each takes its inputs
// and an output sink, prints what it did, and returns an exit code (or throws a CliError).
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { RESOURCE_ID_PATTERN } from '../schemas/common.js';
import { SecretScanner } from '../secrets/secret-scanner.js';
import { writeFileDurably } from '../storage/durable-file.js';
import { machineScanner } from './allowed-findings.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import { parseSkillFile, SKILL_FILE, SKILL_LIMITS, skillSourceContent, SkillProblem } from './skill-jobs.js';
import { openWithoutBlocking, readAtMost, type OpenedFile } from './local-file.js';
import {
  formatReport,
  receiptProblems,
  RECEIPT_SCHEMA_VERSION,
  serializeReceipt,
  toReconcileEntry,
  validateResourceRoot,
  type Receipt,
  type ReceiptV1,
  type ReceiptV2,
} from './receipt.js';
import { RegistryClient, type ReconcileResponse } from './registry-client.js';
import { assertInitialized, initResourceRoot, KIND_DIRS, RECEIPTS_DIR, type ReceiptKind } from './resource-root.js';
import { oneLine } from './terminal-text.js';
import { readTokenFile } from './token-file.js';

export interface Output {
  out(line: string): void;
  err(line: string): void;
  /** Registers a value that must never be printed (the token); later output has it masked. */
  protect(secret: string): void;
}

const MAX_INSTRUCTIONS_FILE_BYTES = 64 * 1024;
/** The sync command a hint names, for a machine that does not run `serve`. */
const SYNC_HINT = (machineId: string) => `\`agentlet-resources sync --registry URL --machine-id ${machineId} --token-file FILE\``;

export async function initCommand(root: string, io: Output): Promise<ExitCode> {
  const { created, tightened } = await initResourceRoot(root);
  for (const dir of created) io.out(`created ${dir}`);
  for (const dir of tightened) io.out(`tightened ${dir} to mode 0700`);
  io.out(`resource root ready: ${root}`);
  if (created.length > 0)
    io.out(
      `next: put a skill, tool or connector under it and record it with \`agentlet-resources receipt add <id> ...\`; a running \`agentlet-resources serve\` publishes each receipt on its own (without serve, run ${SYNC_HINT('ID')})`,
    );
  return EXIT.ok;
}

export async function validateCommand(root: string, io: Output, scanner = new SecretScanner(), machineId?: string): Promise<ExitCode> {
  await assertInitialized(root);
  const { reports, valid } = await validateResourceRoot(root, scanner, machineId);
  for (const r of reports) io.out(formatReport(r));
  if (machineId === undefined && reports.some((r) => r.receipt?.provider !== undefined)) {
    io.err("note: receipt providers were not compared with this machine's ID; pass --machine-id ID to check them (sync always does)");
  }
  if (reports.length === 0) io.err(`no receipts in ${path.join(root, RECEIPTS_DIR)}`);
  if (!valid) io.err(`${reports.filter((r) => !r.receipt).length} of ${reports.length} receipt(s) invalid`);
  return valid ? EXIT.ok : EXIT.rejected;
}

export interface ReceiptAddInput {
  id: string;
  kind: ReceiptKind;
  entrypoint: string;
  name: string;
  description: string;
  instructionsFile: string;
  source?: string | undefined;
  /** Written as the receipt's `provider`, which upstream's Agentlet requires. */
  machineId?: string | undefined;
  force: boolean;
  now: Date;
}

async function readInstructions(file: string, what = '--instructions-file', maxBytes = MAX_INSTRUCTIONS_FILE_BYTES): Promise<string> {
  const unreadable = (why: string) => new CliError(`${what} ${file} ${why}`, EXIT.usage);
  let opened: OpenedFile;
  try {
    opened = await openWithoutBlocking(file);
  } catch (err) {
    throw unreadable(`cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let bytes: Buffer | undefined;
  try {
    if (!opened.stats.isFile()) throw unreadable('is not a regular file');
    bytes = await readAtMost(opened.handle, maxBytes);
  } finally {
    await opened.handle.close();
  }
  if (bytes === undefined) throw unreadable(`is larger than ${maxBytes} bytes`);
  // Editors end files with a newline; the record should not.
  return bytes.toString('utf8').replace(/\s+$/, '');
}

/** An absolute entrypoint inside the root is stored relative to it; receipts never hold absolute paths. */
function relativeEntrypoint(root: string, realRoot: string, entrypoint: string): string {
  if (!path.isAbsolute(entrypoint)) return entrypoint;
  for (const base of [root, realRoot]) {
    const rel = path.relative(base, entrypoint);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return entrypoint; // validation reports it
}

function checkReceiptId(id: string): void {
  if (!new RegExp(RESOURCE_ID_PATTERN).test(id) || id.length > 128) {
    throw new CliError(`invalid receipt ID "${id}": must be kebab-case (a-z, 0-9, single hyphens), at most 128 characters`, EXIT.rejected);
  }
}

/** Validates the receipt, then writes it durably (replacing one only with `force`). */
async function writeCheckedReceipt(
  root: string,
  realRoot: string,
  receipt: Receipt,
  input: { machineId?: string | undefined; force: boolean },
  io: Output,
  scanner: SecretScanner,
): Promise<ExitCode> {
  const problems = await receiptProblems(realRoot, receipt.id, receipt, scanner, input.machineId);
  if (problems.length > 0) throw new CliError(`invalid receipt ${receipt.id}: ${problems.join('; ')}\nnothing was written`, EXIT.rejected);
  const target = path.join(realRoot, RECEIPTS_DIR, `${receipt.id}.json`);
  const exists = await lstat(target).then(
    () => true,
    () => false,
  );
  if (exists && !input.force)
    throw new CliError(`${RECEIPTS_DIR}/${receipt.id}.json already exists; pass --force to replace it`, EXIT.rejected);
  await writeFileDurably(target, serializeReceipt(receipt));
  io.out(`${exists ? 'replaced' : 'wrote'} ${path.join(root, RECEIPTS_DIR, `${receipt.id}.json`)}`);
  if (input.machineId === undefined) {
    io.err(
      'warning: written without "provider" (pass --machine-id ID): upstream\'s Agentlet requires it to read the receipt; this CLI does not',
    );
  }
  const id = input.machineId ?? 'ID';
  io.out(
    `next: a running \`agentlet-resources serve\` publishes it within a second; without serve, check it with \`agentlet-resources validate --machine-id ${id}\`, then publish it with ${SYNC_HINT(id)}`,
  );
  return EXIT.ok;
}

export async function receiptAddCommand(
  root: string,
  input: ReceiptAddInput,
  io: Output,
  scanner = new SecretScanner(),
): Promise<ExitCode> {
  await assertInitialized(root);
  checkReceiptId(input.id);
  const realRoot = await realpath(root);
  const receipt: ReceiptV1 = {
    schemaVersion: RECEIPT_SCHEMA_VERSION,
    id: input.id,
    kind: input.kind,
    name: input.name,
    ...(input.machineId === undefined ? {} : { provider: input.machineId }),
    description: input.description,
    instructions: await readInstructions(input.instructionsFile),
    entrypoint: relativeEntrypoint(root, realRoot, input.entrypoint),
    ...(input.source === undefined ? {} : { source: input.source }),
    installedAt: input.now.toISOString(),
  };
  return writeCheckedReceipt(root, realRoot, receipt, input, io, scanner);
}

export interface ReceiptAddSkillInput {
  id: string;
  /** The skill folder, absolute, under the root's skills/. */
  skillDir: string;
  source?: string | undefined;
  machineId?: string | undefined;
  force: boolean;
  now: Date;
}

/**
 * `receipt add <id> --skill DIR`: a receipt v2 of a skill folder under the root, its name from SKILL.md's
 * front matter and its source content the whole SKILL.md (the front matter checked as a scan checks it).
 */
export async function receiptAddSkillCommand(
  root: string,
  input: ReceiptAddSkillInput,
  io: Output,
  scanner = new SecretScanner(),
): Promise<ExitCode> {
  await assertInitialized(root);
  checkReceiptId(input.id);
  const realRoot = await realpath(root);
  const skillFile = path.join(input.skillDir, SKILL_FILE);
  const entrypoint = relativeEntrypoint(root, realRoot, skillFile);
  if (path.isAbsolute(entrypoint))
    throw new CliError(
      `--skill ${input.skillDir} is not inside the resource root's ${KIND_DIRS.skill}/ (${path.join(root, KIND_DIRS.skill)}): copy the folder there first\nnothing was written`,
      EXIT.rejected,
    );
  const text = await readInstructions(skillFile, '--skill', SKILL_LIMITS.skillFileBytes);
  let name: string;
  try {
    const parsed = parseSkillFile(text, path.basename(input.skillDir));
    name = parsed.name;
    for (const warning of parsed.warnings) io.err(`warning: ${warning.code}: ${warning.message}`);
  } catch (err) {
    if (!(err instanceof SkillProblem)) throw err;
    throw new CliError(`invalid skill ${input.id}: ${err.code}: ${err.message}\nnothing was written`, EXIT.rejected);
  }
  const receipt: ReceiptV2 = {
    schemaVersion: 2,
    id: input.id,
    kind: 'skill',
    name,
    ...(input.machineId === undefined ? {} : { provider: input.machineId }),
    sourceContent: skillSourceContent(text),
    entrypoint,
    ...(input.source === undefined ? {} : { source: input.source }),
    installedAt: input.now.toISOString(),
  };
  return writeCheckedReceipt(root, realRoot, receipt, input, io, scanner);
}

export interface RegistryInput {
  registryUrl: string;
  machineId: string;
  tokenFile: string;
  timeoutMs: number;
}

async function connect(input: RegistryInput, io: Output): Promise<{ client: RegistryClient; token: string }> {
  const token = await readTokenFile(input.tokenFile);
  io.protect(token);
  return { client: new RegistryClient({ ...input, token }), token };
}

function idList(ids: string[]): string {
  return ids.length === 0 ? '-' : ids.join(', ');
}

function printResult(result: ReconcileResponse, io: Output): void {
  for (const key of ['created', 'replaced', 'withdrawn', 'unchanged'] as const) io.out(`${`${key}:`.padEnd(11)}${idList(result[key])}`);
}

export async function syncCommand(root: string, input: RegistryInput & { dryRun: boolean }, io: Output): Promise<ExitCode> {
  await assertInitialized(root);
  const { client, token } = await connect(input, io);
  try {
    const { reports, valid } = await validateResourceRoot(root, machineScanner(root, token), input.machineId);
    for (const r of reports) io.out(formatReport(r));
    if (!valid) {
      io.err(`sync aborted: ${reports.filter((r) => !r.receipt).length} invalid receipt(s); nothing was sent to the registry`);
      return EXIT.rejected;
    }
    const entries = reports.flatMap((r) => (r.receipt ? [toReconcileEntry(r.receipt)] : []));
    const result = await client.reconcile(entries, input.dryRun);
    io.out(
      input.dryRun
        ? `dry run: nothing changed at ${input.registryUrl}; syncing ${entries.length} receipt(s) as machine ${input.machineId} would give:`
        : `synced ${entries.length} receipt(s) to ${input.registryUrl} as machine ${input.machineId}`,
    );
    printResult(result, io);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}

/** Left-aligned columns, two spaces apart. */
export function formatTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [header, ...rows].map((cells) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

export async function listCommand(input: RegistryInput, io: Output): Promise<ExitCode> {
  const { client } = await connect(input, io);
  try {
    const resources = await client.list();
    if (resources.length === 0) {
      io.out(`no records for machine ${input.machineId} at ${input.registryUrl}`);
      return EXIT.ok;
    }
    const rows = resources.map((r) => [r.id, oneLine(r.name, 40), oneLine(r.schemaVersion === 1 ? r.description : r.sourceContent, 60)]);
    for (const line of formatTable(['ID', 'NAME', 'DESCRIPTION'], rows)) io.out(line);
    io.err(`${resources.length} record(s) for machine ${input.machineId} at ${input.registryUrl}`);
    return EXIT.ok;
  } finally {
    await client.close();
  }
}
