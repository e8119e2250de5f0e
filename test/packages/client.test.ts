// @agent-resource-registry/client against a real registry on a loopback socket: typed calls, the error envelope
// as a RegistryError, answers that are not the registry's, and the token kept out of every error.
import t from 'tap';
import http from 'node:http';
import { inspect } from 'node:util';
import {
  ERROR_CODES,
  RegistryClient,
  RegistryConnectionError,
  RegistryError,
  RegistryResponseError,
  type ReconcileRequest,
} from '@agent-resource-registry/client';
import { ERROR_CODES as SERVER_ERROR_CODES } from '../../src/errors.js';
import { CANARY } from '../helpers/build.js';
import { fakeRegistry, startRegistry } from '../helpers/agentlet.js';
import { freePort, listen } from '../helpers/sockets.js';

const MACHINE = 'client-test-7f3a';

function record(id: string): ReconcileRequest['resources'][number] {
  return {
    schemaVersion: 1,
    id,
    name: `Name of ${id}`,
    description: `About ${id}.`,
    instructions: `Read $AGENT_RESOURCE_DIR/skills/${id}/SKILL.md before using ${id}.`,
  };
}

/** Every way an error can be shown: its message, stack, inspection (with cause) and JSON. */
function shown(err: unknown): string {
  return [String(err), (err as Error).stack ?? '', inspect(err, { depth: 6 }), JSON.stringify(err)].join('\n');
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('the call succeeded');
}

t.test("the client's error codes are the server's, with the same statuses", (t) => {
  t.same(ERROR_CODES, SERVER_ERROR_CODES);
  t.end();
});

t.test('typed calls succeed against a real registry', async (t) => {
  const reg = await startRegistry(t);
  const token = await reg.h.enroll(MACHINE);
  const client = new RegistryClient({ baseUrl: `${reg.url}/`, token });
  t.equal(client.baseUrl, reg.url, 'trailing slash dropped');

  const planned = await client.reconcileProviderResources(MACHINE, { resources: [record('client-skill')] }, { dryRun: true });
  t.same(planned, { dryRun: true, created: ['client-skill'], replaced: [], withdrawn: [], unchanged: [] }, 'dry run plans');
  t.same((await client.listProviderResources(MACHINE)).resources, [], 'and changes nothing');

  const done = await client.reconcileProviderResources(MACHINE, { resources: [record('client-skill')] });
  t.same(done.created, ['client-skill']);
  const { resources } = await client.listProviderResources(MACHINE);
  t.same(
    resources.map((r) => [r.id, r.provider]),
    [['client-skill', MACHINE]],
  );
  t.same(reg.providerRequests, [
    `PUT /api/acp/providers/${MACHINE}/resources?dryRun=true`,
    `GET /api/acp/providers/${MACHINE}/resources`,
    `PUT /api/acp/providers/${MACHINE}/resources`,
    `GET /api/acp/providers/${MACHINE}/resources`,
  ]);
});

t.test('the page iterators walk the owner catalogue and an agent catalogue by Link rel="next"', async (t) => {
  const reg = await startRegistry(t);
  const token = await reg.h.enroll(MACHINE);
  const provider = new RegistryClient({ baseUrl: reg.url, token });
  await provider.reconcileProviderResources(MACHINE, { resources: ['alpha', 'beta', 'gamma', 'delta', 'web-search'].map(record) });
  const owner = new RegistryClient({ baseUrl: reg.url, token: CANARY.owner });
  const pages: string[][] = [];
  for await (const page of owner.cataloguePages({ limit: 2, provider: MACHINE })) pages.push(page.resources.map((r) => r.id));
  t.same(pages, [['alpha', 'beta'], ['delta', 'gamma'], ['web-search']], 'every record once, two at a time');
  const found: string[] = [];
  for await (const page of owner.cataloguePages({ q: 'web', limit: 1 })) found.push(...page.resources.map((r) => r.id));
  t.same(found, ['web-search']);
  const canvasToken = await reg.h.canvasToken('canvas-client', MACHINE);
  const agent = new RegistryClient({ baseUrl: reg.url, token: canvasToken });
  const seen: string[] = [];
  for await (const page of agent.rfsPages('canvas-client', { limit: 3 })) seen.push(...page.resources.map((r) => r.id));
  t.same(seen, ['alpha', 'beta', 'delta', 'gamma', 'web-search']);
  const refused = await caught(
    (async () => {
      for await (const _ of owner.cataloguePages({ limit: 0 })) void _;
    })(),
  );
  t.match(refused, { name: 'RegistryError', code: 'validation_failed' });
});

