// tavily-search: web search through Tavily. Request: Tavily's POST /search, the key as `Authorization:
// Bearer`. Answer: `{query, answer, results: [{title, url, content, score, raw_content}], response_time}`.
import { defineAdapter, isRecord } from './adapter.js';
import { SEARCH_DEFAULT_RESULTS, searchDefaults, searchResult, WEB_SEARCH_INPUT_SCHEMA } from './web-search.js';

export const tavilySearch = defineAdapter({
  name: 'tavily-search',
  capability: 'web search',
  vendor: 'Tavily',
  reference: 'https://docs.tavily.com/documentation/api-reference/endpoint/search',
  method: 'POST',
  auth: { header: 'authorization', scheme: 'Bearer' },
  defaults: searchDefaults('https://api.tavily.com/search'),
  defaultModel: undefined,
  inputSchema: WEB_SEARCH_INPUT_SCHEMA,
  moreInputIssues: () => [],
  request(input) {
    return {
      body: {
        query: (input.query as string).trim(),
        search_depth: (input.searchDepth as string | undefined) ?? 'basic',
        max_results: (input.maxResults as number | undefined) ?? SEARCH_DEFAULT_RESULTS,
        include_answer: (input.includeAnswer as boolean | undefined) ?? true,
        include_raw_content: false,
      },
    };
  },
  result(answer, input) {
    if (!isRecord(answer) || !Array.isArray(answer.results)) return { ok: false };
    const hits = answer.results
      .filter(isRecord)
      .map((r) => ({ title: r.title, url: r.url, content: r.content, favicon: r.favicon, score: r.score }));
    return { ok: true, result: searchResult(input, answer.query, answer.answer, hits) };
  },
});
