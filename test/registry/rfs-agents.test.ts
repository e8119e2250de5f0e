// What an agent reads and records over RFS with its canvas token, on a real socket: the host guides
// (`/skill`, `/skill/:name`), the agent profiles of its machine, local receipts (POST/DELETE) with their
// refusals, audit lines and rate limit; and the host records seeded as v2, upgraded from the old v1 seed
// without losing the owner's customization.
// Shapes from upstream microsoft/Huabu: packages/shared/src/types/api/agent-resource.ts @a8514a7df0798d075ddffe50ef3bd7f0ddcd2d25
// (`localResourceReceiptRequestSchema`, `localResourceReceiptResponseSchema`, `localResourceRemovalResponseSchema`);
// apps/server/src/modules/remote_fs/rfs.route.ts @99a827ddf54bcad43059bbceb1d531d452906656 (`GET skill`,
// `GET skill/:skillId` as text/markdown, 404 `skill_not_found`; `GET agent/profiles` → `{profiles:[{id, alias, default?}]}`).
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { HUABU_RESOURCES } from '../../src/host/huabu.js';
import { build, CANARY, tempDataDir, type TestApp } from '../helpers/build.js';
import { listen } from '../helpers/sockets.js';
import { auditLines } from '../helpers/audit.js';
import { sansDigest } from '../helpers/digest.js';

type Ask = (
  method: string,
  url: string,
  options?: { token?: string; body?: unknown; headers?: Record<string, string> },
) => Promise<{ status: number; type: string; text: string; json: () => Body }>;

/** The members of the answers this file reads (each answer has some of them). */
interface Body {
  resources: { id: string; [key: string]: unknown }[];
  resource: Record<string, unknown>;
  profiles: Record<string, unknown>[];
  id: string;
  provider: string;
  code: string;
  removed: boolean;
}

/** The app on a real socket, and a fetch with a bearer token. */
async function served(h: TestApp): Promise<Ask> {
  const origin = await listen(h.app);
  return async (method, url, { token, body, headers = {} } = {}) => {
    const res = await fetch(origin + url, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', text, json: () => JSON.parse(text) as Body };
  };
}

const receipt = (id: string, fields: Record<string, unknown> = {}) => ({
  id,
  kind: 'tool',
  name: `Tool ${id}`,
  sourceContent: `Runs ${id}.\n\nRun $AGENT_RESOURCE_DIR/tools/${id}/run.sh.`,
  entrypoint: `tools/${id}/run.sh`,
  ...fields,
});

t.test('GET /skill and /skill/:name: the host guides as Markdown, for this canvas only', async (t) => {
  const h = await build(t);
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);

  const index = await ask('GET', '/api/rfs/canvas-x/skill', { token });
  t.equal(index.status, 200);
  t.equal(index.type, 'text/markdown; charset=utf-8');
  t.match(index.text, /`huabu-access`/);
  t.match(index.text, /`local-resource-management`/);

  const access = await ask('GET', '/api/rfs/canvas-x/skill/huabu-access', { token });
  t.equal(access.status, 200);
  t.equal(access.type, 'text/markdown; charset=utf-8');
  for (const needle of [
    '$HUABU_RFS_URL/resources',
    '$HUABU_RESOURCE_GRANT',
    'X-Huabu-Thread-Id',
    '/invoke',
    '$HUABU_RFS_URL/agent/profiles',
  ]) {
    t.ok(access.text.includes(needle), `huabu-access tells the agent about ${needle}`);
  }
  const local = await ask('GET', '/api/rfs/canvas-x/skill/local-resource-management', { token });
  t.equal(local.status, 200);
  for (const needle of [
    '$AGENT_RESOURCE_DIR',
    'POST "$HUABU_RFS_URL/resources/local/receipts"',
    'DELETE "$HUABU_RFS_URL/resources/local/receipts/',
  ]) {
    t.ok(local.text.includes(needle), `local-resource-management tells the agent about ${needle}`);
  }

  const unknown = await ask('GET', '/api/rfs/canvas-x/skill/web-search', { token });
  t.equal(unknown.status, 404);
  t.equal(unknown.json().code, 'skill_not_found');
  t.equal((await ask('GET', '/api/rfs/canvas-y/skill', { token })).status, 403, "another canvas's guides are refused");
  t.equal((await ask('GET', '/api/rfs/canvas-x/skill')).status, 401, 'no token, no guide');
  t.equal(
    (await ask('GET', '/api/rfs/canvas-x/skill/huabu-access', { token: CANARY.owner })).status,
    403,
    'the owner token is not an agent token',
  );
});

