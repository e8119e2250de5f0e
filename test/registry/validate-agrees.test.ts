// `POST /resources/validate` says valid exactly when the write is accepted: one rule set for both, checked on
// generated candidates (names with invisible and bidi characters, the host's reserved IDs, provider fields,
// blank and surrounding-space text), each validated as its provider and then written: with PUT of the one
// record, as a provider's whole-set reconcile, and as an agent's local receipt.
import fc from 'fast-check';
import type { Test } from 'tap';
import t from 'tap';
import { build, CANARY, type TestApp } from '../helpers/build.js';

const RUNS = Number(process.env.VALIDATE_RUNS ?? 150);

const text = fc.oneof(
  fc.constantFrom('PDF tools', ' padded ', 'zero\u200bwidth', 'bidi\u202eflip', 'tab\there', '   ', 'ok', 'Ünïcode', 'soft\u00adhyphen'),
  fc.string({ minLength: 1, maxLength: 12 }),
);
/** An ordinary ID, the required defaults, and the host's own records' IDs (seeded or not). */
const id = fc.constantFrom('pdf-tools', 'huabu-access', 'local-resource-management', 'web-fetch', 'web-search', 'generate-image');
const providerField = fc.constantFrom(undefined, 'mac-valid', 'huabu', 'other');
const v1 = fc.record(
  { schemaVersion: fc.constant(1), name: text, description: text, instructions: text, provider: providerField },
  { requiredKeys: ['schemaVersion', 'name', 'description', 'instructions'] },
);
const v2 = fc.record(
  { schemaVersion: fc.constant(2), name: text, sourceContent: text, provider: providerField },
  { requiredKeys: ['schemaVersion', 'name', 'sourceContent'] },
);

interface Writer {
  id: string;
  /** The credential the write is made with; `validateAs` the provider's, when that is another (a receipt's canvas token). */
  headers: Record<string, string>;
  validateAs?: Record<string, string>;
}

/** A write of `body` as `rid` by `writer`: its status and code; an accepted one is undone before the next. */
type Write = (h: TestApp, writer: Writer, rid: string, body: Record<string, unknown>) => Promise<{ status: number; code?: string }>;

async function agrees(
  t: Test,
  writers: (h: TestApp) => Promise<Writer[]>,
  candidate: fc.Arbitrary<Record<string, unknown>>,
  write: Write,
): Promise<void> {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: 'huabu-access,local-resource-management' } });
  const providers = await writers(h);
  const disagreements: string[] = [];
  await fc
    .assert(
      fc.asyncProperty(fc.constantFrom(...providers), id, candidate, async (writer, rid, body) => {
        const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
        const validated = await h.app.inject({
          method: 'POST',
          url: '/api/acp/resources/validate',
          headers: writer.validateAs ?? writer.headers,
          payload: { ...clean, id: rid },
        });
        if (validated.statusCode !== 200) throw new Error(`validate answered ${validated.statusCode}: ${validated.body}`);
        const valid = validated.json().valid as boolean;
        const written = await write(h, writer, rid, clean);
        const accepted = written.status === 200 || written.status === 201;
        if (valid !== accepted) {
          disagreements.push(`${writer.id} ${rid} ${JSON.stringify(clean)}: validate ${valid}, write ${written.status} ${written.code}`);
          return false;
        }
        return true;
      }),
      { numRuns: RUNS, seed: Number(process.env.VALIDATE_SEED ?? Date.now() % 2 ** 31) },
    )
    .catch((err: Error) => t.fail(`${err.message.split('\n')[0]}\n${disagreements.slice(0, 5).join('\n')}`));
  t.same(disagreements, [], 'no candidate where they disagree');
}

/** The enrolled machine and the host, each writing with its own credential. */
const machineAndHost = async (h: TestApp): Promise<Writer[]> => [
  { id: 'mac-valid', headers: h.bearer(await h.enroll('mac-valid')) },
  { id: 'huabu', headers: h.bearer(CANARY.huabu) },
];

const outcome = (res: { statusCode: number; json(): unknown }) => ({
  status: res.statusCode,
  code: (res.json() as { code?: string } | null)?.code,
});

t.test('validate says valid ⇔ the provider write is accepted', async (t) => {
  await agrees(t, machineAndHost, fc.oneof(v1, v2), async (h, writer, rid, body) => {
    const url = `/api/acp/providers/${writer.id}/resources/${rid}`;
    const res = await h.app.inject({ method: 'PUT', url, headers: writer.headers, payload: body });
    if (res.statusCode === 200 || res.statusCode === 201) await h.app.inject({ method: 'DELETE', url, headers: writer.headers });
    return outcome(res);
  });
});

t.test("validate says valid ⇔ the provider's reconcile of a set holding it is accepted", async (t) => {
  await agrees(t, machineAndHost, fc.oneof(v1, v2), async (h, writer, rid, body) => {
    const url = `/api/acp/providers/${writer.id}/resources`;
    const res = await h.app.inject({ method: 'PUT', url, headers: writer.headers, payload: { resources: [{ ...body, id: rid }] } });
    // What it created is withdrawn again (what it withdrew of the host's seeded records comes back at the next start only).
    if (res.statusCode === 200) {
      for (const made of res.json<{ created: string[] }>().created) {
        await h.app.inject({ method: 'DELETE', url: `${url}/${made}`, headers: writer.headers });
      }
    }
    return outcome(res);
  });
});

t.test("validate says valid ⇔ an agent's local receipt of it is accepted", async (t) => {
  const receiptWriter = async (h: TestApp): Promise<Writer[]> => {
    const machine = await h.enroll('mac-valid');
    return [{ id: 'mac-valid', headers: h.bearer(await h.canvasToken('canvas-valid', 'mac-valid')), validateAs: h.bearer(machine) }];
  };
  // A receipt carries no provider: the candidate is the record it publishes as the machine.
  const published = fc.record(
    { schemaVersion: fc.constant(2), name: text, sourceContent: text },
    { requiredKeys: ['schemaVersion', 'name', 'sourceContent'] },
  );
  await agrees(t, receiptWriter, published, async (h, writer, rid, body) => {
    const url = '/api/rfs/canvas-valid/resources/local/receipts';
    const res = await h.app.inject({
      method: 'POST',
      url,
      headers: writer.headers,
      payload: { id: rid, kind: 'skill', name: body.name, sourceContent: body.sourceContent, entrypoint: `skills/${rid}/SKILL.md` },
    });
    if (res.statusCode === 200) await h.app.inject({ method: 'DELETE', url: `${url}/${rid}`, headers: writer.headers });
    return outcome(res);
  });
});
