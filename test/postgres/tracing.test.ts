// Traces on the PostgreSQL store: with OTEL_* variables, a write's group-commit batch is a span in the
// request's trace, under its server span, and the batch's statements are its children, with their text and
// never their parameters' values (nor any credential) in what is exported. Against a local OTLP/HTTP receiver
// and the server `npm start` runs (the esbuild bundle, where pg is patched as the store loads it).
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { CANARY, tempDataDir } from '../helpers/build.js';
import { BUNDLE_ENTRY, startServer } from '../crash/server-process.js';
import { ancestorsOf, startOtlpReceiver } from '../helpers/otlp-receiver.js';
import { freshDatabase, postgresOrSkip } from '../helpers/postgres.js';

t.setTimeout(300_000);
const base = postgresOrSkip(t);
if (base) {
  execFileSync(process.execPath, ['scripts/build-if-changed.mjs'], { stdio: 'inherit' });
  const TRACE_ID = '5b8efff798038103d269b633813fc60c';
  const PARENT_ID = 'eee19b7ec3c1b174';
  /** A value only a statement's parameters carry: it must never be exported. */
  const PARAMETER_VALUE = 'PARAMETERvalue0of0a0statement0';

  t.test('a write’s batch is a child span of its request, its statements children of the batch, no value exported', async (t) => {
    const receiver = await startOtlpReceiver();
    t.teardown(() => receiver.close());
    const server = await startServer(
      {
        OWNER_TOKEN: CANARY.owner,
        HUABU_PROVIDER_TOKEN: CANARY.huabu,
        CANVAS_TOKEN_SECRET: CANARY.secret,
        DATA_DIR: await tempDataDir(),
        DATABASE_URL: await freshDatabase(t, base),
        SEED_HUABU_RESOURCES: 'false',
        MAX_EVENT_LOOP_DELAY_MS: '0',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      90_000,
      BUNDLE_ENTRY,
    );
    t.teardown(() => server.kill());

    const res = await fetch(`${server.origin}/api/acp/providers/huabu/resources/pdf-grep`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${CANARY.huabu}`,
        'content-type': 'application/json',
        traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`,
      },
      body: JSON.stringify({ schemaVersion: 1, name: 'PDF grep', description: PARAMETER_VALUE, instructions: 'Run it.' }),
    });
    t.equal(res.status, 201);

    const batch = await receiver.waitFor((s) => s.traceId === TRACE_ID && s.name === 'postgres batch');
    t.equal(batch.attributes['db.operation.batch.size'], 1);
    t.equal(batch.attributes['db.system.name'], 'postgresql');
    const server_ = ancestorsOf(batch, receiver.spans).find((s) => s.kind === 2);
    t.equal(server_?.name, 'PUT /api/acp/providers/:provider/resources/:id', 'the batch is under the write’s server span');
    t.equal(server_?.parentSpanId, PARENT_ID);

    const commit = await receiver.waitFor((s) => s.parentSpanId === batch.spanId && s.attributes['db.query.text'] === 'COMMIT');
    t.equal(commit.scope, '@opentelemetry/instrumentation-pg');
    const statements = receiver.spans.filter((s) => s.parentSpanId === batch.spanId && s.scope === '@opentelemetry/instrumentation-pg');
    t.ok(
      statements.some((s) => String(s.attributes['db.query.text']).startsWith('INSERT INTO resources')),
      'the batch’s upsert is a child of the batch, with its statement text',
    );

    await sleep(300);
    const exported = receiver.bodies.join('\n');
    t.ok(exported.includes('INSERT INTO resources'), 'statement texts are exported');
    for (const secret of [PARAMETER_VALUE, CANARY.owner, CANARY.huabu, CANARY.secret]) {
      t.notOk(exported.includes(secret), `no ${secret.slice(0, 12)}… in any exported span`);
    }
    t.notOk(exported.includes('postgres@'), 'no user name of the database URL');
  });
}