t.test('the seeded host records are v2 and every guide they name is served', async (t) => {
  const h = await build(t, { env: { SEED_HUABU_RESOURCES: 'true' } });
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);
  const list = (await ask('GET', '/api/rfs/canvas-x/resources?schemaVersion=2', { token })).json().resources as {
    id: string;
    provider: string;
    sourceContent: string;
  }[];
  for (const seeded of HUABU_RESOURCES) {
    const record = list.find((r) => r.id === seeded.id);
    t.match(record, { schemaVersion: 2, provider: 'huabu' }, `${seeded.id} is seeded as record v2`);
    const guides = [...record!.sourceContent.matchAll(/\$HUABU_RFS_URL\/skill\/([a-z-]+)/g)].map((m) => m[1]!);
    t.ok(guides.includes(seeded.id), `${seeded.id} points the agent at its own guide`);
    for (const name of guides)
      t.equal(
        (await ask('GET', `/api/rfs/canvas-x/skill/${name}`, { token })).status,
        200,
        `${seeded.id} names /skill/${name}, which is served`,
      );
  }
  const local = list.find((r) => r.id === 'local-resource-management')!;
  t.match(local.sourceContent, /resources\/local\/receipts/, 'the local record names the receipts route');
});

t.test('a store holding the old v1 seed is upgraded to v2 at start; the owner keeps displayName and userContent', async (t) => {
  const dataDir = await tempDataDir();
  const old = await build(t, { dataDir });
  // The v1 record an earlier version seeded (its shape, not its text, matters here).
  const put = await old.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources/huabu-access',
    headers: old.huabu,
    payload: {
      schemaVersion: 1,
      name: 'Huabu access',
      description: 'How an agent reaches the canvas.',
      instructions: 'Read $HUABU_RFS_URL/resources.',
    },
  });
  t.equal(put.statusCode, 201);
  const patch = await old.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/huabu-access',
    headers: old.owner,
    payload: { displayName: 'Canvas access', userContent: 'Answer in French.' },
  });
  t.equal(patch.statusCode, 200);
  await old.app.close();

  const h = await build(t, { dataDir, env: { SEED_HUABU_RESOURCES: 'true' } });
  const record = (await h.app.inject({ url: '/api/acp/resources/huabu-access?schemaVersion=2', headers: h.owner })).json();
  const seeded = HUABU_RESOURCES.find((r) => r.id === 'huabu-access')! as { sourceContent: string };
  t.same(sansDigest(record), {
    schemaVersion: 2,
    id: 'huabu-access',
    name: 'Huabu access',
    displayName: 'Canvas access',
    provider: 'huabu',
    sourceContent: seeded.sourceContent,
    userContent: 'Answer in French.',
  });
  const linesAfterUpgrade = (await auditLines(h)).length;
  await h.app.close();

  const again = await build(t, { dataDir, env: { SEED_HUABU_RESOURCES: 'true' } });
  t.same(
    (await again.app.inject({ url: '/api/acp/resources/huabu-access?schemaVersion=2', headers: again.owner })).json(),
    record,
    'a second start changes nothing',
  );
  t.equal((await auditLines(again)).length, linesAfterUpgrade, 'and audits nothing');
});

t.test('GET /agent/profiles: the selectable profiles of the token machine; the first is the default', async (t) => {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: '' } });
  await h.enroll('agentlet-a');
  await h.enroll('agentlet-b');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);
  t.same((await ask('GET', '/api/rfs/canvas-x/agent/profiles', { token })).json(), { profiles: [] }, 'none yet');

  const ids: Record<string, string> = {};
  for (const [alias, agentletId] of [
    ['Writer', 'agentlet-a'],
    ['Elsewhere', 'agentlet-b'],
    ['Reviewer', 'agentlet-a'],
  ] as const) {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: { alias, agentletId, workingDirPath: '/work', launch: { kind: 'acp-command', command: 'agent' }, resourceIds: [] },
    });
    t.equal(res.statusCode, 201);
    ids[alias] = res.json().id;
  }
  const order = (await h.app.inject({ url: '/api/acp/profiles', headers: h.owner }))
    .json()
    .profiles.map((p: { id: string }) => p.id) as string[];
  const mine = [ids.Writer!, ids.Reviewer!].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const alias = (id: string) => (id === ids.Writer ? 'Writer' : 'Reviewer');
  const res = await ask('GET', '/api/rfs/canvas-x/agent/profiles', { token });
  t.equal(res.status, 200);
  t.same(
    res.json(),
    {
      profiles: [
        { id: mine[0], alias: alias(mine[0]!), default: true },
        { id: mine[1], alias: alias(mine[1]!) },
      ],
    },
    "another machine's profile is left out",
  );
  t.equal((await ask('GET', '/api/rfs/canvas-y/agent/profiles', { token })).status, 403, 'wrong canvas');
});

