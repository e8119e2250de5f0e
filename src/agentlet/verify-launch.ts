// `agentlet-resources verify-launch <file>`: checks a launch's attestation before its agent is started. The
// envelope's signature against the registry's published keys (or a saved key set), the launch answer's pins
// against the signed ones, and, with --machine-id, each of this machine's own pinned skills on disk against
// the content the launch pinned.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  AttestationError,
  DSSE_PAYLOAD_TYPE,
  KEYS_PATH,
  verifyEnvelope,
  type AttestedResource,
  type LaunchStatement,
} from '../workloads/attestation.js';
import type { Output } from './commands.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import { RECEIPTS_DIR } from './resource-root.js';
import { readSkill, skillSourceContent, SkillProblem } from './skill-jobs.js';

/** Most bytes read of a launch answer, a key set or a SKILL.md: far above any the registry writes. */
const MAX_FILE_BYTES = 4 * 1024 * 1024;

export interface VerifyLaunchInput {
  file: string;
  /** Where the keys come from: the registry's JWKS route, or a saved copy of it. */
  keys: { registryUrl: string; timeoutMs: number } | { file: string };
  /** With it, this machine's own pinned skills are checked on disk under `root`. */
  machine?: { machineId: string; root: string };
}

async function readBounded(file: string, what: string): Promise<string> {
  const info = await stat(file).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read ${what} ${file} (${err.code ?? 'error'})`, EXIT.usage);
  });
  if (!info.isFile()) throw new CliError(`${what} ${file} is not a file`, EXIT.usage);
  if (info.size > MAX_FILE_BYTES) throw new CliError(`${what} ${file} is larger than ${MAX_FILE_BYTES} bytes`, EXIT.usage);
  return readFile(file, 'utf8');
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`${what} is not JSON`, EXIT.usage);
  }
}

async function fetchKeys(registryUrl: string, timeoutMs: number): Promise<unknown> {
  const url = `${registryUrl}${KEYS_PATH}`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  } catch {
    throw new CliError(`cannot read the registry's keys at ${url} (unreachable or no answer within ${timeoutMs} ms)`, EXIT.unavailable);
  }
  const text = await response.text();
  if (!response.ok || text.length > MAX_FILE_BYTES)
    throw new CliError(`the registry's keys at ${url} answered ${response.status}, not a key set`, EXIT.unavailable);
  return parseJson(text, `the answer of ${url}`);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Why this machine's copy of `pin` differs from what the launch pinned, or undefined when it does not. */
async function skillMismatch(root: string, pin: AttestedResource): Promise<string | undefined> {
  const receiptFile = path.join(root, RECEIPTS_DIR, `${pin.id}.json`);
  const receipt = parseJson(await readBounded(receiptFile, 'the receipt').catch(() => 'null'), `receipts/${pin.id}.json`) as {
    schemaVersion?: unknown;
    entrypoint?: unknown;
    sourceContent?: unknown;
  } | null;
  if (receipt === null) return `no receipt ${RECEIPTS_DIR}/${pin.id}.json on this machine`;
  if (receipt.schemaVersion !== 2 || typeof receipt.entrypoint !== 'string' || typeof receipt.sourceContent !== 'string')
    return `${RECEIPTS_DIR}/${pin.id}.json is not a skill's receipt v2`;
  if (sha256(receipt.sourceContent) !== pin.sourceContentSha256) return `its receipt's text is not the pinned one`;
  const entry = path.resolve(root, receipt.entrypoint);
  if (path.relative(root, entry).startsWith('..')) return `its receipt's entrypoint leaves the resource root`;
  const skillFile = entry.endsWith('.md') ? entry : path.join(entry, 'SKILL.md');
  let text: string;
  try {
    text = await readBounded(skillFile, 'the skill');
  } catch {
    return `${path.relative(root, skillFile)} cannot be read`;
  }
  if (sha256(skillSourceContent(text)) !== pin.sourceContentSha256) return `${path.relative(root, skillFile)} is not the pinned text`;
  if (pin.sourceRevision === undefined) return undefined;
  // An imported skill: every file of its folder (scripts, references, assets, modes) as the launch pinned it.
  const folder = path.dirname(skillFile);
  const where = path.relative(root, folder);
  let revision: string;
  try {
    revision = (await readSkill(folder)).candidate.sourceRevision;
  } catch (err) {
    return `${where} cannot be read as a skill folder (${err instanceof SkillProblem ? err.message : 'unreadable'})`;
  }
  if (revision !== pin.sourceRevision)
    return `the files of ${where} are not the pinned ones (folder revision ${revision.slice(0, 12)}, pinned ${pin.sourceRevision.slice(0, 12)})`;
  return undefined;
}

/** The envelope in a launch answer (its `attestation`) or the file itself when it is one. */
function envelopeOf(document: unknown): { envelope: unknown; answerPins?: unknown } {
  const d = document as { payloadType?: unknown; attestation?: unknown; spec?: { resourcePins?: unknown } } | null;
  if (d && typeof d === 'object' && d.payloadType === DSSE_PAYLOAD_TYPE) return { envelope: d };
  if (d && typeof d === 'object' && d.attestation !== undefined) return { envelope: d.attestation, answerPins: d.spec?.resourcePins };
  throw new CliError('the file holds neither a launch answer with an attestation nor a DSSE envelope', EXIT.rejected);
}

function samePins(answerPins: unknown, statement: LaunchStatement): boolean {
  if (!Array.isArray(answerPins)) return false;
  const signed = statement.predicate.resources;
  return (
    answerPins.length === signed.length &&
    answerPins.every((p: { id?: unknown; digest?: unknown }, i) => p?.id === signed[i]!.id && p?.digest === signed[i]!.digest)
  );
}

export async function verifyLaunchCommand(input: VerifyLaunchInput, io: Output): Promise<ExitCode> {
  const { envelope, answerPins } = envelopeOf(parseJson(await readBounded(input.file, 'the launch file'), input.file));
  const jwks =
    'registryUrl' in input.keys
      ? await fetchKeys(input.keys.registryUrl, input.keys.timeoutMs)
      : parseJson(await readBounded(input.keys.file, 'the key set'), input.keys.file);
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new CliError('the key set has no "keys" list', EXIT.unavailable);
  let statement: LaunchStatement;
  try {
    statement = verifyEnvelope(envelope, keys);
  } catch (err) {
    if (!(err instanceof AttestationError)) throw err;
    io.err(`not verified: ${err.message}`);
    return EXIT.rejected;
  }
  const { canvasId, threadId, machineId, resources } = statement.predicate;
  if (answerPins !== undefined && !samePins(answerPins, statement)) {
    io.err(`not verified: the launch answer's resourcePins are not the ones its attestation signs`);
    return EXIT.rejected;
  }
  io.out(`signature ok: ${canvasId}/${threadId} on ${machineId}, ${resources.length} pinned resource(s)`);
  let mismatches = 0;
  if (input.machine) {
    const { machineId: me, root } = input.machine;
    if (me !== machineId) io.err(`note: the launch is for machine ${machineId}, not ${me}; its skills are checked here anyway`);
    for (const pin of resources.filter((r) => r.provider === me)) {
      if (pin.sourceContentSha256 === undefined) {
        io.out(`unchecked ${pin.id}: a record v1, whose pinned text is not a skill folder's`);
        continue;
      }
      const why = await skillMismatch(root, pin);
      if (why === undefined) io.out(`ok ${pin.id}`);
      else {
        mismatches++;
        io.err(`mismatch ${pin.id}: ${why}`);
      }
    }
  }
  return mismatches === 0 ? EXIT.ok : EXIT.rejected;
}
