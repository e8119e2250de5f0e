// Record v2 beside v1 through every route (JSON store): provider writes of either version, the owner's
// customization and its survival, both representations with their own ETags, the bad-input matrix, and a
// DATA_DIR holding upstream's v2 resources.json.
import t from 'tap';
import { cp, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { readStoredRecords } from '../../src/storage/json-file-store.js';
import { build, CANARY, tempDataDir } from '../helpers/build.js';
import { upstreamLoad } from '../helpers/upstream-resources.js';
import { sansDigest } from '../helpers/digest.js';
import { textFieldsOf } from '../../src/registry/resource-versions.js';

const v2Body = (name: string, sourceContent: string) => ({ schemaVersion: 2, name, sourceContent });
const resourcesFile = (dataDir: string) => path.join(dataDir, 'agent-resources', 'resources.json');

async function putV2(h: Awaited<ReturnType<typeof build>>, provider: string, headers: Record<string, string>, id: string, body: object) {
  return h.app.inject({ method: 'PUT', url: `/api/acp/providers/${provider}/resources/${id}`, headers, payload: body });
}

t.test('a provider writes record v2; readers choose the representation; a v1 record reads back exactly', async (t) => {
  const h = await build(t);
  const created = await putV2(
    h,
    'huabu',
    h.huabu,
    'web-search',
    v2Body('  Web search ', '  Search the public web.\n\nAsk $HUABU_RFS_URL.  '),
  );
  t.equal(created.statusCode, 201);
  t.same(
    sansDigest(created.json()),
    {
      schemaVersion: 2,
      id: 'web-search',
      name: 'Web search',
      provider: 'huabu',
      sourceContent: 'Search the public web.\n\nAsk $HUABU_RFS_URL.',
      userContent: '',
    },
    'stored trimmed, answered as v2',
  );
  t.same(
    Object.keys(created.json()),
    ['schemaVersion', 'id', 'name', 'provider', 'sourceContent', 'userContent', 'digest'],
    "upstream's key order, then the digest",
  );

  const v1Put = await h.put('huabu', CANARY.huabu, 'huabu-access', {
    name: ' Huabu access ',
    description: 'How to reach Huabu. ',
    instructions: 'Read $HUABU_RFS_URL/resources.',
  });
  t.equal(v1Put.statusCode, 201);
  t.same(v1Put.json(), {
    schemaVersion: 1,
    id: 'huabu-access',
    name: ' Huabu access ',
    provider: 'huabu',
    description: 'How to reach Huabu. ',
    instructions: 'Read $HUABU_RFS_URL/resources.',
  });

  const v1Read = await h.app.inject({ url: '/api/acp/resources/huabu-access', headers: h.owner });
  t.equal(v1Read.body, v1Put.body, 'a record written as v1 reads back as v1 byte for byte');
  const asV2 = await h.app.inject({ url: '/api/acp/resources/huabu-access?schemaVersion=2', headers: h.owner });
  t.same(
    sansDigest(asV2.json()),
    {
      schemaVersion: 2,
      id: 'huabu-access',
      name: 'Huabu access',
      provider: 'huabu',
      sourceContent: 'How to reach Huabu.\n\nRead $HUABU_RFS_URL/resources.',
      userContent: '',
    },
    "v1 → v2 is upstream's conversion",
  );

  const v2AsV1 = await h.app.inject({ url: '/api/acp/resources/web-search', headers: h.owner });
  t.same(
    v2AsV1.json(),
    {
      schemaVersion: 1,
      id: 'web-search',
      name: 'Web search',
      provider: 'huabu',
      description: 'Search the public web.',
      instructions: 'Search the public web.\n\nAsk $HUABU_RFS_URL.',
    },
    'v2 → v1: first line as description, the whole guidance as instructions',
  );

  const list1 = await h.app.inject({ url: '/api/acp/resources', headers: h.owner });
  const list2 = await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner });
  t.same(
    list1.json().resources.map((r: { schemaVersion: number }) => r.schemaVersion),
    [1, 1],
  );
  t.same(
    list2.json().resources.map((r: { schemaVersion: number }) => r.schemaVersion),
    [2, 2],
  );
  t.same(list2.json().resources[1], created.json());
  t.not(list1.headers.etag, list2.headers.etag, 'each representation has its own ETag');
  t.equal(
    (
      await h.app.inject({
        url: '/api/acp/resources?schemaVersion=2',
        headers: { ...h.owner, 'if-none-match': list2.headers.etag as string },
      })
    ).statusCode,
    304,
  );
  t.equal(
    (
      await h.app.inject({
        url: '/api/acp/resources?schemaVersion=2',
        headers: { ...h.owner, 'if-none-match': list1.headers.etag as string },
      })
    ).statusCode,
    200,
    "v1's ETag does not validate v2's body",
  );
  t.equal(
    (
      await h.app.inject({
        url: '/api/acp/resources?schemaVersion=1',
        headers: { ...h.owner, 'if-none-match': list1.headers.etag as string },
      })
    ).statusCode,
    304,
    '?schemaVersion=1 is the default representation',
  );
  t.equal((await h.app.inject({ url: '/api/acp/resources?schemaVersion=3', headers: h.owner })).json().code, 'validation_failed');

  const mine = await h.app.inject({ url: '/api/acp/providers/huabu/resources?schemaVersion=2', headers: h.huabu });
  t.same(mine.json(), { resources: list2.json().resources }, 'a provider lists its own records in either representation');
  t.same(list2.json().manageableResourceIds, [], "the owner's whole v2 catalogue also names the IDs the owner may manage");
});