t.test('POST and DELETE /resources/local/receipts: the token machine records its installs; audited', async (t) => {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: '' } });
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);

  const created = await ask('POST', '/api/rfs/canvas-x/resources/local/receipts', {
    token,
    body: receipt('pdf-grep', { source: 'https://example.org/pdf-grep', name: '  PDF grep ' }),
  });
  t.equal(created.status, 200);
  t.same(sansDigest(created.json()), {
    resource: {
      schemaVersion: 2,
      id: 'pdf-grep',
      name: 'PDF grep',
      provider: 'agentlet-a',
      sourceContent: 'Runs pdf-grep.\n\nRun $AGENT_RESOURCE_DIR/tools/pdf-grep/run.sh.',
      userContent: '',
    },
  });
  const seen = (await ask('GET', '/api/rfs/canvas-x/resources?schemaVersion=2', { token })).json().resources;
  t.same(
    seen.map((r: { id: string }) => r.id),
    ['pdf-grep'],
    'the agent finds it in its catalogue',
  );
  t.notMatch(JSON.stringify(seen), /tools\/pdf-grep\/run\.sh"|example\.org/, 'entrypoint and source stay on the machine');

  // The owner customizes it; the agent records it again (an update): the customization stays.
  await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/pdf-grep',
    headers: h.owner,
    payload: { displayName: 'Grep PDFs', userContent: 'Only in ~/docs.' },
  });
  const replaced = await ask('POST', '/api/rfs/canvas-x/resources/local/receipts', {
    token,
    body: receipt('pdf-grep', { sourceContent: 'Runs pdf-grep, v2.' }),
  });
  t.match(replaced.json().resource, { displayName: 'Grep PDFs', userContent: 'Only in ~/docs.', sourceContent: 'Runs pdf-grep, v2.' });

  const removed = await ask('DELETE', '/api/rfs/canvas-x/resources/local/receipts/pdf-grep', { token });
  t.equal(removed.status, 200);
  t.same(removed.json(), { removed: true });
  t.equal((await h.app.inject({ url: '/api/acp/resources/pdf-grep', headers: h.owner })).statusCode, 404, 'the record is withdrawn');
  t.same(
    (await ask('DELETE', '/api/rfs/canvas-x/resources/local/receipts/pdf-grep', { token })).json(),
    { removed: false },
    'nothing left to remove',
  );

  const audit = (await auditLines(h)).filter((a) => a.action.startsWith('receipt.'));
  t.same(
    audit.map((a) => [a.actor, a.action, a.id, a.outcome]),
    [
      ['canvas:canvas-x@agentlet-a', 'receipt.record', 'pdf-grep', 'created'],
      ['canvas:canvas-x@agentlet-a', 'receipt.record', 'pdf-grep', 'replaced'],
      ['canvas:canvas-x@agentlet-a', 'receipt.remove', 'pdf-grep', 'withdrawn'],
      ['canvas:canvas-x@agentlet-a', 'receipt.remove', 'pdf-grep', 'resource_not_found'],
    ],
  );
  const log = await readFile(h.logFile, 'utf8');
  const auditText = await readFile(path.join(h.dataDir, 'audit.jsonl'), 'utf8');
  for (const [where, text] of [
    ['log', log],
    ['audit', auditText],
    ['answers', created.text + replaced.text + removed.text],
  ] as const) {
    t.notOk(text.includes(token), `no canvas token in the ${where}`);
  }
});

