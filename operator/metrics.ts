import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The operator's Prometheus metrics, in a registry of its own (two operators in one test process
 * must not share counters). Process CPU and memory come from prom-client's default collectors.
 */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({
    name: 'svc_operator_reconcile_total',
    help: 'Reconciles by kind and result (success, invalid, waiting, error)',
    labelNames: ['kind', 'result'] as const,
    registers: [this.registry],
  });
  readonly reconcileDuration = new Histogram({
    name: 'svc_operator_reconcile_duration_seconds',
    help: 'Time spent in one reconcile',
    labelNames: ['kind'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'svc_operator_workqueue_depth',
    help: 'Keys waiting in the work queue',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly apiRequests = new Counter({
    name: 'svc_operator_api_requests_total',
    help: 'Requests the operator sent to the Kubernetes API server, by verb and HTTP status (0 = no answer)',
    labelNames: ['verb', 'code'] as const,
    registers: [this.registry],
  });
  readonly watchRestarts = new Counter({
    name: 'svc_operator_watch_restarts_total',
    help: 'Watch restarts by resource and reason (closed = normal server timeout, gone = 410 relist, error)',
    labelNames: ['resource', 'reason'] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'svc_operator_leader',
    help: '1 while this replica holds the leader lease (or leader election is off)',
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'svc_operator_' });
  }

  /** Sum of one counter's values whose labels match `labels` (for tests and the benchmark). */
  async total(
    counter: 'reconciles' | 'apiRequests' | 'watchRestarts',
    labels: Record<string, string> = {},
  ): Promise<number> {
    const { values } = await this[counter].get();
    return values
      .filter((v) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
      .reduce((sum, v) => sum + v.value, 0);
  }
}