t.test('the RFS list and one RFS record serve both representations to the canvas token', async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  await putV2(
    h,
    'agentlet-a',
    h.bearer(a),
    'pdf-tools',
    v2Body('PDF tools', 'Split and merge PDFs.\n\nRun $AGENT_RESOURCE_DIR/tools/pdf.'),
  );
  await h.put('huabu', CANARY.huabu, 'huabu-access');
  const canvas = h.bearer(await h.canvasToken('canvas-1', 'agentlet-a'));
  const l1 = await h.app.inject({ url: '/api/rfs/canvas-1/resources', headers: canvas });
  const l2 = await h.app.inject({ url: '/api/rfs/canvas-1/resources?schemaVersion=2', headers: canvas });
  t.same(
    l1.json().resources.map((r: { id: string; schemaVersion: number }) => `${r.id}@${r.schemaVersion}`),
    ['huabu-access@1', 'pdf-tools@1'],
  );
  t.same(
    l2.json().resources.map((r: { id: string; schemaVersion: number }) => `${r.id}@${r.schemaVersion}`),
    ['huabu-access@2', 'pdf-tools@2'],
  );
  t.not(l1.headers.etag, l2.headers.etag);
  t.equal(
    (
      await h.app.inject({
        url: '/api/rfs/canvas-1/resources?schemaVersion=2',
        headers: { ...canvas, 'if-none-match': l2.headers.etag as string },
      })
    ).statusCode,
    304,
  );
  const one = await h.app.inject({ url: '/api/rfs/canvas-1/resources/pdf-tools?schemaVersion=2', headers: canvas });
  t.same(sansDigest(one.json()), {
    schemaVersion: 2,
    id: 'pdf-tools',
    name: 'PDF tools',
    provider: 'agentlet-a',
    sourceContent: 'Split and merge PDFs.\n\nRun $AGENT_RESOURCE_DIR/tools/pdf.',
    userContent: '',
  });
  t.equal((await h.app.inject({ url: '/api/rfs/canvas-1/resources/huabu-access', headers: canvas })).json().schemaVersion, 1);
});

