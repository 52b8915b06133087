import { isApiErrorCode } from './error-codes.ts';
import { SvcError, errorText } from './errors.ts';

/** The API's media type (seed, Versioning): every request and response body is of this type. */
export const MEDIA_TYPE = 'application/svc.v1+json';

const DEFAULT_API_ENDPOINT = 'http://127.0.0.1:18080';

/** The controller endpoint: `--api-endpoint`, else `$SVC_API_ENDPOINT`, else the default listener. */
export function resolveApiEndpoint(flag?: string): string {
  const chosen = flag ?? (process.env.SVC_API_ENDPOINT || undefined) ?? DEFAULT_API_ENDPOINT;
  let url: URL;
  try {
    url = new URL(chosen);
  } catch {
    throw new SvcError('invalid_input', `--api-endpoint: must be an http(s) URL, got ${JSON.stringify(chosen)}`, {
      status: 400,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SvcError('invalid_input', `--api-endpoint: must be an http(s) URL, got ${JSON.stringify(chosen)}`, {
      status: 400,
    });
  }
  return url.origin;
}

/**
 * A minimal client of the controller API (used by `svc enable` and `svc agent enroll|unenroll`):
 * POST with the API media type and the account token; an error answer becomes an SvcError with
 * the controller's code and message.
 */
export async function callApi<T>(apiEndpoint: string, path: string, accountToken: string, body: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(new URL(`/api/v1${path}`, apiEndpoint), {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE, 'x-token': accountToken },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
      redirect: 'error',
    });
  } catch (err) {
    throw new SvcError(
      'controller_unreachable',
      `cannot reach the controller at ${apiEndpoint}: ${errorText((err as { cause?: unknown }).cause ?? err)}`,
      { cause: err },
    );
  }
  const text = await res.text();
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new SvcError('bad_response', `the controller at ${apiEndpoint} sent an unreadable answer (${res.status})`);
  }
  if (!res.ok) {
    const p = payload as { code?: unknown; message?: string };
    throw new SvcError(
      isApiErrorCode(p.code) ? p.code : 'api_error',
      `controller: ${p.message ?? `HTTP ${res.status}`}`,
      {
        status: res.status,
      },
    );
  }
  return payload as T;
}
