import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Redaction is a second line of defence: call sites never pass tokens,
 * cookies or secrets, and these paths are censored should one slip into a logged object.
 */
const REDACT_PATHS = [
  'req.headers.cookie',
  'req.headers.authorization',
  'req.headers["x-token"]',
  'req.headers["x-environment-token"]',
  'headers.cookie',
  'headers.authorization',
  'headers["x-token"]',
  'headers["x-environment-token"]',
  '*.client_secret',
  '*.signing_key',
  '*.encryption_key',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.id_token',
  'client_secret',
  'signing_key',
  'encryption_key',
  'access_token',
  'refresh_token',
  'id_token',
];

export function createLogger(
  name: string,
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const level = options.level ?? process.env.SVC_LOG_LEVEL ?? 'info';
  return pino(
    { name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { name } },
    options.destination ?? process.stderr,
  );
}
