// `npm run migrate` shows progress on a terminal for a large registry file, and nothing but its report when
// its output is not a terminal (a pipe, a log, CI). The import's counterpart is in test/postgres/import.test.ts.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runMigrate } from '../../src/migrations/migrate-command.js';
import { LARGE_FILE_BYTES, terminalProgress } from '../../src/progress.js';
import { tempDataDir } from '../helpers/build.js';

const MIGRATE_ENTRY = path.resolve('dist/scripts/migrate.js');

/** A DATA_DIR holding the upstream v1 fixture with its first deployment repeated until the file is large. */
async function largeV1DataDir(): Promise<string> {
  const doc = JSON.parse(await readFile(path.join('test', 'fixtures', 'registry', 'v1.json'), 'utf8'));
  const [first] = doc.state.deployments;
  doc.state.deployments = Array.from({ length: 6000 }, (_, i) => ({ ...first, id: `d-${i}`, alias: `Reviewer ${i}`, setupLog: undefined }));
  const bytes = JSON.stringify(doc, null, 2);
  if (bytes.length < LARGE_FILE_BYTES) throw new Error('the fixture is not large enough');
  const dataDir = await tempDataDir();
  await mkdir(path.join(dataDir, 'agent-team'), { recursive: true });
  await writeFile(path.join(dataDir, 'agent-team', 'registry.json'), bytes);
  return dataDir;
}

/** A stream that says it is a terminal and keeps what is written to it. */
function fakeTerminal(): Writable & { isTTY: boolean; columns: number; text(): string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as Writable & { isTTY: boolean; columns: number; text(): string };
  stream.isTTY = true;
  stream.columns = 120;
  stream.text = () => chunks.join('');
  return stream;
}

t.test('the migrate command prints only its report when stdout and stderr are not a terminal', async (t) => {
  if (!existsSync(MIGRATE_ENTRY)) throw new Error(`${MIGRATE_ENTRY} is missing: run \`npm run build\` first`);
  const dataDir = await largeV1DataDir();
  const child = spawn(process.execPath, [MIGRATE_ENTRY, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 0);
  t.equal(stderr, '', 'nothing on stderr');
  // eslint-disable-next-line no-control-regex -- ESC starts the escape sequences a progress bar draws with
  t.notMatch(stdout, /[\r\u001b]|█|░|%/, 'no bar, no carriage return, no escape sequence');
  t.match(stdout, /registry file v1 → v4/, 'the report is there');
});

t.test('on a terminal, a large file gets a bar per stage; a small file none', async (t) => {
  const dataDir = await largeV1DataDir();
  const terminal = fakeTerminal();
  const out: string[] = [];
  t.equal(
    await runMigrate(
      ['--data-dir', dataDir],
      (l) => out.push(l),
      () => undefined,
      terminalProgress(terminal),
    ),
    0,
  );
  const drawn = terminal.text();
  for (const stage of ['reading registry.json', 'migrating', 'writing']) t.match(drawn, stage, `the ${stage} stage is drawn`);
  t.match(drawn, /100% \d+\/\d+ bytes/, 'reading ends at 100% of the bytes');
  t.match(out.join('\n'), /registry file v1 → v4/);

  const small = await tempDataDir();
  await mkdir(path.join(small, 'agent-team'), { recursive: true });
  await writeFile(path.join(small, 'agent-team', 'registry.json'), await readFile(path.join('test', 'fixtures', 'registry', 'v2.json')));
  const quiet = fakeTerminal();
  t.equal(
    await runMigrate(
      ['--data-dir', small],
      () => undefined,
      () => undefined,
      terminalProgress(quiet),
    ),
    0,
  );
  t.equal(quiet.text(), '', 'a small file draws nothing');
});

t.test('terminalProgress draws nothing on a stream that is not a TTY', (t) => {
  const stream = fakeTerminal();
  stream.isTTY = false;
  const progress = terminalProgress(stream);
  progress.stage('anything', 10);
  progress.advance(10);
  progress.done();
  t.equal(stream.text(), '');
  t.end();
});
