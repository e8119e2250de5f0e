// A false finding of the secret scan has a way out that is not a bypass: every 422 `secret_detected` names
// field, line, rule and fingerprint (never the value); the owner allows exactly that fingerprint
// (SECRET_ALLOWLIST_FILE or /api/acp/secret-allowlist, listed, audited, kept in the file across restarts),
// optionally only in one field or on one route; removing it refuses the text again.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { secretFingerprint } from '../../src/secrets/secret-scanner.js';
import { build, tempDataDir, testEnv } from '../helpers/build.js';
import { auditLines } from '../helpers/audit.js';

const VALUE = 'Xk9#mQ2$vL7pR4tZ8wN3';
const INSTRUCTIONS = `Set it up:\n\n1. Open the settings.\n2. Write password = "${VALUE}" in the form.`;
const FINGERPRINT = secretFingerprint('credential-assignment', VALUE);
const ALLOWLIST = '/api/acp/secret-allowlist';

async function refusedPut(t: Test, h: Awaited<ReturnType<typeof build>>, id = 'setup-guide') {
  const res = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), id, { instructions: INSTRUCTIONS });
  t.equal(res.statusCode, 422, 'refused');
  return res;
}

t.test('a refusal names field, line, rule, fingerprint and route, never the value (response, log, audit)', async (t) => {
  const h = await build(t);
  const res = await refusedPut(t, h);
  const body = res.json();
  t.equal(body.code, 'secret_detected');
  t.same(body.details.findings, [
    { field: '/instructions', line: 4, rule: 'credential-assignment', fingerprint: FINGERPRINT, route: 'resource.register' },
  ]);
  t.match(body.message, `/instructions line 4`);
  t.match(body.message, FINGERPRINT);
  const validate = await h.app.inject({
    method: 'POST',
    url: '/api/acp/resources/validate',
    headers: h.owner,
    payload: { schemaVersion: 1, id: 'setup-guide', provider: 'huabu', name: 'Setup', description: 'How.', instructions: INSTRUCTIONS },
  });
  const issue = validate.json().issues.find((i: { code: string }) => i.code === 'secret_detected');
  t.match(issue, { field: '/instructions', line: 4, rule: 'credential-assignment', fingerprint: FINGERPRINT });
  const audit = await readFile(path.join(h.dataDir, 'audit.jsonl'), 'utf8');
  const log = await readFile(h.logFile, 'utf8');
  for (const [where, text] of [
    ['response', res.body],
    ['validate', validate.body],
    ['audit', audit],
    ['log', log],
  ]) {
    t.notOk(text!.includes(VALUE), `${where}: the value never appears`);
    t.notOk(text!.includes('vL7pR4tZ8'), `${where}: nor part of it`);
  }
});

t.test('the owner allows exactly that fingerprint: listed, audited, applied, removed', async (t) => {
  const h = await build(t);
  await refusedPut(t, h);
  const add = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, reason: 'the sample password of our setup guide' },
  });
  t.equal(add.statusCode, 201, add.body);
  t.match(add.json(), { fingerprint: FINGERPRINT, reason: 'the sample password of our setup guide', addedAt: String });
  const again = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, reason: 'twice' },
  });
  t.equal(again.statusCode, 200, 'the same entry again changes nothing');
  const list = await h.app.inject({ url: ALLOWLIST, headers: h.owner });
  t.equal(list.statusCode, 200);
  t.same(
    list.json().entries.map((e: { fingerprint: string; reason: string }) => [e.fingerprint, e.reason]),
    [[FINGERPRINT, 'the sample password of our setup guide']],
  );
  const put = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'setup-guide', { instructions: INSTRUCTIONS });
  t.equal(put.statusCode, 201, `allowed: ${put.body}`);
  const other = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'other-guide', {
    instructions: `${INSTRUCTIONS}\npassword = "Zq8!nB3@cV6mK1xW5rT0"`,
  });
  t.equal(other.statusCode, 422, 'another secret beside the allowed one is still refused');
  t.equal(other.json().details.findings[0].line, 5);

  const remove = await h.app.inject({ method: 'DELETE', url: `${ALLOWLIST}?fingerprint=${FINGERPRINT}`, headers: h.owner });
  t.equal(remove.statusCode, 204);
  await refusedPut(t, h, 'setup-guide-2');
  const gone = await h.app.inject({ method: 'DELETE', url: `${ALLOWLIST}?fingerprint=${FINGERPRINT}`, headers: h.owner });
  t.equal(gone.statusCode, 404);
  t.equal(gone.json().code, 'allowlist_entry_not_found');

  const audit = await auditLines(h);
  t.same(
    audit.filter((e) => e.action.startsWith('secret-allowlist.')).map((e) => [e.action, e.id, e.outcome]),
    [
      ['secret-allowlist.add', FINGERPRINT, 'added'],
      ['secret-allowlist.add', FINGERPRINT, 'unchanged'],
      ['secret-allowlist.remove', FINGERPRINT, 'removed'],
      ['secret-allowlist.remove', FINGERPRINT, 'allowlist_entry_not_found'],
    ],
  );
});

