// The end-of-suite leak scan (run after every other test file by `npm test`): every credential the suite
// used or was issued must appear in no log line, no response body (except the one that issued it) and no
// file under any test DATA_DIR (backups and audit logs included). credentials.json is the one file whose
// job is to hold generated credentials (mode 0600), so it is skipped.
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CANARY, CANARY_ROOT } from '../helpers/build.js';

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (entry.isFile() && entry.name !== 'credentials.json') out.push(full);
  }
  return out;
}

const issued = (await Promise.all((await filesUnder(path.join(CANARY_ROOT, 'issued'))).map((f) => readFile(f, 'utf8'))))
  .flatMap((text) => text.split('\n'))
  .filter(Boolean);
const tokens = [...Object.values(CANARY), ...issued];
const needles = tokens.flatMap((token) => {
  const prefix = /^arr_[a-z]+_/.exec(token)?.[0] ?? '';
  return [token, token.slice(prefix.length, prefix.length + 12)];
});
const haystacks = [
  ...(await filesUnder(path.join(CANARY_ROOT, 'logs'))),
  ...(await filesUnder(path.join(CANARY_ROOT, 'responses'))),
  ...(await filesUnder(path.join(CANARY_ROOT, 'data'))),
];

t.ok(issued.length > 0, `the suite issued tokens to look for (${issued.length})`);
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
// Issue 14: audit entries for launches, canvas-token mints, revocations and refused writes are scanned too.
const audits = haystacks.filter((f) => f.endsWith('audit.jsonl'));
const auditText = (await Promise.all(audits.map((f) => readFile(f, 'utf8')))).join('');
for (const action of ['workload.launch', 'canvas-token.mint', 'machine.revoke']) {
  t.ok(auditText.includes(`"action":"${action}"`), `audit logs with ${action} entries are among the files scanned`);
}

let hits = 0;
for (const file of haystacks) {
  const text = await readFile(file, 'latin1');
  for (const needle of needles) {
    if (text.includes(needle)) {
      hits++;
      t.fail(`${path.relative(CANARY_ROOT, file)} holds a credential (or its first 12 characters)`);
    }
  }
}
t.equal(hits, 0, `no credential in ${haystacks.length} files (${tokens.length} tokens, ${needles.length} needles)`);