t.test("the owner's customization survives a provider's replace and reconcile, in either version", async (t) => {
  const h = await build(t);
  const a = await h.enroll('agentlet-a');
  const machine = h.bearer(a);
  await putV2(h, 'agentlet-a', machine, 'slides', v2Body('slides', 'Build slide decks.'));
  await h.put('agentlet-a', a, 'pdf-tools');
  const patch = (id: string, payload: object) =>
    h.app.inject({ method: 'PATCH', url: `/api/acp/resources/${id}`, headers: h.owner, payload });

  const custom = await patch('slides', { displayName: '  Slide builder ', userContent: ' Use the company template. ' });
  t.equal(custom.statusCode, 200);
  t.same(Object.keys(custom.json()), ['resource'], "upstream's envelope: the record is in `resource`");
  t.same(sansDigest(custom.json().resource), {
    schemaVersion: 2,
    id: 'slides',
    name: 'slides',
    displayName: 'Slide builder',
    provider: 'agentlet-a',
    sourceContent: 'Build slide decks.',
    userContent: 'Use the company template.',
  });
  const v1Custom = await patch('pdf-tools', { displayName: 'PDF', userContent: 'Never print the files.' });
  t.equal(v1Custom.statusCode, 200);
  t.match(v1Custom.json().resource, {
    schemaVersion: 2,
    id: 'pdf-tools',
    displayName: 'PDF',
    userContent: 'Never print the files.',
    sourceContent: 'About pdf-tools.\n\nUse pdf-tools via $HUABU_RFS_URL.',
  });
  const v1Exact = await h.app.inject({ url: '/api/acp/resources/pdf-tools', headers: h.owner });
  t.same(
    v1Exact.json(),
    {
      schemaVersion: 1,
      id: 'pdf-tools',
      name: 'Name of pdf-tools',
      provider: 'agentlet-a',
      description: 'About pdf-tools.',
      instructions: 'Use pdf-tools via $HUABU_RFS_URL.',
    },
    'a record written as v1 still reads back exactly as written',
  );

  // Replace (PUT) of each, in the other version for one of them.
  const replaced = await putV2(h, 'agentlet-a', machine, 'slides', v2Body('slides', 'Build slide decks, v2 of the skill.'));
  t.equal(replaced.statusCode, 200);
  t.match(replaced.json(), {
    displayName: 'Slide builder',
    userContent: 'Use the company template.',
    sourceContent: 'Build slide decks, v2 of the skill.',
  });
  const switched = await putV2(h, 'agentlet-a', machine, 'pdf-tools', v2Body('PDF tools', 'Split PDFs.'));
  t.match(switched.json(), { schemaVersion: 2, displayName: 'PDF', userContent: 'Never print the files.', sourceContent: 'Split PDFs.' });

  // Reconcile keeps both customizations; the record left out is withdrawn.
  const rec = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/agentlet-a/resources',
    headers: machine,
    payload: {
      resources: [
        { schemaVersion: 1, id: 'slides', name: 'Slides', description: 'Decks.', instructions: 'Follow SKILL.md.' },
        { schemaVersion: 2, id: 'pdf-tools', name: 'PDF tools', sourceContent: 'Split and merge PDFs.' },
      ],
    },
  });
  t.equal(rec.statusCode, 200);
  t.same(rec.json(), { dryRun: false, created: [], replaced: ['pdf-tools', 'slides'], withdrawn: [], unchanged: [] });
  const after = await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner });
  t.same(sansDigest(after.json().resources), [
    {
      schemaVersion: 2,
      id: 'pdf-tools',
      name: 'PDF tools',
      displayName: 'PDF',
      provider: 'agentlet-a',
      sourceContent: 'Split and merge PDFs.',
      userContent: 'Never print the files.',
    },
    {
      schemaVersion: 2,
      id: 'slides',
      name: 'Slides',
      displayName: 'Slide builder',
      provider: 'agentlet-a',
      sourceContent: 'Decks.\n\nFollow SKILL.md.',
      userContent: 'Use the company template.',
    },
  ]);
  const slidesV1 = await h.app.inject({ url: '/api/acp/resources/slides', headers: h.owner });
  t.same(slidesV1.json(), {
    schemaVersion: 1,
    id: 'slides',
    name: 'Slides',
    provider: 'agentlet-a',
    description: 'Decks.',
    instructions: 'Follow SKILL.md.',
  });
  const again = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/agentlet-a/resources',
    headers: machine,
    payload: { resources: [{ schemaVersion: 2, id: 'pdf-tools', name: 'PDF tools', sourceContent: 'Split and merge PDFs.' }] },
  });
  t.same(
    again.json(),
    { dryRun: false, created: [], replaced: [], withdrawn: ['slides'], unchanged: ['pdf-tools'] },
    'an unchanged provider record with a customization is unchanged',
  );

  // Clearing.
  const cleared = await patch('pdf-tools', { displayName: null, userContent: '' });
  t.same(
    sansDigest(cleared.json()),
    {
      resource: {
        schemaVersion: 2,
        id: 'pdf-tools',
        name: 'PDF tools',
        provider: 'agentlet-a',
        sourceContent: 'Split and merge PDFs.',
        userContent: '',
      },
    },
    'PATCH answers {resource}',
  );
  t.equal((await patch('no-such', { userContent: 'x' })).json().code, 'resource_not_found');
  t.equal(
    (await h.app.inject({ method: 'PATCH', url: '/api/acp/resources/pdf-tools', headers: machine, payload: { userContent: 'x' } }))
      .statusCode,
    403,
    'only the owner customizes',
  );

  // A restart keeps everything (the journal and the v2 file).
  const stored = await readStoredRecords(h.dataDir);
  t.same(
    stored.map((r) => r.id),
    ['pdf-tools'],
  );
});

