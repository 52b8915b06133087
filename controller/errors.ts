import { SvcError } from '../lib/errors.ts';

/**
 * Every error code the controller API answers with, and its HTTP status (docs/controller.md,
 * "Errors"; the OpenAPI document's responses). Agent input errors (`invalid_share`,
 * `unknown_share`, …) pass through with the agent's code: 404 for unknown tokens, 422 otherwise.
 */
export const API_ERRORS = {
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  malformed_json: 400,
  body_too_large: 413,
  invalid_request: 422,
  unauthorized: 401,
  environment_not_found: 401,
  not_enrolled: 409,
  already_enrolled: 409,
  agent_controller_not_configured: 501,
  agent_unreachable: 502,
  agent_timeout: 502,
  agent_refused: 502,
  agent_error: 502,
  internal_error: 500,
} as const;

export type ApiErrorCode = keyof typeof API_ERRORS;

export function apiError(code: string, message: string, details?: readonly string[]): SvcError {
  const status = (API_ERRORS as Record<string, number>)[code] ?? 500;
  const err = new SvcError(code, message, { status });
  if (details) Object.assign(err, { details });
  return err;
}

/**
 * The one place errors become API responses: an SvcError below 500 (or a documented 5xx) keeps its
 * code and message; anything else is `internal_error` with a fixed message (the cause is logged by
 * the caller, never sent).
 */
export function errorBody(err: unknown): {
  status: number;
  body: { code: string; message: string; details?: string[] };
} {
  if (err instanceof SvcError && (err.status < 500 || err.code in API_ERRORS)) {
    const details = (err as SvcError & { details?: string[] }).details;
    return {
      status: err.status,
      body: { code: err.code, message: err.message, ...(details && details.length ? { details: [...details] } : {}) },
    };
  }
  return { status: 500, body: { code: 'internal_error', message: 'internal error (logged by the controller)' } };
}
