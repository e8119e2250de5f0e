// Scenario 17: single-record reads while many machines publish at once. A real server process on a copy of
// the scale's DATA_DIR; `machines` more machines are enrolled through the owner's API, and each publishes
// `records` skill records at the same moment (one `PUT /api/acp/providers/<m>/resources` each, the
// `sourceContent` real public skill documents, scenario 12's, each cut to fit the set in the 8 MiB body limit). Owner reads of one record
// (`GET /api/acp/resources/<id>`) run at a fixed rate from before the publishes until after the last was
// answered; their p99 is the figure. Then the first whole v1 catalogue read is timed (every published skill's summary
// is its front matter's description), and the same read again after one more record is written. With another build's `dist`, that build runs the same rounds,
// alternated with this one's (before/after in one run).
import { Pool, request } from 'undici';
import { copyDataDir, removeDir, seededId, startServer, type Credentials, type RunningServer } from './harness.js';
import { skillEntries } from './reconnect-publish.js';

export interface PublishReadsRound {
  p50: number;
  p99: number;
  max: number;
  reads: number;
  /** Reads answered other than 200 (503 `overloaded` included). */
  failedReads: number;
  /** Milliseconds from the first publish sent to the last answered, and the publishes not answered 200. */
  publishMs: number;
  failedPublishes: string[];
  /** The first whole v1 catalogue read after the publishes (every published skill's summary from its front matter): ms. */
  catalogueMs: number;
  /** The same read after one more record is written: ms. */
  catalogueAgainMs: number;
}

export interface PublishReadsOptions {
  template: string;
  root: string;
  creds: Credentials;
  machines: number;
  records: number;
  rounds: number;
  readRate: number;
  /** One search before the reads start: the JSON store's word index is built and kept up to date by the publishes. */
  searchFirst?: boolean;
  /** Each record's front matter its own (a comment naming the record): no two records share a parse. */
  uniqueFrontMatter?: boolean;
  baselineBuild?: string;
  log(message: string): void;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function oneRound(
  o: PublishReadsOptions,
  bodies: (machine: string) => string,
  build: string | undefined,
): Promise<PublishReadsRound> {
  const dir = await copyDataDir(o.template, o.root);
  const server: RunningServer = await startServer(dir, o.creds, build ? { BENCH_BUILD: build } : {});
  const owner = { authorization: `Bearer ${o.creds.owner}` };
  try {
    const machines: { id: string; token: string }[] = [];
    for (let i = 0; i < o.machines; i++) {
      const id = `pub-${i}`;
      const res = await request(`${server.url}/api/acp/machines`, {
        method: 'POST',
        headers: { ...owner, 'content-type': 'application/json' },
        body: JSON.stringify({ machineId: id }),
      });
      const { token } = (await res.body.json()) as { token: string };
      machines.push({ id, token });
    }
    // Encoded before the reads start: handing undici 10 strings of 7.5 MiB would stall this process's own
    // event loop as they are encoded, and the reads it times would wait for it, not for the server.
    const payloads = machines.map((m) => Buffer.from(bodies(m.id)));
    if (o.searchFirst) await (await request(`${server.url}/api/acp/resources?q=benchmark&limit=1`, { headers: owner })).body.dump();
    const pool = new Pool(server.url, { connections: 2 });
    const latencies: number[] = [];
    let failedReads = 0;
    let stopAt = Infinity;
    const readPath = `/api/acp/resources/${seededId('huabu', 0)}`;
    const reading = (async () => {
      const pending: Promise<void>[] = [];
      const start = performance.now();
      for (let i = 0; ; i++) {
        const due = start + (i * 1000) / o.readRate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (due > stopAt) break;
        pending.push(
          pool.request({ path: readPath, method: 'GET', headers: owner }).then(
            async (res) => {
              await res.body.arrayBuffer();
              if (res.statusCode === 200) latencies.push(performance.now() - due);
              else failedReads++;
            },
            () => void failedReads++,
          ),
        );
      }
      await Promise.all(pending);
    })();
    await new Promise((r) => setTimeout(r, 500));
    const started = performance.now();
    const failedPublishes: string[] = [];
    await Promise.all(
      machines.map(async (m, i) => {
        const res = await request(`${server.url}/api/acp/providers/${m.id}/resources`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json' },
          body: payloads[i]!,
          headersTimeout: 600_000,
          bodyTimeout: 600_000,
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) failedPublishes.push(`${m.id}: ${res.statusCode} ${text.slice(0, 200)}`);
      }),
    );
    const publishMs = performance.now() - started;
    stopAt = performance.now() + 500;
    await reading;
    await pool.close();
    const catalogue = async () => {
      const at = performance.now();
      await (
        await request(`${server.url}/api/acp/resources`, { headers: owner, bodyTimeout: 600_000, headersTimeout: 600_000 })
      ).body.dump();
      return performance.now() - at;
    };
    const catalogueMs = await catalogue();
    const one = await request(`${server.url}/api/acp/providers/${machines[0]!.id}/resources/one-more`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${machines[0]!.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        schemaVersion: 2,
        name: 'one-more',
        sourceContent: '---\nname: one-more\ndescription: One more.\n---\nBody.',
      }),
    });
    await one.body.dump();
    if (one.statusCode >= 300) failedPublishes.push(`one more: ${one.statusCode}`);
    const catalogueAgainMs = await catalogue();
    latencies.sort((a, b) => a - b);
    return {
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      max: latencies.at(-1) ?? NaN,
      reads: latencies.length + failedReads,
      failedReads,
      publishMs,
      failedPublishes,
      catalogueMs,
      catalogueAgainMs,
    };
  } finally {
    await server.stop();
    await removeDir(dir);
  }
}

