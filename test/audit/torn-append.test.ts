// The audit log (audit.jsonl) after a kill mid-append: the torn last line stays as it is, on a line of its
// own, and everything appended after a restart parses.
import t from 'tap';
import { appendFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { AppendLog } from '../../src/storage/append-log.js';
import { build, tempDataDir } from '../helpers/build.js';

const TORN = '{"at":"2026-01-01T00:00:00.000Z","actor":"owner","acti';

t.test('an append log opened on a torn last line keeps it on its own line; later appends parse', async (t) => {
  const file = path.join(await tempDataDir(), 'audit.jsonl');
  const log = await AppendLog.open(file);
  await log.append([{ n: 1 }, { n: 2 }]);
  await log.close();
  await appendFile(file, TORN);

  const reopened = await AppendLog.open(file);
  await reopened.append([{ n: 3 }]);
  await reopened.close();
  t.equal(await readFile(file, 'utf8'), `{"n":1}\n{"n":2}\n${TORN}\n{"n":3}\n`);

  const clean = await AppendLog.open(file);
  await clean.append([{ n: 4 }]);
  await clean.close();
  t.equal(
    (await readFile(file, 'utf8')).split('\n').slice(-3).join('\n'),
    '{"n":3}\n{"n":4}\n',
    'a file ending in a newline gets nothing extra',
  );

  const empty = path.join(await tempDataDir(), 'audit.jsonl');
  await (await AppendLog.open(empty)).close();
  t.equal(await readFile(empty, 'utf8'), '', 'a new log stays empty until the first append');
});

t.test('the service starts on a DATA_DIR whose audit.jsonl has a torn last line, and audits parseably after it', async (t) => {
  const dataDir = await tempDataDir();
  const first = await build(t, { dataDir });
  await first.enroll('audit-m1');
  await first.app.close();
  const file = path.join(dataDir, 'audit.jsonl');
  const before = await readFile(file, 'utf8');
  await appendFile(file, TORN);

  const again = await build(t, { dataDir });
  t.equal((await again.put('huabu', again.huabu.authorization!.slice('Bearer '.length), 'audit-tool')).statusCode, 201);
  await again.enroll('audit-m2');
  await again.app.close();
  const text = await readFile(file, 'utf8');
  t.ok(text.startsWith(`${before}${TORN}\n`), 'the torn line is kept, as it was, on a line of its own');
  const after = text.slice(before.length + TORN.length + 1).split('\n');
  t.equal(after.pop(), '', 'the file ends with a newline');
  t.ok(after.length > 0, 'the restarted service appended to the audit log');
  t.same(
    after.filter((line) => {
      try {
        JSON.parse(line);
        return false;
      } catch {
        return true;
      }
    }),
    [],
    'every line appended after the restart parses',
  );
});
