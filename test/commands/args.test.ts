// The operator commands' arguments (src/command-args.ts, used by migrate, backup and import): parseArgs's
// rules with the commands' own one-line errors, as an operator sees them above the usage.
import t from 'tap';
import { parseCommandArgs } from '../../src/command-args.js';
import { parseBackupArgs } from '../../src/storage/backup.js';
import { parseMigrateArgs } from '../../src/migrations/migrate-command.js';

const options = { to: { type: 'string' }, 'dry-run': { type: 'boolean' } } as const;

t.test('values in both spellings; the last of a repeated option wins', (t) => {
  t.same(parseCommandArgs(['--to', 'a', '--dry-run'], options), { values: { to: 'a', 'dry-run': true } });
  t.same(parseCommandArgs(['--to=b'], options), { values: { to: 'b' } });
  t.same(parseCommandArgs(['--to', 'a', '--to=c'], options), { values: { to: 'c' } });
  t.same(parseCommandArgs([], options), { values: {} });
  t.end();
});

t.test('each mistake is one line naming the argument', (t) => {
  t.same(parseCommandArgs(['--too', 'x'], options), { error: 'unknown argument --too' });
  t.same(parseCommandArgs(['stray'], options), { error: 'unknown argument stray' });
  t.same(parseCommandArgs(['--to'], options), { error: '--to needs a value' });
  t.same(parseCommandArgs(['--dry-run=yes'], options), { error: '--dry-run takes no value' });
  t.same(parseCommandArgs(['-x'], options), { error: 'unknown argument -x' });
  t.end();
});

t.test('the commands keep their rules on top', (t) => {
  t.same(parseMigrateArgs([]), { error: '--data-dir DIR is required' });
  t.match(parseMigrateArgs(['--data-dir', 'd', '--dry-run']), { dataDir: /\/d$/, dryRun: true });
  t.same(parseMigrateArgs(['--data-dir', 'd', '--force']), { error: 'unknown argument --force' });
  t.same(parseBackupArgs(['--data-dir', 'd'], {}), { error: '--to DIR is required' });
  t.same(parseBackupArgs(['--to', 'b', '--data-dir='], {}), { error: '--data-dir needs a directory' });
  t.match(parseBackupArgs(['--to', 'b'], { DATA_DIR: 'env-dir' }), { dataDir: /\/env-dir$/, to: /\/b$/, withCredentials: false });
  t.match(parseBackupArgs(['--to=b', '--with-credentials'], {}), { dataDir: /\/data$/, withCredentials: true });
  t.end();
});
