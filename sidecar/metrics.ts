import { MetricSet } from '../lib/metrics.ts';

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

/** Prometheus metrics of one frontend instance (`svc_frontend_*`), served on `metrics_address`. */
export class FrontendMetrics extends MetricSet {
  readonly requests = this.counter('requests_total', 'Requests handled by the public frontend, by outcome', [
    'outcome',
  ]);
  readonly logins = this.counter('logins_total', 'Completed login attempts, by provider and result', [
    'provider',
    'result',
  ]);
  readonly refreshes = this.counter(
    'session_checks_total',
    'Session re-checks at oauth_check_interval or session end, by provider and result',
    ['provider', 'result'],
  );
  readonly upstreamSeconds = this.histogram(
    'upstream_duration_seconds',
    'Time from forwarding a request to the backend until its response headers arrive',
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  readonly connectionsRefused = this.counter(
    'connections_refused_total',
    'Connections closed at once because their peer address already held the maximum number',
  );

  constructor() {
    super('svc_frontend_');
  }

  request(outcome: RequestOutcome): void {
    this.requests.inc({ outcome });
  }
}
