// `npm run bench:search`: what a searched or paged catalogue read costs next to a single-record RFS read, on
// the real server (a child process) loaded by autocannon (another), at two catalogue sizes, side by side in
// one run. Per size: a single-record read `GET <rfs>/resources/<id>`; a selective search page
// (`?q=bm0 17&limit=20`: two words, the last a prefix); a broad search page (`?q=benchmark&limit=20`: a word
// every record holds, so every record in the scope is a match to rank); a page of 100 without `q`, from a
// cursor in the middle of the walk. Variants alternate order each round (harness `compare`); medians of the
// rounds' p99 and p50 (each response's own time) and their ratio to the single read, besides the ratio of
// autocannon's whole-millisecond p99s; then the server's RSS (after a full GC) per size. Each size runs on
// a server that keeps pages (the default: a page read again at the same revision is sent from kept bytes)
// and on one started with CATALOGUE_PAGE_CACHE_BYTES=0, where every read builds its page: the cost of a
// page's first read after a write.
//
// Knobs: BENCH_SEARCH_SCALES (2000,20000), BENCH_PAGES (kept,built: which servers), BENCH_RUNS (3),
// BENCH_DURATION (2 s), BENCH_WARMUP (1 s),
// BENCH_CONNECTIONS (10), BENCH_SEARCH_FLEET (4: the records spread over the host and that many machines;
// the canvas's scope is the host's and bm0's), BENCH_STORE=postgres with BENCH_DATABASE_URL (a server where databases may be created).
import { request } from 'undici';
import {
  canvasToken,
  CANVAS_ID,
  compare,
  fleetProviders,
  MACHINES,
  newCredentials,
  prepareDataDir,
  removeDir,
  runBench,
  runLoad,
  seededId,
  startServer,
  tempRoot,
  type Variant,
} from './harness.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const scales = (process.env.BENCH_SEARCH_SCALES ?? '2000,20000').split(',').map(Number);
const runs = num('BENCH_RUNS', 3);
const durationSec = num('BENCH_DURATION', 2);
const warmupSec = num('BENCH_WARMUP', 1);
const connections = num('BENCH_CONNECTIONS', 10);
const store = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'json';
const fleet = num('BENCH_SEARCH_FLEET', MACHINES.length);
/** Whether the server keeps pages: `kept` (its default) or `built` per read (CATALOGUE_PAGE_CACHE_BYTES=0). */
const pageModes = (process.env.BENCH_PAGES ?? 'kept,built').split(',').map((mode) => {
  if (mode !== 'kept' && mode !== 'built') throw new Error(`BENCH_PAGES: kept and/or built, not ${mode}`);
  return mode;
});

async function main(): Promise<void> {
  const root = await tempRoot();
  const creds = newCredentials();
  const token = canvasToken(creds);
  const headers = { authorization: `Bearer ${token}` };
  const rows: string[] = [];
  const rssRows: string[] = [];
  try {
    for (const count of scales) {
      const dir = await prepareDataDir(root, count, creds, fleet);
      for (const pagesMode of pageModes) {
        // The load is the point: the event-loop guard would answer 503 to part of it.
        const server = await startServer(dir, creds, {
          MAX_EVENT_LOOP_DELAY_MS: '0',
          ...(pagesMode === 'built' ? { CATALOGUE_PAGE_CACHE_BYTES: '0' } : {}),
          ...(store === 'postgres' ? { BENCH_STORE: 'postgres' } : {}),
        });
        try {
          const base = `/api/rfs/${CANVAS_ID}/resources`;
          // A cursor half way through the canvas's walk (the host's and bm0's records).
          const scope = Math.floor((count * 2) / fleetProviders(fleet).length);
          const half = Math.max(1, Math.min(500, Math.floor(scope / 2)));
          let cursor: string | undefined;
          for (let walked = 0; walked < scope / 2; walked += half) {
            const res = await request(`${server.url}${base}?limit=${half}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
              headers,
            });
            await res.body.dump();
            const link = String(res.headers.link ?? '');
            const next = /cursor=([^&>]+)/.exec(link)?.[1];
            if (!next) break;
            cursor = decodeURIComponent(next);
          }
          // The first search builds the JSON store's index (once per start): not part of what is measured.
          await (await request(`${server.url}${base}?q=warm&limit=1`, { headers })).body.dump();
          const get = (name: string, path: string): Variant => ({
            name,
            run: (sec) =>
              runLoad({ url: server.url, connections, durationSec: sec, expectStatus: [200], request: { kind: 'get', path, headers } }),
          });
          const variants = [
            get('single read', `${base}/${seededId('bm0', 1)}`),
            get('search, selective (q=bm0 17, limit=20)', `${base}?q=bm0%2017&limit=20`),
            get('search, broad (q=benchmark, limit=20)', `${base}?q=benchmark&limit=20`),
            get('page of 100, no q (mid-walk cursor)', `${base}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
          ];
          const result = await compare(variants, runs, durationSec, warmupSec);
          const { rss } = await server.probe();
          rssRows.push(`${store} | ${count} | pages ${pagesMode} | server RSS after the rounds: ${(rss / 2 ** 20).toFixed(0)} MiB`);
          const single = result['single read']!;
          for (const v of variants) {
            const r = result[v.name]!;
            // Each response's own time: autocannon's whole milliseconds make a 1 ms read's ratios steps of 1.
            const exact = r.exact ?? r;
            rows.push(
              [
                store,
                String(count),
                pagesMode.padEnd(5),
                v.name.padEnd(42),
                exact.p50.toFixed(2).padStart(7),
                exact.p99.toFixed(2).padStart(7),
                (exact.p99 / (single.exact ?? single).p99).toFixed(2).padStart(6),
                (r.p99 / single.p99).toFixed(2).padStart(6),
                r.perSecond.toFixed(0).padStart(7),
                r.unexpected + r.errors > 0 ? ` (${r.unexpected} unexpected, ${r.errors} errors)` : '',
              ].join(' | '),
            );
          }
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    await removeDir(root);
  }
  console.log(`catalogue search and pages: medians of ${runs} rounds of ${durationSec} s, ${connections} connections`);
  console.log(['store', 'records', 'pages', 'read'.padEnd(42), 'p50 ms', 'p99 ms', 'p99 ×', 'whole-ms p99 ×', 'req/s'].join(' | '));
  for (const row of rows) console.log(row);
  for (const row of rssRows) console.log(row);
}

runBench(main);
