/**
 * The one error model of svc. Every failure that crosses a module boundary is an `SvcError` with a
 * stable string `code` (for clients and tests), an HTTP `status` (used by the single place that maps
 * errors to responses) and the original `cause`. Third-party errors are translated at the boundary
 * that calls the third party; clients never see stack traces.
 */
export class SvcError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = options.status ?? 500;
  }
}

/** Invalid configuration: carries every problem found, each prefixed with its field path. */
export class ConfigError extends SvcError {
  readonly problems: readonly string[];

  constructor(source: string, problems: readonly string[]) {
    super('invalid_config', `invalid configuration in ${source}:\n  - ${problems.join('\n  - ')}`, { status: 400 });
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Invalid user input (CLI argument, API body, query parameter). */
export function badInput(message: string, code = 'invalid_input'): SvcError {
  return new SvcError(code, message, { status: 400 });
}

export function notFound(message: string, code = 'not_found'): SvcError {
  return new SvcError(code, message, { status: 404 });
}

/** Human-readable text of any thrown value, for logs and error pages (never a stack). */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
