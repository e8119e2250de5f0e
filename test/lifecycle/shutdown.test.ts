// Graceful shutdown: requests in flight when close begins still get their audit lines written before the
// audit file closes (the HTTP side closes first, then the app drains its handlers, then the store closes).
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { readStoredResources } from '../../src/storage/json-file-store.js';
import { CANARY, canaryLogFile, tempDataDir, testEnv } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';
import { auditLines } from '../helpers/audit.js';

const body = (id: string) => ({
  schemaVersion: 1,
  name: `Shutdown ${id}`,
  description: 'A record written while the app closes.',
  instructions: 'Nothing to read.',
});

t.test('writes in flight when close begins are audited before the audit file closes', async (t) => {
  let admitted = 0;
  let refused = 0;
  for (let delayTicks = 0; delayTicks <= 40; delayTicks++) {
    const dataDir = await tempDataDir();
    const logFile = canaryLogFile();
    const logger = pino({ level: 'info' }, pino.destination({ dest: logFile, sync: true, mkdir: true }));
    const app = await buildApp({ config: loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false' })), logger });
    const headers = { authorization: `Bearer ${CANARY.huabu}` };
    const ids = Array.from({ length: 5 }, (_, i) => `shut-${delayTicks}-${i}`);
    const requests = ids.map((id) =>
      app.inject({ method: 'PUT', url: `/api/acp/providers/huabu/resources/${id}`, headers, payload: body(id) }),
    );
    for (let i = 0; i < delayTicks; i++) await new Promise((r) => setImmediate(r));
    await app.close();
    const answers = await Promise.all(requests);
    const audit = await auditLines(dataDir);
    const log = await readFile(logFile, 'utf8');
    t.notMatch(log, /audit log append failed/, `after ${delayTicks} ticks: no audit append failed`);
    const stored = new Set((await readStoredResources(dataDir)).map((r) => r.id));
    for (const [i, res] of answers.entries()) {
      const lines = audit.filter((a) => a.id === ids[i]);
      // Fastify's own 503 while closing (no `code`): refused at the door, it never reached a handler, so
      // nothing of it may be stored or audited.
      if (res.statusCode === 503 && res.json().code === undefined) {
        refused++;
        t.equal(lines.length, 0, `after ${delayTicks} ticks: refused ${ids[i]} has no audit line`);
        t.notOk(stored.has(ids[i]!), `after ${delayTicks} ticks: refused ${ids[i]} is not stored`);
        continue;
      }
      admitted++;
      t.equal(res.statusCode, 201, `after ${delayTicks} ticks: ${ids[i]} created (${res.body.slice(0, 80)})`);
      t.equal(lines.length, 1, `after ${delayTicks} ticks: ${ids[i]} (${res.statusCode}) has its audit line`);
      t.ok(stored.has(ids[i]!), `after ${delayTicks} ticks: ${ids[i]} is stored`);
    }
  }
  // The per-request checks must have run on both paths, or this test proved nothing about one of them.
  t.ok(admitted > 0, `${admitted} writes admitted and checked`);
  t.ok(refused > 0, `${refused} writes refused at the door and checked`);
});

t.test('profile writes in flight when close begins are stored and audited, and the store closes after them', async (t) => {
  let admitted = 0;
  let refused = 0;
  for (let delayTicks = 0; delayTicks <= 40; delayTicks += 2) {
    const dataDir = await tempDataDir();
    const logFile = canaryLogFile();
    const logger = pino({ level: 'info' }, pino.destination({ dest: logFile, sync: true, mkdir: true }));
    const app = await buildApp({
      config: loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false', REQUIRED_RESOURCE_IDS: '' })),
      logger,
    });
    const headers = { authorization: `Bearer ${CANARY.owner}` };
    const aliases = Array.from({ length: 5 }, (_, i) => `Shutdown ${delayTicks}-${i}`);
    const requests = aliases.map((alias) =>
      app.inject({
        method: 'POST',
        url: '/api/acp/profiles',
        headers,
        payload: { alias, agentletId: 'mac-a', workingDirPath: '/work', launch: { kind: 'acp-command', command: 'agent' } },
      }),
    );
    for (let i = 0; i < delayTicks; i++) await new Promise((r) => setImmediate(r));
    await app.close();
    const answers = await Promise.all(requests);
    const audit = await auditLines(dataDir);
    const log = await readFile(logFile, 'utf8');
    t.notMatch(log, /audit log append failed/, `after ${delayTicks} ticks: no audit append failed`);
    const registry = JSON.parse(
      await readFile(path.join(dataDir, 'agent-team', 'registry.json'), 'utf8').catch(() => '{"state":{"profiles":[]}}'),
    );
    let created = 0;
    for (const res of answers) {
      if (res.statusCode === 503 && res.json().code === undefined) {
        refused++;
        continue;
      }
      admitted++;
      created++;
      t.equal(res.statusCode, 201, `after ${delayTicks} ticks: created (${res.body.slice(0, 80)})`);
      const id = res.json().id;
      t.equal(audit.filter((a) => a.id === id).length, 1, `after ${delayTicks} ticks: ${id} has its audit line`);
      t.ok(
        registry.state.profiles.some((p: { id: string }) => p.id === id),
        `after ${delayTicks} ticks: ${id} is on disk`,
      );
    }
    // A refused request has no ID to look for: nothing beyond the created ones may be on disk or audited.
    t.equal(registry.state.profiles.length, created, `after ${delayTicks} ticks: only the created profiles are on disk`);
    t.equal(audit.filter((a) => a.action === 'profile.create').length, created, `after ${delayTicks} ticks: only they are audited`);
  }
  t.ok(admitted > 0, `${admitted} profile writes admitted and checked`);
  t.ok(refused > 0, `${refused} profile writes refused at the door and checked`);
});

t.test('writes whose clients hung up (as a load generator does at its end) still land with their audit lines', async (t) => {
  const http = await import('node:http');
  for (const delayMs of [0, 3, 8]) {
    const dataDir = await tempDataDir();
    const logFile = canaryLogFile();
    const logger = pino({ level: 'info' }, pino.destination({ dest: logFile, sync: true, mkdir: true }));
    const app = await buildApp({ config: loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false' })), logger });
    const { port } = new URL(await listen(app));
    const ids = Array.from({ length: 16 }, (_, i) => `hup-${delayMs}-${i}`);
    const agent = new http.Agent({ keepAlive: false });
    await Promise.all(
      ids.map(
        (id) =>
          new Promise<void>((resolve) => {
            const payload = JSON.stringify(body(id));
            const req = http.request({
              agent,
              host: '127.0.0.1',
              port,
              method: 'PUT',
              path: `/api/acp/providers/huabu/resources/${id}`,
              headers: {
                authorization: `Bearer ${CANARY.huabu}`,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              },
            });
            req.on('error', () => resolve());
            req.on('response', (res) => res.resume().on('end', resolve));
            req.end(payload, () => setTimeout(() => (req.destroy(), resolve()), delayMs));
          }),
      ),
    );
    await app.close();
    const log = await readFile(logFile, 'utf8');
    t.notMatch(log, /audit log append failed/, `hung up after ${delayMs} ms: no audit append failed`);
    const audit = await auditLines(dataDir);
    const stored = await readStoredResources(dataDir);
    for (const r of stored)
      t.equal(audit.filter((a) => a.id === r.id).length, 1, `hung up after ${delayMs} ms: stored ${r.id} has its audit line`);
  }
});

t.test('requests refused before their handler (a bad token, an unknown route) do not hold up a close', async (t) => {
  const dataDir = await tempDataDir();
  const app = await buildApp({
    config: loadConfig(testEnv(dataDir, { SEED_HUABU_RESOURCES: 'false' })),
    logger: pino({ level: 'silent' }),
  });
  const origin = await listen(app);
  const refused = await fetch(`${origin}/api/acp/resources`, { headers: { authorization: 'Bearer arr_owner_wrong' } });
  t.equal(refused.status, 401);
  const unknown = await fetch(`${origin}/no/such/route`);
  t.equal(unknown.status, 404);
  const closed = await Promise.race([
    app.close().then(() => 'closed'),
    new Promise((r) => setTimeout(() => r('still open after 5 s'), 5000)),
  ]);
  t.equal(closed, 'closed', 'the refused requests left the in-flight count when their responses ended');
});