t.test('an entry limited to a field or route applies only there', async (t) => {
  const h = await build(t);
  const scoped = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, file: '/description', reason: 'only in descriptions' },
  });
  t.equal(scoped.statusCode, 201);
  await refusedPut(t, h);
  const routed = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, file: '/instructions', route: 'resource.validate', reason: 'check only' },
  });
  t.equal(routed.statusCode, 201);
  const validate = await h.app.inject({
    method: 'POST',
    url: '/api/acp/resources/validate',
    headers: h.owner,
    payload: { schemaVersion: 1, id: 'setup-guide', provider: 'huabu', name: 'Setup', description: 'How.', instructions: INSTRUCTIONS },
  });
  t.equal(validate.json().valid, true, 'validate is allowed');
  await refusedPut(t, h);
  const reconcile = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources',
    headers: h.huabu,
    payload: { resources: [{ schemaVersion: 1, id: 'setup-guide', name: 'Setup', description: 'How.', instructions: INSTRUCTIONS }] },
  });
  t.equal(reconcile.statusCode, 422, 'a reconcile is not');
  t.match(reconcile.json().details.findings[0], { field: '/resources/0/instructions', line: 4, route: 'resource.reconcile' });
});

t.test('bad entries and a secret in the reason are refused; only the owner may list or change', async (t) => {
  const h = await build(t);
  for (const payload of [
    { fingerprint: 'credential-assignment:abc', reason: 'x' },
    { fingerprint: FINGERPRINT },
    { fingerprint: FINGERPRINT, reason: 'x', route: 'anything' },
    { fingerprint: FINGERPRINT, reason: 'x', disableScan: true },
  ]) {
    const res = await h.app.inject({ method: 'POST', url: ALLOWLIST, headers: h.owner, payload });
    t.equal(res.statusCode, 400, JSON.stringify(payload));
  }
  const leaky = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, reason: `the real one is ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}` },
  });
  t.equal(leaky.statusCode, 422);
  t.equal(leaky.json().details.findings[0].field, '/reason');
  for (const headers of [h.huabu, {}]) {
    t.ok([401, 403].includes((await h.app.inject({ url: ALLOWLIST, headers })).statusCode), 'list refused');
    const post = await h.app.inject({ method: 'POST', url: ALLOWLIST, headers, payload: { fingerprint: FINGERPRINT, reason: 'x' } });
    t.ok([401, 403].includes(post.statusCode), 'add refused');
  }
  t.same((await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries, [], 'nothing added');
});

t.test('SECRET_ALLOWLIST_FILE: read at start, kept across a restart, a bad file stops the start', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  await writeFile(file, JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'written by the operator' }]));
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const put = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'setup-guide', { instructions: INSTRUCTIONS });
  t.equal(put.statusCode, 201, "the operator's entry applies");
  const other = secretFingerprint('credential-assignment', 'Zq8!nB3@cV6mK1xW5rT0');
  await h.app.inject({ method: 'POST', url: ALLOWLIST, headers: h.owner, payload: { fingerprint: other, reason: 'a second sample' } });
  await h.app.close();
  const written = JSON.parse(await readFile(file, 'utf8')) as { fingerprint: string }[];
  t.same(
    written.map((e) => e.fingerprint),
    [FINGERPRINT, other],
    "the owner's entry is in the file",
  );
  const restarted = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  t.equal((await restarted.app.inject({ url: ALLOWLIST, headers: restarted.owner })).json().entries.length, 2, 'and read again');
  const byDefault = loadConfig(testEnv(dataDir));
  t.equal(byDefault.secretAllowlist.file, path.join(dataDir, 'secret-allowlist.json'), 'by default in DATA_DIR');

  await writeFile(file, '[{"fingerprint": "nope"}]');
  t.throws(() => loadConfig(testEnv(dataDir, { SECRET_ALLOWLIST_FILE: file })), ConfigError);
  await writeFile(file, `{"oops": "${VALUE}"`);
  try {
    loadConfig(testEnv(dataDir, { SECRET_ALLOWLIST_FILE: file }));
    t.fail('a bad file is refused');
  } catch (err) {
    t.ok(err instanceof ConfigError);
    t.notOk((err as Error).message.includes(VALUE), 'its content is not quoted');
  }
});

