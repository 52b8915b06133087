import { MetricSet } from '../lib/metrics.ts';
import type { ProviderFailure } from './providers/types.ts';

export type RequestOutcome =
  | 'proxied'
  | 'login_redirect'
  | 'unauthenticated'
  | 'refused'
  | 'unknown_share'
  | 'upstream_error'
  | 'auth_endpoint'
  | 'health'
  | 'bad_request';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Prometheus metrics of one frontend instance (`svc_frontend_*`), served on `metrics_address`. */
export class FrontendMetrics extends MetricSet {
  readonly requests = this.counter('requests_total', 'Requests by outcome', ['outcome']);
  readonly logins = this.counter('logins_total', 'Login attempts by provider and result', ['provider', 'result']);
  /** Session re-checks at oauth_check_interval or at the session's end. */
  readonly refreshes = this.counter('session_checks_total', 'Session re-checks by result', ['provider', 'result']);
  /**
   * Identity provider failures by operation (login, refresh, logout) and kind: `invalid_token`
   * (forged or invalid token or answer), `provider_unreachable` (down, timeout, 5xx), `provider_error`.
   */
  readonly providerFailures = this.counter('provider_failures_total', 'Identity provider failures by kind', [
    'provider',
    'operation',
    'code',
  ]);
  /** From forwarding a request to the backend until its response headers arrive. */
  readonly upstreamSeconds = this.histogram('upstream_duration_seconds', 'Backend response time', BUCKETS);
  /** Of the requests proxied, those the fast path forwarded (sidecar/fast-path/); the rest went through Node's HTTP server. */
  readonly fastPathRequests = this.counter('fast_path_requests_total', 'Requests proxied by the fast path');
  /** Connections closed at once because their peer address already held the maximum number. */
  readonly connectionsRefused = this.counter('connections_refused_total', 'Connections refused over the per-peer cap');

  /** Connections open now (each holds one of its peer address's slots, sidecar/connections.ts). */
  readonly connectionsOpen = this.gauge('connections_open', 'Open client connections');

  constructor() {
    super('svc_frontend_');
  }

  request(outcome: RequestOutcome): void {
    this.requests.inc({ outcome });
  }

  providerFailure(provider: string, operation: 'login' | 'refresh' | 'logout', code: ProviderFailure): void {
    this.providerFailures.inc({ provider, operation, code });
  }
}