t.test('every route through client.api: an owner, a provider and an agent call, typed, errors thrown', async (t) => {
  const reg = await startRegistry(t);
  const machineToken = await reg.h.enroll(MACHINE);
  const provider = new RegistryClient({ baseUrl: reg.url, token: machineToken });
  const put = await provider.api.PUT('/api/acp/providers/{provider}/resources/{id}', {
    params: { path: { provider: MACHINE, id: 'api-skill' } },
    body: {
      schemaVersion: 2,
      name: 'API skill',
      sourceContent: '---\nname: api-skill\ndescription: Shows the typed client.\n---\n\nUse it.',
    },
  });
  t.equal(put.response.status, 201, 'a provider registers one record');
  t.match(put.data, { schemaVersion: 2, id: 'api-skill', provider: MACHINE });

  const owner = new RegistryClient({ baseUrl: reg.url, token: CANARY.owner });
  const one = await owner.api.GET('/api/acp/resources/{id}', { params: { path: { id: 'api-skill' }, query: { schemaVersion: 1 } } });
  t.match(one.data, { schemaVersion: 1, id: 'api-skill', description: 'Shows the typed client.' }, 'the owner reads it, query typed');
  const machines = await owner.api.GET('/api/acp/machines');
  t.same(
    machines.data!.machines.map((m) => m.machineId),
    [MACHINE],
    'the owner lists machines',
  );
  const canvas = await owner.api.POST('/api/acp/canvas-tokens', { body: { canvasId: 'canvas-api', agentletId: MACHINE } });
  t.equal(canvas.response.status, 201);

  const agent = new RegistryClient({ baseUrl: reg.url, token: canvas.data!.token });
  const seen = await agent.api.GET('/api/rfs/{canvasId}/resources', { params: { path: { canvasId: 'canvas-api' } } });
  t.ok(
    seen.data!.resources.some((r) => r.id === 'api-skill'),
    'the agent reads its catalogue',
  );
  const refused = await caught(agent.api.GET('/api/rfs/{canvasId}/resources', { params: { path: { canvasId: 'other-canvas' } } }));
  t.ok(refused instanceof RegistryError, 'an error answer throws RegistryError');
  t.match(refused, { statusCode: 403, code: 'forbidden' });
  t.notMatch(shown(refused), canvas.data!.token, 'the token is in no part of the error');
  const missing = await caught(owner.api.GET('/api/acp/resources/{id}', { params: { path: { id: 'no-such-record' } } }));
  t.match(missing, { statusCode: 404, code: 'resource_not_found' });
});

