// The launch-signing keys: generated once with the credentials (mode 0600), the same across restarts, rotated
// with the old keys kept and published, refused when unsafe; the public key set at the well-known route, and
// DSSE's envelope format (its pre-authentication encoding, a signature that breaks on any changed byte).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { build, tempDataDir } from '../helpers/build.js';
import { resolveSigningKeys, rotateSigningKeys, SIGNING_KEYS_FILE, SigningKeysFileError } from '../../src/credentials/signing-keys.js';
import {
  DSSE_PAYLOAD_TYPE,
  keyIdOf,
  launchStatement,
  pae,
  publicJwkOf,
  signStatement,
  verifyEnvelope,
  type LaunchFacts,
} from '../../src/workloads/attestation.js';

const KEYS = '/.well-known/agent-resource-registry/keys';
const now = () => new Date('2026-12-06T08:00:00.000Z');

const facts: LaunchFacts = {
  canvasId: 'canvas-1',
  threadId: 'thread-1',
  profileId: 'prf-k7m2q9x4b8n3c5vd',
  profileRevision: 3,
  machineId: 'mac-a',
  realizedAt: '2026-12-06T08:00:00.000Z',
  resources: [
    { id: 'huabu-access', digest: `sha256:${'a'.repeat(64)}`, provider: 'huabu' },
    { id: 'pdf-split', digest: `sha256:${'b'.repeat(64)}`, provider: 'mac-a', sourceContentSha256: 'c'.repeat(64) },
  ],
};

t.test("DSSE's pre-authentication encoding is the protocol's (its own example)", (t) => {
  t.equal(
    pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString(),
    'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
  );
  t.equal(pae('t', Buffer.from('é')).toString(), 'DSSEv1 1 t 2 é', 'lengths count bytes, not characters');
  t.end();
});

t.test('an envelope verifies with its key, and any changed byte, another key or another type is refused', (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicJwkOf(publicKey);
  const envelope = signStatement(launchStatement(facts), { kid: jwk.kid, privateKey });
  t.equal(envelope.payloadType, DSSE_PAYLOAD_TYPE);
  t.equal(envelope.signatures[0]!.keyid, jwk.kid);
  const statement = verifyEnvelope(envelope, [jwk]);
  t.equal(statement._type, 'https://in-toto.io/Statement/v1');
  t.same(statement.subject, [
    { name: 'huabu-access', digest: { sha256: 'a'.repeat(64) } },
    { name: 'pdf-split', digest: { sha256: 'b'.repeat(64) } },
  ]);
  t.same(statement.predicate.profile, { id: facts.profileId, revision: 3 });
  t.equal(statement.predicate.machineId, 'mac-a');

  const payload = Buffer.from(envelope.payload, 'base64');
  for (const at of [0, Math.floor(payload.length / 2), payload.length - 1]) {
    const changed = Buffer.from(payload);
    changed[at] = changed[at]! ^ 1;
    t.throws(() => verifyEnvelope({ ...envelope, payload: changed.toString('base64') }, [jwk]), /signature does not verify/, `byte ${at}`);
  }
  const sig = Buffer.from(envelope.signatures[0]!.sig, 'base64');
  sig[5] = sig[5]! ^ 1;
  t.throws(() => verifyEnvelope({ ...envelope, signatures: [{ keyid: jwk.kid, sig: sig.toString('base64') }] }, [jwk]), /does not verify/);
  const other = publicJwkOf(generateKeyPairSync('ed25519').publicKey);
  t.throws(() => verifyEnvelope(envelope, [other]), /a key the registry does not publish/);
  t.throws(() => verifyEnvelope(envelope, [{ ...other, kid: jwk.kid }]), /does not verify/, "another key under the signer's kid");
  t.throws(() => verifyEnvelope({ ...envelope, payloadType: 'application/json' }, [jwk]), /payloadType/);
  t.throws(() => verifyEnvelope({ ...envelope, signatures: [] }, [jwk]), /no signature/);
  t.throws(() => verifyEnvelope('x', [jwk]), /not a DSSE envelope/);
  t.throws(() => launchStatement({ ...facts, resources: [{ id: 'x', digest: 'sha256:12', provider: 'huabu' }] }), /not a sha256 digest/);
  t.end();
});

