// Argument parsing and dispatch for `agentlet-resources`. The environment is read here once and passed down;
// output goes through a sink that masks the machine token and makes the text safe for a terminal, whatever
// prints it.
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { HOST_PROVIDER, SLUG_ID_PATTERN } from '../schemas/common.js';
import type { Output, RegistryInput } from './commands.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import { DEFAULT_TIMEOUT_MS, PUBLISH_TIMEOUT_MS, parseRegistryUrl } from './registry-client.js';
import { DEFAULT_RECONNECT_MAX_MS, RECONNECT_BASE_MS } from './serve-constants.js';
import { RECEIPT_KINDS, resolveResourceRoot, type ReceiptKind } from './resource-root.js';
import { terminalSafe } from './terminal-text.js';

export const PROGRAM = 'agentlet-resources';
const MAX_TIMEOUT_MS = 600_000;

export const HELP = `Usage: ${PROGRAM} <command> [options]

Validates this machine's resource root and reconciles its records with the agent resource registry.

Commands
  init                      Create the resource root layout (skills/ tools/ connectors/ receipts/), mode 0700.
  validate                  Check every receipts/<id>.json (receipt v1 or v2, as upstream's Agentlet writes them);
                            print "ok <id>" or "invalid <file>: <problem>".
      [--machine-id ID]  also check that each receipt's provider, when present, is this machine
  receipt add <id>          Write a validated receipt v1 (mode 0600, atomically).
      --kind skill|tool|connector   --entrypoint PATH (relative to the root, under skills/, tools/ or connectors/)
      --name TEXT   --description TEXT   --instructions-file FILE   [--source TEXT]   [--force]
      [--machine-id ID]  written as the receipt's provider (upstream's Agentlet needs it to read the receipt)
  receipt add <id> --skill DIR
                            Write a validated receipt v2 of the skill folder DIR (under the root's skills/):
                            its name is SKILL.md's front matter name, its source content the whole SKILL.md
                            (up to 100,000 characters). The front matter is checked as a scan checks it:
                            a departure from the Agent Skills format is a warning, a missing name or
                            description a refusal.
      [--source TEXT]   [--machine-id ID]   [--force]
  sync                      Validate, then publish the machine's whole set in one request: records of
                            receipts are created or replaced, this machine's other records are withdrawn.
                            A v1 receipt publishes record v1, a v2 receipt record v2.
      --registry URL   --machine-id ID   --token-file FILE   [--dry-run]   [--timeout-ms MS]
  list                      Show what the registry holds for this machine.
      --registry URL   --machine-id ID   --token-file FILE   [--timeout-ms MS]
  verify-launch <file>      Check a launch's attestation before starting its agent: <file> holds the launch
                            answer (or its attestation alone). The signature must verify against the
                            registry's published keys, the answer's resourcePins must be the signed ones, and,
                            with --machine-id, each of this machine's own pinned skills (its receipt and its
                            SKILL.md under the resource root; an imported skill's every file) must still have
                            the pinned content. Prints "ok <id>" or "mismatch <id>: <why>" per skill; exit 1
                            names every mismatch.
      --registry URL | --keys FILE   [--machine-id ID]   [--timeout-ms MS]
  serve                     Run as a daemon: hold this machine's channel to the registry (reconnecting with
                            backoff), run the jobs it carries, and publish the receipts again whenever
                            receipts/ changes. Jobs: ping; sync (publish now); skill.scan (list the skill
                            folders and .zip/.skill archives under a path); skill.import (copy one into
                            skills/<id>/, scanned for secrets, and write its receipt v2); skill.remove
                            (remove an imported skill's folder and receipt). Stops cleanly (exit 0) on SIGTERM or SIGINT.
                            Logs readable lines on a terminal, JSON lines otherwise; never the token.
      --registry URL   --machine-id ID   --token-file FILE   [--timeout-ms MS]   [--reconnect-max-ms MS]

Options
  --resource-dir DIR        Resource root (absolute). Default: $AGENT_RESOURCE_DIR, else ~/.agentlet/resources
  --token-file FILE         File holding the machine token, readable by its owner only (chmod 600).
                            The token is never accepted on the command line and never printed.
  --timeout-ms MS           Bound on each registry request (default ${DEFAULT_TIMEOUT_MS}; a whole-set publish waits at least ${PUBLISH_TIMEOUT_MS}).
  -h, --help                Show this help.

Environment
  AGENT_RESOURCE_DIR        Resource root, absolute (overridden by --resource-dir).
  AGENTLET_TOKEN_FILE       Token file (overridden by --token-file).
  AGENTLET_TIMEOUT_MS       Request timeout in milliseconds (overridden by --timeout-ms).

Exit codes
  0  success (with --dry-run: the plan was computed, nothing changed)
  1  rejected: an invalid receipt (nothing is sent), an ID held by another provider (the registry changes
     nothing), or another refusal by the registry; also unexpected local errors
  2  usage or local setup: bad arguments, relative resource dir, root not initialized, unsafe resource root
     or receipts/ (a symbolic link, or writable by group or others), unsafe token file
  3  registry unavailable: unreachable, timed out, token rejected (401) or refused (403), server error,
     an answer that is not the registry's (off contract, or larger than 32 MiB)
`;

