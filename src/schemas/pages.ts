// The query parameters of a paged or searched catalogue read (docs/decisions/search-and-pages.md).
import Type from 'typebox';
import { MAX_PAGE_LIMIT } from '../registry/catalogue-pages.js';
import { SEARCH_MAX_CHARS } from '../registry/search.js';

export const PageQuery = {
  q: Type.Optional(
    Type.String({
      maxLength: SEARCH_MAX_CHARS,
      description:
        'Search: records whose ID, name, displayName, description or body hold every word (the last word also as a prefix; words of 5 to 16 letters also one edit away), most relevant first (ID, name and displayName weigh more than the description, which weighs more than the body), then by (provider, id). At most 8 words. Answers a page (`limit`, default 100).',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_LIMIT,
      description: `Page size, 1..${MAX_PAGE_LIMIT}: answers that many records at most, in (provider, id) order (relevance with \`q\`), with \`Link: <…>; rel="next"\` while more remain.`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      description:
        'Opaque: the next page, as the `Link` header of the previous page names it. Bound to the list, the caller and the query it was handed out for; any other is 400 `invalid_cursor`.',
    }),
  ),
};

/** The `Link` header of a page that has a next one. */
export const LINK_HEADER = {
  link: Type.String({
    description:
      'On a page (`q`, `limit` or `cursor` given) while more records remain: `<path?…&cursor=…>; rel="next"`, the same query with the next cursor.',
  }),
};