t.test('local receipts refuse host IDs, other machines, secrets, bad paths, other canvases; refusals are audited', async (t) => {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: 'huabu-access,local-resource-management' } });
  const b = await h.enroll('agentlet-b');
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);
  t.equal((await h.put('agentlet-b', b, 'b-tool')).statusCode, 201);
  t.equal((await h.put('huabu', CANARY.huabu, 'host-notes')).statusCode, 201);
  const post = (body: unknown, canvas = 'canvas-x') => ask('POST', `/api/rfs/${canvas}/resources/local/receipts`, { token, body });

  // Host IDs: the reserved ones (the rule of every write) even when not held; any record of the host.
  for (const id of ['huabu-access', 'local-resource-management', 'host-notes']) {
    const res = await post(receipt(id));
    t.equal(res.status, 403, `${id} belongs to the host`);
    t.equal(res.json().code, 'forbidden');
    const del = await ask('DELETE', `/api/rfs/canvas-x/resources/local/receipts/${id}`, { token });
    t.equal(del.status, 403, `an agent cannot remove ${id}`);
  }
  // An ID this server neither reserves nor holds for the host is the machine's, as for its own PUT.
  const free = await post(receipt('web-search'));
  t.equal(free.status, 200, 'web-search, a hosted capability this server does not offer, is an ordinary ID here');
  t.equal((await ask('DELETE', '/api/rfs/canvas-x/resources/local/receipts/web-search', { token })).status, 200);
  const other = await post(receipt('b-tool'));
  t.equal(other.status, 409, "another machine's ID");
  t.equal(other.json().code, 'resource_conflict');
  t.equal((await ask('DELETE', '/api/rfs/canvas-x/resources/local/receipts/b-tool', { token })).status, 409);
  t.equal(
    (await h.app.inject({ url: '/api/acp/resources/b-tool', headers: h.owner })).json().provider,
    'agentlet-b',
    "the other machine's record is untouched",
  );

  const secret = `ghp_${'a1B2'.repeat(9)}`;
  for (const field of ['sourceContent', 'name', 'entrypoint', 'source']) {
    const value = field === 'entrypoint' ? `tools/${secret}/run.sh` : `uses ${secret}`;
    const res = await post(receipt('leaky', { [field]: value }));
    t.equal(res.status, 422, `a secret in ${field} is refused`);
    t.equal(res.json().code, 'secret_detected');
    t.notOk(res.text.includes(secret), 'and not echoed');
  }
  t.equal((await h.app.inject({ url: '/api/acp/resources/leaky', headers: h.owner })).statusCode, 404, 'nothing was stored');

  for (const entrypoint of ['/etc/passwd', '../outside.sh', 'tools/../../x', 'tools\\x.exe', '']) {
    t.equal((await post(receipt('bad-path', { entrypoint }))).status, 400, `entrypoint ${JSON.stringify(entrypoint)} is refused`);
  }
  t.equal((await post(receipt('bad-kind', { kind: 'plugin' }))).status, 400, 'kind is skill, tool or connector');
  t.equal((await post({ ...receipt('extra'), provider: 'agentlet-b' })).status, 400, 'the provider is never taken from the body');
  t.equal((await post(receipt('other-canvas'), 'canvas-y')).status, 403, 'another canvas is refused');
  t.equal(
    (await ask('POST', '/api/rfs/canvas-x/resources/local/receipts', { token: CANARY.owner, body: receipt('owner-try') })).status,
    403,
    'the owner token is not an agent token',
  );

  const refused = (await auditLines(h)).filter((a) => a.action === 'receipt.record').map((a) => [a.id, a.outcome]);
  t.same(
    refused,
    [
      ['huabu-access', 'forbidden'],
      ['local-resource-management', 'forbidden'],
      ['host-notes', 'forbidden'],
      ['web-search', 'created'],
      ['b-tool', 'resource_conflict'],
      ['leaky', 'secret_detected'],
      ['leaky', 'secret_detected'],
      ['leaky', 'secret_detected'],
      ['leaky', 'secret_detected'],
    ],
    'every record, each refusal included, is audited',
  );
  t.notOk((await readFile(path.join(h.dataDir, 'audit.jsonl'), 'utf8')).includes(secret), 'no secret in the audit log');
  t.notOk((await readFile(h.logFile, 'utf8')).includes(secret), 'no secret in the log');
});

t.test('local receipts are rate-limited like every write', async (t) => {
  const h = await build(t, { env: { RATE_LIMIT_WRITES_PER_MINUTE: '2' } });
  await h.enroll('agentlet-a');
  const token = await h.canvasToken('canvas-x', 'agentlet-a');
  const ask = await served(h);
  const statuses: number[] = [];
  for (const id of ['one', 'two', 'three'])
    statuses.push((await ask('POST', '/api/rfs/canvas-x/resources/local/receipts', { token, body: receipt(id) })).status);
  t.same(statuses, [200, 200, 429]);
  t.equal((await ask('GET', '/api/rfs/canvas-x/skill', { token })).status, 200, 'reads are not limited');
});
