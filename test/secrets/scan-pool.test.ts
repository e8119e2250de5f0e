// The service's secret scanner runs its scans in worker threads (src/secrets/scan-pool.ts): the findings are
// exactly the scanner's own, the owner's allowlist is read only when a scan meets a candidate (and a failed
// read refuses), a full queue or a worker that stops refuses the scan with 503 `overloaded` and a reason,
// and closing stops the workers.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { AppError } from '../../src/errors.js';
import { INLINE_CHARS, MAX_QUEUED, PIECE_CHARS, PooledSecretScanner } from '../../src/secrets/scan-pool.js';
import { SecretScanner, type AllowedFinding } from '../../src/secrets/secret-scanner.js';
import { frontMatterParses, frontMatterYaml, parseFrontMatter, readFrontMatter } from '../../src/text/front-matter.js';

const GITHUB = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const KNOWN = 'arr_owner_' + 'k'.repeat(40);
const SKILLS = path.resolve('test/fixtures/skill-collections');

/** Every real SKILL.md of the vendored collections, with a secret and a known credential put into some. */
async function corpus(): Promise<[string, string][]> {
  const files = (await readdir(SKILLS, { recursive: true })).filter((f) => path.basename(f) === 'SKILL.md').sort();
  return Promise.all(
    files.map(async (f, i): Promise<[string, string]> => {
      const text = await readFile(path.join(SKILLS, f), 'utf8');
      const padded = text.length >= INLINE_CHARS ? text : text.padEnd(INLINE_CHARS, '\n');
      if (i % 3 === 1) return [`/files/${f}`, `${padded}\nexport GITHUB_TOKEN=${GITHUB}\n`];
      if (i % 5 === 2) return [`/files/${f}`, `${padded}\nowner token: ${KNOWN}\n`];
      return [`/files/${f}`, padded];
    }),
  );
}

t.test('the pool finds exactly what the scanner finds, with and without allowlist entries', async (t) => {
  const fields = await corpus();
  const plain = new SecretScanner([KNOWN]);
  const pooled = new PooledSecretScanner([KNOWN], { workers: 2 });
  t.teardown(() => pooled.close());
  const expected = await plain.scan(fields, { route: 'resource.import' });
  t.ok(expected.length > 0, 'the corpus holds findings');
  t.same(await pooled.scan(fields, { route: 'resource.import' }), expected, 'same findings, same order');
  t.ok(pooled.workers > 0, 'the scan ran in worker threads');

  // One finding allowed by the owner's list, another by the job's entries: both scanners let the same through.
  const [first, second] = expected;
  const owner: AllowedFinding[] = [{ fingerprint: first!.fingerprint }];
  const scope = { route: 'resource.import', allowed: [{ fingerprint: second!.fingerprint, file: second!.field.slice(1) }] };
  const plainListed = new SecretScanner([KNOWN], { allowlist: () => Promise.resolve(owner) });
  const pooledListed = new PooledSecretScanner([KNOWN], { allowlist: () => Promise.resolve(owner), workers: 1 });
  t.teardown(() => pooledListed.close());
  const allowed = await plainListed.scan(fields, scope);
  t.ok(allowed.length < expected.length, 'the entries let findings through');
  t.same(await pooledListed.scan(fields, scope), allowed);
  await t.rejects(pooledListed.assertClean(fields, scope), { code: 'secret_detected' }, 'assertClean refuses as before');
});

t.test('a scan larger than one piece finds what the scanner finds in one pass, and a secret object key still ends it', async (t) => {
  const once = await corpus();
  // A machine's whole set: the corpus eight times over, more text than one piece carries.
  const fields = [0, 1, 2, 3, 4, 5, 6, 7].flatMap((n) => once.map(([field, value]): [string, string] => [`/set${n}${field}`, value]));
  t.ok(fields.reduce((k, [, v]) => k + v.length, 0) > 2 * PIECE_CHARS, 'the set spans several pieces');
  const plain = new SecretScanner([KNOWN]);
  const pooled = new PooledSecretScanner([KNOWN], { workers: 2 });
  t.teardown(() => pooled.close());
  const expected = await plain.scan(fields, { route: 'resource.reconcile' });
  t.same(await pooled.scan(fields, { route: 'resource.reconcile' }), expected, 'same findings, same order, across the pieces');
  // A secret named as an object key in the first piece: nothing after it is reported, by either scanner.
  const keyed: [string, string][] = [[`/data/${GITHUB}#key`, GITHUB], ...fields];
  const expectedKeyed = await plain.scan(keyed);
  t.same([...new Set(expectedKeyed.map((f) => f.field))], [`/data/${GITHUB}#key`], 'the key ends the scan');
  t.same(await pooled.scan(keyed), expectedKeyed, 'in pieces too');
});

