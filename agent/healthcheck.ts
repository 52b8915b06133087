import https from 'node:https';
import { formatDuration } from '../lib/duration.ts';
import { request as httpRequest } from '../lib/node-http.ts';

/** What to check: `verb` sent to `target + path`, healthy when the status equals `expectedStatus`. */
export interface HealthCheckRequest {
  readonly target: URL;
  readonly verb: string;
  readonly path: string;
  readonly expectedStatus: number;
  readonly timeoutMs: number;
  /** Follow up to 10 redirects (same scheme family, http/https only). Off by default: a 3xx is an answer. */
  readonly followRedirects?: boolean;
}

export type HealthCheckResult = { healthy: true } | { healthy: false; error: string };

const MAX_REDIRECTS = 10;
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The agent's HTTP health check (seed: "Health check rules"): sends `verb` to the share's backend
 * target + `path` and compares the status code. A differing status yields
 * `unexpected status code; got '<actual>', want '<expected>'`; a communication failure yields
 * `failed to execute request: <low-level text>` (e.g. `connect ECONNREFUSED 127.0.0.1:1234`).
 *
 * The whole check (connect, redirects, response headers) has one deadline. The response body is
 * never read: the socket is destroyed as soon as the status line and headers arrive, so a backend
 * streaming an endless body cannot hold the check. Used by the local CLI and the remote API alike.
 */
export async function httpHealthCheck(request: HealthCheckRequest): Promise<HealthCheckResult> {
  const problem = validate(request);
  if (problem) return { healthy: false, error: `failed to execute request: ${problem}` };
  const deadline = Date.now() + request.timeoutMs;
  let url = joinTargetPath(request.target, request.path);
  for (let hop = 0; ; hop++) {
    let status: { code: number; location?: string };
    try {
      status = await requestStatus(url, request.verb, deadline, request.timeoutMs);
    } catch (err) {
      return { healthy: false, error: `failed to execute request: ${lowLevelText(err)}` };
    }
    const redirect = request.followRedirects && isRedirect(status.code) && status.location;
    if (redirect) {
      if (hop >= MAX_REDIRECTS)
        return { healthy: false, error: `failed to execute request: stopped after ${MAX_REDIRECTS} redirects` };
      let next: URL;
      try {
        next = new URL(redirect, url);
      } catch {
        return {
          healthy: false,
          error: `failed to execute request: invalid redirect location ${JSON.stringify(redirect)}`,
        };
      }
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        return { healthy: false, error: `failed to execute request: redirect to unsupported scheme ${next.protocol}` };
      }
      url = next;
      continue;
    }
    if (status.code === request.expectedStatus) return { healthy: true };
    return { healthy: false, error: `unexpected status code; got '${status.code}', want '${request.expectedStatus}'` };
  }
}

/** `target` may carry a path prefix (`http://host/app/`); the checked path is appended to it. */
export function joinTargetPath(target: URL, path: string): URL {
  const url = new URL(target.href);
  const [pathname, query] = splitQuery(path.startsWith('/') ? path : `/${path}`);
  url.pathname = url.pathname.replace(/\/+$/, '') + pathname;
  url.search = query;
  url.hash = '';
  return url;
}

function splitQuery(path: string): [string, string] {
  const i = path.indexOf('?');
  return i === -1 ? [path, ''] : [path.slice(0, i), path.slice(i)];
}

function validate(request: HealthCheckRequest): string | undefined {
  if (!HTTP_TOKEN.test(request.verb)) return `invalid HTTP verb ${JSON.stringify(request.verb)}`;
  if (request.target.protocol !== 'http:' && request.target.protocol !== 'https:') {
    return `unsupported target scheme ${request.target.protocol}`;
  }
  if (!Number.isInteger(request.timeoutMs) || request.timeoutMs <= 0) return 'timeout must be a positive duration';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f]/u.test(request.path)) return 'path must not contain spaces or control characters';
  return undefined;
}

function isRedirect(code: number): boolean {
  return code === 301 || code === 302 || code === 303 || code === 307 || code === 308;
}

class TimeoutError extends Error {}

function requestStatus(
  url: URL,
  verb: string,
  deadline: number,
  timeoutMs: number,
): Promise<{ code: number; location?: string }> {
  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      reject(new TimeoutError(`timed out after ${formatDuration(timeoutMs)} waiting for a response`));
      return;
    }
    const send = url.protocol === 'https:' ? https.request : httpRequest;
    const req = send(url, {
      method: verb.toUpperCase(),
      agent: false,
      headers: { 'user-agent': 'svc-healthcheck', accept: '*/*', connection: 'close' },
    });
    const timer = setTimeout(() => {
      req.destroy(new TimeoutError(`timed out after ${formatDuration(timeoutMs)} waiting for a response`));
    }, remaining);
    req.once('response', (res) => {
      clearTimeout(timer);
      const location = res.headers.location;
      resolve({ code: res.statusCode ?? 0, ...(location ? { location } : {}) });
      // Never read the body: drop the connection now that the status is known.
      res.destroy();
      req.destroy();
    });
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

function lowLevelText(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    // Node's happy-eyeballs connect reports one error per address; the first says the most.
    return lowLevelText(err.errors[0]);
  }
  if (err instanceof Error) return err.message || (err as NodeJS.ErrnoException).code || err.name;
  return String(err);
}
