// `npm run bench:fleet`: what one answer costs at fleet scale, the whole-catalogue ones next to the paged and
// searched ones, on the real server (a child process), one request at a time (the cost of the answer, not
// of a queue): the owner catalogue (`GET /api/acp/resources`, identity), the capability snapshot
// (`GET /api/acp/capabilities`, JSON), an RFS page of 100 from the middle of the walk, an RFS search page of 20
// (a selective query and a word every record holds), and a single-record RFS read. Per scale: the median
// time and the bytes of each, and the server's RSS (after a full GC) once all were asked. The paged and
// searched answers should cost the same at every scale; the whole ones grow with the catalogue.
//
// Knobs: BENCH_FLEET_SCALES (10000,100000), BENCH_RUNS (5 requests of each, after one not counted).
import { request } from 'undici';
import { canvasToken, CANVAS_ID, newCredentials, prepareDataDir, removeDir, runBench, seededId, startServer, tempRoot } from './harness.js';

const scales = (process.env.BENCH_FLEET_SCALES ?? '10000,100000').split(',').map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 5);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const root = await tempRoot();
  const creds = newCredentials();
  const owner = { authorization: `Bearer ${creds.owner}` };
  const agent = { authorization: `Bearer ${canvasToken(creds)}` };
  const rows: string[] = [];
  try {
    for (const count of scales) {
      const dir = await prepareDataDir(root, count, creds);
      const server = await startServer(dir, creds, { MAX_EVENT_LOOP_DELAY_MS: '0' });
      try {
        const rfs = `/api/rfs/${CANVAS_ID}/resources`;
        // The cursor of the page in the middle of the canvas's walk: the page after the middle record's.
        const mid = seededId('bm0', Math.floor(count / 5 / 2));
        // The first search builds the JSON store's word index (once per start): not measured.
        await (await request(`${server.url}${rfs}?limit=1&q=warm`, { headers: agent })).body.dump();
        const asks: [string, string, Record<string, string>][] = [
          ['owner catalogue (all records)', '/api/acp/resources', owner],
          ['capability snapshot (JSON)', '/api/acp/capabilities', owner],
          ['RFS page of 100 (cursor mid-walk)', `${rfs}?limit=100`, agent],
          ['RFS search, selective (q=bm0 17)', `${rfs}?q=bm0%2017&limit=20`, agent],
          ['RFS search, broad (q=benchmark)', `${rfs}?q=benchmark&limit=20`, agent],
          ['RFS single-record read', `${rfs}/${mid}`, agent],
        ];
        // The page from the middle: walk to it once with pages of 500, keep its cursor.
        let cursor: string | undefined;
        for (let walked = 0; walked < (count * 2) / 5 / 2; walked += 500) {
          const res = await request(`${server.url}${rfs}?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
            headers: agent,
          });
          await res.body.dump();
          const next = /cursor=([^&>]+)/.exec(String(res.headers.link ?? ''))?.[1];
          if (!next) break;
          cursor = decodeURIComponent(next);
        }
        if (cursor) asks[2]![1] = `${rfs}?limit=100&cursor=${encodeURIComponent(cursor)}`;
        for (const [name, path, headers] of asks) {
          const times: number[] = [];
          let bytes = 0;
          for (let i = 0; i <= runs; i++) {
            const started = performance.now();
            const res = await request(`${server.url}${path}`, { headers });
            const body = Buffer.from(await res.body.arrayBuffer());
            if (res.statusCode !== 200) throw new Error(`${name}: ${res.statusCode} ${body.toString('utf8', 0, 200)}`);
            if (i > 0) times.push(performance.now() - started);
            bytes = body.length;
          }
          rows.push(
            [String(count).padStart(7), name.padEnd(36), median(times).toFixed(1).padStart(9), String(bytes).padStart(11)].join(' | '),
          );
        }
        const probe = await server.probe();
        rows.push(
          [
            String(count).padStart(7),
            'server RSS after these (MiB)'.padEnd(36),
            ''.padStart(9),
            (probe.rss / 2 ** 20).toFixed(0).padStart(11),
          ].join(' | '),
        );
      } finally {
        await server.stop();
      }
    }
  } finally {
    await removeDir(root);
  }
  console.log(`one answer at a time: medians of ${runs} requests (after one not counted)`);
  console.log(['records', 'answer'.padEnd(36), 'median ms', 'bytes'.padStart(11)].join(' | '));
  for (const row of rows) console.log(row);
}

runBench(main);
