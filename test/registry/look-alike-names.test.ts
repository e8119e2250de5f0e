// Look-alike names and aliases (Cyrillic letters, zero-width spaces, NBSP, RTL override,
// full-width forms) clash where their plain forms would; invisible and bidi-control characters are refused
// in names and aliases; a machine ID that reads as `huabu` is reserved.
import t from 'tap';
import { hasInvisible, lookAlikeKey } from '../../src/text/look-alike.js';
import { build, CANARY } from '../helpers/build.js';

const LOOK_ALIKES = ['Rеviewer' /* Cyrillic е */, 'Ｒｅｖｉｅｗｅｒ', 'Reviewer\u00A0', 'REVIEWER', 'Reviewer '];

t.test('lookAlikeKey: NFKC, then a confusable skeleton, ignoring case and surrounding space', (t) => {
  for (const name of LOOK_ALIKES) t.equal(lookAlikeKey(name), lookAlikeKey('Reviewer'), JSON.stringify(name));
  t.equal(lookAlikeKey('Re\u200Bviewer'), lookAlikeKey('Reviewer'), 'a zero-width space is ignored');
  t.not(lookAlikeKey('Reviewer'), lookAlikeKey('Writer'));
  t.ok(hasInvisible('Re\u200Bviewer') && hasInvisible('\u202Ereviewer') && hasInvisible('a\u2066b'), 'invisible and bidi controls');
  t.notOk(hasInvisible('Reviewer — “quoted” 日本語'), 'ordinary text');
  t.end();
});

t.test('profile aliases: look-alikes clash (409), invisible and bidi controls are refused (400)', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const create = (alias: string) =>
    h.app.inject({
      method: 'POST',
      url: '/api/acp/profiles',
      headers: h.owner,
      payload: { alias, agentletId: 'mac-a', workingDirPath: '/w', launch: { kind: 'acp-command', command: 'agent' } },
    });
  t.equal((await create('Reviewer')).statusCode, 201);
  // A trailing NBSP is surrounding space: refused outright (upstream refuses it too), never stored beside 'Reviewer'.
  const nbsp = await create('Reviewer\u00A0');
  t.equal(nbsp.statusCode, 400, 'a trailing NBSP is refused');
  t.equal(nbsp.json().code, 'validation_failed');
  for (const alias of ['Rеviewer', 'Ｒｅｖｉｅｗｅｒ']) {
    const res = await create(alias);
    t.equal(res.statusCode, 409, `${JSON.stringify(alias)} clashes`);
    t.equal(res.json().code, 'alias_conflict');
  }
  for (const alias of ['Re\u200Bviewer', '\u202Eweiver', 'Rev\uFEFFiewer']) {
    const res = await create(alias);
    t.equal(res.statusCode, 400, `${JSON.stringify(alias)} refused`);
    t.equal(res.json().details?.field, '/alias');
  }
});

t.test('resource names: look-alikes are duplicate names; invisible characters are refused', async (t) => {
  const h = await build(t);
  t.equal((await h.put('huabu', CANARY.huabu, 'web-search', { name: 'Web search' })).statusCode, 201);
  t.equal((await h.put('huabu', CANARY.huabu, 'web-search-2', { name: 'Wеb search' })).statusCode, 201);
  const snapshot = (await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner })).json();
  t.ok(
    snapshot.diagnostics.some(
      (d: { code: string; components: string[] }) => d.code === 'duplicate_resource_name' && d.components.includes('resource:web-search-2'),
    ),
    'the duplicate-name diagnostic sees the Cyrillic look-alike',
  );
  const validate = await h.app.inject({
    method: 'POST',
    url: '/api/acp/resources/validate',
    headers: h.huabu,
    payload: { schemaVersion: 1, id: 'web-search-3', name: 'ＷＥＢ search', description: 'd', instructions: 'i' },
  });
  t.ok(
    validate.json().issues.some((i: { code: string }) => i.code === 'duplicate_resource_name'),
    'validate reports the full-width look-alike',
  );
  const hidden = await h.put('huabu', CANARY.huabu, 'web-search-4', { name: 'Web\u200Bsearch' });
  t.equal(hidden.statusCode, 400, 'a zero-width space in a name is refused');
  t.equal(hidden.json().details?.field, '/name');
});

t.test('machine IDs that read as huabu are reserved', async (t) => {
  const h = await build(t);
  for (const machineId of ['huabu.', 'Huabu', 'hu-abu', 'huabu_', 'HUABU..']) {
    const res = await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId } });
    t.equal(res.statusCode, 400, machineId);
  }
  t.equal(
    (await h.app.inject({ method: 'POST', url: '/api/acp/machines', headers: h.owner, payload: { machineId: 'huabu-laptop' } })).statusCode,
    201,
    'a name that merely starts with it is fine',
  );
});
