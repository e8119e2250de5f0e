// A machine's Agentlet publishes its whole set each time it connects (after its own restart or the
// registry's). What it already published, unchanged, is not read again: the records the registry holds as
// listed are not secret-scanned a second time, and a set's large records are checked and scanned on
// event-loop turns of their own, so owner and agent reads are not held while a set of skills is published.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { build, tempDataDir } from '../helpers/build.js';
import { turnsUntil } from '../helpers/wait.js';

/** A GitHub token's shape (gitleaks `github-pat`), made up. */
const TOKEN_LIKE = 'ghp_' + 'Zq8rT2vLm9XwK4pN7bHc3YdF6gJs1aEu5Qo0';

/** A DATA_DIR whose catalogue holds `records`, written as an earlier release stored them. */
async function dataDirWith(records: Record<string, unknown>[]): Promise<string> {
  const dir = await tempDataDir();
  await mkdir(path.join(dir, 'agent-resources'), { recursive: true, mode: 0o700 });
  await writeFile(
    path.join(dir, 'agent-resources', 'resources.json'),
    JSON.stringify({ schemaVersion: 2, state: { resources: records } }),
    { mode: 0o600 },
  );
  return dir;
}

t.test("a machine's re-publish of records the registry holds as listed does not scan them again; a changed one is scanned", async (t) => {
  // Stored before the scanner knew this shape (an older release), as the machine published it.
  const legacy = { schemaVersion: 2, id: 'legacy-notes', name: 'Legacy notes', sourceContent: `Deploy with ${TOKEN_LIKE} as before.` };
  const h = await build(t, { dataDir: await dataDirWith([{ ...legacy, provider: 'mac-a', userContent: '' }]) });
  const machine = h.bearer(await h.enroll('mac-a'));
  const reconcile = (resources: Record<string, unknown>[], dryRun = false) =>
    h.app.inject({
      method: 'PUT',
      url: `/api/acp/providers/mac-a/resources${dryRun ? '?dryRun=true' : ''}`,
      headers: machine,
      payload: { resources },
    });
  const fresh = { schemaVersion: 2, id: 'fresh', name: 'Fresh', sourceContent: 'Search the docs.' };

  const dry = await reconcile([legacy, fresh], true);
  t.equal(dry.statusCode, 200, dry.body);
  t.same(dry.json(), { dryRun: true, created: ['fresh'], replaced: [], withdrawn: [], unchanged: ['legacy-notes'] });

  const res = await reconcile([legacy, fresh]);
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), { dryRun: false, created: ['fresh'], replaced: [], withdrawn: [], unchanged: ['legacy-notes'] });

  // Changed, the same text is read again, and the whole set is refused as before.
  const changed = await reconcile([{ ...legacy, sourceContent: `${legacy.sourceContent}\n\nAnd once more.` }, fresh]);
  t.equal(changed.statusCode, 422);
  t.equal(changed.json().code, 'secret_detected');
  t.match(changed.json().details.findings, [{ field: '/resources/0/sourceContent', rule: 'github-pat' }]);
  t.notOk(changed.body.includes(TOKEN_LIKE), 'the answer never shows the value');

  // Another provider's record under that ID is a conflict, never "unchanged": it is scanned like any new text.
  const other = h.bearer(await h.enroll('mac-b'));
  const taken = await h.app.inject({
    method: 'PUT',
    url: '/api/acp/providers/mac-b/resources',
    headers: other,
    payload: { resources: [legacy] },
  });
  t.equal(taken.statusCode, 422, 'scanned first, as any record new to its provider');
  t.equal(taken.json().code, 'secret_detected');
});

t.test('the scan gives the event loop a turn before each large text', async (t) => {
  const scanner = new SecretScanner();
  await scanner.scan([['/warm', 'warm up']]);
  const paragraph = 'Open the file, read its front matter, and follow the steps in order. ';
  const large = paragraph.repeat(Math.ceil(5000 / paragraph.length));
  const fields: [string, string][] = Array.from({ length: 40 }, (_, i) => [`/resources/${i}/sourceContent`, `${i}. ${large}`]);
  // The scan itself does no I/O: each turn a chain of immediates gets while it runs is one the scan gave.
  // The scan starts in a microtask, after the count has begun: its first turn is counted.
  const scan = Promise.resolve().then(() => scanner.scan(fields));
  const turns = await turnsUntil(scan);
  t.same(await scan, []);
  t.ok(turns >= fields.length, `${turns} turns for ${fields.length} texts of ${large.length} characters`);
});

t.test("a reconcile's large records are checked on event-loop turns of their own, when none needs a scan", async (t) => {
  const h = await build(t);
  const machine = h.bearer(await h.enroll('mac-a'));
  const paragraph = 'Open the file, read its front matter, and follow the steps in order. ';
  const resources = Array.from({ length: 40 }, (_, i) => ({
    schemaVersion: 2,
    id: `skill-${i}`,
    name: `Skill ${i}`,
    sourceContent: `${i}. ${paragraph.repeat(80)}`.trim(),
  }));
  const reconcile = () =>
    h.app.inject({ method: 'PUT', url: '/api/acp/providers/mac-a/resources?dryRun=true', headers: machine, payload: { resources } });
  t.equal(
    (await h.app.inject({ method: 'PUT', url: '/api/acp/providers/mac-a/resources', headers: machine, payload: { resources } })).statusCode,
    200,
  );
  // Held as listed: nothing is scanned or written; a dry run appends no audit line. The turns a chain of
  // immediates gets meanwhile are the ones the reconcile gave.
  const pending = reconcile();
  const turns = await turnsUntil(pending);
  const res = await pending;
  t.equal(res.statusCode, 200);
  t.equal(res.json().unchanged.length, resources.length);
  t.ok(turns >= resources.length, `${turns} turns for ${resources.length} records of ${resources[0]!.sourceContent.length} characters`);
});
