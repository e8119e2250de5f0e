// Upstream Agentlet's receipts v1 and v2 (test/fixtures/agentlet-upstream, see its PROVENANCE.md) on a real file
// system: `validate` and `sync` accept them as they are on real machines, `provider` must be this machine, a v2
// receipt publishes record v2 and a v1 receipt record v1, every security check applies to the v2 fields, and the
// receipts this CLI writes are ones upstream's parser reads. The CLI runs in the test's process against a real registry.
import t from 'tap';
import { chmod, cp, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatReport, receiptProblems, serializeReceipt, toReconcileEntry, validateResourceRoot } from '../../src/agentlet/receipt.js';
import { initResourceRoot } from '../../src/agentlet/resource-root.js';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { addSkill, FAKE_GITHUB_TOKEN, installFile, machine, tempDir, type Machine } from '../helpers/agentlet.js';
import { sansDigest } from '../helpers/digest.js';

// About a dozen CLI runs, each loading the secret scanner: on a loaded machine this file nears tap's 120 s.
t.setTimeout(300_000);

const FIXTURE = path.resolve('test', 'fixtures', 'agentlet-upstream', 'root');
const MACHINE = 'agentlet-7f3a';
const scanner = new SecretScanner();

/** Copies the upstream resource root over an initialized one, receipts mode 0600 as upstream writes them. */
async function plantUpstreamRoot(root: string): Promise<void> {
  await cp(FIXTURE, root, { recursive: true });
  for (const name of await readdir(path.join(root, 'receipts'))) await chmod(path.join(root, 'receipts', name), 0o600);
}

async function fixtureReceipt(id: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(FIXTURE, 'receipts', `${id}.json`), 'utf8'));
}

/**
 * Upstream's `parseReceipt` at 9df6c167 restated (the checks that decide whether its Agentlet can read a receipt
 * file; the entrypoint check is ours and stricter): schemaVersion 1 or 2, provider and the other required strings
 * non-empty, sourceContent (v2) or description/instructions (v1) non-empty.
 */
function upstreamReads(value: Record<string, unknown>): string[] {
  const nonEmpty = (v: unknown) => typeof v === 'string' && v.trim().length > 0;
  const problems: string[] = [];
  if (value.schemaVersion !== 1 && value.schemaVersion !== 2) problems.push('schemaVersion');
  if (!nonEmpty(value.id) || !/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(value.id as string)) problems.push('id');
  if (!['skill', 'tool', 'connector'].includes(value.kind as string)) problems.push('kind');
  for (const f of ['name', 'provider', 'entrypoint', 'installedAt']) if (!nonEmpty(value[f])) problems.push(f);
  const content = value.schemaVersion === 1 ? [value.description, value.instructions].filter(nonEmpty).join('\n\n') : value.sourceContent;
  if (!nonEmpty(content)) problems.push('sourceContent');
  return problems;
}

async function upstreamRoot(t: Parameters<typeof tempDir>[0]): Promise<string> {
  const root = path.join(await tempDir(t), 'res');
  await initResourceRoot(root);
  await plantUpstreamRoot(root);
  return root;
}

t.test('upstream receipts v1 and v2 validate as they are, and publish in their own version', async (t) => {
  const root = await upstreamRoot(t);
  const report = await validateResourceRoot(root, scanner, MACHINE);
  t.same(report.reports.map(formatReport), ['ok pdf-summary', 'ok repo-grep', 'ok web-fetch']);
  t.equal(report.valid, true);
  const byId = Object.fromEntries(report.reports.map((r) => [r.receipt!.id, r.receipt!]));
  t.same(
    toReconcileEntry(byId['web-fetch']!),
    {
      schemaVersion: 2,
      id: 'web-fetch',
      name: 'Web fetch',
      sourceContent: (await fixtureReceipt('web-fetch')).sourceContent,
    },
    'v2 receipt → record v2: name and sourceContent only',
  );
  t.same(
    toReconcileEntry(byId['pdf-summary']!),
    {
      schemaVersion: 1,
      id: 'pdf-summary',
      name: 'PDF summary',
      description: 'Summarizes PDF files page by page.',
      instructions: 'Read $AGENT_RESOURCE_DIR/skills/pdf-summary/SKILL.md before summarizing a PDF.',
    },
    'v1 receipt → record v1 exactly as before (no provider, no provenance)',
  );
  for (const id of ['pdf-summary', 'web-fetch', 'repo-grep']) {
    const bytes = await readFile(path.join(FIXTURE, 'receipts', `${id}.json`), 'utf8');
    t.equal(serializeReceipt(byId[id]!), bytes, `${id}: our layout is upstream's, byte for byte`);
  }
});

