// Hosted capabilities, operator-defined: the HOSTED_CAPABILITIES_FILE read and validated once at start.
// Each capability names the endpoint the service POSTs an agent's input to, the environment variable whose
// value goes into a credential header (the value is held here, in a private field, and never stored,
// returned, logged or serialized), a bounded JSON Schema for the input, a deadline, size bounds and a
// per-grant quota, and a bound on one grant's calls in flight across its capabilities. Answers are checked
// for the capability's own credential (an endpoint echoing request headers would hand it to the agent).
// An entry may instead name a built-in adapter (src/invocation/adapters.ts, e.g. web search through Tavily
// or image generation through OpenAI Images), with its input schema, defaults and auth header.
// The policy version is a digest of the file's bytes: any change to the file gives every
// grant minted before it a different version, so they stop working. Framework-free.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Type, { type Static, type TLiteral, type TUnion } from 'typebox';
import { Compile } from 'typebox/compile';
import { RESOURCE_ID_PATTERN } from '../schemas/common.js';
import { ADAPTER_NAMES, BUILT_IN_ADAPTERS, type AdapterName, type AdapterResult } from './adapters.js';
import type { InputIssue } from './input-issue.js';

export class CapabilitiesFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapabilitiesFileError';
  }
}

/** Bounds on an operator's input schema: it must describe a finite document. */
export const INPUT_SCHEMA_LIMITS = {
  maxDepth: 8,
  maxSchemaBytes: 16 * 1024,
  maxProperties: 64,
  maxItems: 1024,
  maxStringLength: 1_000_000,
};
/** Hard ceilings on what one capability may configure. */
export const CAPABILITY_LIMITS = {
  maxTimeoutMs: 300_000,
  maxInputBytes: 1024 * 1024,
  maxOutputBytes: 8 * 1024 * 1024,
  maxConcurrency: 64,
  maxPerMinute: 10_000,
};
/**
 * One grant's calls in flight across all its capabilities when the file does not say: 4, or the largest
 * per-capability `perGrant.concurrency` when that is larger (a file written before the bound keeps what
 * each capability allowed).
 */
export const DEFAULT_MAX_IN_FLIGHT_PER_GRANT = 4;

const HEADER_NAME = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$";
const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';
/** Headers the service sets itself or that would change how the request is framed. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'expect',
]);

const CapabilityEntry = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
    credential: Type.Optional(
      Type.Object(
        {
          header: Type.String({ pattern: HEADER_NAME }),
          scheme: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._~+/-]{1,32}$' })),
          env: Type.String({ pattern: ENV_NAME }),
        },
        { additionalProperties: false },
      ),
    ),
    inputSchema: Type.Object({}, { additionalProperties: true }),
    timeoutMs: Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxTimeoutMs }),
    maxInputBytes: Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxInputBytes }),
    maxOutputBytes: Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxOutputBytes }),
    perGrant: Type.Object(
      {
        concurrency: Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxConcurrency }),
        perMinute: Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxPerMinute }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/**
 * One literal per value, typed as the union of the values (`Type.Union` over an array, not a tuple, would
 * type as `never`).
 */
function literalUnion<const T extends readonly string[]>(values: T): TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }> {
  return Type.Union(values.map((value) => Type.Literal(value))) as never;
}

/**
 * A built-in adapter: the input schema is the adapter's; the endpoint, bounds and per-grant quota default
 * to the adapter's; the key's variable is required and the adapter sets the vendor's auth header.
 */
const AdapterEntry = Type.Object(
  {
    adapter: literalUnion(ADAPTER_NAMES),
    endpoint: Type.Optional(CapabilityEntry.properties.endpoint),
    credential: Type.Object({ env: Type.String({ pattern: ENV_NAME }) }, { additionalProperties: false }),
    model: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$' })),
    timeoutMs: Type.Optional(CapabilityEntry.properties.timeoutMs),
    maxInputBytes: Type.Optional(CapabilityEntry.properties.maxInputBytes),
    maxOutputBytes: Type.Optional(CapabilityEntry.properties.maxOutputBytes),
    perGrant: Type.Optional(CapabilityEntry.properties.perGrant),
  },
  { additionalProperties: false },
);

