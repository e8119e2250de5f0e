// The launch-signing keys command: `npm run signing-keys -- rotate [--data-dir DIR]` and `list`
// (see src/credentials/signing-keys.ts).
import path from 'node:path';
import { parseCommandArgs } from '../src/command-args.js';
import { readSigningKeys, rotateSigningKeys, SIGNING_KEYS_FILE, SigningKeysFileError } from '../src/credentials/signing-keys.js';

export const SIGNING_KEYS_USAGE = 'usage: npm run signing-keys -- <rotate|list> [--data-dir DIR]';
const HELP = `${SIGNING_KEYS_USAGE}
       (inside the image: node dist/scripts/signing-keys.js <rotate|list>)
The Ed25519 keys that sign launch attestations live in $SIGNING_KEYS_FILE (default DATA_DIR/signing-keys.json,
mode 0600). rotate adds a new signing key in front and keeps the older ones, which stay published at
/.well-known/agent-resource-registry/keys so attestations they signed still verify. A running service signs
with the new key after its next restart (every replica, when they share the file). list prints each key's
kid and creation time, the signing key first. Neither ever prints a private key.`;

const argv = process.argv.slice(2);
const [verb, ...rest] = argv;
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(HELP);
} else if (verb !== 'rotate' && verb !== 'list') {
  console.error(`${verb === undefined ? 'rotate or list is needed' : `unknown command ${verb}`}\n${SIGNING_KEYS_USAGE}`);
  process.exitCode = 2;
} else {
  const parsed = parseCommandArgs(rest, { 'data-dir': { type: 'string' } });
  if ('error' in parsed) {
    console.error(`${parsed.error}\n${SIGNING_KEYS_USAGE}`);
    process.exitCode = 2;
  } else {
    const dataDir = path.resolve(parsed.values['data-dir'] ?? process.env.DATA_DIR ?? './data');
    const file = path.resolve(
      parsed.values['data-dir'] === undefined && process.env.SIGNING_KEYS_FILE
        ? process.env.SIGNING_KEYS_FILE
        : path.join(dataDir, SIGNING_KEYS_FILE),
    );
    const now = () => new Date();
    try {
      const keys = verb === 'rotate' ? await rotateSigningKeys(file, now) : ((await readSigningKeys(file)) ?? []);
      if (keys.length === 0) console.log(`${file}: no signing keys yet (the service generates one at its first start)`);
      if (verb === 'rotate')
        console.log(`${file}: ${keys[0]!.kid} signs from the next start; ${keys.length - 1} older key(s) kept for verification`);
      for (const [i, key] of keys.entries()) console.log(`${key.kid}  ${key.createdAt}${i === 0 ? '  (signs)' : ''}`);
    } catch (err) {
      if (!(err instanceof SigningKeysFileError) && !(err instanceof Error && 'code' in err)) throw err;
      console.error(`signing-keys failed: ${err.message}`);
      process.exitCode = 1;
    }
  }
}
