// Hosted-capability invocation in upstream Huabu's shapes, over real sockets (test/helpers/invocation-world.ts):
// the request's `correlationId` (echoed in the answer and the audit line, trimmed and bounded as upstream's
// schema does, refused when it holds a secret), the answer's `result`, and upstream's error codes with our
// finer reason in `details.reason`, as the OpenAPI document lists them.
//
// Shapes from microsoft/Huabu packages/shared/src/types/api/hosted-capability.ts at commit
// a8514a7df0798d075ddffe50ef3bd7f0ddcd2d25 (hostedCapabilityInvokeRequestSchema: strict, schemaVersion 1,
// correlationId trimmed then 1..200, input; HostedCapabilityInvokeResponse: schemaVersion, resourceId,
// correlationId?, result) and the error codes of apps/server/src/modules/agent/hosted-capabilities/errors.ts
// at commit deff3a981eb563bdee2646d95fe2526ceef2f3cc (HostedCapabilityErrorCode).
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { AppError, ERROR_CODES } from '../../src/errors.js';
import { renderError } from '../../src/http/error-handler.js';
import { asInvocationAnswer, INVOCATION_REASONS, invocationError } from '../../src/invocation/invocation-errors.js';
import { SEARCH_KEY, world, type World } from '../helpers/invocation-world.js';
import { auditLines } from '../helpers/audit.js';

const INPUT = { query: 'lichen growth rates' };
const invokeLines = async (w: World) => (await auditLines(w.h)).filter((a) => a.action === 'resource.invoke');

t.test('correlationId: echoed in the answer and the audit line, trimmed as upstream trims it', async (t) => {
  const w = await world(t);
  const res = await w.invoke('web-search', { body: { schemaVersion: 1, correlationId: '  search-1\t', input: INPUT } });
  t.equal(res.status, 200, res.text);
  t.same(
    Object.keys(res.body),
    ['schemaVersion', 'resourceId', 'result', 'correlationId'],
    "upstream's answer (optional fields last, as the OpenAPI document lists them)",
  );
  t.equal(res.body.correlationId, 'search-1', 'trimmed');
  t.same(
    res.body.result,
    { results: [{ title: 'A result', url: 'https://example.org/' }], echoed: INPUT },
    "the endpoint's answer is `result`",
  );
  t.notOk('output' in res.body, 'no `output` any more');

  const plain = await w.invoke('web-search', { input: INPUT });
  t.same(Object.keys(plain.body), ['schemaVersion', 'resourceId', 'result'], 'no correlationId when the request had none');

  const lines = await invokeLines(w);
  t.equal(lines[0]!.details!.correlationId, 'search-1', 'the audit line names it, trimmed');
  t.notOk('correlationId' in lines[1]!.details!, 'and has none when there was none');
  const seen = w.endpoint.received.map((r) => JSON.parse(r.body));
  t.same(seen, [INPUT, INPUT], 'the endpoint receives the input only, never the correlation ID');
});

t.test('correlationId bounds: 1..200 once trimmed, no control characters, a string', async (t) => {
  const w = await world(t);
  const outcome = async (correlationId: unknown) => {
    const r = await w.invoke('web-search', { body: { schemaVersion: 1, correlationId, input: INPUT } });
    return r.status === 200 ? `200 ${r.body.correlationId.length}` : `${r.status} ${r.body.code} ${r.body.details.reason}`;
  };
  t.equal(await outcome('x'), '200 1', 'one character');
  t.equal(await outcome('x'.repeat(200)), '200 200', '200 characters');
  t.equal(
    await outcome(`${' '.repeat(300)}${'x'.repeat(200)}\n`),
    '200 200',
    'longer only by the space around it (upstream trims, then bounds)',
  );
  t.equal(await outcome('x'.repeat(201)), '400 invalid_input validation_failed', '201 characters');
  t.equal(await outcome(''), '400 invalid_input validation_failed', 'empty');
  t.equal(await outcome(' \t\n '), '400 invalid_input validation_failed', 'nothing but space');
  t.equal(await outcome('x'.repeat(1001)), '400 invalid_input validation_failed', 'past the raw bound');
  t.equal(await outcome('a\u0000b'), '400 invalid_input validation_failed', 'a NUL inside');
  t.equal(await outcome('a\nb'), '400 invalid_input validation_failed', 'a line break inside');
  t.equal(await outcome(42), '400 invalid_input validation_failed', 'a number');
  const refused = await w.invoke('web-search', { body: { schemaVersion: 1, correlationId: 'x'.repeat(201), input: INPUT } });
  t.same(
    refused.body.details.issues,
    [{ field: 'body/correlationId', message: 'must be 1 to 200 characters once trimmed' }],
    'the issue names the field',
  );
  t.equal(w.endpoint.received.length, 3, 'no refused call reached the endpoint');
  const lines = await invokeLines(w);
  t.same(
    lines.map((l) =>
      l.outcome === 'ok' ? 'ok' : `${l.outcome} ${l.details?.reason} ${'correlationId' in l.details! ? 'with id' : 'no id'}`,
    ),
    ['ok', 'ok', 'ok', ...Array(8).fill('invalid_input validation_failed no id')],
    'every refusal audited, without the refused value',
  );
});

