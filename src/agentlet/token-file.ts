// Reads the machine token from its file. The token never comes from argv and never appears in a message:
// every error here names the file and the rule only.
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { CliError, EXIT } from './exit-codes.js';

const MAX_TOKEN_FILE_BYTES = 4096;
const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

function refuse(message: string): never {
  throw new CliError(message, EXIT.usage);
}

/**
 * Opens the file once and checks that handle (no race between the check and the read): a regular file, owned
 * by the current user, with no permission for group or others (like ssh with a private key), holding one
 * printable line.
 */
export async function readTokenFile(file: string): Promise<string> {
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') refuse(`token file ${file} does not exist`);
    if (code === 'EACCES') refuse(`token file ${file} is not readable by this user`);
    refuse(`token file ${file} cannot be opened (${code ?? 'error'})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) refuse(`token file ${file} is not a regular file`);
    const mode = st.mode & 0o777;
    if ((mode & 0o077) !== 0) {
      refuse(
        `token file ${file} is accessible by group or others (mode ${mode.toString(8).padStart(4, '0')}); refusing to use it. ` +
          `Restrict it to its owner: chmod 600 ${file}`,
      );
    }
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) refuse(`token file ${file} belongs to another user (uid ${st.uid}); refusing to use it`);
    if (st.size > MAX_TOKEN_FILE_BYTES) refuse(`token file ${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes; it should hold only the token`);
    const token = (await handle.readFile('utf8')).trim();
    if (token === '') refuse(`token file ${file} is empty`);
    if (!TOKEN_PATTERN.test(token)) refuse(`token file ${file} must hold only the token, on one line`);
    return token;
  } finally {
    await handle.close();
  }
}
