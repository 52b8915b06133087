import type { Counter } from 'prom-client';
import { MetricSet } from '../lib/metrics.ts';

const RECONCILE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The operator's Prometheus metrics (`svc_operator_*`), served on `--metrics-listen`. */
export class OperatorMetrics extends MetricSet {
  readonly reconciles = this.counter(
    'reconcile_total',
    'Reconciles by kind and result (success, invalid, waiting, error)',
    ['kind', 'result'],
  );
  readonly reconcileDuration = this.histogram(
    'reconcile_duration_seconds',
    'Time spent in one reconcile',
    RECONCILE_BUCKETS,
    ['kind'],
  );
  readonly queueDepth = this.gauge('workqueue_depth', 'Keys waiting in the work queue', ['kind']);
  readonly apiRequests = this.counter(
    'api_requests_total',
    'Requests the operator sent to the Kubernetes API server, by verb and HTTP status (0 = no answer)',
    ['verb', 'code'],
  );
  readonly watchRestarts = this.counter(
    'watch_restarts_total',
    'Watch restarts by resource and reason (closed = normal server timeout, gone = 410 relist, error)',
    ['resource', 'reason'],
  );
  readonly leader = this.gauge('leader', '1 while this replica holds the leader lease (or leader election is off)');

  constructor(options: { defaultMetrics?: boolean } = {}) {
    super('svc_operator_', options);
  }

  /** Sum of one counter's values whose labels match `labels` (for tests and the benchmark). */
  async total(
    counter: 'reconciles' | 'apiRequests' | 'watchRestarts',
    labels: Record<string, string> = {},
  ): Promise<number> {
    const { values } = await (this[counter] as Counter<string>).get();
    return values
      .filter((v) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want))
      .reduce((sum, v) => sum + v.value, 0);
  }
}