type Options = NonNullable<ParseArgsConfig['options']>;

const root = { 'resource-dir': { type: 'string' } } as const satisfies Options;
const registry = {
  registry: { type: 'string' },
  'machine-id': { type: 'string' },
  'token-file': { type: 'string' },
  'timeout-ms': { type: 'string' },
} as const satisfies Options;
const help = { help: { type: 'boolean', short: 'h' } } as const satisfies Options;

const COMMAND_OPTIONS = {
  init: { ...root, ...help },
  validate: { ...root, 'machine-id': { type: 'string' }, ...help },
  sync: { ...root, ...registry, 'dry-run': { type: 'boolean' }, ...help },
  serve: { ...root, ...registry, 'reconnect-max-ms': { type: 'string' }, ...help },
  list: { ...registry, ...help },
  'verify-launch': {
    ...root,
    registry: { type: 'string' },
    keys: { type: 'string' },
    'machine-id': { type: 'string' },
    'timeout-ms': { type: 'string' },
    ...help,
  },
  'receipt add': {
    ...root,
    kind: { type: 'string' },
    entrypoint: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    'instructions-file': { type: 'string' },
    skill: { type: 'string' },
    source: { type: 'string' },
    'machine-id': { type: 'string' },
    force: { type: 'boolean' },
    ...help,
  },
} as const satisfies Record<string, Options>;
type Command = keyof typeof COMMAND_OPTIONS;

export interface Environment {
  AGENT_RESOURCE_DIR?: string | undefined;
  AGENTLET_TOKEN_FILE?: string | undefined;
  AGENTLET_TIMEOUT_MS?: string | undefined;
}

function usage(message: string): CliError {
  return new CliError(`${message}\nRun \`${PROGRAM} --help\` for usage.`, EXIT.usage);
}

function parse<C extends Command>(command: C, args: string[]) {
  try {
    return parseArgs({ args, options: COMMAND_OPTIONS[command], allowPositionals: true, strict: true });
  } catch (err) {
    // Node's messages name the option, never its value; keep their first sentence.
    const first = ((err as Error).message.split(/\.(\s|$)/)[0] ?? 'invalid arguments').trim();
    throw usage(`${command}: ${first}`);
  }
}

function required(values: Record<string, unknown>, name: string, command: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw usage(`${command} needs --${name}`);
  return v;
}

function timeoutMs(flag: string | undefined, env: Environment): number {
  const [raw, origin] =
    flag !== undefined
      ? [flag, '--timeout-ms']
      : env.AGENTLET_TIMEOUT_MS
        ? [env.AGENTLET_TIMEOUT_MS, 'AGENTLET_TIMEOUT_MS']
        : [undefined, ''];
  if (raw === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(ms >= 1 && ms <= MAX_TIMEOUT_MS)) throw usage(`${origin} must be a whole number of milliseconds between 1 and ${MAX_TIMEOUT_MS}`);
  return ms;
}

function checkedMachineId(machineId: string): string {
  if (!new RegExp(SLUG_ID_PATTERN).test(machineId) || machineId === HOST_PROVIDER) {
    throw usage(
      `--machine-id must be the exact machine ID this machine was enrolled with (letters, digits, . _ -; not "${HOST_PROVIDER}")`,
    );
  }
  return machineId;
}

