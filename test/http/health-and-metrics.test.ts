import t from 'tap';
import { build, CANARY } from '../helpers/build.js';

t.test('health, readiness and metrics need no credential', async (t) => {
  const h = await build(t);
  t.same((await h.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
  t.same((await h.app.inject({ url: '/readyz' })).json(), { status: 'ready' });
  const doc = await h.app.inject({ url: '/openapi.json' });
  t.equal(doc.json().openapi, '3.1.0');
});

t.test('metrics count requests by route pattern, store batches and catalogue rebuilds, with no IDs or tokens', async (t) => {
  const h = await build(t);
  const token = await h.enroll('agentlet-secret-name');
  await Promise.all(Array.from({ length: 8 }, (_, i) => h.put('agentlet-secret-name', token, `tool-${i}`)));
  await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  const res = await h.app.inject({ url: '/metrics' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain/);
  t.match(
    res.body,
    /http_request_duration_seconds_count\{method="PUT",route="\/api\/acp\/providers\/:provider\/resources\/:id",status_code="201"\} 8/,
  );
  t.match(res.body, /registry_store_batch_operations_sum\{file="resources.json"\} 8/);
  t.match(res.body, /registry_store_write_duration_seconds_count\{file="resources.json",outcome="ok"\} \d+/);
  t.match(res.body, /registry_catalogue_cache_rebuilds_total\{view="all"\} 1/, 'two reads, one rebuild');
  t.notMatch(res.body, 'agentlet-secret-name');
  t.notMatch(res.body, 'tool-1');
  t.notMatch(res.body, CANARY.owner.slice(10, 22));
});
