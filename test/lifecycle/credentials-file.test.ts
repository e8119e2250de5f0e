// credentials.json, where the service keeps the credentials it generated: its values are held to the rules of
// the environment's (at least 24 characters), and a refusal names the field, never the value.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { CredentialsFileError, resolveCredentials } from '../../src/credentials/credentials-file.js';
import { tempDataDir } from '../helpers/build.js';

t.test('credentials.json values shorter than 24 characters stop the start', async (t) => {
  const dir = await tempDataDir();
  const file = path.join(dir, 'credentials.json');
  await writeFile(
    file,
    JSON.stringify({
      ownerToken: 'x',
      huabuProviderToken: 'arr_huabu_' + 'h'.repeat(40),
      canvasTokenSecret: 'arr_secret_' + 's'.repeat(40),
    }),
    { mode: 0o600 },
  );
  const err = await resolveCredentials(dir, {}).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof CredentialsFileError, 'refused');
  t.match((err as Error).message, /ownerToken/);
  t.notMatch((err as Error).message, /"x"/, 'the value is not quoted');
});
