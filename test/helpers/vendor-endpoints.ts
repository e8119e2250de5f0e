// A real local HTTP server speaking the vendors' formats for the built-in adapters' tests: Tavily's
// search API (POST JSON, `Authorization: Bearer <key>`, answer `{query, answer, results: [{title, url,
// content, score, raw_content}], response_time}`), Brave's Web Search API (GET /res/v1/web/search?q=&count=,
// `X-Subscription-Token: <key>`, answer `{type: "search", query: {original}, web: {type, results: [{title,
// url, description, meta_url: {favicon}}]}}`) and OpenAI's Images API (POST /v1/images/generations,
// `Authorization: Bearer <key>`, answer `{created, data: [{b64_json, revised_prompt}]}`). The formats
// follow the vendors' public API documentation. It records every request and answers by path:
//   /search                 a Tavily answer built from the request (three results, one without a URL)
//   /res/v1/web/search      a Brave answer built from the query (three results, one without a URL); none for q=nothing
//   /v1/images/generations  an OpenAI answer with one base64 image
//   /hold                   waits until released (for deadlines and concurrency)
//   /status/<n>             answers <n> with a vendor error body that must never reach the agent
//   /other-shape            200 JSON that is not the vendor's answer
//   /url-image              an OpenAI answer carrying a URL instead of base64
//   /echo-auth              a Tavily-shaped answer whose content is the request's Authorization (or
//                           X-Subscription-Token) header
//   /not-json               200 HTML
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { listen } from './sockets.js';

export const VENDOR_LEAK = 'VENDOR-ERROR-BODY-MUST-NOT-LEAK';
/** The image bytes the fake OpenAI answers with, and their base64. */
export const PNG_BYTES = Buffer.from('\x89PNG\r\n\x1a\n-fake-image-bytes-for-tests', 'latin1');
export const PNG_B64 = PNG_BYTES.toString('base64');

export interface VendorRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface VendorEndpoints {
  origin: string;
  received: VendorRequest[];
  /** Requests waiting on /hold. */
  held(): number;
  releaseAll(): void;
  close(): Promise<void>;
}

export async function startVendorEndpoints(): Promise<VendorEndpoints> {
  const received: VendorRequest[] = [];
  const held = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const record: VendorRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(record);
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const url = req.url ?? '';
      const { pathname, searchParams } = new URL(url, 'http://vendor');
      if (pathname === '/res/v1/web/search') {
        const q = searchParams.get('q') ?? '';
        if (q === 'nothing') return json(200, { type: 'search', query: { original: q, more_results_available: false } });
        const meta = (host: string) => ({
          scheme: 'https',
          netloc: host,
          hostname: host,
          favicon: `https://imgs.search.brave.com/${host}.ico`,
        });
        return json(200, {
          type: 'search',
          query: { original: q, more_results_available: true },
          web: {
            type: 'search',
            family_friendly: true,
            results: [
              {
                type: 'search_result',
                title: 'Lichen growth',
                url: 'https://example.org/lichen',
                description: 'Slow.',
                meta_url: meta('example.org'),
                age: 'May 1, 2024',
              },
              { type: 'search_result', title: 'No address', description: 'dropped' },
              {
                type: 'search_result',
                title: 'Crustose lichens',
                url: 'https://example.net/crustose',
                description: 'Slower still.',
                meta_url: meta('example.net'),
              },
            ],
          },
        });
      }
      if (url === '/search') {
        const q = JSON.parse(record.body) as { query: string; include_answer?: boolean };
        return json(200, {
          query: q.query,
          answer: q.include_answer === false ? null : 'Lichens grow a few millimetres a year.',
          images: [],
          results: [
            { title: 'Lichen growth', url: 'https://example.org/lichen', content: 'Slow.', score: 0.91, raw_content: null },
            { title: 'No address', content: 'dropped' },
            { title: 'Crustose lichens', url: 'https://example.org/crustose', content: 'Slower still.', score: 0.5, raw_content: null },
          ],
          response_time: 1.2,
        });
      }
      if (url === '/v1/images/generations')
        return json(200, { created: 1764547200, data: [{ b64_json: PNG_B64, revised_prompt: 'A fox, in watercolour.' }] });
      if (url === '/url-image') return json(200, { created: 1764547200, data: [{ url: 'https://images.example.org/fox.png' }] });
      if (url === '/other-shape') return json(200, { hello: VENDOR_LEAK });
      if (pathname === '/echo-auth')
        return json(200, {
          query: 'x',
          results: [
            {
              title: 'echo',
              url: 'https://example.org/',
              content: String(req.headers.authorization ?? req.headers['x-subscription-token']),
            },
          ],
        });
      if (url === '/not-json') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<html>${VENDOR_LEAK}</html>`);
      }
      if (url.startsWith('/status/'))
        return json(Number(url.slice('/status/'.length)), { error: { message: VENDOR_LEAK, type: 'invalid_request_error' } });
      if (url === '/hold') {
        const release = () => {
          held.delete(release);
          if (!res.destroyed) json(200, { query: 'held', results: [] });
        };
        held.add(release);
        res.on('close', () => held.delete(release));
        return;
      }
      return json(404, { error: VENDOR_LEAK });
    });
  });
  const origin = await listen(server);
  return {
    origin,
    received,
    held: () => held.size,
    releaseAll: () => [...held].forEach((r) => r()),
    close: () =>
      new Promise((resolve) => {
        for (const r of [...held]) r();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
