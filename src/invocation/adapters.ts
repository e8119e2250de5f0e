// Built-in hosted capabilities: a HOSTED_CAPABILITIES_FILE entry may name one of these adapters instead of
// describing a generic endpoint. Each adapter fixes the agent's input schema (the one Huabu's own agents
// are written against), turns that input into the vendor's request, and reduces the vendor's answer to the
// result Huabu hands agents. Bounds, deadline and per-grant concurrency default to Huabu's; the operator
// may override them and the endpoint (a proxy, a test server). The vendor's key comes from the variable the
// entry names and travels only in the vendor's auth header. Framework-free.
import type { InputIssue } from './input-issue.js';

export const ADAPTER_NAMES = ['tavily-search', 'openai-images'] as const;
export type AdapterName = (typeof ADAPTER_NAMES)[number];

/** What an adapter makes of the vendor's answer: the agent's result, or "not the vendor's shape". */
export type AdapterResult = { ok: true; result: unknown } | { ok: false };

export interface AdapterDefaults {
  endpoint: string;
  timeoutMs: number;
  maxInputBytes: number;
  maxOutputBytes: number;
  perGrant: { concurrency: number; perMinute: number };
}

export interface BuiltInAdapter {
  readonly name: AdapterName;
  readonly defaults: AdapterDefaults;
  /** The model sent to the vendor when the entry names none; undefined when the adapter takes no model. */
  readonly defaultModel: string | undefined;
  /** A bounded JSON Schema (it passes `unboundedSchemaProblems`). */
  readonly inputSchema: Record<string, unknown>;
  /** Checks the schema cannot express, run after it passed; `[]` when valid. */
  moreInputIssues(input: Record<string, unknown>, model: string | undefined): InputIssue[];
  /** The vendor's request body for a valid input. */
  request(input: Record<string, unknown>, model: string | undefined): unknown;
  /** The agent's result from the vendor's (already size- and depth-bounded) JSON answer. */
  result(answer: unknown, input: Record<string, unknown>): AdapterResult;
}

/** A prompt or query: trimmed, it must not be empty (as Huabu's schemas require). */
const TEXT_4000 = { type: 'string', minLength: 1, maxLength: 4000, pattern: '\\S' };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const bounded = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '');

// ---- tavily-search ------------------------------------------------------------------------------------
// Input: Huabu's webSearchInvocationInputSchema. Request: Tavily's POST /search, the key as
// `Authorization: Bearer`. Result: Huabu's `{query, answer?, results: [{title, url, content, favicon,
// score?}]}`, each text cut to Huabu's bounds, results without a URL dropped, at most maxResults kept.
const SEARCH_DEFAULT_RESULTS = 5;
const SEARCH_LIMITS = { title: 500, url: 4096, content: 12_000, answer: 12_000, query: 4000 };

const tavilySearch: BuiltInAdapter = {
  name: 'tavily-search',
  defaults: {
    endpoint: 'https://api.tavily.com/search',
    timeoutMs: 15_000,
    maxInputBytes: 20 * 1024,
    maxOutputBytes: 1024 * 1024,
    perGrant: { concurrency: 4, perMinute: 60 },
  },
  defaultModel: undefined,
  inputSchema: {
    type: 'object',
    properties: {
      query: TEXT_4000,
      maxResults: { type: 'integer', minimum: 1, maximum: 10 },
      searchDepth: { type: 'string', enum: ['basic', 'advanced'], maxLength: 8 },
      includeAnswer: { type: 'boolean' },
    },
    required: ['query'],
    additionalProperties: false,
  },
  moreInputIssues: () => [],
  request(input) {
    return {
      query: (input.query as string).trim(),
      search_depth: (input.searchDepth as string | undefined) ?? 'basic',
      max_results: (input.maxResults as number | undefined) ?? SEARCH_DEFAULT_RESULTS,
      include_answer: (input.includeAnswer as boolean | undefined) ?? true,
      include_raw_content: false,
    };
  },
  result(answer, input) {
    if (!isRecord(answer) || !Array.isArray(answer.results)) return { ok: false };
    const max = (input.maxResults as number | undefined) ?? SEARCH_DEFAULT_RESULTS;
    const results = answer.results
      .filter((r): r is Record<string, unknown> => isRecord(r) && typeof r.url === 'string' && r.url.length > 0)
      .slice(0, max)
      .map((r) => ({
        title: bounded(r.title, SEARCH_LIMITS.title),
        url: bounded(r.url, SEARCH_LIMITS.url),
        content: bounded(r.content, SEARCH_LIMITS.content),
        favicon: bounded(r.favicon, SEARCH_LIMITS.url),
        ...(typeof r.score === 'number' && Number.isFinite(r.score) ? { score: r.score } : {}),
      }));
    return {
      ok: true,
      result: {
        query: bounded(answer.query, SEARCH_LIMITS.query) || (input.query as string).trim(),
        ...(typeof answer.answer === 'string' ? { answer: bounded(answer.answer, SEARCH_LIMITS.answer) } : {}),
        results,
      },
    };
  },
};

