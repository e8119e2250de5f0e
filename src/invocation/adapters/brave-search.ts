// brave-search: web search through the Brave Search API. Request: `GET /res/v1/web/search?q=…&count=…`,
// the key in `X-Subscription-Token`. Answer (WebSearchApiResponse): `{type: "search", query: {original},
// web?: {results: [{title, url, description, meta_url: {favicon}}]}}`; `web` is absent when nothing was
// found. Brave takes at most 400 characters and 50 words in `q` and has no depth setting or answer, so
// `searchDepth` and `includeAnswer` change nothing and the result has no `answer` or `score`.
// Sources: https://api-dashboard.search.brave.com/api-reference/web/search/get (query parameters, auth
// header) and https://api.search.brave.com/app/documentation/web-search/responses (response objects).
import { defineAdapter, isRecord } from './adapter.js';
import { SEARCH_DEFAULT_RESULTS, searchDefaults, searchResult, WEB_SEARCH_INPUT_SCHEMA } from './web-search.js';

const BRAVE_QUERY = { maxLength: 400, maxWords: 50 };

export const braveSearch = defineAdapter({
  name: 'brave-search',
  capability: 'web search',
  vendor: 'Brave Search',
  reference: 'https://api-dashboard.search.brave.com/api-reference/web/search/get',
  method: 'GET',
  auth: { header: 'x-subscription-token' },
  defaults: searchDefaults('https://api.search.brave.com/res/v1/web/search'),
  defaultModel: undefined,
  inputSchema: WEB_SEARCH_INPUT_SCHEMA,
  moreInputIssues(input) {
    const query = (input.query as string).trim();
    if (query.length <= BRAVE_QUERY.maxLength && query.split(/\s+/).length <= BRAVE_QUERY.maxWords) return [];
    const message = `Brave Search takes at most ${BRAVE_QUERY.maxLength} characters and ${BRAVE_QUERY.maxWords} words`;
    return [{ field: 'body/input/query', message }];
  },
  request(input) {
    const count = (input.maxResults as number | undefined) ?? SEARCH_DEFAULT_RESULTS;
    return { query: { q: (input.query as string).trim(), count: String(count) } };
  },
  result(answer, input) {
    if (!isRecord(answer) || answer.type !== 'search') return { ok: false };
    if (answer.web !== undefined && !(isRecord(answer.web) && Array.isArray(answer.web.results))) return { ok: false };
    const found = isRecord(answer.web) && Array.isArray(answer.web.results) ? answer.web.results : [];
    const hits = found.filter(isRecord).map((r) => ({
      title: r.title,
      url: r.url,
      content: r.description,
      favicon: isRecord(r.meta_url) ? r.meta_url.favicon : undefined,
    }));
    return { ok: true, result: searchResult(input, isRecord(answer.query) ? answer.query.original : undefined, undefined, hits) };
  },
});