/** `--machine-id` where it is optional (validate, receipt add); an empty value is a mistake, not an absence. */
function optionalMachineId(values: Record<string, unknown>): string | undefined {
  const v = values['machine-id'] as string | undefined;
  return v === undefined ? undefined : checkedMachineId(v);
}

function registryInput(values: Record<string, unknown>, env: Environment, command: string): RegistryInput {
  const registryUrl = parseRegistryUrl(required(values, 'registry', command));
  const machineId = checkedMachineId(required(values, 'machine-id', command));
  const tokenFile = (values['token-file'] as string | undefined) || env.AGENTLET_TOKEN_FILE;
  if (!tokenFile) throw usage(`${command} needs the machine token: pass --token-file FILE or set AGENTLET_TOKEN_FILE`);
  return {
    registryUrl,
    machineId,
    tokenFile: path.resolve(tokenFile),
    timeoutMs: timeoutMs(values['timeout-ms'] as string | undefined, env),
  };
}

/** What `serve` needs of the process: the stop signal (SIGTERM, SIGINT) and whether stdout is a terminal. */
export interface ProcessHooks {
  stop?: AbortSignal;
  isTty?: boolean;
}

function reconnectMaxMs(flag: string | undefined): number {
  if (flag === undefined) return DEFAULT_RECONNECT_MAX_MS;
  const ms = /^[0-9]+$/.test(flag) ? Number(flag) : NaN;
  if (!(ms >= RECONNECT_BASE_MS && ms <= MAX_TIMEOUT_MS))
    throw usage(`--reconnect-max-ms must be a whole number of milliseconds between ${RECONNECT_BASE_MS} and ${MAX_TIMEOUT_MS}`);
  return ms;
}