// ---- openai-images ------------------------------------------------------------------------------------
// Input: Huabu's imageGenerationInvocationInputSchema. Request: OpenAI's POST /v1/images/generations with
// one image (`n: 1`), Huabu's defaults for size (1024x1024) and quality (low). Result: Huabu's `{src,
// width, height, revisedPrompt?}`; `src` is the image itself as a `data:image/png;base64,` URL (or the
// vendor's URL when it answers with one), because this service keeps no artifact store.
// Reference artifacts name canvas artifacts this service cannot read: refused, never sent.

/** Size rules per model family, after Huabu's shared image capability registry. */
const FIXED_SIZES = ['1024x1024', '1024x1536', '1536x1024'];
const FREE_SIZE = { edgeMultiple: 16, longEdgeMax: 3840, aspectRatioMax: 3, pixelsMin: 655_360, pixelsMax: 8_294_400 };
const IMAGE_DEFAULTS = { size: '1024x1024', quality: 'low' };

/** Why `size` does not suit `model`, or undefined when it does (unknown families: any WIDTHxHEIGHT). */
export function imageSizeProblem(model: string, size: string): string | undefined {
  if (size === 'auto') return undefined;
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  if (model === 'gpt-image-1' || model === 'gpt-image-1-mini') {
    return FIXED_SIZES.includes(size) ? undefined : `${model} takes the sizes ${[...FIXED_SIZES, 'auto'].join(', ')}`;
  }
  if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) return 'must be WIDTHxHEIGHT (e.g. 1024x1024) or auto';
  if (model !== 'gpt-image-2') return undefined;
  const [w, h] = [Number(m[1]), Number(m[2])];
  const c = FREE_SIZE;
  if (w % c.edgeMultiple !== 0 || h % c.edgeMultiple !== 0) return `both edges must be multiples of ${c.edgeMultiple}`;
  if (Math.max(w, h) > c.longEdgeMax) return `the long edge must be at most ${c.longEdgeMax} px`;
  if (Math.max(w, h) / Math.min(w, h) > c.aspectRatioMax) return `the aspect ratio must be at most ${c.aspectRatioMax}:1`;
  if (w * h < c.pixelsMin || w * h > c.pixelsMax) return `the image must have ${c.pixelsMin} to ${c.pixelsMax} pixels`;
  return undefined;
}

const openaiImages: BuiltInAdapter = {
  name: 'openai-images',
  defaults: {
    endpoint: 'https://api.openai.com/v1/images/generations',
    timeoutMs: 120_000,
    maxInputBytes: 32 * 1024,
    maxOutputBytes: 8 * 1024 * 1024,
    perGrant: { concurrency: 1, perMinute: 10 },
  },
  defaultModel: 'gpt-image-2',
  inputSchema: {
    type: 'object',
    properties: {
      prompt: TEXT_4000,
      referenceArtifactSrcs: { type: 'array', maxItems: 16, items: { type: 'string', minLength: 1, maxLength: 4096 } },
      size: { type: 'string', minLength: 1, maxLength: 32 },
      quality: { type: 'string', enum: ['low', 'medium', 'high', 'auto'], maxLength: 8 },
    },
    required: ['prompt'],
    additionalProperties: false,
  },
  moreInputIssues(input, model) {
    const issues: InputIssue[] = [];
    if (Array.isArray(input.referenceArtifactSrcs) && input.referenceArtifactSrcs.length > 0) {
      issues.push({
        field: 'body/input/referenceArtifactSrcs',
        message:
          'reference artifacts are not supported here: this service cannot read the canvas artifacts they name; generate from the prompt alone',
      });
    }
    if (typeof input.size === 'string') {
      const problem = imageSizeProblem(model!, input.size.trim());
      if (problem) issues.push({ field: 'body/input/size', message: problem });
    }
    return issues;
  },
  request(input, model) {
    return {
      model,
      prompt: (input.prompt as string).trim(),
      n: 1,
      size: (input.size as string | undefined)?.trim() ?? IMAGE_DEFAULTS.size,
      quality: (input.quality as string | undefined) ?? IMAGE_DEFAULTS.quality,
    };
  },
  result(answer, input) {
    const first = isRecord(answer) && Array.isArray(answer.data) && isRecord(answer.data[0]) ? answer.data[0] : undefined;
    if (!first) return { ok: false };
    let src: string;
    if (typeof first.b64_json === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(first.b64_json))
      src = `data:image/png;base64,${first.b64_json}`;
    else if (typeof first.url === 'string' && /^https:\/\//.test(first.url)) src = first.url;
    else return { ok: false };
    const size = (input.size as string | undefined)?.trim() ?? IMAGE_DEFAULTS.size;
    const m = /^(\d+)x(\d+)$/.exec(size);
    return {
      ok: true,
      result: {
        src,
        width: m ? Number(m[1]) : 0,
        height: m ? Number(m[2]) : 0,
        ...(typeof first.revised_prompt === 'string' && first.revised_prompt !== '' ? { revisedPrompt: first.revised_prompt } : {}),
      },
    };
  },
};

export const BUILT_IN_ADAPTERS: Readonly<Record<AdapterName, BuiltInAdapter>> = {
  'tavily-search': tavilySearch,
  'openai-images': openaiImages,
};
