// The process logger: pino with structured fields, credentials redacted, and request URLs logged without
// their query string (a token wrongly sent as `?access_token=` must not reach a log line).
import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export function createLogger(level: Config['logLevel'], destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', '*.token', 'token', '*.ownerToken', '*.huabuProviderToken', '*.canvasTokenSecret'],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { method: string; url: string; id: string }) => ({ id: req.id, method: req.method, path: req.url.split('?')[0] }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
        err: pino.stdSerializers.err,
      },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