/** `rounds` rounds; with `baselineBuild`, that build's too, alternated with this one's. */
export async function measurePublishReads(o: PublishReadsOptions): Promise<{ rounds: PublishReadsRound[]; baseline: PublishReadsRound[] }> {
  // Each set within the reconcile's body limit (8 MiB): every record's text cut at a line to its share.
  const share = Math.floor((7.5 * 2 ** 20) / o.records) - 200;
  const cut = (text: string) => (text.length <= share ? text : text.slice(0, Math.max(text.lastIndexOf('\n', share), 1)).trimEnd());
  const entries = (await skillEntries(o.records)).map((e) => ({ ...e, sourceContent: cut(e.sourceContent) }));
  const own = (text: string, id: string) => (o.uniqueFrontMatter ? text.replace(/^---\n/, `---\n# ${id}\n`) : text);
  const bodies = (machine: string) =>
    JSON.stringify({
      resources: entries.map((e) => ({ ...e, id: `${machine}-${e.id}`, sourceContent: own(e.sourceContent, `${machine}-${e.id}`) })),
    });
  const rounds: PublishReadsRound[] = [];
  const baseline: PublishReadsRound[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const builds = [
      async () => rounds.push(await oneRound(o, bodies, undefined)),
      ...(o.baselineBuild ? [async () => baseline.push(await oneRound(o, bodies, o.baselineBuild))] : []),
    ];
    for (const run of round % 2 === 0 ? builds : builds.reverse()) await run();
    const last = rounds.at(-1)!;
    const base = baseline.at(-1);
    o.log(
      `publish reads round ${round + 1}: p99 ${last.p99.toFixed(1)} ms (publishes ${last.publishMs.toFixed(0)} ms${last.failedPublishes.length ? `, ${last.failedPublishes[0]}` : ''}; catalogue ${last.catalogueMs.toFixed(0)}, after one write ${last.catalogueAgainMs.toFixed(0)} ms)${base ? `; baseline p99 ${base.p99.toFixed(1)} ms (publishes ${base.publishMs.toFixed(0)} ms; catalogue ${base.catalogueMs.toFixed(0)}, after one write ${base.catalogueAgainMs.toFixed(0)} ms)` : ''}`,
    );
  }
  return { rounds, baseline };
}