t.test('bad input: 400 naming the field (nothing stored), a secret 422 and never echoed', async (t) => {
  const h = await build(t);
  await h.put('huabu', CANARY.huabu, 'kept');
  const before = await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner });
  const url = '/api/acp/providers/huabu/resources/web-search';
  const cases: [string, object, RegExp][] = [
    ['v2 body with a v1 field', { schemaVersion: 2, name: 'W', sourceContent: 'S', description: 'd' }, /description/],
    ['v1 body with a v2 field', { schemaVersion: 1, name: 'W', description: 'd', instructions: 'i', sourceContent: 's' }, /sourceContent/],
    ['owner field displayName in a provider body', { schemaVersion: 2, name: 'W', sourceContent: 'S', displayName: 'Mine' }, /displayName/],
    [
      'owner field userContent in a provider v1 body',
      { schemaVersion: 1, name: 'W', description: 'd', instructions: 'i', userContent: 'u' },
      /userContent/,
    ],
    ['whitespace-only sourceContent', { schemaVersion: 2, name: 'W', sourceContent: ' \n\t ' }, /sourceContent/],
    ['v2 body without sourceContent', { schemaVersion: 2, name: 'W' }, /sourceContent/],
    ['unknown schemaVersion', { schemaVersion: 3, name: 'W', sourceContent: 'S' }, /schemaVersion/],
    ['sourceContent past 100000', { schemaVersion: 2, name: 'W', sourceContent: 'x'.repeat(100_001) }, /sourceContent/],
  ];
  for (const [name, payload, field] of cases) {
    const res = await h.app.inject({ method: 'PUT', url, headers: h.huabu, payload });
    t.equal(res.statusCode, 400, name);
    t.equal(res.json().code, 'validation_failed', name);
    t.match(res.json().message, field, `${name}: the message names the field`);
  }
  const reconcile = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/huabu/resources',
    headers: h.huabu,
    payload: { resources: [{ schemaVersion: 2, id: 'kept', name: 'K', sourceContent: 'S', userContent: 'mine' }] },
  });
  t.equal(reconcile.statusCode, 400);
  t.match(reconcile.json().message, /resources\/0.*userContent/);

  const secret = `ghp_${'a1B2'.repeat(9)}`;
  const inUser = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/kept',
    headers: h.owner,
    payload: { userContent: `use token ${secret}` },
  });
  t.equal(inUser.statusCode, 422);
  t.equal(inUser.json().code, 'secret_detected');
  t.match(inUser.json().details, { findings: [{ field: '/userContent' }] });
  t.notMatch(inUser.body, 'ghp_');
  const inSource = await putV2(h, 'huabu', h.huabu, 'web-search', v2Body('W', `token ${secret}`));
  t.equal(inSource.statusCode, 422);
  t.notMatch(inSource.body, 'ghp_');
  const inName = await h.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/kept',
    headers: h.owner,
    payload: { displayName: CANARY.owner },
  });
  t.equal(inName.statusCode, 422, 'displayName is scanned too');
  t.equal(
    (await h.app.inject({ method: 'PATCH', url: '/api/acp/resources/kept', headers: h.owner, payload: { displayName: '   ' } })).statusCode,
    400,
    'a blank displayName is refused (null clears)',
  );
  t.equal(
    (await h.app.inject({ method: 'PATCH', url: '/api/acp/resources/kept', headers: h.owner, payload: {} })).statusCode,
    400,
    'an empty change is refused',
  );

  const after = await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner });
  t.equal(after.body, before.body, 'nothing was stored');
});

t.test('v2 → v1 at the bounds: the description is cut, the instructions end with where to read all of it', async (t) => {
  const h = await build(t);
  const long = `${'A very long first line. '.repeat(40).trim()}\n\n${'Step by step guidance. '.repeat(5000).trim()}`;
  const res = await putV2(h, 'huabu', h.huabu, 'big', v2Body('Big', long.slice(0, 100_000)));
  t.equal(res.statusCode, 201);
  await h.app.inject({ method: 'PATCH', url: '/api/acp/resources/big', headers: h.owner, payload: { userContent: 'Owner says hi.' } });
  const v1 = (await h.app.inject({ url: '/api/acp/resources/big', headers: h.owner })).json();
  t.ok(v1.description.length <= 512 && v1.description.endsWith('…'), 'description within 512, marked as cut');
  t.ok(v1.instructions.length <= 4000, 'instructions within 4000');
  t.match(v1.instructions, /\$HUABU_RFS_URL\/resources\/big\?schemaVersion=2/, 'the agent is told where the whole guidance is');
  t.ok(v1.instructions.startsWith(long.slice(0, 1000)), 'it starts with the guidance itself');
  const v2 = (await h.app.inject({ url: '/api/acp/resources/big?schemaVersion=2', headers: h.owner })).json();
  t.equal(v2.sourceContent, long.slice(0, 100_000).trim(), 'v2 holds all of it');
  const list1 = (await h.app.inject({ url: '/api/acp/resources', headers: h.owner })).json();
  t.same(list1.resources[0], v1, 'the v1 catalogue holds the same conversion');
});