const CapabilitiesDocument = Type.Object(
  {
    schemaVersion: Type.Literal(1),
    maxInFlightPerGrant: Type.Optional(Type.Integer({ minimum: 1, maximum: CAPABILITY_LIMITS.maxConcurrency })),
    // Each entry is checked on its own below, against the generic or the adapter shape.
    capabilities: Type.Record(
      Type.String({ pattern: RESOURCE_ID_PATTERN, maxLength: 128 }),
      Type.Object({}, { additionalProperties: true }),
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
type CapabilityEntry = Static<typeof CapabilityEntry>;
type AdapterEntry = Static<typeof AdapterEntry>;
const checkDocument = Compile(CapabilitiesDocument);
const checkEntry = Compile(CapabilityEntry);
const checkAdapterEntry = Compile(AdapterEntry);

/** One hosted capability as the service uses it. No credential value in here. */
export interface HostedCapability {
  readonly id: string;
  readonly endpoint: URL;
  /** POST for a generic endpoint; a built-in adapter's vendor may take GET. */
  readonly method: 'GET' | 'POST';
  readonly credentialHeader: string | undefined;
  readonly timeoutMs: number;
  readonly maxInputBytes: number;
  readonly maxOutputBytes: number;
  readonly perGrant: { readonly concurrency: number; readonly perMinute: number };
  /** The agent's input schema (the operator's, or the built-in adapter's): what an MCP tool advertises. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  /** Validates an agent's input against the operator's schema; `[]` when valid. */
  readonly checkInput: (input: unknown) => InputIssue[];
  /** Set for a built-in adapter: the vendor's request from a valid input, the agent's result from its answer. */
  readonly adapter?: {
    readonly name: AdapterName;
    /** The vendor's URL (the endpoint, its query added) and JSON body (none for GET). */
    readonly request: (input: unknown) => { url: URL; body: string | undefined };
    readonly result: (answer: unknown, input: unknown) => AdapterResult;
  };
}

/**
 * The operator's hosted capabilities and their policy version. Credential values are kept in a private
 * field, so logging or serializing this object can never show them.
 */
export class HostedCapabilities {
  readonly #byId: ReadonlyMap<string, HostedCapability>;
  readonly #headerValues: ReadonlyMap<string, string>;
  readonly #secrets: readonly string[];
  /** Per capability, the spellings of its credential that must not appear in an answer. */
  readonly #echoNeedles: ReadonlyMap<string, readonly string[]>;

  /**
   * `headerValues`: the credential header's value per capability; `credentials`: the raw variable value per
   * capability; `maxInFlightPerGrant`: one grant's calls in flight across all capabilities.
   */
  constructor(
    readonly policyVersion: string,
    capabilities: readonly HostedCapability[],
    headerValues: ReadonlyMap<string, string>,
    credentials: ReadonlyMap<string, string>,
    readonly maxInFlightPerGrant: number = DEFAULT_MAX_IN_FLIGHT_PER_GRANT,
  ) {
    this.#byId = new Map(capabilities.map((c) => [c.id, c]));
    this.#headerValues = headerValues;
    this.#secrets = [...new Set(credentials.values())];
    this.#echoNeedles = new Map([...credentials].map(([id, value]) => [id, echoNeedles(value)]));
  }

  /** No capabilities: the state without HOSTED_CAPABILITIES_FILE. */
  static none(): HostedCapabilities {
    return new HostedCapabilities('none', [], new Map(), new Map());
  }

  get ids(): string[] {
    return [...this.#byId.keys()].sort();
  }

  get(id: string): HostedCapability | undefined {
    return this.#byId.get(id);
  }

  /** The headers the outbound call adds for `id` (the credential header, value included). */
  outboundHeaders(id: string): Record<string, string> {
    const capability = this.#byId.get(id);
    const value = this.#headerValues.get(id);
    return capability?.credentialHeader && value !== undefined ? { [capability.credentialHeader]: value } : {};
  }

  /**
   * True when `answer` (an endpoint's answer as JSON text) carries `id`'s own credential: the value itself,
   * JSON-escaped, percent-encoded, hex, or base64/base64url at any alignment (inside a longer encoded blob).
   */
  answerCarriesCredential(id: string, answer: string): boolean {
    return this.#echoNeedles.get(id)?.some((needle) => answer.includes(needle)) ?? false;
  }

  /** Every credential value, for the secret scanner (a provider can never write one into a record). */
  credentialValues(): string[] {
    return [...this.#secrets];
  }

  toJSON(): unknown {
    return { policyVersion: this.policyVersion, ids: this.ids };
  }
}

/** Encodings shorter than this are not looked for: too likely to occur by chance in a long answer. */
const MIN_ENCODED_NEEDLE = 12;

/** The spellings of a credential value that an answer must not hold (see `answerCarriesCredential`). */
function echoNeedles(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const needles = new Set<string>([value, JSON.stringify(value).slice(1, -1)]);
  const hex = bytes.toString('hex');
  const encoded = new Set<string>([encodeURIComponent(value), hex, hex.toUpperCase()]);
  // base64 of the value at each of the three byte alignments inside a longer blob: only the characters
  // that depend on the value's bytes alone.
  for (let offset = 0; offset < 3; offset++) {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const middle = text.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6));
    encoded.add(middle);
    encoded.add(middle.replaceAll('+', '-').replaceAll('/', '_'));
  }
  for (const e of encoded) if (e.length >= MIN_ENCODED_NEEDLE) needles.add(e);
  return [...needles];
}

/** The reasons an input schema is not bounded, as `path: problem` lines; `[]` when it is. */
export function unboundedSchemaProblems(schema: unknown): string[] {
  const problems: string[] = [];
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > INPUT_SCHEMA_LIMITS.maxSchemaBytes) problems.push(`is ${bytes} bytes; at most ${INPUT_SCHEMA_LIMITS.maxSchemaBytes}`);
  const visit = (node: unknown, at: string, depth: number): void => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      problems.push(`${at}: must be a schema object`);
      return;
    }
    if (depth > INPUT_SCHEMA_LIMITS.maxDepth) {
      problems.push(`${at}: nests deeper than ${INPUT_SCHEMA_LIMITS.maxDepth} levels`);
      return;
    }
    const s = node as Record<string, unknown>;
    for (const key of [
      '$ref',
      '$dynamicRef',
      '$recursiveRef',
      'patternProperties',
      'dependentSchemas',
      'unevaluatedProperties',
      'if',
      'then',
      'else',
      'not',
    ]) {
      if (key in s) problems.push(`${at}: \`${key}\` is not supported in a hosted input schema`);
    }
    for (const key of ['anyOf', 'oneOf', 'allOf']) {
      const list = s[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length === 0 || list.length > 16) problems.push(`${at}/${key}: must list 1..16 schemas`);
      else list.forEach((child, i) => visit(child, `${at}/${key}/${i}`, depth + 1));
    }
    const type = s.type;
    const types = Array.isArray(type) ? type : type === undefined ? [] : [type];
    if (types.length === 0 && !('const' in s) && !('enum' in s) && !('anyOf' in s) && !('oneOf' in s) && !('allOf' in s)) {
      problems.push(`${at}: needs a \`type\`, \`const\` or \`enum\``);
    }
    if (types.includes('string') && !(typeof s.maxLength === 'number' && s.maxLength <= INPUT_SCHEMA_LIMITS.maxStringLength)) {
      problems.push(`${at}: a string needs \`maxLength\` (at most ${INPUT_SCHEMA_LIMITS.maxStringLength})`);
    }
    if (types.includes('array')) {
      if (!(typeof s.maxItems === 'number' && s.maxItems <= INPUT_SCHEMA_LIMITS.maxItems))
        problems.push(`${at}: an array needs \`maxItems\` (at most ${INPUT_SCHEMA_LIMITS.maxItems})`);
      if (s.items === undefined) problems.push(`${at}: an array needs \`items\``);
      else visit(s.items, `${at}/items`, depth + 1);
    }
    if (types.includes('object')) {
      if (s.additionalProperties !== false) problems.push(`${at}: an object needs \`additionalProperties: false\``);
      const props = s.properties ?? {};
      if (typeof props !== 'object' || props === null || Array.isArray(props)) problems.push(`${at}/properties: must be an object`);
      else {
        const entries = Object.entries(props);
        if (entries.length > INPUT_SCHEMA_LIMITS.maxProperties)
          problems.push(`${at}: at most ${INPUT_SCHEMA_LIMITS.maxProperties} properties`);
        for (const [name, child] of entries) visit(child, `${at}/properties/${name}`, depth + 1);
      }
    }
  };
  visit(schema, '#', 0);
  return problems;
}

