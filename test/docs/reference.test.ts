// The references a user looks things up in are complete: every error code the service can answer is in
// docs/errors.md with its status, and every setting the service reads is in docs/configuration.md.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { ERROR_CODES } from '../../src/errors.js';
import { Env } from '../../src/config.js';

t.test('docs/errors.md lists every error code with its status', async (t) => {
  const doc = await readFile('docs/errors.md', 'utf8');
  const missing = Object.entries(ERROR_CODES).filter(
    ([code, status]) => !new RegExp(`^\\|\\s*${status}\\s*\\|\\s*\`${code}\``, 'm').test(doc),
  );
  t.same(missing, [], 'each code in a table row beginning with its status');
});

t.test('docs/configuration.md names every setting', async (t) => {
  const doc = await readFile('docs/configuration.md', 'utf8');
  const missing = Object.keys(Env.properties).filter((name) => !new RegExp(`\`${name}[=\`]`).test(doc));
  t.same(missing, [], 'each environment variable the service reads');
});
