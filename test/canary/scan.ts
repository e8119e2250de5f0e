// The end-of-suite leak scan (run after every other test file by `npm test`): every credential the suite
// used or was issued must appear in no log line, no response body (except the one that issued it) and no
// file under any test DATA_DIR (backups and audit logs included). credentials.json and signing-keys.json are
// the files whose job is to hold generated credentials (mode 0600), so they are skipped; the launch-signing
// private keys they hold are looked for everywhere else too.
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CANARY, CANARY_ROOT } from '../helpers/build.js';

const CREDENTIAL_FILES = new Set(['credentials.json', 'signing-keys.json']);

async function filesUnder(dir: string, skip = CREDENTIAL_FILES): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full, skip)));
    else if (entry.isFile() && !skip.has(entry.name)) out.push(full);
  }
  return out;
}

const issued = (await Promise.all((await filesUnder(path.join(CANARY_ROOT, 'issued'))).map((f) => readFile(f, 'utf8'))))
  .flatMap((text) => text.split('\n'))
  .filter(Boolean);
/**
 * The private launch-signing keys (PKCS #8 DER, base64) of every test DATA_DIR, from character 24 on: the
 * first 16 bytes are the same header in every Ed25519 key, the rest is the key's own.
 */
const signingKeys = (
  await Promise.all(
    (await filesUnder(path.join(CANARY_ROOT, 'data'), new Set()))
      .filter((f) => path.basename(f) === 'signing-keys.json')
      .map(async (f) =>
        (JSON.parse(await readFile(f, 'utf8')) as { keys: { privateKey: string }[] }).keys.map((k) => k.privateKey.slice(24)),
      ),
  )
).flat();
const tokens = [...Object.values(CANARY), ...issued, ...signingKeys];
/** A token's first 12 characters after its `arr_<kind>_` prefix: a text that holds the token holds these. */
const PIECE = 12;
const pieces = new Set(
  tokens.map((token) => {
    const prefix = /^arr_[a-z]+_/.exec(token)?.[0] ?? '';
    return token.slice(prefix.length, prefix.length + PIECE);
  }),
);

/** A polynomial hash of the 12 characters of `s` from `from`. */
function hashOf(s: string, from: number): number {
  let h = 0;
  for (let i = from; i < from + PIECE; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}
/** 31^(PIECE-1): the weight of the character that leaves the window. */
const TOP = Array.from({ length: PIECE - 1 }).reduce<number>((p) => Math.imul(p, 31), 1);
const pieceHashes = new Set([...pieces].map((p) => hashOf(p, 0)));

/**
 * Every piece found in `text`, in one pass: the hash of each 12-character window rolls along the text, and a
 * window whose hash is a piece's is compared as text. (Searching for each of ~2,000 pieces in turn took half
 * a minute over the suite's files.)
 */
function piecesIn(text: string): string[] {
  const found: string[] = [];
  if (text.length < PIECE) return found;
  let h = hashOf(text, 0);
  for (let i = 0; ; i++) {
    if (pieceHashes.has(h) && pieces.has(text.slice(i, i + PIECE))) found.push(text.slice(i, i + PIECE));
    if (i + PIECE >= text.length) return found;
    h = (Math.imul(h - Math.imul(text.charCodeAt(i), TOP), 31) + text.charCodeAt(i + PIECE)) | 0;
  }
}
const haystacks = [
  ...(await filesUnder(path.join(CANARY_ROOT, 'logs'))),
  ...(await filesUnder(path.join(CANARY_ROOT, 'responses'))),
  ...(await filesUnder(path.join(CANARY_ROOT, 'data'))),
];

t.ok(issued.length > 0, `the suite issued tokens to look for (${issued.length})`);
t.ok(signingKeys.length > 0, `and the launch-signing private keys (${signingKeys.length})`);
t.ok(
  issued.some((token) => token.startsWith('arr_grant_')),
  'resource grants are among them',
);
t.ok(
  issued.some((token) => token.startsWith('arr_credential_')),
  "and the hosted capabilities' credential values",
);
t.ok(
  haystacks.some((f) => f.includes(`${path.sep}logs${path.sep}`)),
  'there are log files to scan',
);
t.ok(
  haystacks.some((f) => f.includes(`${path.sep}data${path.sep}`)),
  'there are data files to scan',
);
// Audit entries for launches, canvas-token mints, revocations and refused writes are scanned too.
const audits = haystacks.filter((f) => f.endsWith('audit.jsonl'));
const auditText = (await Promise.all(audits.map((f) => readFile(f, 'utf8')))).join('');
for (const action of ['workload.launch', 'canvas-token.mint', 'machine.revoke']) {
  t.ok(auditText.includes(`"action":"${action}"`), `audit logs with ${action} entries are among the files scanned`);
}

// The search itself finds a piece wherever it is: at the start, inside a token, at the end, twice.
const [first, second] = [...pieces];
t.same(piecesIn(`${first}`), [first], 'the search finds a piece that is the whole text');
t.same(piecesIn(`x arr_grant_${first}rest\n${second}`), [first, second], 'and pieces inside a token and at the end');
t.same(piecesIn(`${first!.slice(1)} ${first!.slice(0, -1)}`), [], 'but no piece cut short');

let hits = 0;
for (const file of haystacks) {
  for (const piece of piecesIn(await readFile(file, 'latin1'))) {
    hits++;
    t.fail(`${path.relative(CANARY_ROOT, file)} holds a credential (or its first 12 characters: ${piece.slice(0, 4)}…)`);
  }
}
t.equal(hits, 0, `no credential in ${haystacks.length} files (${tokens.length} tokens)`);