function compileInput(id: string, schema: Record<string, unknown>): (input: unknown) => InputIssue[] {
  let validator: ReturnType<typeof Compile>;
  try {
    validator = Compile(schema as never);
  } catch (err) {
    throw new CapabilitiesFileError(`capabilities.${id}.inputSchema does not compile: ${(err as Error).message}`);
  }
  return (input) => {
    if (validator.Check(input)) return [];
    return [...validator.Errors(input)]
      .filter((e) => e.keyword !== 'boolean')
      .slice(0, 16)
      .map((e) => {
        const extra = (e.params as { additionalProperties?: string[] } | undefined)?.additionalProperties;
        return { field: `body/input${e.instancePath}`, message: extra ? `${e.message}: ${extra.join(', ')}` : e.message };
      });
  };
}

/**
 * Parses and validates the file's bytes. `env` supplies credential values by name; a capability whose
 * variable is unset or empty stops the start (naming the variable, never a value).
 */
export function parseHostedCapabilities(
  text: string,
  env: Record<string, string | undefined>,
  source = 'HOSTED_CAPABILITIES_FILE',
): HostedCapabilities {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CapabilitiesFileError(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (!checkDocument.Check(doc)) {
    const problems = [...checkDocument.Errors(doc)]
      .filter((e) => e.keyword !== 'boolean')
      .slice(0, 8)
      .map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new CapabilitiesFileError(`${source} is invalid: ${[...new Set(problems)].join('; ')}`);
  }
  const capabilities: HostedCapability[] = [];
  const values = new Map<string, string>();
  const credentials = new Map<string, string>();
  for (const [id, raw] of Object.entries(doc.capabilities)) {
    if ('adapter' in raw) {
      if (!checkAdapterEntry.Check(raw))
        throw new CapabilitiesFileError(`${source} is invalid: ${entryProblems(checkAdapterEntry, raw, id)}`);
      const built = adapterCapability(id, raw, env, source);
      capabilities.push(built.capability);
      values.set(id, built.headerValue);
      credentials.set(id, built.key);
      continue;
    }
    if (!checkEntry.Check(raw)) throw new CapabilitiesFileError(`${source} is invalid: ${entryProblems(checkEntry, raw, id)}`);
    const entry = raw;
    const endpoint = endpointOf(id, entry.endpoint, source);
    const problems = unboundedSchemaProblems(entry.inputSchema);
    if (problems.length > 0)
      throw new CapabilitiesFileError(`${source}: capabilities.${id}.inputSchema is not bounded: ${problems.slice(0, 8).join('; ')}`);
    if (entry.credential) {
      if (RESERVED_HEADERS.has(entry.credential.header.toLowerCase())) {
        throw new CapabilitiesFileError(`${source}: capabilities.${id}.credential.header ${entry.credential.header} is reserved`);
      }
      const value = credentialValue(id, entry.credential.env, env, source);
      values.set(id, entry.credential.scheme ? `${entry.credential.scheme} ${value}` : value);
      credentials.set(id, value);
    }
    capabilities.push({
      id,
      endpoint,
      method: 'POST',
      credentialHeader: entry.credential?.header.toLowerCase(),
      timeoutMs: entry.timeoutMs,
      maxInputBytes: entry.maxInputBytes,
      maxOutputBytes: entry.maxOutputBytes,
      perGrant: { ...entry.perGrant },
      inputSchema: entry.inputSchema as Record<string, unknown>,
      checkInput: compileInput(id, entry.inputSchema as Record<string, unknown>),
    });
  }
  const document = doc;
  const largest = Math.max(0, ...capabilities.map((c) => c.perGrant.concurrency));
  if (document.maxInFlightPerGrant !== undefined && document.maxInFlightPerGrant < largest) {
    const over = capabilities.filter((c) => c.perGrant.concurrency > document.maxInFlightPerGrant!).map((c) => c.id);
    throw new CapabilitiesFileError(
      `${source}: maxInFlightPerGrant ${document.maxInFlightPerGrant} is below the perGrant.concurrency of ${over.join(', ')}`,
    );
  }
  const maxInFlight = document.maxInFlightPerGrant ?? Math.max(DEFAULT_MAX_IN_FLIGHT_PER_GRANT, largest);
  const policyVersion = createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
  return new HostedCapabilities(policyVersion, capabilities, values, credentials, maxInFlight);
}

function entryProblems(check: ReturnType<typeof Compile>, entry: unknown, id: string): string {
  const problems = [...check.Errors(entry)]
    .filter((e) => e.keyword !== 'boolean')
    .slice(0, 8)
    .map((e) => `/capabilities/${id}${e.instancePath} ${e.message}`);
  return [...new Set(problems)].join('; ');
}

function endpointOf(id: string, text: string, source: string): URL {
  let endpoint: URL;
  try {
    endpoint = new URL(text);
  } catch {
    throw new CapabilitiesFileError(`${source}: capabilities.${id}.endpoint is not a URL`);
  }
  if (endpoint.username || endpoint.password) {
    throw new CapabilitiesFileError(`${source}: capabilities.${id}.endpoint must not carry credentials; name them in \`credential\``);
  }
  return endpoint;
}

/** The variable's value; unset, empty or holding a line break stops the start, naming the variable only. */
function credentialValue(id: string, name: string, env: Record<string, string | undefined>, source: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new CapabilitiesFileError(`${source}: capabilities.${id}.credential names ${name}, which is not set`);
  }
  if (/[\r\n\0]/.test(value)) throw new CapabilitiesFileError(`${source}: the value of ${name} holds a line break or NUL`);
  return value;
}

