// A value outside an enum is answered with the allowed values, in one issue.
import t from 'tap';
import { build } from '../helpers/build.js';

t.test('an enum error lists the allowed values, once', async (t) => {
  const h = await build(t);
  const res = await h.app.inject({ url: '/api/acp/capabilities?format=pdf', headers: h.owner });
  t.equal(res.statusCode, 400);
  const body = res.json();
  t.equal(body.code, 'validation_failed');
  t.equal(body.message, 'querystring/format must be one of: json, dot, svg');
  t.same(body.details.issues, [{ field: 'querystring/format', message: 'must be one of: json, dot, svg' }]);
  const kind = await h.app.inject({ url: '/api/acp/capabilities?kind=robot', headers: h.owner });
  t.equal(kind.json().message, 'querystring/kind must be one of: resource, agent, provider');
});
