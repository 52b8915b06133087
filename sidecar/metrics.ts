import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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

/** Prometheus metrics of one frontend instance (own registry, so several can run in one process). */
export class FrontendMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'svc_frontend_requests_total',
    help: 'Requests handled by the public frontend, by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly logins = new Counter({
    name: 'svc_frontend_logins_total',
    help: 'Completed login attempts, by provider and result',
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });
  readonly refreshes = new Counter({
    name: 'svc_frontend_session_checks_total',
    help: 'Session re-checks at oauth_check_interval or session end, by provider and result',
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });
  readonly upstreamSeconds = new Histogram({
    name: 'svc_frontend_upstream_duration_seconds',
    help: 'Time from forwarding a request to the backend until its response headers arrive',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly connectionsRefused = new Counter({
    name: 'svc_frontend_connections_refused_total',
    help: 'Connections closed at once because their peer address already held the maximum number',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'svc_frontend_' });
  }

  request(outcome: RequestOutcome): void {
    this.requests.inc({ outcome });
  }
}