/** `n` distinct high-entropy passwords, one a line, after a heading line. */
const manySecrets = (n: number) => Array.from({ length: n }, (_, i) => `password = "Xk9#mQ2$vL7pR4tZ${String(i).padStart(2, '0')}wN"`);

t.test('a refusal names every finding of a field at once, so one round of allowing lets the text in', async (t) => {
  const h = await build(t);
  const values = manySecrets(3).map((l) => l.slice('password = "'.length, -1));
  const instructions = `Setup:\n${manySecrets(3).join('\n')}\nDone.`;
  const token = h.huabu.authorization!.slice('Bearer '.length);
  const refused = await h.put('huabu', token, 'three-secrets', { instructions });
  t.equal(refused.statusCode, 422);
  const body = refused.json();
  t.same(
    body.details.findings,
    values.map((v, i) => ({
      field: '/instructions',
      line: i + 2,
      rule: 'credential-assignment',
      fingerprint: secretFingerprint('credential-assignment', v),
      route: 'resource.register',
    })),
    'all three, in line order',
  );
  for (const [i, v] of values.entries()) {
    t.match(body.message, `/instructions line ${i + 2}`);
    t.match(body.message, secretFingerprint('credential-assignment', v));
    t.notOk(refused.body.includes(v), 'never the value');
  }
  t.equal(body.details.moreFindings, undefined, 'none left out');
  for (const f of body.details.findings) {
    const add = await h.app.inject({
      method: 'POST',
      url: ALLOWLIST,
      headers: h.owner,
      payload: { fingerprint: f.fingerprint, reason: 'samples' },
    });
    t.equal(add.statusCode, 201);
  }
  const put = await h.put('huabu', token, 'three-secrets', { instructions });
  t.equal(put.statusCode, 201, `one round of allowing was enough: ${put.body}`);
});

t.test('a refusal with many findings names the first 20 and says how many more', async (t) => {
  const h = await build(t);
  const refused = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'many-secrets', {
    instructions: `Setup:\n${manySecrets(25).join('\n')}`,
  });
  t.equal(refused.statusCode, 422);
  const body = refused.json();
  t.equal(body.details.findings.length, 20);
  t.same(
    body.details.findings.map((f: { line: number }) => f.line),
    Array.from({ length: 20 }, (_, i) => i + 2),
  );
  t.equal(body.details.moreFindings, 5);
  t.match(body.message, '/instructions line 21');
  t.notMatch(body.message, '/instructions line 22 ');
  t.match(body.message, 'and 5 more');
});

t.test('a bad SECRET_ALLOWLIST_FILE is named by its first problem; a missing one holds no entries', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  const configFor = (f: string) => loadConfig(testEnv(dataDir, { SECRET_ALLOWLIST_FILE: f }));
  const refusal = (f: string) => {
    try {
      configFor(f);
    } catch (err) {
      t.ok(err instanceof ConfigError, f);
      return (err as Error).message;
    }
    return t.fail(`${f} is refused`);
  };
  t.same(configFor(file).secretAllowlist.entries, [], 'no file: no entries');
  await writeFile(path.join(dataDir, 'plain'), 'a file');
  t.same(configFor(path.join(dataDir, 'plain', 'allow.json')).secretAllowlist.entries, [], 'a file on its path: no entries');
  t.equal(refusal(dataDir), `SECRET_ALLOWLIST_FILE ${dataDir} cannot be read (EISDIR).`, 'a folder');
  await writeFile(file, '[{"fingerprint": ');
  t.equal(refusal(file), `SECRET_ALLOWLIST_FILE ${file} is not valid JSON (a JSON array of entries is expected).`);
  await writeFile(file, '{"entries": []}');
  t.equal(
    refusal(file),
    `SECRET_ALLOWLIST_FILE ${file}: / must be array (each entry is {fingerprint, file?, route?, reason}).`,
    'the problem named as the schema states it',
  );
  await writeFile(file, JSON.stringify([{ reason: 'no fingerprint' }]));
  t.equal(
    refusal(file),
    `SECRET_ALLOWLIST_FILE ${file}: /0 must have required properties fingerprint (each entry is {fingerprint, file?, route?, reason}).`,
  );
  await writeFile(file, JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'fine' }, { fingerprint: FINGERPRINT }]));
  t.match(refusal(file), `SECRET_ALLOWLIST_FILE ${file}: /1`, 'the entry at fault');
  await writeFile(file, JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'fine', route: 'resource.register' }]));
  t.same(configFor(file).secretAllowlist.entries, [{ fingerprint: FINGERPRINT, reason: 'fine', route: 'resource.register' }]);
});

