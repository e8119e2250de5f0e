// A stand-in for the web-search vendors of the built-in adapters, for trying hosted capabilities without a
// vendor key or the network (docs/mcp.md): a local HTTP server that answers Tavily's `POST /search` and
// Brave's `GET /res/v1/web/search` in their formats, with two made-up results about the query. It prints
// its URL (`http://127.0.0.1:<port>`) as its first line; `VENDOR_PORT` picks the port (default: any free one).
// SIGTERM or SIGINT stops it.
//   node scripts/stand-in-vendor.mjs
import { createServer } from 'node:http';

const hits = (query) => [
  { title: `About ${query}`, url: 'https://example.org/about', content: `What the stand-in knows about ${query}.` },
  { title: `More on ${query}`, url: 'https://example.org/more', content: 'Made up by scripts/stand-in-vendor.mjs.' },
];

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const answer = (status, value) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && url.pathname === '/search') {
      let query;
      try {
        query = String(JSON.parse(body).query ?? '');
      } catch {
        return answer(400, { detail: { error: 'the body is not JSON' } });
      }
      const results = hits(query).map((hit, i) => ({ ...hit, score: 0.9 - i / 10, raw_content: null }));
      return answer(200, { query, answer: `A stand-in answer about ${query}.`, images: [], results, response_time: 0.01 });
    }
    if (req.method === 'GET' && url.pathname === '/res/v1/web/search') {
      const query = url.searchParams.get('q') ?? '';
      const results = hits(query).map(({ content, ...hit }) => ({ type: 'search_result', ...hit, description: content }));
      return answer(200, { type: 'search', query: { original: query }, web: { type: 'search', results } });
    }
    return answer(404, { error: 'not a route of the stand-in vendor' });
  });
});

server.listen(Number(process.env.VENDOR_PORT ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => server.close(() => process.exit(0)));
