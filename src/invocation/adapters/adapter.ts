// What a built-in hosted-capability adapter is: one object per vendor, holding everything that differs
// between vendors (the HTTP method, the auth header and its scheme, the endpoint and Huabu's defaults, the
// agent's input schema, and the mapping from that input to the vendor's request and from the vendor's
// answer to the agent's result). The registry (src/invocation/adapters.ts) lists them; the capabilities
// file, the outbound call and the docs derive from it. Framework-free.
import type { InputIssue } from '../input-issue.js';

/** What an adapter makes of the vendor's answer: the agent's result, or "not the vendor's shape". */
export type AdapterResult = { ok: true; result: unknown } | { ok: false };

export interface AdapterDefaults {
  endpoint: string;
  timeoutMs: number;
  maxInputBytes: number;
  maxOutputBytes: number;
  perGrant: { concurrency: number; perMinute: number };
}

/** The vendor's request for one input: query parameters added to the endpoint, and a JSON body (POST). */
export interface VendorRequest {
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

export interface BuiltInAdapter<Name extends string = string> {
  /** What an entry of the capabilities file names in `adapter`. */
  readonly name: Name;
  /** What agents get from it, and from whom (for the docs). */
  readonly capability: 'web search' | 'image generation';
  readonly vendor: string;
  /** Where the vendor documents the API the adapter speaks. */
  readonly reference: string;
  readonly method: 'GET' | 'POST';
  /** The header the key travels in (lower case), and the scheme before it (`Bearer`), if any. */
  readonly auth: { readonly header: string; readonly scheme?: string };
  readonly defaults: AdapterDefaults;
  /** The model sent to the vendor when the entry names none; undefined when the adapter takes no model. */
  readonly defaultModel: string | undefined;
  /** A bounded JSON Schema (it passes `unboundedSchemaProblems`). */
  readonly inputSchema: Record<string, unknown>;
  /** Checks the schema cannot express, run after it passed; `[]` when valid. */
  moreInputIssues(input: Record<string, unknown>, model: string | undefined): InputIssue[];
  /** The vendor's request for a valid input. */
  request(input: Record<string, unknown>, model: string | undefined): VendorRequest;
  /** The agent's result from the vendor's (already size- and depth-bounded) JSON answer. */
  result(answer: unknown, input: Record<string, unknown>): AdapterResult;
}

/** An adapter with its name kept as a literal type, so the registry's names form a union. */
export function defineAdapter<const Name extends string>(adapter: BuiltInAdapter<Name>): BuiltInAdapter<Name> {
  return adapter;
}

/** A prompt or query: trimmed, it must not be empty (as Huabu's schemas require). */
export const TEXT_4000 = { type: 'string', minLength: 1, maxLength: 4000, pattern: '\\S' };

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const bounded = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '');
