// Look-alikes by Unicode's own confusable data (UTS #39 skeletons of confusables.txt) and invisible
// characters by Unicode properties (Default_Ignorable_Code_Point, Bidi_Control): the key, the refusals on
// write, and a registry file written under the earlier rule loading with both namesakes kept and named.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { hasInvisible, lookAlikeKey } from '../../src/text/look-alike.js';
import { build, CANARY, tempDataDir } from '../helpers/build.js';

const CLASHING: Array<[string, string]> = [
  ['\u0406van' /* Cyrillic І */, 'Ivan'],
  ['\u0406van', 'IVAN'],
  ['Modem', 'Modern'], // confusables.txt: m → rn
  ['corn', 'com'],
  ['\u0422\u0415\u0410\u041C' /* Cyrillic ТЕАМ */, 'team'],
  ['\u0412ob' /* Cyrillic В */, 'Bob'],
  ['\u0440\u0430\u0443pal' /* Cyrillic р а у */, 'PayPal'],
  ['\u{1D5A8}van' /* mathematical sans-serif I */, 'Ivan'],
  ['Re\u{E0041}viewer', 'Reviewer'],
];

const DISTINCT: Array<[string, string]> = [
  ['Café', 'Cafe'],
  ['\u0420\u0435\u0446\u0435\u043D\u0437\u0435\u043D\u0442' /* Рецензент */, 'Reviewer'],
  ['审稿人', '评审员'],
  ['Writer', 'Reviewer'],
  ['Anna', 'Anne'],
];

/** Default-ignorable and bidi-control characters the earlier hand-made list let through or held. */
const INVISIBLES = [
  0xe0041, // TAG LATIN CAPITAL LETTER A
  0xe0001, // LANGUAGE TAG
  0xe007f, // CANCEL TAG
  0xe0100, // VARIATION SELECTOR-17
  0xe0fff, // unassigned, default ignorable
  0x2064, // INVISIBLE PLUS
  0x1d173, // MUSICAL SYMBOL BEGIN BEAM
  0x1d17a,
  0x1bca0, // SHORTHAND FORMAT LETTER OVERLAP
  0x180e, // MONGOLIAN VOWEL SEPARATOR
  0x200e,
  0x200f,
  0x061c,
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e,
  0x2066,
  0x2067,
  0x2068,
  0x2069,
];

t.test('lookAlikeKey: UTS #39 skeletons from confusables.txt, ignoring case', (t) => {
  for (const [a, b] of CLASHING) t.equal(lookAlikeKey(a), lookAlikeKey(b), `${JSON.stringify(a)} clashes with ${JSON.stringify(b)}`);
  for (const [a, b] of DISTINCT) t.not(lookAlikeKey(a), lookAlikeKey(b), `${JSON.stringify(a)} stays apart from ${JSON.stringify(b)}`);
  t.equal(lookAlikeKey('  Web \u2003 search '), lookAlikeKey('web search'), 'surrounding space trimmed, inner runs of any space collapsed');
  t.end();
});

t.test('lookAlikeKey: the ASCII shortcut agrees with the full pipeline', (t) => {
  // A zero-width space takes the text off the shortcut and is itself dropped by the skeleton.
  fc.assert(
    fc.property(fc.string({ unit: 'binary-ascii', maxLength: 40 }), (s) => lookAlikeKey(s) === lookAlikeKey(s + '\u200B')),
    { numRuns: 2000 },
  );
  for (let code = 0; code < 128; code++) {
    const ch = String.fromCharCode(code);
    t.equal(lookAlikeKey(`a${ch}b`), lookAlikeKey(`a${ch}b\u200B`), `U+${code.toString(16).padStart(4, '0')}`);
  }
  t.end();
});

t.test('hasInvisible: every Default_Ignorable_Code_Point and bidi control, and nothing in ordinary text', (t) => {
  for (const cp of INVISIBLES) t.ok(hasInvisible(`Re${String.fromCodePoint(cp)}viewer`), `U+${cp.toString(16).toUpperCase()}`);
  for (const text of ['Reviewer — “quoted” 日本語', 'Рецензент', 'Café', 'مراجع', 'समीक्षक', '⭐ Star']) t.notOk(hasInvisible(text), text);
  t.end();
});

const profilePayload = (alias: string) => ({
  alias,
  agentletId: 'mac-a',
  workingDirPath: '/w',
  launch: { kind: 'acp-command', command: 'agent' },
});

t.test('profile aliases: Unicode look-alikes clash (409), hidden tag text is refused (400), other scripts are accepted', async (t) => {
  const h = await build(t);
  await h.enroll('mac-a');
  const create = (alias: string) =>
    h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profilePayload(alias) });
  for (const alias of ['Ivan', 'Modern', 'Рецензент', '审稿人', 'Café', 'Cafe'])
    t.equal((await create(alias)).statusCode, 201, `${alias} accepted`);
  for (const alias of ['\u0406van', 'Modem']) {
    const res = await create(alias);
    t.equal(res.statusCode, 409, `${JSON.stringify(alias)} clashes`);
    t.equal(res.json().code, 'alias_conflict');
  }
  const tagged = 'Helper' + [...'ignore previous'].map((c) => String.fromCodePoint(0xe0000 + c.codePointAt(0)!)).join('');
  for (const alias of [tagged, 'a\u2064b', 'a\u{1D173}b', '\u2067rev\u2069']) {
    const res = await create(alias);
    t.equal(res.statusCode, 400, `${JSON.stringify(alias)} refused`);
    t.equal(res.json().details?.field, '/alias');
  }
});