t.test("provider, when present, must be this machine's ID", async (t) => {
  const root = await upstreamRoot(t);
  const other = await validateResourceRoot(root, scanner, 'agentlet-other');
  t.equal(other.valid, false);
  t.same(
    other.reports.map(formatReport),
    ['pdf-summary', 'repo-grep', 'web-fetch'].map(
      (id) =>
        `invalid receipts/${id}.json: /provider is "${MACHINE}" but this machine is "agentlet-other"; a receipt publishes as the machine that holds it, so its provider must be this machine's ID`,
    ),
  );
  const v2 = await fixtureReceipt('web-fetch');
  t.same(
    await receiptProblems(root, 'web-fetch', { ...v2, provider: 'huabu' }, scanner),
    ['/provider is "huabu", the host\'s ID; a receipt on a machine must name this machine\'s ID'],
    'the host ID is refused even without a machine ID',
  );
  t.same(await receiptProblems(root, 'web-fetch', { ...v2, provider: 'huabu' }, scanner, MACHINE), [
    `/provider is "huabu" but this machine is "${MACHINE}"; a receipt publishes as the machine that holds it, so its provider must be this machine's ID`,
  ]);
  const { provider: _p, ...withoutProvider } = v2;
  t.same(
    await receiptProblems(root, 'web-fetch', withoutProvider, scanner, MACHINE),
    [],
    'absent provider: accepted (receipts this CLI wrote before)',
  );
  t.same(await receiptProblems(root, 'web-fetch', { ...v2, provider: 'has space' }, scanner, MACHINE), [
    '/provider must be a provider ID: a letter or digit, then letters, digits, . _ - (at most 128 characters)',
  ]);
});

t.test('v2 fields follow the registry rules and every security check', async (t) => {
  const root = await upstreamRoot(t);
  const base = await fixtureReceipt('web-fetch');
  const check = (override: Record<string, unknown>) => receiptProblems(root, 'web-fetch', { ...base, ...override }, scanner, MACHINE);
  t.same(await check({ sourceContent: 's'.repeat(100_000) }), [], 'sourceContent up to 100,000 characters');
  t.same(await check({ sourceContent: 's'.repeat(100_001) }), ['/sourceContent must not have more than 100000 characters']);
  t.same(await check({ sourceContent: ' \n' }), ['/sourceContent must not be blank or hold control characters other than newline and tab']);
  t.same(await check({ sourceContent: 'bell\u0007' }), [
    '/sourceContent must not be blank or hold control characters other than newline and tab',
  ]);
  t.same(await check({ name: 'n'.repeat(129) }), ['/name must not have more than 128 characters']);
  t.same(await check({ sourceRevision: 'a\nb' }), ['/sourceRevision must be one line without control characters']);
  t.same(await check({ description: 'v1 field' }), ['unknown field(s): description']);
  t.same(await check({ schemaVersion: 3 }), ['/schemaVersion must be 1 or 2']);
  const { sourceContent: _s, ...missing } = base;
  t.same(await receiptProblems(root, 'web-fetch', missing, scanner, MACHINE), ['missing field(s): sourceContent']);

  for (const field of ['sourceContent', 'sourceRevision', 'provider', 'source']) {
    t.match(
      await check({ [field]: `x ${FAKE_GITHUB_TOKEN} y` }).then((p) => p.filter((l) => l.includes('secret'))),
      [
        new RegExp(
          `^/${field} looks like it contains a secret \\(line 1, rule github-pat, fingerprint github-pat:[0-9a-f]{64}\\); secrets never belong in a receipt$`,
        ),
      ],
      `${field}: secret found`,
    );
    t.notOk((await check({ [field]: `x ${FAKE_GITHUB_TOKEN} y` })).join(' ').includes(FAKE_GITHUB_TOKEN), `${field}: secret never quoted`);
  }

  // Entrypoint containment is judged on real paths for v2 as for v1.
  const dir = path.dirname(root);
  await installFile(dir, 'outside/evil.sh');
  await symlink(path.join(dir, 'outside'), path.join(root, 'skills', 'escape'));
  t.match(
    (await check({ entrypoint: 'skills/escape/evil.sh' }))[0],
    /^\/entrypoint skills\/escape\/evil\.sh resolves outside the resource root/,
  );
  t.same(await check({ entrypoint: 'skills/../../outside/evil.sh' }), ['/entrypoint must not contain ".." segments']);
  t.same(await check({ entrypoint: path.join(root, 'skills/web-fetch') }), [
    '/entrypoint must be relative to the resource root, not absolute',
  ]);
});

async function upstreamMachine(t: Parameters<typeof machine>[0]): Promise<Machine> {
  const m = await machine(t, MACHINE);
  await plantUpstreamRoot(m.root);
  return m;
}

