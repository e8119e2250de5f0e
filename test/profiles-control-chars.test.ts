// Control characters in a profile's free-form fields, on both stores: a NUL (or any other control character)
// in a customData key or string, or in metadata.cliId, is 400 `validation_failed` and nothing is stored
// (PostgreSQL could not read such a record back as text: the start that re-keys aliases failed on it).
// Newline and tab stay allowed inside customData strings, which may hold multi-line text.
import t, { type Test } from 'tap';
import { build, type TestApp } from './helpers/build.js';
import { DATABASE_URL, freshDatabase } from './helpers/postgres.js';

function profileBody(fields: Record<string, unknown> = {}) {
  return { alias: 'Reviewer', agentletId: 'mac-a', workingDirPath: '/home/me/site', launch: { kind: 'acp-command', command: 'claude-code-acp' }, ...fields };
}

const REFUSED: [string, Record<string, unknown>][] = [
  ['a NUL in a customData value', { customData: { note: 'a\u0000b' } }],
  ['a NUL in a customData key', { customData: { 'k\u0000': 'v' } }],
  ['a NUL deep inside customData', { customData: { a: { b: [1, 'x\u0000'] } } }],
  ['a control character in a nested customData key', { customData: { a: [{ 'b\u0001c': true }] } }],
  ['an escape (ESC) in a customData value', { customData: { note: 'red \u001b[31m' } }],
  ['DEL in a customData value', { customData: { note: 'x\u007f' } }],
  ['a newline in a customData key', { customData: { 'two\nlines': 1 } }],
  ['a NUL in metadata.cliId', { metadata: { cliId: 'claude\u0000code' } }],
  ['a newline in metadata.cliId', { metadata: { cliId: 'claude\ncode' } }],
];

async function suite(t: Test, open: (t: Test) => Promise<TestApp>) {
  for (const [what, fields] of REFUSED) {
    t.test(`${what}: 400 on create and on PATCH, nothing stored`, async (t) => {
      const h = await open(t);
      const created = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody(fields) });
      t.equal(created.statusCode, 400, created.body);
      t.equal(created.json().code, 'validation_failed');
      const list = await h.app.inject({ url: '/api/acp/profiles', headers: h.owner });
      t.same(list.json().profiles, [], 'nothing stored');

      const ok = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody() });
      t.equal(ok.statusCode, 201, ok.body);
      const id = ok.json().id as string;
      const patched = await h.app.inject({ method: 'PATCH', url: `/api/acp/profiles/${id}`, headers: h.owner, payload: fields });
      t.equal(patched.statusCode, 400, patched.body);
      t.equal(patched.json().code, 'validation_failed');
      const read = await h.app.inject({ url: `/api/acp/profiles/${id}`, headers: h.owner });
      t.same(read.json(), ok.json(), 'the profile is unchanged');
    });
  }

  t.test('newline and tab inside customData strings are kept', async (t) => {
    const h = await open(t);
    const customData = { notes: 'first line\nsecond\tline', list: ['a\nb'] };
    const created = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody({ customData, metadata: { cliId: 'claude-code' } }) });
    t.equal(created.statusCode, 201, created.body);
    const read = await h.app.inject({ url: `/api/acp/profiles/${created.json().id}`, headers: h.owner });
    t.same(read.json().customData, customData);
  });
}

t.test('JSON store', (t) => suite(t, (t) => build(t)));

if (DATABASE_URL) {
  const base = DATABASE_URL;
  t.test('PostgreSQL store', (t) => suite(t, async (t) => build(t, { env: { DATABASE_URL: await freshDatabase(t, base) } })));
}
