// What every web-search adapter shares: Huabu's input (webSearchInvocationInputSchema), Huabu's search
// defaults, and Huabu's result `{query, answer?, results: [{title, url, content, favicon, score?}]}`, each
// text cut to Huabu's bounds, results without a URL dropped, at most maxResults kept. Framework-free.
import { bounded, TEXT_4000, type AdapterDefaults } from './adapter.js';

export const SEARCH_DEFAULT_RESULTS = 5;
const SEARCH_LIMITS = { title: 500, url: 4096, content: 12_000, answer: 12_000, query: 4000 };

/** Huabu's search defaults; only the endpoint differs between vendors. */
export const searchDefaults = (endpoint: string): AdapterDefaults => ({
  endpoint,
  timeoutMs: 15_000,
  maxInputBytes: 20 * 1024,
  maxOutputBytes: 1024 * 1024,
  perGrant: { concurrency: 4, perMinute: 60 },
});

export const WEB_SEARCH_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    query: TEXT_4000,
    maxResults: { type: 'integer', minimum: 1, maximum: 10 },
    searchDepth: { type: 'string', enum: ['basic', 'advanced'], maxLength: 8 },
    includeAnswer: { type: 'boolean' },
  },
  required: ['query'],
  additionalProperties: false,
};

/** One result as the vendor gives it, its fields already picked out. */
export interface VendorHit {
  title: unknown;
  url: unknown;
  content: unknown;
  favicon: unknown;
  score?: unknown;
}

/** Huabu's search result from the vendor's hits, its echoed query and its answer (when it gives one). */
export function searchResult(input: Record<string, unknown>, query: unknown, answer: unknown, hits: readonly VendorHit[]) {
  const max = (input.maxResults as number | undefined) ?? SEARCH_DEFAULT_RESULTS;
  const results = hits
    .filter((r) => typeof r.url === 'string' && r.url.length > 0)
    .slice(0, max)
    .map((r) => ({
      title: bounded(r.title, SEARCH_LIMITS.title),
      url: bounded(r.url, SEARCH_LIMITS.url),
      content: bounded(r.content, SEARCH_LIMITS.content),
      favicon: bounded(r.favicon, SEARCH_LIMITS.url),
      ...(typeof r.score === 'number' && Number.isFinite(r.score) ? { score: r.score } : {}),
    }));
  return {
    query: bounded(query, SEARCH_LIMITS.query) || (input.query as string).trim(),
    ...(typeof answer === 'string' ? { answer: bounded(answer, SEARCH_LIMITS.answer) } : {}),
    results,
  };
}