t.test('a correlationId holding a secret is 422 secret_detected, and goes nowhere', async (t) => {
  const w = await world(t);
  // The capability's own credential pasted as a correlation ID: the scanner knows every configured credential.
  const secret = SEARCH_KEY;
  const res = await w.invoke('web-search', { body: { schemaVersion: 1, correlationId: `run ${secret}`, input: INPUT } });
  t.equal(res.status, 422);
  t.equal(res.body.code, 'secret_detected');
  t.match(res.body.details.findings, [{ field: '/correlationId', rule: String }]);
  t.notOk(res.text.includes(secret), 'not echoed in the answer');
  t.equal(w.endpoint.received.length, 0, 'the call was not made');
  const [line] = await invokeLines(w);
  t.match(line, { outcome: 'secret_detected', details: { resource: 'web-search' } });
  t.notOk('correlationId' in line!.details!, 'the audit line holds no correlation ID');
  t.notOk((await readFile(`${w.h.dataDir}/audit.jsonl`, 'utf8')).includes(secret), 'nor the secret anywhere in the audit');
  t.notOk((await readFile(w.h.logFile, 'utf8')).includes(secret), 'nor in the log');
});

t.test('the envelope: schemaVersion other than 1 is 400 unsupported_version; anything else malformed is 400 invalid_input', async (t) => {
  const w = await world(t);
  const outcome = async (body: unknown) => {
    const r = await w.invoke('web-search', { body });
    return `${r.status} ${r.body.code} ${r.body.details.reason}`;
  };
  t.equal(await outcome({ schemaVersion: 2, input: INPUT }), '400 unsupported_version validation_failed', 'a newer version');
  t.equal(await outcome({ schemaVersion: '1', input: INPUT }), '400 unsupported_version validation_failed', 'the version as a string');
  t.equal(await outcome({ input: INPUT }), '400 invalid_input validation_failed', 'no version at all');
  t.equal(
    await outcome({ schemaVersion: 1, input: INPUT, canvasId: 'canvas-2' }),
    '400 invalid_input validation_failed',
    'strict: no other property',
  );
  t.equal(
    await outcome({ schemaVersion: 1, input: { query: 'x', extra: true } }),
    '400 invalid_input validation_failed',
    "the input against the capability's schema",
  );
  t.equal(w.endpoint.received.length, 0);
});

t.test('one table: every reason answers its upstream code and status, and carries itself in details.reason', (t) => {
  const expected: Record<string, [string, number]> = {
    grant_invalid: ['forbidden', 403],
    grant_expired: ['forbidden', 403],
    scope_mismatch: ['forbidden', 403],
    thread_required: ['forbidden', 403],
    thread_mismatch: ['forbidden', 403],
    resource_not_granted: ['forbidden', 403],
    not_hosted: ['resource_not_found', 404],
    validation_failed: ['invalid_input', 400],
    payload_too_large: ['invalid_input', 400],
    unsupported_media_type: ['invalid_input', 400],
    rate_limited: ['quota_exceeded', 429],
    invocation_timeout: ['timeout', 504],
    invocation_failed: ['provider_failure', 502],
    client_disconnected: ['cancelled', 499],
    storage_unavailable: ['unavailable', 503],
    not_ready: ['unavailable', 503],
    overloaded: ['unavailable', 503],
    internal_error: ['internal_error', 500],
  };
  t.same(Object.keys(INVOCATION_REASONS).sort(), Object.keys(expected).sort(), 'every reason is listed here');
  for (const [reason, [code, status]] of Object.entries(expected)) {
    const err = invocationError(reason as keyof typeof INVOCATION_REASONS, 'm', { n: 1 });
    t.same([err.code, err.statusCode, err.details], [code, status, { reason, n: 1 }], reason);
  }
  t.end();
});

