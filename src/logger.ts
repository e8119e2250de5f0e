// The process logger: pino with structured fields, credentials redacted, and request URLs logged without
// their query string (a token wrongly sent as `?access_token=` must not reach a log line).
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.js';

const options = (level: Config['logLevel']): LoggerOptions => ({
  level,
  redact: {
    paths: [
      'req.headers.authorization',
      'headers.authorization',
      '*.token',
      'token',
      '*.ownerToken',
      '*.huabuProviderToken',
      '*.canvasTokenSecret',
    ],
    censor: '[redacted]',
  },
  serializers: {
    req: (req: { method: string; url: string; id: string }) => ({ id: req.id, method: req.method, path: req.url.split('?')[0] }),
    res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    err: pino.stdSerializers.err,
  },
});

export function createLogger(level: Config['logLevel'], destination?: DestinationStream): Logger {
  return pino(options(level), destination ?? pino.destination({ dest: 1, sync: false }));
}

/**
 * The server's logger: JSON lines, except on a terminal, where pino-pretty (as a worker-thread transport,
 * so formatting never runs on the event loop) prints readable lines. Redaction happens before either.
 */
export function createProcessLogger(level: Config['logLevel'], isTty: boolean): Logger {
  if (!isTty) return createLogger(level);
  return pino({
    ...options(level),
    transport: {
      target: 'pino-pretty',
      options: { destination: 1, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
    },
  });
}
