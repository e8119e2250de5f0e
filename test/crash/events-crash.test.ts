// Crash test of the change log (docs/events.md), in the style of crash.test.ts: concurrent writers (resource
// registrations and withdrawals, owner customizations, machine enrollments, profile creates) against the
// real server process, SIGKILL at a seeded random moment, restart on the same DATA_DIR, then the log is
// compared with the state: replaying the events gives exactly the records stored (no event for a change
// that was lost, no durable change without its event), every acknowledged change has exactly one event,
// cursors increase and none repeats.
//
// EVENTS_CRASH_ROUNDS (default 2; `npm run test:slow` runs 6) and CRASH_SEED (default random; printed) reproduce a run:
//   npm run build && CRASH_SEED=<seed> EVENTS_CRASH_ROUNDS=<n> npx tap test/crash/events-crash.test.ts
import t, { type Test } from 'tap';
import { randomInt } from 'node:crypto';
import { request } from 'undici';
import { CANARY, tempDataDir, testEnv } from '../helpers/build.js';
import { rngFor } from './harness.js';
import { killAllServers, startServer, type RunningServer } from './server-process.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

const rounds = Number(process.env.EVENTS_CRASH_ROUNDS ?? 2);
const seed = Number(process.env.CRASH_SEED ?? randomInt(2 ** 31));
const pgRounds = Math.min(rounds, 4);
t.setTimeout(Math.max(240_000, (rounds + pgRounds) * 25_000));
t.teardown(killAllServers);
t.comment(
  `events crash test seed ${seed} (reproduce: CRASH_SEED=${seed} EVENTS_CRASH_ROUNDS=${rounds} npx tap test/crash/events-crash.test.ts)`,
);

const owner = { authorization: `Bearer ${CANARY.owner}`, 'content-type': 'application/json' };
const huabu = { authorization: `Bearer ${CANARY.huabu}`, 'content-type': 'application/json' };

interface Event {
  id: string;
  type: string;
  subject: { kind: string; id: string; provider?: string };
}

