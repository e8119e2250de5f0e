// In-process launch latency: 1,000 launches of new threads (LAUNCHES to change) through app.inject on a
// temporary DATA_DIR, each durable before it answers. Prints the median and p99 in milliseconds.
// Run: npm run build && node dist/scripts/bench/launch-latency.js
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

const launches = Number(process.env.LAUNCHES ?? 1000);
const canvases = Number(process.env.CANVASES ?? 100);
const dataDir = await mkdtemp(path.join(tmpdir(), 'arr-launch-bench-'));
const owner = 'arr_owner_' + 'b'.repeat(43);
const app = await buildApp({
  config: loadConfig({ DATA_DIR: dataDir, OWNER_TOKEN: owner, RATE_LIMIT_WRITES_PER_MINUTE: '0', MAX_EVENT_LOOP_DELAY_MS: '0' }),
  logger: createLogger('silent'),
});
const headers = { authorization: `Bearer ${owner}` };
const profile = await app.inject({
  method: 'POST',
  url: '/api/acp/profiles',
  headers,
  payload: {
    alias: 'Bench',
    agentletId: 'mac-bench',
    workingDirPath: '/work',
    launch: { kind: 'acp-command', command: 'agent' },
    resourceIds: [],
  },
});
if (profile.statusCode !== 201) throw new Error(`profile: ${profile.statusCode} ${profile.body}`);
const profileId = profile.json().id;

const times: number[] = [];
for (let i = 0; i < launches; i++) {
  const started = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: '/api/acp/launch',
    headers,
    payload: { profileId, canvasId: `canvas-${i % canvases}`, threadId: `thread-${i}` },
  });
  times.push(performance.now() - started);
  if (res.statusCode !== 201) throw new Error(`launch ${i}: ${res.statusCode} ${res.body}`);
}
await app.close();
await rm(dataDir, { recursive: true, force: true });
times.sort((a, b) => a - b);
const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
console.log(`launches: ${launches} over ${canvases} canvases, sequential, in-process (app.inject), durable writes`);
console.log(`median ${at(0.5).toFixed(2)} ms · p99 ${at(0.99).toFixed(2)} ms · max ${times.at(-1)!.toFixed(2)} ms`);
