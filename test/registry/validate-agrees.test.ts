// `POST /resources/validate` says valid exactly when the write is accepted: one rule set for both, checked on
// generated candidates (names with invisible and bidi characters, the host's reserved IDs, provider fields,
// blank and surrounding-space text), each validated as its provider and then written with PUT.
import fc from 'fast-check';
import t from 'tap';
import { build, CANARY } from '../helpers/build.js';

const RUNS = Number(process.env.VALIDATE_RUNS ?? 150);

t.test('validate says valid ⇔ the provider write is accepted', async (t) => {
  const h = await build(t, { env: { REQUIRED_RESOURCE_IDS: 'huabu-access,local-resource-management' } });
  const machine = await h.enroll('mac-valid');
  const providers = [
    { id: 'mac-valid', headers: h.bearer(machine) },
    { id: 'huabu', headers: h.bearer(CANARY.huabu) },
  ];
  const text = fc.oneof(
    fc.constantFrom('PDF tools', ' padded ', 'zero\u200bwidth', 'bidi\u202eflip', 'tab\there', '   ', 'ok', 'Ünïcode', 'soft\u00adhyphen'),
    fc.string({ minLength: 1, maxLength: 12 }),
  );
  const id = fc.constantFrom('pdf-tools', 'huabu-access', 'local-resource-management', 'web-fetch');
  const candidate = fc.oneof(
    fc.record(
      {
        schemaVersion: fc.constant(1),
        name: text,
        description: text,
        instructions: text,
        provider: fc.constantFrom(undefined, 'mac-valid', 'huabu', 'other'),
      },
      { requiredKeys: ['schemaVersion', 'name', 'description', 'instructions'] },
    ),
    fc.record(
      {
        schemaVersion: fc.constant(2),
        name: text,
        sourceContent: text,
        provider: fc.constantFrom(undefined, 'mac-valid', 'huabu', 'other'),
      },
      { requiredKeys: ['schemaVersion', 'name', 'sourceContent'] },
    ),
  );
  const disagreements: string[] = [];
  await fc
    .assert(
      fc.asyncProperty(fc.constantFrom(...providers), id, candidate, async (provider, rid, body) => {
        const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
        const validated = await h.app.inject({
          method: 'POST',
          url: '/api/acp/resources/validate',
          headers: provider.headers,
          payload: { ...clean, id: rid },
        });
        if (validated.statusCode !== 200) throw new Error(`validate answered ${validated.statusCode}: ${validated.body}`);
        const written = await h.app.inject({
          method: 'PUT',
          url: `/api/acp/providers/${provider.id}/resources/${rid}`,
          headers: provider.headers,
          payload: clean,
        });
        const valid = validated.json().valid as boolean;
        const accepted = written.statusCode === 200 || written.statusCode === 201;
        if (accepted) {
          await h.app.inject({ method: 'DELETE', url: `/api/acp/providers/${provider.id}/resources/${rid}`, headers: provider.headers });
        }
        if (valid !== accepted) {
          disagreements.push(
            `${provider.id} ${rid} ${JSON.stringify(clean)}: validate ${valid}, PUT ${written.statusCode} ${written.json().code}`,
          );
          return false;
        }
        return true;
      }),
      { numRuns: RUNS, seed: Number(process.env.VALIDATE_SEED ?? Date.now() % 2 ** 31) },
    )
    .catch((err: Error) => t.fail(`${err.message.split('\n')[0]}\n${disagreements.slice(0, 5).join('\n')}`));
  t.same(disagreements, [], 'no candidate where they disagree');
});