async function dispatch(argv: string[], env: Environment, io: Output, now: () => Date, hooks: ProcessHooks): Promise<ExitCode> {
  if (argv.some((a) => /^--?token(=|$)/.test(a))) {
    throw usage(
      'the token is never taken from the command line: put it in a file readable only by you (chmod 600) and pass --token-file FILE or set AGENTLET_TOKEN_FILE',
    );
  }
  const [first, second] = argv;
  if (first === undefined) {
    io.err(HELP);
    return EXIT.usage;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    io.out(HELP);
    return EXIT.ok;
  }
  let command: Command;
  let rest: string[];
  if (first === 'receipt') {
    if (second !== 'add')
      throw usage(
        second === undefined || second.startsWith('-')
          ? 'receipt needs a subcommand: receipt add <id>'
          : `unknown receipt subcommand "${second}"`,
      );
    command = 'receipt add';
    rest = argv.slice(2);
  } else if (Object.hasOwn(COMMAND_OPTIONS, first) && first !== 'receipt add') {
    command = first as Command;
    rest = argv.slice(1);
  } else {
    throw usage(first.startsWith('-') ? `a command comes first, before ${first.split('=')[0]}` : `unknown command "${first}"`);
  }

  const { values, positionals } = parse(command, rest);
  if (values.help) {
    io.out(HELP);
    return EXIT.ok;
  }
  const v = values as Record<string, unknown>;
  const expectedPositionals = command === 'receipt add' || command === 'verify-launch' ? 1 : 0;
  if (positionals.length !== expectedPositionals) {
    throw usage(
      command === 'receipt add'
        ? 'receipt add takes exactly one receipt ID'
        : command === 'verify-launch'
          ? 'verify-launch takes exactly one file (the launch answer or its attestation)'
          : `${command} takes no positional arguments`,
    );
  }
  // Loaded only once the arguments are sound: the secret scanner's rules take a moment to load.
  const { initCommand, listCommand, receiptAddCommand, receiptAddSkillCommand, syncCommand, validateCommand } =
    await import('./commands.js');
  const resourceRoot = () => resolveResourceRoot(v['resource-dir'] as string | undefined, env.AGENT_RESOURCE_DIR);

  switch (command) {
    case 'init':
      return initCommand(resourceRoot(), io);
    case 'validate':
      return validateCommand(resourceRoot(), io, undefined, optionalMachineId(v));
    case 'sync':
      return syncCommand(resourceRoot(), { ...registryInput(v, env, command), dryRun: v['dry-run'] === true }, io);
    case 'list':
      return listCommand(registryInput(v, env, command), io);
    case 'verify-launch': {
      const registryUrl = v.registry as string | undefined;
      const keysFile = v.keys as string | undefined;
      if ((registryUrl === undefined) === (keysFile === undefined))
        throw usage('verify-launch needs one of --registry URL (its published keys) or --keys FILE (a saved copy of them)');
      const machineId = optionalMachineId(v);
      const { verifyLaunchCommand } = await import('./verify-launch.js');
      return verifyLaunchCommand(
        {
          file: path.resolve(positionals[0]!),
          keys:
            registryUrl !== undefined
              ? { registryUrl: parseRegistryUrl(registryUrl), timeoutMs: timeoutMs(v['timeout-ms'] as string | undefined, env) }
              : { file: path.resolve(keysFile!) },
          ...(machineId === undefined ? {} : { machine: { machineId, root: resourceRoot() } }),
        },
        io,
      );
    }
    case 'serve': {
      const input = { ...registryInput(v, env, command), reconnectMaxMs: reconnectMaxMs(v['reconnect-max-ms'] as string | undefined) };
      // Loaded only for the daemon: the one-shot commands do not pay for the logger.
      const { serveCommand } = await import('./serve.js');
      return serveCommand(resourceRoot(), input, io, { stop: hooks.stop ?? new AbortController().signal, isTty: hooks.isTty === true });
    }
    case 'receipt add': {
      if (v.skill !== undefined) {
        const given = ['kind', 'entrypoint', 'name', 'description', 'instructions-file'].filter((o) => v[o] !== undefined);
        if (given.length > 0)
          throw usage(`--skill takes the name and content from SKILL.md; drop ${given.map((o) => `--${o}`).join(', ')}`);
        return receiptAddSkillCommand(
          resourceRoot(),
          {
            id: positionals[0]!,
            skillDir: path.resolve(required(v, 'skill', command)),
            source: v.source as string | undefined,
            machineId: optionalMachineId(v),
            force: v.force === true,
            now: now(),
          },
          io,
        );
      }
      const kind = required(v, 'kind', command);
      if (!RECEIPT_KINDS.includes(kind as ReceiptKind)) throw usage(`--kind must be one of ${RECEIPT_KINDS.join(', ')}`);
      const instructionsFile = required(v, 'instructions-file', command);
      return receiptAddCommand(
        resourceRoot(),
        {
          id: positionals[0]!,
          kind: kind as ReceiptKind,
          entrypoint: required(v, 'entrypoint', command),
          name: required(v, 'name', command),
          description: required(v, 'description', command),
          instructionsFile: path.resolve(instructionsFile),
          source: v.source as string | undefined,
          machineId: optionalMachineId(v),
          force: v.force === true,
          now: now(),
        },
        io,
      );
    }
  }
}

export interface Sink {
  out(text: string): void;
  err(text: string): void;
}

/** Runs one invocation and returns its exit code; never throws. */
export async function main(
  argv: string[],
  env: Environment,
  sink: Sink,
  now: () => Date = () => new Date(),
  hooks: ProcessHooks = {},
): Promise<ExitCode> {
  const secrets: string[] = [];
  // The one output boundary: nothing reaches stdout or stderr without passing both.
  const printable = (line: string) => terminalSafe(secrets.reduce((acc, s) => acc.replaceAll(s, '[token]'), line)) + '\n';
  const io: Output = {
    out: (line) => sink.out(printable(line)),
    err: (line) => sink.err(printable(line)),
    protect: (secret) => {
      if (secret.length > 0) secrets.push(secret);
    },
  };
  try {
    return await dispatch(argv, env, io, now, hooks);
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`${PROGRAM}: ${err.message}`);
      return err.exitCode;
    }
    const e = err as NodeJS.ErrnoException;
    io.err(`${PROGRAM}: unexpected error: ${e.message ?? String(err)}`);
    return EXIT.rejected;
  }
}
