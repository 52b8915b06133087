import { API_ERRORS, isApiErrorCode, type ApiErrorCode } from '../lib/error-codes.ts';
import { SvcError, problemText, type Problem } from '../lib/errors.ts';

/** An API error with the status its code has in the API (lib/error-codes.ts, `API_ERRORS`). */
export function apiError(
  code: keyof typeof API_ERRORS,
  message: string,
  options: { problems?: readonly Problem[]; cause?: unknown } = {},
): SvcError {
  return new SvcError(code, message, { status: API_ERRORS[code], ...options });
}

export interface ErrorBody {
  code: ApiErrorCode | 'internal_error';
  message: string;
  /** Every problem of a refused input, each naming its field (`body.target: required`). */
  details?: string[];
}

/**
 * The one place errors become API responses: an SvcError below 500 (or a documented 5xx) keeps its
 * code (one of the API's codes), message and problems; anything else is `internal_error` with a
 * fixed message (the cause is logged by the caller, never sent).
 */
export function errorBody(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof SvcError && isApiErrorCode(err.code) && (err.status < 500 || err.code in API_ERRORS)) {
    return {
      status: err.status,
      body: {
        code: err.code,
        message: err.message,
        ...(err.problems.length > 0 ? { details: err.problems.map(problemText) } : {}),
      },
    };
  }
  return { status: 500, body: { code: 'internal_error', message: 'internal error (logged by the controller)' } };
}
