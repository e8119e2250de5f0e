// Launch attestations through the real service (test/launch and test/postgres run them on each store): the
// launch answer's envelope verifies against the published keys and signs exactly the launch's pins and facts;
// a repeat, a read and a restart answer the same bytes; after a rotation old launches still verify and new
// ones are signed by the new key.
import type { Test } from 'tap';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { build, CANARY, tempDataDir, type TestApp } from './build.js';
import { rotateSigningKeys, SIGNING_KEYS_FILE } from '../../src/credentials/signing-keys.js';
import { verifyEnvelope } from '../../src/workloads/attestation.js';

type StoreEnv = (t: Test) => Promise<Record<string, string>>;
const KEYS = '/.well-known/agent-resource-registry/keys';
const SKILL = '---\nname: pdf-split\ndescription: Splits PDF files.\n---\n\n# PDF split\n';

interface Answer {
  canvasId: string;
  threadId: string;
  realizedAt: string;
  spec: { agentletId: string; resourcePins: { id: string; digest: string }[] };
  attestation: { payload: string; signatures: { keyid: string }[] };
}

async function world(t: Test, env: Record<string, string>, dataDir: string) {
  const h = await build(t, { env, dataDir });
  return h;
}

async function seed(t: Test, h: TestApp): Promise<string> {
  const mac = await h.enroll('mac-1');
  for (const id of ['huabu-access', 'local-resource-management']) t.equal((await h.put('huabu', CANARY.huabu, id)).statusCode, 201);
  const put = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-1/resources/pdf-split',
    headers: h.bearer(mac),
    payload: { schemaVersion: 2, name: 'pdf-split', sourceContent: SKILL },
  });
  t.equal(put.statusCode, 201, 'a machine skill v2');
  const profile = await h.app.inject({
    method: 'POST',
    url: '/api/acp/profiles',
    headers: h.owner,
    payload: {
      alias: 'Signed',
      agentletId: 'mac-1',
      workingDirPath: '/w',
      launch: { kind: 'acp-command', command: 'agent' },
      resourceIds: [],
    },
  });
  const id = profile.json().id as string;
  // Revision 2: the predicate names the revision the launch used.
  const patched = await h.app.inject({
    method: 'PATCH',
    url: `/api/acp/profiles/${id}`,
    headers: h.owner,
    payload: { resourceIds: ['pdf-split'] },
  });
  t.equal(patched.statusCode, 200, 'the profile changed once');
  return id;
}

const launch = (h: TestApp, profileId: string, threadId: string) =>
  h.app.inject({ method: 'POST', url: '/api/acp/launch', headers: h.owner, payload: { profileId, canvasId: 'canvas-1', threadId } });

const keysOf = async (h: TestApp) => (await h.app.inject({ url: KEYS })).json<{ keys: { kid: string }[] }>().keys;

export function runAttestationScenarios(t: Test, name: string, storeEnv: StoreEnv): void {
  t.test(`${name}: the launch answer's attestation verifies and signs exactly its pins, profile revision, machine and time`, async (t) => {
    const env = await storeEnv(t);
    const h = await world(t, env, await tempDataDir());
    const profileId = await seed(t, h);
    const res = await launch(h, profileId, 'thread-1');
    t.equal(res.statusCode, 201);
    const answer = res.json<Answer>();
    const statement = verifyEnvelope(answer.attestation, await keysOf(h));
    t.same(
      statement.subject,
      answer.spec.resourcePins.map((p) => ({ name: p.id, digest: { sha256: p.digest.slice('sha256:'.length) } })),
      'the subjects are the pins, in effective order',
    );
    t.same(
      answer.spec.resourcePins.map((p) => p.id),
      ['huabu-access', 'local-resource-management', 'pdf-split'],
    );
    t.same(statement.predicate, {
      canvasId: 'canvas-1',
      threadId: 'thread-1',
      profile: { id: profileId, revision: 2 },
      machineId: 'mac-1',
      realizedAt: answer.realizedAt,
      resources: [
        { ...answer.spec.resourcePins[0], provider: 'huabu' },
        { ...answer.spec.resourcePins[1], provider: 'huabu' },
        { ...answer.spec.resourcePins[2], provider: 'mac-1', sourceContentSha256: createHash('sha256').update(SKILL.trim()).digest('hex') },
      ],
    });
    const payload = Buffer.from(answer.attestation.payload, 'base64');
    payload[10] = payload[10]! ^ 1;
    t.throws(() => verifyEnvelope({ ...answer.attestation, payload: payload.toString('base64') }, []), /does not verify|does not publish/);
  });

  t.test(`${name}: a repeat, a read and a restart answer the same attestation; a rotation signs new launches only`, async (t) => {
    const env = await storeEnv(t);
    const dataDir = await tempDataDir();
    const h = await world(t, env, dataDir);
    const profileId = await seed(t, h);
    const first = await launch(h, profileId, 'thread-1');
    const attestation = first.json<Answer>().attestation;
    const again = await launch(h, profileId, 'thread-1');
    t.equal(again.statusCode, 200);
    t.same(again.json<Answer>().attestation, attestation, 'a repeat answers the stored envelope');
    const read = await h.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: h.owner });
    t.same(read.json<Answer>().attestation, attestation, 'so does a read');
    const oldKid = attestation.signatures[0]!.keyid;
    await h.app.close();

    await rotateSigningKeys(path.join(dataDir, SIGNING_KEYS_FILE), () => new Date());
    const restarted = await world(t, env, dataDir);
    const keys = await keysOf(restarted);
    t.equal(keys.length, 2);
    t.equal(keys[1]!.kid, oldKid, 'the old key stays published');
    const kept = await restarted.app.inject({ url: '/api/acp/workloads/canvas-1/thread-1', headers: restarted.owner });
    t.same(kept.json<Answer>().attestation, attestation, 'the restart and the rotation leave it as it was');
    t.ok(verifyEnvelope(attestation, keys), 'and it verifies against the published set');
    const next = (await launch(restarted, profileId, 'thread-2')).json<Answer>();
    t.equal(next.attestation.signatures[0]!.keyid, keys[0]!.kid, 'a new launch is signed by the new key');
    t.ok(verifyEnvelope(next.attestation, keys));
  });
}