t.test('the file changed by another process counts from the next scan; one turned bad or removed lets nothing through', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const token = h.huabu.authorization!.slice('Bearer '.length);
  const put = async (id: string) => (await h.put('huabu', token, id, { instructions: INSTRUCTIONS })).statusCode;
  t.equal(await put('g-1'), 422, 'no file yet');
  await writeFile(file, JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'written by the operator' }]));
  t.equal(await put('g-2'), 201, 'written by another process: applies from the next scan');
  t.equal(await put('g-3'), 201, 'and the one after');
  await writeFile(file, '[{"fingerprint": "broken"');
  t.equal(await put('g-4'), 422, 'a file turned bad: no entry applies');
  t.match(await readFile(h.logFile, 'utf8'), /the secret allowlist file cannot be read; no entry applies until it is fixed/);
  t.equal((await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries.length, 0, 'none listed');
  await writeFile(file, JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'fixed again' }]));
  t.equal(await put('g-5'), 201, 'fixed: applies again');
  await rm(file);
  t.equal(await put('g-6'), 422, 'removed: none');
  t.same((await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries, []);
  const reports = (await readFile(h.logFile, 'utf8')).match(/the secret allowlist file cannot be read/g) ?? [];
  t.equal(reports.length, 1, 'the bad file reported once, not on every read; a removed file is no error');
});