t.test('validate and sync accept a resource root holding upstream receipts v1 and v2', async (t) => {
  const m = await upstreamMachine(t);
  const validate = await m.cli(['validate', '--machine-id', MACHINE]);
  t.equal(validate.code, 0, validate.stderr);
  t.equal(validate.stdout, 'ok pdf-summary\nok repo-grep\nok web-fetch\n');
  t.equal(validate.stderr, '');

  const unchecked = await m.cli(['validate']);
  t.equal(unchecked.code, 0, unchecked.stderr);
  t.match(unchecked.stderr, /providers were not compared with this machine's ID; pass --machine-id/);

  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 0, sync.stderr);
  t.match(sync.stdout, /^created:\s+pdf-summary, repo-grep, web-fetch$/m);

  // What the registry stored: v2 records for v2 receipts, the v1 record exactly as before for the v1 receipt.
  // (the store's snapshot and its journal together hold every stored record)
  const storeFile = path.join(m.reg.h.dataDir, 'agent-resources', 'resources.json');
  const records = (await readFile(storeFile, 'utf8')) + (await readFile(`${storeFile}.journal`, 'utf8'));
  const webFetch = await fixtureReceipt('web-fetch');
  const v2 = await m.reg.h.app.inject({ url: '/api/acp/resources/web-fetch?schemaVersion=2', headers: m.reg.h.owner });
  t.same(sansDigest(v2.json()), {
    schemaVersion: 2,
    id: 'web-fetch',
    name: 'Web fetch',
    provider: MACHINE,
    sourceContent: webFetch.sourceContent,
    userContent: '',
  });
  const v1 = await m.reg.h.app.inject({ url: '/api/acp/resources/pdf-summary', headers: m.reg.h.owner });
  t.same(v1.json(), {
    schemaVersion: 1,
    id: 'pdf-summary',
    name: 'PDF summary',
    provider: MACHINE,
    description: 'Summarizes PDF files page by page.',
    instructions: 'Read $AGENT_RESOURCE_DIR/skills/pdf-summary/SKILL.md before summarizing a PDF.',
  });
  t.notOk(
    records.includes('sourceRevision') || records.includes('installedAt') || records.includes('example.org'),
    'no receipt bookkeeping reached the registry',
  );
  t.match(records, /"schemaVersion":2,"id":"web-fetch"/, 'web-fetch is stored as record v2');
  t.match(records, /"schemaVersion":1,"id":"pdf-summary"/, 'pdf-summary is stored as record v1');

  const again = await m.cli(['sync', ...m.remote]);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /^unchanged:\s+pdf-summary, repo-grep, web-fetch$/m, 'a second sync changes nothing');
});

t.test('sync refuses a receipt whose provider is another machine, naming the field; nothing is sent', async (t) => {
  const m = await upstreamMachine(t);
  const foreign = { ...(await fixtureReceipt('web-fetch')), provider: 'agentlet-other' };
  await writeFile(path.join(m.root, 'receipts', 'web-fetch.json'), JSON.stringify(foreign, null, 2) + '\n', { mode: 0o600 });
  const sync = await m.cli(['sync', ...m.remote]);
  t.equal(sync.code, 1);
  t.match(sync.stdout, `invalid receipts/web-fetch.json: /provider is "agentlet-other" but this machine is "${MACHINE}"`);
  t.match(sync.stderr, /sync aborted: 1 invalid receipt\(s\); nothing was sent to the registry/);
  t.same(
    m.reg.providerRequests.filter((r) => r.startsWith('PUT')),
    [],
    'no reconcile request',
  );
  const validate = await m.cli(['validate', '--machine-id', MACHINE]);
  t.equal(validate.code, 1);
  t.match(validate.stdout, /invalid receipts\/web-fetch\.json: \/provider is "agentlet-other"/);
});

t.test('receipt add writes a receipt upstream reads: provider is the machine ID', async (t) => {
  const m = await machine(t, MACHINE);
  const added = await addSkill(m, 'summarize-pdf', ['--machine-id', MACHINE]);
  t.equal(added.code, 0, added.stderr);
  t.equal(added.stderr, '');
  const written = JSON.parse(await readFile(path.join(m.root, 'receipts', 'summarize-pdf.json'), 'utf8'));
  t.equal(written.provider, MACHINE);
  t.same(
    Object.keys(written),
    ['schemaVersion', 'id', 'kind', 'name', 'provider', 'description', 'instructions', 'entrypoint', 'installedAt'],
    "upstream's key order",
  );
  t.same(upstreamReads(written), [], "upstream's parser reads it");
  t.equal((await m.cli(['validate', '--machine-id', MACHINE])).code, 0);

  const bare = await addSkill(m, 'no-provider');
  t.equal(bare.code, 0, bare.stderr);
  t.match(bare.stderr, /warning: written without "provider" \(pass --machine-id ID\)/, 'without --machine-id the user is told');
  t.same(upstreamReads(JSON.parse(await readFile(path.join(m.root, 'receipts', 'no-provider.json'), 'utf8'))), ['provider']);

  const bad = await addSkill(m, 'host-owned', ['--machine-id', 'huabu']);
  t.equal(bad.code, 2, 'the host ID is not a machine ID');
  t.match(bad.stderr, /--machine-id must be the exact machine ID/);
});

t.test("the fixtures are ones upstream's parser reads", async (t) => {
  for (const id of ['pdf-summary', 'web-fetch', 'repo-grep']) t.same(upstreamReads(await fixtureReceipt(id)), [], id);
});
