import { hostname } from 'node:os';
import { ConfigError, problem } from './errors.ts';
import { isSecretName } from './secret-names.ts';

/**
 * Structured JSON logs, one object a line, in pino's line format (numeric `level`, `time` in ms,
 * `pid`, `hostname`, `name`, the call's fields, `msg`) so log pipelines built for it read them.
 *
 * svc's own writer rather than pino: every call site here logs a flat object and a message, and
 * pino's package also loads thread-stream and node:worker_threads into every process (1.8 MiB of a
 * share sidecar's RSS, docs/benchmarks-history.md "The sidecar under 80 MiB").
 *
 * Redaction is a second line of defence: call sites never pass tokens, cookies or secrets, and a
 * field named like one is censored at any depth (objects, arrays, headers maps) should one slip
 * into a logged object. Names are compared normalised (any case; `-`, `_` and other punctuation
 * ignored), by suffix (plural too): `clientSecret`, `signing_key`, `X-Frontend-Token`, `svc-peer-credential`,
 * `Set-Cookie` and `Proxy-Authorization` all end in one (lib/secret-names.ts). Public identifiers
 * that happen to be called tokens (a share's token is its host's first label) are logged under
 * names that do not end so (`share`, `access`).
 */
export const CENSOR = '[redacted]';

const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;

export type LevelName = keyof typeof LEVELS;

type LogCall = {
  (message: string): void;
  (fields: object, message?: string): void;
};

export interface Logger {
  readonly level: LevelName;
  readonly trace: LogCall;
  readonly debug: LogCall;
  readonly info: LogCall;
  readonly warn: LogCall;
  readonly error: LogCall;
  readonly fatal: LogCall;
}

function isLevelName(name: string): name is LevelName {
  return Object.hasOwn(LEVELS, name);
}

/** The level a logger is created with, checked: an unknown name is a configuration error, not "info". */
function levelName(name: string, source: string, field: string): LevelName {
  if (isLevelName(name)) return name;
  const known = Object.keys(LEVELS).join(', ');
  throw new ConfigError(source, [problem(field, `unknown log level "${name}" (one of ${known})`)]);
}

/**
 * JSON.stringify's replacer: censors secret-named fields; writes errors as their type, message,
 * code and cause, maps and Headers as objects, and Node's `rawHeaders` with secret values censored.
 */
function redact(this: unknown, key: string, value: unknown): unknown {
  if (key !== '' && isSecretName(key)) return CENSOR;
  if (value instanceof Error) return errorFields(value, 0);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (isFetchHeaders(value)) return Object.fromEntries(value.entries());
  if (Array.isArray(value) && key.toLowerCase() === 'rawheaders') {
    const pairs = value as unknown[];
    return pairs.map((item, i) => (i % 2 === 1 && isSecretName(String(pairs[i - 1])) ? CENSOR : item));
  }
  return value;
}

/**
 * A fetch `Headers`, recognised by its tag: naming the global `Headers` would load undici (and with
 * it node:tls, node:http2 and node:zlib) into processes that never fetch.
 */
function isFetchHeaders(value: unknown): value is { entries(): IterableIterator<[string, string]> } {
  return typeof value === 'object' && value !== null && Object.prototype.toString.call(value) === '[object Headers]';
}

/** Causes followed below a logged error (a cause chain can be a cycle). */
const MAX_CAUSES = 4;

/** An error as log fields: `type`, `message`, its `code` (SvcError's, or Node's `ECONNREFUSED`…) and `cause`. */
function errorFields(err: Error, depth: number): Record<string, unknown> {
  const fields: Record<string, unknown> = { type: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') fields.code = code;
  const cause = err.cause;
  if (cause instanceof Error) {
    if (depth < MAX_CAUSES) fields.cause = errorFields(cause, depth + 1);
  } else if (cause !== undefined) fields.cause = cause;
  return fields;
}

const noop: LogCall = () => {};

export function createLogger(
  name: string,
  options: { level?: string; destination?: NodeJS.WritableStream } = {},
): Logger {
  const level = options.level
    ? levelName(options.level, 'the logger options', 'level')
    : levelName(process.env.SVC_LOG_LEVEL ?? 'info', 'the environment', 'SVC_LOG_LEVEL');
  const destination = options.destination ?? process.stderr;
  // The fixed part of every line, serialised once.
  const head = `,"time":`;
  const tail = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())},"name":${JSON.stringify(name)}`;

  const writer =
    (value: number): LogCall =>
    (fieldsOrMessage: object | string, message?: string): void => {
      let fields = '';
      let msg = message;
      if (typeof fieldsOrMessage === 'string') msg = fieldsOrMessage;
      else fields = serialiseFields(fieldsOrMessage);
      const text = msg === undefined ? '' : `,"msg":${JSON.stringify(msg)}`;
      destination.write(`{"level":${value}${head}${Date.now()}${tail}${fields}${text}}\n`);
    };

  const threshold = LEVELS[level];
  const call = (name: Exclude<LevelName, 'silent'>): LogCall =>
    LEVELS[name] >= threshold ? writer(LEVELS[name]) : noop;
  return {
    level,
    trace: call('trace'),
    debug: call('debug'),
    info: call('info'),
    warn: call('warn'),
    error: call('error'),
    fatal: call('fatal'),
  };
}

/**
 * A call's fields as `,"k":v…` (the braces dropped so they join the fixed part). Fields named like
 * the fixed ones are left out, not written twice. A log call never throws: fields that cannot be
 * serialised (a cycle) are replaced by a note saying so.
 */
function serialiseFields(fields: object): string {
  const own = Object.keys(fields).some((key) => RESERVED.has(key))
    ? Object.fromEntries(Object.entries(fields).filter(([key]) => !RESERVED.has(key)))
    : fields;
  let json: string;
  try {
    json = JSON.stringify(own, redact);
  } catch {
    return ',"logError":"fields could not be serialised"';
  }
  if (json === undefined || json.length <= 2 || json[0] !== '{') return '';
  return `,${json.slice(1, -1)}`;
}

const RESERVED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);
