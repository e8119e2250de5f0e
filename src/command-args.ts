// The argument parsing of the operator commands (`npm run migrate`, `npm run backup`, `npm run import`):
// node:util's parseArgs, strict, no positionals, with the commands' one-line errors ("unknown argument X",
// "--to needs a value") in place of parseArgs's own wording.
import { parseArgs } from 'node:util';

type StringOrFlag = { type: 'string' } | { type: 'boolean' };
type Values<O extends Record<string, StringOrFlag>> = { [K in keyof O]?: O[K] extends { type: 'string' } ? string : boolean };

/** The parsed values, or the error line a command prints above its usage. */
export function parseCommandArgs<O extends Record<string, StringOrFlag>>(
  argv: readonly string[],
  options: O,
): { values: Values<O> } | { error: string } {
  try {
    const { values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false });
    return { values };
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    // parseArgs names the argument in quotes: "Unknown option '--x'", "Unexpected argument 'x'", "Option '--to <value>' argument missing".
    const named = /'([^']*)'/.exec(message)?.[1] ?? '';
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const option = named.split(' ')[0];
      return { error: message.includes('does not take an argument') ? `${option} takes no value` : `${option} needs a value` };
    }
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      return { error: `unknown argument ${named}` };
    throw err;
  }
}