/** A built-in adapter's capability, its defaults filled in, and the key from the named variable. */
function adapterCapability(
  id: string,
  entry: AdapterEntry,
  env: Record<string, string | undefined>,
  source: string,
): { capability: HostedCapability; key: string; headerValue: string } {
  const adapter = BUILT_IN_ADAPTERS[entry.adapter];
  if (entry.model !== undefined && adapter.defaultModel === undefined) {
    throw new CapabilitiesFileError(`${source}: capabilities.${id}.model: ${adapter.name} takes no model`);
  }
  const model = entry.model ?? adapter.defaultModel;
  const endpoint = endpointOf(id, entry.endpoint ?? adapter.defaults.endpoint, source);
  const key = credentialValue(id, entry.credential.env, env, source);
  const checkSchema = compileInput(id, adapter.inputSchema);
  return {
    key,
    headerValue: adapter.auth.scheme ? `${adapter.auth.scheme} ${key}` : key,
    capability: {
      id,
      endpoint,
      method: adapter.method,
      credentialHeader: adapter.auth.header,
      timeoutMs: entry.timeoutMs ?? adapter.defaults.timeoutMs,
      maxInputBytes: entry.maxInputBytes ?? adapter.defaults.maxInputBytes,
      maxOutputBytes: entry.maxOutputBytes ?? adapter.defaults.maxOutputBytes,
      perGrant: { ...(entry.perGrant ?? adapter.defaults.perGrant) },
      inputSchema: adapter.inputSchema,
      checkInput: (input) => {
        const issues = checkSchema(input);
        return issues.length > 0 ? issues : adapter.moreInputIssues(input as Record<string, unknown>, model);
      },
      adapter: {
        name: adapter.name,
        request: (input) => {
          const { query, body } = adapter.request(input as Record<string, unknown>, model);
          const url = new URL(endpoint);
          for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, value);
          return { url, body: adapter.method === 'GET' ? undefined : JSON.stringify(body) };
        },
        result: (answer, input) => adapter.result(answer, input as Record<string, unknown>),
      },
    },
  };
}

/** Reads `file` (unset: no capabilities). Every problem is a CapabilitiesFileError naming the file. */
export function loadHostedCapabilities(file: string | undefined, env: Record<string, string | undefined>): HostedCapabilities {
  if (file === undefined) return HostedCapabilities.none();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CapabilitiesFileError(
      `HOSTED_CAPABILITIES_FILE ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return parseHostedCapabilities(text, env, `HOSTED_CAPABILITIES_FILE ${file}`);
}