t.test("the owner's allowlist is read only when a scan meets a candidate; a failed read refuses", async (t) => {
  let reads = 0;
  const pooled = new PooledSecretScanner([], {
    allowlist: () => {
      reads++;
      return Promise.reject(new Error('the allowlist file cannot be read'));
    },
    workers: 1,
  });
  t.teardown(() => pooled.close());
  const clean = 'Plain words about PDFs.\n'.repeat(400);
  t.same(await pooled.scan([['/sourceContent', clean]]), []);
  t.equal(reads, 0, 'a clean text never reads the allowlist');
  await t.rejects(pooled.scan([['/sourceContent', `${clean}GITHUB_TOKEN=${GITHUB}\n`]]), /cannot be read/, 'fails closed');
  t.equal(reads, 1);
});

t.test('a full queue refuses the scan with 503 overloaded (scan_queue_full), and the rest are answered', async (t) => {
  const pooled = new PooledSecretScanner([], { workers: 1 });
  t.teardown(() => pooled.close());
  const text = 'Plain words about spreadsheets.\n'.repeat(200);
  const scans = Array.from({ length: MAX_QUEUED + 20 }, () =>
    pooled.scan([['/sourceContent', text]]).then(
      () => 'ok',
      (err: unknown) => err,
    ),
  );
  const outcomes = await Promise.all(scans);
  const refused = outcomes.filter((o): o is AppError => o instanceof AppError);
  t.equal(outcomes.filter((o) => o === 'ok').length, MAX_QUEUED + 1, 'one running and the queue full are answered');
  t.equal(refused.length, 19);
  t.match(refused[0], { code: 'overloaded', statusCode: 503, details: { reason: 'scan_queue_full' } });
});

t.test('a worker that stops mid-scan refuses its scan with 503 overloaded (scan_worker_stopped)', async (t) => {
  const pooled = new PooledSecretScanner([], {
    workers: 1,
    workerFile: pathToFileURL(path.resolve('test/fixtures/workers/exits-on-message.mjs')),
  });
  t.teardown(() => pooled.close());
  const text = 'Plain words.\n'.repeat(400);
  await t.rejects(pooled.scan([['/sourceContent', text]]), { code: 'overloaded', details: { reason: 'scan_worker_stopped' } });
  t.equal(pooled.workers, 0, 'the stopped worker is gone');
  await t.rejects(pooled.scan([['/sourceContent', text]]), { code: 'overloaded' }, 'a new worker is started for the next scan');
});

t.test('small texts are scanned on the calling thread; close stops the workers and refuses later scans', async (t) => {
  const pooled = new PooledSecretScanner([], { workers: 2 });
  t.same(await pooled.scan([['/name', `token ${GITHUB}`]]), await new SecretScanner().scan([['/name', `token ${GITHUB}`]]));
  t.equal(pooled.workers, 0, 'no worker for a small text');
  await pooled.scan([['/sourceContent', 'x '.repeat(INLINE_CHARS)]]);
  t.equal(pooled.workers, 1);
  await pooled.close();
  t.equal(pooled.workers, 0, 'closed: no worker left');
  await t.rejects(pooled.scan([['/sourceContent', 'x '.repeat(INLINE_CHARS)]]), { code: 'overloaded' });
});

t.test("a record's front matter is parsed in the worker that scans it: its reads parse nothing on this thread", async (t) => {
  const scanner = new PooledSecretScanner([KNOWN], { workers: 2 });
  t.teardown(() => scanner.close());
  const files = await corpus();
  const mark = `${process.pid}-${Date.now()}`;
  // Record v2 texts, each front matter new to this process; one with a secret (a refused write's are not kept).
  const fields = files
    .filter(([, text]) => text.startsWith('---\n'))
    .map(([, text], i): [string, string] => [`/resources/${i}/sourceContent`, text.replace(/^---\n/, `---\n# ${mark}-${i}\n`)]);
  const clean = fields.filter(([, text]) => !text.includes(GITHUB) && !text.includes(KNOWN));
  const dirty = fields.find(([, text]) => text.includes(GITHUB))!;
  t.ok(clean.length >= 10 && dirty, 'real skills, clean and not');
  t.same(await scanner.scan(clean), [], 'a clean set');
  t.not((await scanner.scan([dirty, [`/resources/999/name`, 'x'.repeat(INLINE_CHARS)]])).length, 0, 'a set with a secret');
  const before = frontMatterParses();
  const reads = clean.map(([, text]) => readFrontMatter(text));
  t.equal(frontMatterParses(), before, 'no read of a scanned record parsed its front matter here');
  for (const [i, read] of reads.entries()) {
    const fresh = parseFrontMatter(frontMatterYaml(clean[i]![1])!);
    if (JSON.stringify(read.ok ? read.data : read.message) !== JSON.stringify(fresh.ok ? fresh.data : fresh.message)) {
      t.fail(`${clean[i]![0]}: the worker's parse differs from this thread's`);
    }
  }
  const afterCompare = frontMatterParses();
  readFrontMatter(dirty[1]);
  t.equal(frontMatterParses(), afterCompare + 1, 'the refused text is parsed only when read');
  const other: [string, string] = ['/resources/0/description', `---\n# ${mark}-other\nname: a\n---\n${'x'.repeat(INLINE_CHARS)}`];
  await scanner.scan([other]);
  readFrontMatter(other[1]);
  t.equal(frontMatterParses(), afterCompare + 2, 'only record v2 source content is read as a skill');
});
