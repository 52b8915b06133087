import type { AgentCodeOf, ErrorCode, ProblemCode } from './error-codes.ts';

/**
 * The one error model of svc (docs/design.md, "Errors"). Every failure that crosses a module
 * boundary is an `SvcError` with a stable `code` from a typed set per boundary (lib/error-codes.ts),
 * an HTTP `status` (used by the places that answer HTTP: the controller's one error mapper and the
 * agent's local API), the original `cause`, and — for refused input — every `problem` found, each
 * with its field path. Third-party errors are translated at the boundary that calls the third party;
 * clients never see stack traces.
 */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly problems: readonly Problem[];

  constructor(
    code: ErrorCode,
    message: string,
    options: { status?: number; cause?: unknown; problems?: readonly Problem[] } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    this.status = options.status ?? 500;
    this.problems = options.problems ?? [];
  }
}

/** One thing wrong with an input: where (the field path on the input's surface), a stable code, and what. */
export interface Problem {
  readonly path: string;
  readonly code: ProblemCode;
  readonly message: string;
}

/** What every validator returns: the valid value, or every problem found (never just the first). */
export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: Problem[] };

export function problem(path: string, message: string, code: ProblemCode = 'invalid'): Problem {
  return { path, code, message };
}

/** `path: message`, the way a problem is shown to people (logs, CLI, condition messages). */
export function problemText(p: Problem): string {
  return p.path ? `${p.path}: ${p.message}` : p.message;
}

/** A problem list as one message: `<summary>:` then one `  - path: message` line per problem. */
export function problemsMessage(summary: string, problems: readonly Problem[]): string {
  return `${summary}:\n  - ${problems.map(problemText).join('\n  - ')}`;
}

/**
 * The value of a Result, or an SvcError `code` listing its problems under `summary`: status 400 as
 * an agent answers, 422 where the controller API answers itself.
 */
export function valueOrThrow<T>(result: Result<T>, code: AgentCodeOf<400>, summary: string, status = 400): T {
  if (result.ok) return result.value;
  throw new SvcError(code, problemsMessage(summary, result.problems), { status, problems: result.problems });
}

/** Invalid configuration: carries every problem found, each with its field path. */
export class ConfigError extends SvcError {
  constructor(source: string, problems: readonly Problem[]) {
    super('invalid_config', problemsMessage(`invalid configuration in ${source}`, problems), {
      status: 400,
      problems,
    });
    this.name = 'ConfigError';
  }
}

/** Invalid user input (CLI argument, API body, query parameter). */
export function badInput(message: string, code: AgentCodeOf<400> = 'invalid_input'): SvcError {
  return new SvcError(code, message, { status: 400 });
}

/** A token or record that does not exist. */
export function notFound(message: string, code: AgentCodeOf<404> = 'not_found'): SvcError {
  return new SvcError(code, message, { status: 404 });
}

/** Human-readable text of any thrown value, for logs and error pages (never a stack). */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