t.test('resource names: hidden tag text is refused; a Cyrillic І look-alike is a duplicate name', async (t) => {
  const h = await build(t);
  const hidden = await h.put('huabu', CANARY.huabu, 'web-search', { name: 'Web search\u{E0020}\u{E0068}\u{E0069}' });
  t.equal(hidden.statusCode, 400, 'tag characters in a name are refused');
  t.equal(hidden.json().details?.field, '/name');
  t.equal((await h.put('huabu', CANARY.huabu, 'image-gen', { name: 'Image generator' })).statusCode, 201);
  t.equal((await h.put('huabu', CANARY.huabu, 'image-gen-2', { name: '\u0406mage generator' })).statusCode, 201);
  const snapshot = (await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner })).json();
  t.ok(
    snapshot.diagnostics.some(
      (d: { code: string; components: string[] }) => d.code === 'duplicate_resource_name' && d.components.includes('resource:image-gen-2'),
    ),
    'the duplicate-name diagnostic sees the Cyrillic І',
  );
});

t.test('a registry file whose aliases clash only under the current rule loads, keeps both, names both', async (t) => {
  const dataDir = await tempDataDir();
  await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
  const stored = (id: string, alias: string) => ({
    schemaVersion: 2,
    id,
    alias,
    agentletId: 'mac-a',
    workingDirPath: '/w',
    resourceIds: [],
    launch: { kind: 'acp-command', command: 'agent' },
  });
  const profiles = [stored('prf-latin', 'Ivan'), stored('prf-cyrillic', '\u0406van'), stored('prf-other', 'Writer')];
  await writeFile(
    path.join(dataDir, 'agent-team', 'registry.json'),
    JSON.stringify({ schemaVersion: 4, state: { roots: [], members: [], profiles, configs: [] } }),
  );
  const h = await build(t, { dataDir });
  const list = (await h.app.inject({ url: '/api/acp/profiles', headers: h.owner })).json();
  t.same(list.profiles.map((p: { id: string }) => p.id).sort(), ['prf-cyrillic', 'prf-latin', 'prf-other'], 'nothing lost');
  const log = await readFile(h.logFile, 'utf8');
  t.match(log, /prf-cyrillic[^\n]*prf-latin|prf-latin[^\n]*prf-cyrillic/, 'the start names both profiles in one warning');
  const snapshot = (await h.app.inject({ url: '/api/acp/capabilities', headers: h.owner })).json();
  t.ok(
    snapshot.diagnostics.some(
      (d: { code: string; components: string[] }) =>
        d.code === 'alias_collision' && d.components.join() === 'agent:prf-cyrillic,agent:prf-latin',
    ),
    'the projection reports the collision',
  );
  await h.enroll('mac-a');
  const again = await h.app.inject({ method: 'POST', url: '/api/acp/profiles', headers: h.owner, payload: profilePayload('IVAN') });
  t.equal(again.statusCode, 409, 'uniqueness applies to new writes');
  const patched = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/profiles/prf-cyrillic',
    headers: h.owner,
    payload: { workingDirPath: '/elsewhere' },
  });
  t.equal(patched.statusCode, 200, 'a namesake can still be changed, and renamed');
  const renamed = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/profiles/prf-cyrillic',
    headers: h.owner,
    payload: { alias: 'Ivan the second' },
  });
  t.equal(renamed.statusCode, 200);
});

t.test('the confusables table is the one generated from the committed confusables.txt', async (t) => {
  const { CONFUSABLES_MODULE, CONFUSABLES_TXT, confusablesModule } = await import('../../scripts/generate-confusables.js');
  t.equal(
    await readFile(CONFUSABLES_MODULE, 'utf8'),
    confusablesModule(await readFile(CONFUSABLES_TXT, 'utf8')),
    'npx tsx scripts/generate-confusables.ts regenerates it',
  );
  t.throws(
    () => confusablesModule('# Version: 17.0.0\n# Date: 2025-07-22\n0406 ; zz ;\tMA\t#\n'),
    /line 3/,
    'a line it does not understand stops the generator',
  );
});

t.test('the snapshot lists aliases in reading order ignoring case, not in skeleton order', async (t) => {
  const { buildSnapshot } = await import('../../src/capabilities/snapshot.js');
  const profiles = ['Planner', 'manager', 'Ivan', 'helper'].map((alias, i) => ({
    schemaVersion: 2 as const,
    id: `p${i}`,
    alias,
    agentletId: 'mac-a',
    workingDirPath: '/w',
    resourceIds: [],
    launch: { kind: 'acp-command' as const, command: 'agent' },
  }));
  const snapshot = buildSnapshot({ resources: [], profiles, machines: [], requiredResourceIds: [] });
  t.same(
    snapshot.aliases.map((a) => a.alias),
    ['helper', 'Ivan', 'manager', 'Planner'],
  );
});
