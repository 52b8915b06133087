import { parseDuration } from '../lib/duration.ts';
import { problem, type Problem, type Result } from '../lib/errors.ts';
import { listenAddressProblem, parseListenAddress, type ListenAddress } from '../lib/listen.ts';

/**
 * The one validator of each remaining command an agent runs — a health check's limits, an access's
 * bind address — shared by the single-machine agent (CLI and API) and the Kubernetes environment
 * agent, so the same bad input gets the same problems (test/contracts/remote-executor.ts). As with
 * shares (lib/share/validate.ts), a surface only renames the fields.
 */

/** How a surface names the fields of a health check and an access. */
export interface RequestFieldNames {
  readonly endpoint: string;
  readonly expectedStatus: string;
  readonly timeout: string;
  readonly bindAddress: string;
}

/** The API body (`/agent/share/http-healthcheck`, `/agent/access`). */
export const API_REQUEST_FIELDS: RequestFieldNames = {
  endpoint: 'endpoint',
  expectedStatus: 'expectedHttpResponse',
  timeout: 'timeout',
  bindAddress: 'bindAddress',
};

/** `svc agent share http-healthcheck <share_token> <verb> <path> <expected_status> [--timeout]`, `svc access private --bind`. */
export const CLI_REQUEST_FIELDS: RequestFieldNames = {
  endpoint: '<path>',
  expectedStatus: '<expected_status>',
  timeout: '--timeout',
  bindAddress: '--bind',
};

/** A check holds a connection; five minutes is far beyond any useful health check. */
const MAX_HEALTHCHECK_TIMEOUT_MS = 5 * 60_000;
export const DEFAULT_HEALTHCHECK_TIMEOUT = '5s';

export interface HealthCheckLimits {
  readonly path: string;
  readonly expectedStatus: number;
  readonly timeoutMs: number;
}

/** What is wrong with an expected status, if anything (also the CLI's argument parser). */
export function expectedStatusProblem(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599) return undefined;
  return `must be an HTTP status code (100-599), got ${JSON.stringify(value)}`;
}

/**
 * A health check's endpoint (a plain path on the share's own backend, seed: "`endpoint` (path on
 * the backend)": never `http://other-host/x`, `//other-host/x`, `\\other-host`, spaces or control
 * characters, so a check cannot be turned into a request to another host), expected status (an HTTP
 * status code) and timeout (a duration text, default 5s, at most 5 minutes). The check's own guard
 * on the verb stays in agent/healthcheck.ts: it answers `failed to execute request: …` as the seed's
 * health check rules say.
 */
export function validateHealthCheckRequest(
  input: { readonly path?: unknown; readonly expectedStatus?: unknown; readonly timeout?: unknown },
  names: RequestFieldNames,
): Result<HealthCheckLimits> {
  const problems: Problem[] = [];
  const path = typeof input.path === 'string' ? input.path : '';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (!path.startsWith('/') || path.startsWith('//') || /[\\\s\u0000-\u001f\u007f]/u.test(path)) {
    const message = `must be a path on the share's backend, starting with a single / (got ${JSON.stringify(input.path)})`;
    problems.push(problem(names.endpoint, message));
  }
  const statusProblem = expectedStatusProblem(input.expectedStatus);
  if (statusProblem) problems.push(problem(names.expectedStatus, statusProblem, 'not_allowed'));
  const text = input.timeout ?? DEFAULT_HEALTHCHECK_TIMEOUT;
  const timeoutMs = typeof text === 'string' ? parseDuration(text) : undefined;
  if (timeoutMs === undefined) {
    problems.push(
      problem(names.timeout, `must be a duration such as 500ms, 5s or 1m, got ${JSON.stringify(input.timeout)}`),
    );
  } else if (timeoutMs > MAX_HEALTHCHECK_TIMEOUT_MS) {
    problems.push(problem(names.timeout, `must be between 1ms and 5m, got ${JSON.stringify(text)}`, 'not_allowed'));
  }
  if (problems.length > 0 || timeoutMs === undefined) return { ok: false, problems };
  return { ok: true, value: { path, expectedStatus: input.expectedStatus as number, timeoutMs } };
}

/**
 * Where an access listens: `ip:port`. `servicePort` (a Kubernetes access, whose port names a
 * Service port) refuses port 0, which on one machine means "any free port".
 */
export function validateBindAddress(
  value: string,
  names: RequestFieldNames,
  options: { servicePort?: boolean } = {},
): Result<ListenAddress> {
  const parsed = parseListenAddress(value);
  if (!parsed) return { ok: false, problems: [problem(names.bindAddress, listenAddressProblem(value))] };
  if (options.servicePort && parsed.port === 0) {
    const message = `must name a port 1-65535 (the access Service's port), got ${JSON.stringify(value)}`;
    return { ok: false, problems: [problem(names.bindAddress, message, 'not_allowed')] };
  }
  return { ok: true, value: parsed };
}