async function call(
  origin: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await request(`${origin}${path}`, {
    method: method as 'GET',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

async function allEvents(origin: string): Promise<Event[]> {
  const out: Event[] = [];
  let since = '';
  for (;;) {
    const { status, json } = await call(origin, 'GET', `/api/acp/changes?limit=1000${since}`, owner);
    if (status !== 200) throw new Error(`changes: ${status}`);
    const page = json as { changes: Event[]; next: string };
    if (page.changes.length === 0) return out;
    out.push(...page.changes);
    since = `&since=${page.next}`;
  }
}

async function killDuringWrites(t: Test, database: string | undefined, rounds: number): Promise<void> {
  const dataDir = await tempDataDir();
  const env = testEnv(dataDir, {
    SEED_HUABU_RESOURCES: 'false',
    RATE_LIMIT_WRITES_PER_MINUTE: '0',
    ...(database === undefined ? {} : { DATABASE_URL: database }),
  });
  /** Changes acknowledged (2xx), by the kind of event each must have: `type id`. */
  const acknowledged: string[] = [];
  let unknown = 0;
  let server: RunningServer = await startServer(env);
  t.equal((await call(server.origin, 'POST', '/api/acp/machines', owner, { machineId: 'crash-host' })).status, 201);
  acknowledged.push('machine.enrolled crash-host');

  for (let round = 0; round < rounds; round++) {
    const random = rngFor(seed, round);
    const pickOf = (n: number) => Math.floor(random() * n);
    const origin = server.origin;
    let stop = false;
    const writer = async (w: number) => {
      const mine: string[] = [];
      for (let k = 0; !stop; k++) {
        const pick = pickOf(10);
        const id = `c-${round}-${w}-${k}`;
        let op: { method: string; path: string; headers: Record<string, string>; body?: unknown; event: string; ok: number };
        if (pick < 4 || mine.length === 0) {
          op = {
            method: 'PUT',
            path: `/api/acp/providers/huabu/resources/${id}`,
            headers: huabu,
            body: { schemaVersion: 1, name: id, description: 'D.', instructions: 'I.' },
            event: `resource.created ${id}`,
            ok: 201,
          };
        } else if (pick < 6) {
          const victim = mine.splice(pickOf(mine.length), 1)[0]!;
          op = {
            method: 'DELETE',
            path: `/api/acp/providers/huabu/resources/${victim}`,
            headers: huabu,
            event: `resource.withdrawn ${victim}`,
            ok: 204,
          };
        } else if (pick < 7) {
          const target = mine[pickOf(mine.length)]!;
          op = {
            method: 'PATCH',
            path: `/api/acp/resources/${target}`,
            headers: owner,
            body: { userContent: `Note ${k}.` },
            event: `resource.customized ${target}`,
            ok: 200,
          };
        } else if (pick < 9) {
          op = {
            method: 'POST',
            path: '/api/acp/machines',
            headers: owner,
            body: { machineId: `m-${round}-${w}-${k}` },
            event: `machine.enrolled m-${round}-${w}-${k}`,
            ok: 201,
          };
        } else {
          op = {
            method: 'POST',
            path: '/api/acp/profiles',
            headers: owner,
            body: {
              alias: `Agent ${round} ${w} ${k}`,
              agentletId: 'crash-host',
              workingDirPath: '/w',
              launch: { kind: 'acp-command', command: 'claude-code-acp' },
            },
            event: 'profile.created',
            ok: 201,
          };
        }
        try {
          const { status, json } = await call(origin, op.method, op.path, op.headers, op.body);
          if (status !== op.ok) continue; // a refusal (a customization repeated unchanged is 200 with no event: not counted)
          const event = op.event === 'profile.created' ? `profile.created ${(json as { id: string }).id}` : op.event;
          // A customization that changed nothing has no event; the writers always change the note.
          acknowledged.push(event);
          if (op.event.startsWith('resource.created')) mine.push(id);
        } catch {
          unknown++;
          return;
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    await new Promise((r) => setTimeout(r, 400 + pickOf(1_200)));
    await server.kill();
    stop = true;
    await Promise.all(writers);
    server = await startServer(env);
  }

  const origin = server.origin;
  const events = await allEvents(origin);
  const cursors = events.map((e) => Number(e.id));
  t.same(
    cursors,
    [...new Set(cursors)].sort((a, b) => a - b),
    'cursors increase and none repeats',
  );

  // Replaying the log gives exactly the stored state.
  const resources = new Set<string>();
  const machines = new Set<string>();
  const profiles = new Set<string>();
  for (const e of events) {
    if (e.type === 'resource.created') resources.add(e.subject.id);
    if (e.type === 'resource.withdrawn') resources.delete(e.subject.id);
    if (e.type === 'machine.enrolled') machines.add(e.subject.id);
    if (e.type === 'profile.created') profiles.add(e.subject.id);
  }
  const stored = (await call(origin, 'GET', '/api/acp/resources', owner)).json as { resources: { id: string }[] };
  const storedMachines = (await call(origin, 'GET', '/api/acp/machines', owner)).json as { machines: { machineId: string }[] };
  const storedProfiles = (await call(origin, 'GET', '/api/acp/profiles', owner)).json as { profiles: { id: string }[] };
  t.same([...resources].sort(), stored.resources.map((r) => r.id).sort(), 'the resource events replay to exactly the stored records');
  t.same(
    [...machines].sort(),
    storedMachines.machines.map((m) => m.machineId).sort(),
    'the machine events replay to exactly the enrolled machines',
  );
  t.same([...profiles].sort(), storedProfiles.profiles.map((p) => p.id).sort(), 'the profile events replay to exactly the stored profiles');

  // Every acknowledged change has its event, exactly once.
  const counts = new Map<string, number>();
  for (const e of events) counts.set(`${e.type} ${e.subject.id}`, (counts.get(`${e.type} ${e.subject.id}`) ?? 0) + 1);
  const missing = acknowledged.filter((a) => !counts.has(a));
  t.same(missing.slice(0, 10), [], 'every acknowledged change has its event');
  const repeated = [...counts].filter(([key, n]) => n > 1 && !key.startsWith('resource.customized'));
  t.same(repeated.slice(0, 10), [], 'no change has two events');
  t.comment(`${rounds} rounds, ${acknowledged.length} acknowledged changes, ${unknown} cut off by the kills, ${events.length} events`);
  t.ok(unknown > 0, 'some writes were cut off by the kills');
  await server.kill();
}

t.test('JSON store: kill -9 during writes: every durable change has exactly its event, and no event outlives a lost change', (t) =>
  killDuringWrites(t, undefined, rounds),
);

// On PostgreSQL a change and its event share one transaction; the kill tests that the service's side (the
// answer, the numbering at commit, the restart's reading of the table) keeps that promise too.
t.test('PostgreSQL: kill -9 during writes: every durable change has exactly its event, and no event outlives a lost change', async (t) => {
  const base = postgresOrSkip(t);
  if (base === undefined) return;
  await killDuringWrites(t, await freshDatabase(t, base), pgRounds);
});