t.test("a key's ID is its RFC 7638 thumbprint", (t) => {
  // RFC 8037, appendix A.3: the thumbprint of its example Ed25519 key.
  t.equal(keyIdOf('11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo'), 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
  t.end();
});

t.test('the first start generates one key into signing-keys.json (0600); restarts keep it; the key set is public', async (t) => {
  const dataDir = await tempDataDir();
  const first = await build(t, { dataDir });
  const file = path.join(dataDir, SIGNING_KEYS_FILE);
  t.equal((await stat(file)).mode & 0o777, 0o600);
  const res = await first.app.inject({ method: 'GET', url: KEYS });
  t.equal(res.statusCode, 200, 'no credential needed');
  t.match(res.headers['cache-control'], /public/);
  const { keys } = res.json<{ keys: { kid: string; x: string; kty: string; crv: string; alg: string; use: string }[] }>();
  t.equal(keys.length, 1);
  t.same(Object.keys(keys[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x'], 'public members only (no "d")');
  t.equal(keys[0]!.kid, keyIdOf(keys[0]!.x));
  await first.app.close();

  const again = await build(t, { dataDir });
  t.same((await again.app.inject({ method: 'GET', url: KEYS })).json(), { keys }, 'the same key after a restart');
  const stored = await readFile(file, 'utf8');
  const privateKey = (JSON.parse(stored) as { keys: { privateKey: string }[] }).keys[0]!.privateKey;
  t.notOk(res.body.includes(privateKey.slice(24)), 'the answer holds no private key');
  t.notOk((await readFile(again.logFile, 'utf8')).includes(privateKey.slice(24)), 'nor does the log');
});

t.test('a rotation signs with a new key and keeps publishing the old ones', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, SIGNING_KEYS_FILE);
  const before = await resolveSigningKeys(file, now);
  const old = signStatement(launchStatement(facts), before.active);
  const rotated = await rotateSigningKeys(file, now);
  t.equal(rotated.length, 2);
  t.equal(rotated[1]!.kid, before.active.kid, 'the old key is kept, after the new one');
  const h = await build(t, { dataDir });
  const { keys } = (await h.app.inject({ method: 'GET', url: KEYS })).json<{ keys: { kid: string }[] }>();
  t.same(
    keys.map((k) => k.kid),
    [rotated[0]!.kid, before.active.kid],
    'the signing key first',
  );
  t.ok(verifyEnvelope(old, keys), 'an attestation signed before the rotation still verifies against the published set');
  t.equal((await resolveSigningKeys(file, now)).active.kid, rotated[0]!.kid, 'the new key signs');
});

t.test('an unsafe or broken signing-keys.json stops the start, naming the file, and is left unchanged', async (t) => {
  const dataDir = await tempDataDir();
  const file = path.join(dataDir, SIGNING_KEYS_FILE);
  await resolveSigningKeys(file, now);
  await chmod(file, 0o644);
  await t.rejects(build(t, { dataDir }), { name: 'SigningKeysFileError', message: /readable by group or others.*chmod 600/ });
  await chmod(file, 0o600);
  const broken = JSON.stringify({ schemaVersion: 1, keys: [{ createdAt: 'x', privateKey: 'bm90IGEga2V5' }] });
  await writeFile(file, broken, { mode: 0o600 });
  await t.rejects(resolveSigningKeys(file, now), SigningKeysFileError);
  await t.rejects(resolveSigningKeys(file, now), /keys\[0\] is not an Ed25519 private key/);
  t.equal(await readFile(file, 'utf8'), broken, 'left as it was');
  await writeFile(file, '{"keys": []}', { mode: 0o600 });
  await t.rejects(resolveSigningKeys(file, now), /at least one key/);
});

t.test('npm run signing-keys: rotate and list print key IDs, never a private key', async (t) => {
  const dataDir = await tempDataDir();
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.resolve('scripts/signing-keys.ts'), ...args, '--data-dir', dataDir], {
      encoding: 'utf8',
    });
  const empty = run('list');
  t.equal(empty.status, 0);
  t.match(empty.stdout, /no signing keys yet/);
  const rotate = run('rotate');
  t.equal(rotate.status, 0, rotate.stderr);
  const second = run('rotate');
  const list = run('list');
  const stored = JSON.parse(await readFile(path.join(dataDir, SIGNING_KEYS_FILE), 'utf8')) as {
    keys: { kid: string; privateKey: string }[];
  };
  t.equal(stored.keys.length, 2);
  t.match(list.stdout, new RegExp(`${stored.keys[0]!.kid}.*\\(signs\\)\\n${stored.keys[1]!.kid}`));
  for (const out of [rotate.stdout, second.stdout, list.stdout]) {
    for (const key of stored.keys) t.notOk(out.includes(key.privateKey.slice(24)), 'no private key printed');
  }
  const bad = run('shred');
  t.equal(bad.status, 2);
  t.match(bad.stderr, /unknown command shred/);
});

t.test('a PostgreSQL replica without a data directory derives its key from the canvas-token secret, and writes nothing', async (t) => {
  const missing = path.join(await tempDataDir(), 'no-such-dir', SIGNING_KEYS_FILE);
  const a = await resolveSigningKeys(missing, now, { derivedFrom: 'arr_secret_shared0by0both0replicas000000' });
  const b = await resolveSigningKeys(missing, now, { derivedFrom: 'arr_secret_shared0by0both0replicas000000' });
  const other = await resolveSigningKeys(missing, now, { derivedFrom: 'arr_secret_another0secret0entirely0000000' });
  t.equal(a.active.kid, b.active.kid, 'replicas that share the secret share the key');
  t.not(a.active.kid, other.active.kid, 'another secret, another key');
  t.notOk(a.generated);
  await a.persist();
  await t.rejects(stat(path.dirname(missing)), { code: 'ENOENT' }, 'no directory or file is written');
  t.ok(
    verifyEnvelope(signStatement(launchStatement(facts), a.active), [b.active.publicJwk]),
    "one replica's attestation verifies with the other's key",
  );
  const dataDir = await tempDataDir();
  const present = await resolveSigningKeys(path.join(dataDir, SIGNING_KEYS_FILE), now, {
    derivedFrom: 'arr_secret_shared0by0both0replicas000000',
  });
  t.ok(present.generated, 'with a data directory the key is generated into the file as ever');
  t.not(present.active.kid, a.active.kid);
});