t.test('the error handler answers anything else failing on the route in the same taxonomy', (t) => {
  // What the handler sees on the invoke route (its config names the mapping) and on any other route.
  const invokeRoute = { routeOptions: { config: { errorAnswers: asInvocationAnswer } } } as unknown as Parameters<typeof renderError>[1];
  const otherRoute = { routeOptions: { config: {} } } as unknown as Parameters<typeof renderError>[1];
  const storage = new AppError('storage_unavailable', 'The store is unavailable.');
  t.match(renderError(storage, invokeRoute), {
    statusCode: 503,
    code: 'unavailable',
    error: 'Service Unavailable',
    details: { reason: 'storage_unavailable' },
  });
  t.match(renderError(storage, otherRoute), { statusCode: 503, code: 'storage_unavailable' }, 'other routes keep their codes');
  const limited = new AppError('rate_limited', 'Too many write requests for this credential; retry in 7 s.', { retryAfterSeconds: 7 });
  t.same(
    renderError(limited, invokeRoute).details,
    { reason: 'rate_limited', retryAfterSeconds: 7 },
    'the per-credential write limit is a quota too, Retry-After kept',
  );
  t.equal(renderError(limited, invokeRoute).code, 'quota_exceeded');
  const bug = renderError(new TypeError('secret internals'), invokeRoute);
  t.same(
    bug,
    { statusCode: 500, code: 'internal_error', error: 'Internal Server Error', message: 'An internal error occurred; it has been logged.' },
    'a bug leaks nothing',
  );
  const tooLarge = Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
  t.match(renderError(tooLarge, invokeRoute), { statusCode: 400, code: 'invalid_input', details: { reason: 'payload_too_large' } });
  t.match(
    renderError(new AppError('unauthorized', 'The canvas token is not valid.'), invokeRoute),
    { statusCode: 401, code: 'unauthorized' },
    'a refused canvas token stays 401',
  );
  t.notOk(renderError(new AppError('unauthorized', 'x'), invokeRoute).details, 'with no reason added');
  const cancelled = renderError(invocationError('client_disconnected', 'The agent hung up.'), invokeRoute);
  t.same([cancelled.statusCode, cancelled.error], [499, 'Client Closed Request'], "499, the status nginx and Google's API errors use");
  t.same(
    asInvocationAnswer({ code: 'invalid_profile_kind', message: 'm', details: { reason: 'r' } }).details,
    { reason: 'invalid_profile_kind', cause: 'r' },
    'a finer reason an error had stays, as its cause',
  );
  t.equal(ERROR_CODES.quota_exceeded, 429);
  t.end();
});

t.test("the OpenAPI document lists the route's real codes and shapes", async (t) => {
  const w = await world(t);
  const doc = (await w.h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const op = doc.paths['/api/rfs/{canvasId}/resources/{id}/invoke'].post;
  const responses = op.responses as Record<
    string,
    { description: string; content: { 'application/json': { schema: { properties: Record<string, unknown>; required?: string[] } } } }
  >;
  t.same(Object.keys(responses).sort(), ['200', '400', '401', '403', '404', '422', '429', '499', '500', '502', '503', '504']);
  t.same(
    Object.fromEntries(
      Object.entries(responses)
        .filter(([s]) => s !== '200')
        .map(([s, r]) => [s, r.description]),
    ),
    {
      400: '`invalid_input`, `unsupported_version`',
      401: '`unauthorized`',
      403: '`forbidden`',
      404: '`resource_not_found`',
      422: '`secret_detected`',
      429: '`rate_limited`, `quota_exceeded`',
      499: '`cancelled`',
      500: '`internal_error`',
      502: '`provider_failure`',
      503: '`unavailable`',
      504: '`timeout`',
    },
  );
  t.notOk(JSON.stringify(op).includes('"output"'), 'no `output` any more');
  const request = op.requestBody.content['application/json'].schema;
  t.same(Object.keys(request.properties), ['schemaVersion', 'correlationId', 'input']);
  t.same(request.required, ['schemaVersion', 'input']);
  const answer = responses['200']!.content['application/json'].schema;
  t.same(Object.keys(answer.properties), ['schemaVersion', 'resourceId', 'result', 'correlationId']);
  t.same(answer.required, ['schemaVersion', 'resourceId', 'result']);
});