t.test(
  "a DATA_DIR holding upstream's v2 resources.json starts, serves every record field for field, and is written back in a form upstream parses",
  async (t) => {
    const dataDir = await tempDataDir();
    await cp(path.join('test', 'fixtures', 'upstream', 'resources-v2'), dataDir, { recursive: true });
    const upstreamText = await readFile(resourcesFile(dataDir), 'utf8');
    const upstream = upstreamLoad(upstreamText).resources;
    const h = await build(t, { dataDir });
    const served = await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner });
    t.equal(served.statusCode, 200);
    t.same(sansDigest(served.json().resources), upstream, 'every record, field for field');
    t.same(
      served.json().resources.map((r: object) => Object.keys(sansDigest(r))),
      upstream.map((r) => Object.keys(r)),
      'same keys, same order',
    );
    for (const r of upstream) {
      const one = await h.app.inject({ url: `/api/acp/resources/${r.id}?schemaVersion=2`, headers: h.owner });
      t.same(sansDigest(one.json()), r, `${r.id} one by one`);
    }
    t.equal(
      (await h.app.inject({ url: '/api/acp/resources/slides', headers: h.owner })).json().schemaVersion,
      1,
      'v1 readers still get v1',
    );
    const slides = upstream.find((r) => r.id === 'slides')!;
    t.match(slides.sourceContent, /^---\nname: slides\n/, "the stored skill is upstream's, front matter first");
    t.same(
      (await h.app.inject({ url: '/api/acp/resources/slides', headers: h.owner })).json(),
      {
        schemaVersion: 1,
        id: 'slides',
        name: slides.name,
        provider: slides.provider,
        description: 'Build slide decks from an outline.',
        instructions: `This skill's files are in $AGENT_RESOURCE_DIR/skills/slides/ on the machine ${slides.provider} (SKILL.md, and its scripts/, references/ and assets/ when it has them); run its scripts from there.\n\n# Slides\n\nRead $AGENT_RESOURCE_DIR/skills/slides/SKILL.md and follow it.\n\n## Instructions from the owner\n\n${slides.userContent}`,
      },
      'a stored skill reads in v1 by its front matter, as stored (no migration)',
    );

    // Writes of both versions and a customization, then a close (compaction writes the file).
    const a = await h.enroll('machine-a');
    t.equal((await h.put('machine-a', a, 'pdf-tools')).statusCode, 201);
    t.equal((await putV2(h, 'machine-a', h.bearer(a), 'slides', v2Body('slides', 'Build decks, refreshed.'))).statusCode, 200);
    await h.app.inject({ method: 'PATCH', url: '/api/acp/resources/huabu-access', headers: h.owner, payload: { displayName: 'Access' } });
    const expected = (await h.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h.owner })).json().resources;
    const v1Pdf = (await h.app.inject({ url: '/api/acp/resources/pdf-tools', headers: h.owner })).body;
    await h.app.close();

    const written = await readFile(resourcesFile(dataDir), 'utf8');
    t.match(written, /^\{\n {2}"schemaVersion": 2,\n {2}"state": \{\n {4}"resources": \[/, "upstream's envelope and layout");
    t.same(upstreamLoad(written).resources, sansDigest(expected), "upstream's parser loads exactly what this service serves as v2");
    t.match(
      upstreamLoad(written).resources.find((r) => r.id === 'slides'),
      { displayName: 'Slide deck builder', userContent: 'Always use the company template in ~/templates/deck.pptx.' },
      'the customization survived the refresh',
    );
    t.same(
      (await readdir(path.dirname(resourcesFile(dataDir)))).filter((n) => n.endsWith('.bak')),
      [],
      'a v2 file needs no backup',
    );

    const h2 = await build(t, { dataDir });
    t.equal(
      (await h2.app.inject({ url: '/api/acp/resources/pdf-tools', headers: h2.owner })).body,
      v1Pdf,
      'a v1 record in a v2 file restarts exactly as written',
    );
    t.same((await h2.app.inject({ url: '/api/acp/resources?schemaVersion=2', headers: h2.owner })).json().resources, expected);
  },
);

t.test('a v1 file stays v1 until it must become v2; then its v1 bytes are backed up first', async (t) => {
  const h = await build(t);
  await h.put('huabu', CANARY.huabu, 'huabu-access');
  await h.app.close();
  const v1Text = await readFile(resourcesFile(h.dataDir), 'utf8');
  t.match(JSON.parse(v1Text), { schemaVersion: 1 }, 'only v1 records: the file stays v1');

  const h2 = await build(t, { dataDir: h.dataDir });
  await h2.app.inject({
    method: 'PATCH',
    url: '/api/acp/resources/huabu-access',
    headers: h2.owner,
    payload: { userContent: 'Be brief.' },
  });
  await h2.app.close();
  t.equal(await readFile(`${resourcesFile(h.dataDir)}.v1.bak`, 'utf8'), v1Text, 'the v1 bytes are kept');
  const v2 = upstreamLoad(await readFile(resourcesFile(h.dataDir), 'utf8'));
  t.match(v2.resources[0], { id: 'huabu-access', userContent: 'Be brief.' });
});

t.test('npm run migrate -- --dry-run reports the resources file; the real run backs up the v1 bytes, then writes v2', async (t) => {
  const { runMigrate } = await import('../../src/migrations/migrate-command.js');
  const { writeFile, mkdir } = await import('node:fs/promises');
  const dataDir = await tempDataDir();
  const file = resourcesFile(dataDir);
  await mkdir(path.dirname(file), { recursive: true });
  const v1Text =
    JSON.stringify({
      schemaVersion: 1,
      state: { resources: [{ schemaVersion: 1, id: 'a', name: 'A', provider: 'huabu', description: 'd', instructions: 'i' }] },
    }) + '\n';
  await writeFile(file, v1Text);
  const run = async (args: string[]) => {
    const out: string[] = [];
    const code = await runMigrate(
      ['--data-dir', dataDir, ...args],
      (l) => out.push(l),
      (l) => out.push(l),
    );
    return { code, out: out.join('\n') };
  };
  t.match(
    (await run(['--dry-run'])).out,
    /resources file v1; 1 record\(s\), 1 written as v1 \(kept exactly\), 0 customized by the owner; nothing to do/,
  );
  // A journal (as a killed service leaves it) holding a v2 record: the next start, or migrate, makes the file v2.
  await writeFile(
    `${file}.journal`,
    JSON.stringify({
      changes: [{ put: { schemaVersion: 2, id: 'b', name: 'B', provider: 'huabu', sourceContent: 'S', userContent: '' } }],
    }) + '\n',
  );
  const dry = await run(['--dry-run']);
  t.equal(dry.code, 0);
  t.match(dry.out, 'resources file v1 → v2');
  t.match(dry.out, `would back up the original bytes to ${file}.v1.bak`);
  t.equal(await readFile(file, 'utf8'), v1Text, 'the dry run wrote nothing');
  const real = await run([]);
  t.match(real.out, `backed up the original bytes to ${file}.v1.bak`);
  t.equal(await readFile(`${file}.v1.bak`, 'utf8'), v1Text);
  t.same(
    upstreamLoad(await readFile(file, 'utf8')).resources.map((r) => r.id),
    ['a', 'b'],
  );
  t.match((await run([])).out, /resources file v2 \(upstream's format\); 2 record\(s\).*nothing to do/);
});

t.test("every field a provider writes is scanned for secrets, an imported skill's folder revision too", (t) => {
  const record = { schemaVersion: 2 as const, id: 'pdf', name: 'PDF', provider: 'mac-1', sourceContent: 'Split.', userContent: '' };
  t.same(textFieldsOf(record, '/resources/0'), [
    ['/resources/0/name', 'PDF'],
    ['/resources/0/sourceContent', 'Split.'],
  ]);
  t.same(textFieldsOf({ ...record, sourceRevision: 'a'.repeat(64) }), [
    ['/name', 'PDF'],
    ['/sourceContent', 'Split.'],
    ['/sourceRevision', 'a'.repeat(64)],
  ]);
  t.end();
});