t.test('error answers become RegistryErrors with the code and status; the token is in none of them', async (t) => {
  const reg = await startRegistry(t);
  const token = await reg.h.enroll(MACHINE);
  const other = await reg.h.enroll('client-test-other');
  const wrong = `${token.slice(0, -4)}xxxx`;

  const unauthorized = await caught(new RegistryClient({ baseUrl: reg.url, token: wrong }).listProviderResources(MACHINE));
  t.type(unauthorized, RegistryError);
  t.match(unauthorized, { name: 'RegistryError', statusCode: 401, code: 'unauthorized', error: 'Unauthorized' }, 'a wrong token: 401');
  t.notOk(shown(unauthorized).includes(wrong), 'the wrong token is not shown');

  const client = new RegistryClient({ baseUrl: reg.url, token });
  const forbidden = await caught(client.reconcileProviderResources('client-test-other', { resources: [] }));
  t.match(forbidden, { statusCode: 403, code: 'forbidden' }, "another machine's set: 403");

  const invalid = await caught(client.reconcileProviderResources(MACHINE, { resources: [record('Not A Kebab ID')] }));
  t.type(invalid, RegistryError);
  t.match(invalid, { statusCode: 400, code: 'validation_failed' }, 'an invalid record: 400');
  t.type((invalid as RegistryError).details, 'object', 'with details');

  t.equal(
    (
      await new RegistryClient({ baseUrl: reg.url, token: other }).reconcileProviderResources('client-test-other', {
        resources: [record('taken')],
      })
    ).created.length,
    1,
  );
  const conflict = await caught(client.reconcileProviderResources(MACHINE, { resources: [record('taken')] }));
  t.match(conflict, {
    statusCode: 409,
    code: 'resource_conflict',
    details: { conflicts: [{ id: 'taken', provider: 'client-test-other' }] },
  });

  for (const err of [unauthorized, forbidden, invalid, conflict]) {
    t.notOk(shown(err).includes(token) || shown(err).includes(other), `no token in ${(err as RegistryError).code}`);
  }
});

t.test('answers that are not the registry’s, and no answer at all', async (t) => {
  const token = 'arr_machine_ClientTestTokenNotShown0123456789';
  const fake = await fakeRegistry(t, (req, res) => {
    if (req.url?.includes('big')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resources: ['x'.repeat(4096)] }));
    } else if (req.url?.includes('html')) {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<h1>Bad gateway</h1>');
    } else if (req.url?.includes('odd-code')) {
      res.writeHead(418, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ statusCode: 418, code: 'teapot', error: "I'm a teapot", message: 'short and stout' }));
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    }
  });
  const client = new RegistryClient({ baseUrl: fake.url, token, maxResponseBytes: 1024 });

  const big = await caught(client.listProviderResources('big'));
  t.type(big, RegistryResponseError);
  t.match(big, { problem: 'too_large', statusCode: 200 }, 'past maxResponseBytes');
  t.match(await caught(client.listProviderResources('html')), { problem: 'no_error_envelope', statusCode: 502 }, 'an error page');
  t.match(
    await caught(client.listProviderResources('odd-code')),
    { problem: 'no_error_envelope', statusCode: 418, body: { code: 'teapot' } },
    'a code that is not one of the registry’s',
  );
  t.match(await caught(client.listProviderResources('text')), { problem: 'not_json', statusCode: 200 }, 'a success without JSON');

  const port = await freePort();
  const refused = await caught(new RegistryClient({ baseUrl: `http://127.0.0.1:${port}`, token }).listProviderResources('m'));
  t.type(refused, RegistryConnectionError);
  t.match(refused, { timedOut: false, message: `cannot reach http://127.0.0.1:${port}` }, 'connection refused');

  const silent = http.createServer(() => {});
  const url = await listen(silent);
  t.teardown(() => {
    silent.closeAllConnections();
    silent.close();
  });
  const timedOut = await caught(new RegistryClient({ baseUrl: url, token, timeoutMs: 200 }).listProviderResources('m'));
  t.match(timedOut, { name: 'RegistryConnectionError', timedOut: true, message: `${url} did not answer within 200 ms` }, 'a timeout');

  for (const err of [big, refused, timedOut]) t.notOk(shown(err).includes(token), `no token in: ${(err as Error).message}`);
  const refusal = await caught(Promise.resolve().then(() => new RegistryClient({ baseUrl: `http://user:${token}@127.0.0.1/` })));
  t.match(refusal, { name: 'TypeError', message: /must not carry credentials/ }, 'a base URL with credentials is refused');
  t.notOk(shown(refusal).includes(token), 'without repeating it');
});
