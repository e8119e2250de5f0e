// Reads the machine token from its file. The token never comes from argv and never appears in a message:
// every error here names the file and the rule only.
import { CliError, EXIT } from './exit-codes.js';
import { openWithoutBlocking, readAtMost, type OpenedFile } from './local-file.js';

const MAX_TOKEN_FILE_BYTES = 4096;
const TOKEN_PATTERN = /^[\x21-\x7e]+$/;

function refuse(message: string): never {
  throw new CliError(message, EXIT.usage);
}

/**
 * Opens the file once, without blocking (a FIFO is refused at once rather than waited on), and checks that handle
 * (no race between the check and the read): a regular file, owned by the current user, with no permission for
 * group or others (like ssh with a private key), holding one printable line.
 */
export async function readTokenFile(file: string): Promise<string> {
  let opened: OpenedFile;
  try {
    opened = await openWithoutBlocking(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') refuse(`token file ${file} does not exist`);
    if (code === 'EACCES') refuse(`token file ${file} is not readable by this user`);
    refuse(`token file ${file} cannot be opened (${code ?? 'error'})`);
  }
  const { handle, stats: st } = opened;
  try {
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
    if (st.size > MAX_TOKEN_FILE_BYTES)
      refuse(`token file ${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes; it should hold only the token`);
    const bytes = await readAtMost(handle, MAX_TOKEN_FILE_BYTES);
    if (bytes === undefined) refuse(`token file ${file} is larger than ${MAX_TOKEN_FILE_BYTES} bytes; it should hold only the token`);
    const token = bytes.toString('utf8').trim();
    if (token === '') refuse(`token file ${file} is empty`);
    if (!TOKEN_PATTERN.test(token)) refuse(`token file ${file} must hold only the token, on one line`);
    return token;
  } finally {
    await handle.close();
  }
}