t.test('entries are told apart by fingerprint, file and route: added, kept, removed and audited one by one', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const add = (payload: Record<string, string>) => h.app.inject({ method: 'POST', url: ALLOWLIST, headers: h.owner, payload });
  const leaky = await add({ fingerprint: FINGERPRINT, file: `/notes/ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`, reason: 'x' });
  t.equal(leaky.statusCode, 422, 'the file an entry names is scanned too');
  t.match(leaky.json().details.findings, [{ field: '/file' }]);
  t.equal((await add({ fingerprint: FINGERPRINT, reason: 'anywhere' })).statusCode, 201);
  t.equal((await add({ fingerprint: FINGERPRINT, file: '/description', reason: 'in descriptions' })).statusCode, 201, 'another file');
  const routed = await add({ fingerprint: FINGERPRINT, file: '/description', route: 'resource.validate', reason: 'checks' });
  t.equal(routed.statusCode, 201, 'another route');
  const again = await add({ fingerprint: FINGERPRINT, file: '/description', reason: 'said again' });
  t.equal(again.statusCode, 200);
  t.match(again.json(), { fingerprint: FINGERPRINT, file: '/description', reason: 'in descriptions' }, 'the entry held, its reason kept');
  t.notOk('route' in again.json());
  const listed = (await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries;
  t.same(
    listed.map((e: Record<string, string>) => [e.file, e.route, e.reason]),
    [
      [undefined, undefined, 'anywhere'],
      ['/description', undefined, 'in descriptions'],
      ['/description', 'resource.validate', 'checks'],
    ],
  );
  t.same(JSON.parse(await readFile(file, 'utf8')), listed, 'the file holds what is listed');

  const remove = (query: string) =>
    h.app.inject({ method: 'DELETE', url: `${ALLOWLIST}?fingerprint=${FINGERPRINT}${query}`, headers: h.owner });
  const missing = await remove('&file=/instructions&route=resource.register');
  t.equal(missing.statusCode, 404);
  t.match(missing.json(), {
    code: 'allowlist_entry_not_found',
    message: `No allowlist entry for ${FINGERPRINT} in /instructions on resource.register; GET lists them.`,
    details: { fingerprint: FINGERPRINT },
  });
  t.equal((await remove('&file=/description')).statusCode, 204);
  t.same(
    (await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries.map((e: Record<string, string>) => [e.file, e.route]),
    [
      [undefined, undefined],
      ['/description', 'resource.validate'],
    ],
    'only the entry with exactly that file and no route',
  );
  t.equal((await remove('&file=/description&route=resource.validate')).statusCode, 204);
  t.equal((await remove('')).statusCode, 204);
  t.same(JSON.parse(await readFile(file, 'utf8')), []);
  t.match((await remove('')).json().message, `No allowlist entry for ${FINGERPRINT}; GET lists them.`);

  const audit = (await auditLines(h)).filter((e) => e.action.startsWith('secret-allowlist.'));
  t.same(
    audit.map((e) => [e.action, e.outcome, e.details]),
    [
      ['secret-allowlist.add', 'secret_detected', undefined],
      ['secret-allowlist.add', 'added', {}],
      ['secret-allowlist.add', 'added', { file: '/description' }],
      ['secret-allowlist.add', 'added', { file: '/description', route: 'resource.validate' }],
      ['secret-allowlist.add', 'unchanged', { file: '/description' }],
      ['secret-allowlist.remove', 'allowlist_entry_not_found', undefined],
      ['secret-allowlist.remove', 'removed', { file: '/description' }],
      ['secret-allowlist.remove', 'removed', { file: '/description', route: 'resource.validate' }],
      ['secret-allowlist.remove', 'removed', {}],
      ['secret-allowlist.remove', 'allowlist_entry_not_found', undefined],
    ],
  );
});

t.test("the owner's first entry makes SECRET_ALLOWLIST_FILE's folder when it does not exist yet", async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'policy', 'secrets', 'allow.json');
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const add = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, reason: 'the sample password of our setup guide' },
  });
  t.equal(add.statusCode, 201, add.body);
  t.same(
    (JSON.parse(await readFile(file, 'utf8')) as { fingerprint: string }[]).map((e) => e.fingerprint),
    [FINGERPRINT],
    'written in the new folder',
  );
  const put = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'setup-guide', { instructions: INSTRUCTIONS });
  t.equal(put.statusCode, 201, 'and applied');
});

t.test("a file removed by another process after an owner's change holds no entry", async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const token = h.huabu.authorization!.slice('Bearer '.length);
  const add = (fingerprint: string) =>
    h.app.inject({ method: 'POST', url: ALLOWLIST, headers: h.owner, payload: { fingerprint, reason: 'a sample' } });
  t.equal((await add(FINGERPRINT)).statusCode, 201);
  t.equal((await h.put('huabu', token, 'g-1', { instructions: INSTRUCTIONS })).statusCode, 201, 'allowed');
  t.equal((await add(secretFingerprint('credential-assignment', 'Zq8!nB3@cV6mK1xW5rT0'))).statusCode, 201, 'a second entry');
  await rm(file);
  t.equal((await h.put('huabu', token, 'g-2', { instructions: INSTRUCTIONS })).statusCode, 422, 'removed: nothing is allowed');
  t.same((await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries, [], 'none listed');
});

t.test("a folder on the file's path turned into a file: no entry applies, the write is refused as a secret", async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'policy', 'allow.json');
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  await writeFile(path.join(dataDir, 'policy'), 'a file where the folder was');
  const put = await h.put('huabu', h.huabu.authorization!.slice('Bearer '.length), 'setup-guide', { instructions: INSTRUCTIONS });
  t.equal(put.statusCode, 422, put.body);
  t.equal(put.json().code, 'secret_detected');
  t.same((await h.app.inject({ url: ALLOWLIST, headers: h.owner })).json().entries, [], 'none listed');
});

t.test("an add that changes nothing leaves the operator's file as written", async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, 'allow.json');
  const written = JSON.stringify([{ fingerprint: FINGERPRINT, reason: 'written by the operator' }]);
  await writeFile(file, written);
  const h = await build(t, { dataDir, env: { SECRET_ALLOWLIST_FILE: file } });
  const again = await h.app.inject({
    method: 'POST',
    url: ALLOWLIST,
    headers: h.owner,
    payload: { fingerprint: FINGERPRINT, reason: 'said again' },
  });
  t.equal(again.statusCode, 200);
  t.equal(await readFile(file, 'utf8'), written, 'byte for byte');
});
