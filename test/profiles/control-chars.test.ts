// Control characters in a profile's free-form fields, on both stores: a NUL (or any other control character)
// in a customData key or string, or in metadata.cliId, is 400 `validation_failed` and nothing is stored
// (PostgreSQL could not read such a record back as text: the start that re-keys aliases failed on it).
// Newline and tab stay allowed inside customData strings, which may hold multi-line text.
import t, { type Test } from 'tap';
import { build, type TestApp } from '../helpers/build.js';
import { DATABASE_URL, freshDatabase } from '../helpers/postgres.js';
import { profileBody } from '../helpers/profiles.js';

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

function suite(t: Test, open: (t: Test) => Promise<TestApp>): void {
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
    const created = await h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: profileBody({ customData, metadata: { cliId: 'claude-code' } }),
    });
    t.equal(created.statusCode, 201, created.body);
    const read = await h.app.inject({ url: `/api/acp/profiles/${created.json().id}`, headers: h.owner });
    t.same(read.json().customData, customData);
  });
  t.end();
}

/**
 * Every other free-form string a client can have stored, with a NUL: each is refused with 400 before
 * anything is written (a guard: these were refused before the customData rule, by their schemas).
 */
async function everyOtherField(t: Test, open: (t: Test) => Promise<TestApp>) {
  const h = await open(t);
  const nul = 'x\u0000y';
  const put = (id: string, payload: object) =>
    h.app.inject({ method: 'PUT', url: `/api/acp/providers/huabu/resources/${id}`, headers: h.huabu, payload });
  const ok = await put('held', { schemaVersion: 2, name: 'Held', sourceContent: 'Use it.' });
  t.equal(ok.statusCode, 201, ok.body);
  const profile = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody() });
  t.equal(profile.statusCode, 201, profile.body);
  const cases: [string, Promise<{ statusCode: number; body: string; json(): { code?: string } }>][] = [
    ['resource v1 name', put('r1', { schemaVersion: 1, name: nul, description: 'd', instructions: 'i' })],
    ['resource v1 description', put('r2', { schemaVersion: 1, name: 'n', description: nul, instructions: 'i' })],
    ['resource v1 instructions', put('r3', { schemaVersion: 1, name: 'n', description: 'd', instructions: nul })],
    ['resource v2 name', put('r4', { schemaVersion: 2, name: nul, sourceContent: 's' })],
    ['resource v2 sourceContent', put('r5', { schemaVersion: 2, name: 'n', sourceContent: nul })],
    [
      'reconcile entry',
      h.app.inject({
        method: 'PUT',
        url: '/api/acp/providers/huabu/resources',
        headers: h.huabu,
        payload: { resources: [{ schemaVersion: 2, id: 'r6', name: 'n', sourceContent: nul }] },
      }),
    ],
    [
      'resource displayName',
      h.app.inject({ method: 'PATCH', url: '/api/acp/resources/held', headers: h.owner, payload: { displayName: nul } }),
    ],
    [
      'resource userContent',
      h.app.inject({ method: 'PATCH', url: '/api/acp/resources/held', headers: h.owner, payload: { userContent: nul } }),
    ],
    ['profile alias', h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody({ alias: nul }) })],
    [
      'profile workingDirPath',
      h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profileBody({ workingDirPath: `/${nul}` }) }),
    ],
    [
      'profile launch command',
      h.app.inject({
        method: 'POST',
        url: '/api/acp/profiles',
        headers: h.owner,
        payload: profileBody({ alias: 'Other', launch: { kind: 'acp-command', command: nul } }),
      }),
    ],
    ['machine ID', h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: nul } })],
    [
      'launch additionalInitialPreamble',
      h.app.inject({
        method: 'POST',
        url: '/api/acp/launch',
        headers: h.owner,
        payload: { profileId: profile.json().id, canvasId: 'c1', threadId: 't1', additionalInitialPreamble: nul },
      }),
    ],
    [
      'launch workingDirPath',
      h.app.inject({
        method: 'POST',
        url: '/api/acp/launch',
        headers: h.owner,
        payload: { profileId: profile.json().id, canvasId: 'c1', threadId: 't2', workingDirPath: `/${nul}` },
      }),
    ],
    [
      'launch canvasId',
      h.app.inject({
        method: 'POST',
        url: '/api/acp/launch',
        headers: h.owner,
        payload: { profileId: profile.json().id, canvasId: nul, threadId: 't3' },
      }),
    ],
  ];
  for (const [what, pending] of cases) {
    const res = await pending;
    t.equal(`${res.statusCode} ${res.json().code}`, '400 validation_failed', `${what}: ${res.body}`);
  }
}

t.test('JSON store', (t) => suite(t, (t) => build(t)));
t.test('JSON store: every other free-form field', (t) => everyOtherField(t, (t) => build(t)));

if (DATABASE_URL) {
  const base = DATABASE_URL;
  const open = async (t: Test) => build(t, { env: { DATABASE_URL: await freshDatabase(t, base) } });
  t.test('PostgreSQL store', (t) => suite(t, open));
  t.test('PostgreSQL store: every other free-form field', (t) => everyOtherField(t, open));
}
