import { MetricSet } from '../lib/metrics.ts';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * The operator's Prometheus metrics (`svc_operator_*`), served on `--metrics-listen`. Label values:
 * `result` is success, invalid, waiting or error; `code` 0 means the API server did not answer;
 * `reason` is closed (normal server time-out), gone (410, relisted) or error. `leader` is 1 while
 * this replica holds the leader lease, or when leader election is off.
 */
export class OperatorMetrics extends MetricSet {
  readonly reconciles = this.counter('reconcile_total', 'Reconciles by kind and result', ['kind', 'result']);
  readonly reconcileDuration = this.histogram('reconcile_duration_seconds', 'Time in one reconcile', BUCKETS, ['kind']);
  readonly queueDepth = this.gauge('workqueue_depth', 'Keys waiting in the work queue', ['kind']);
  readonly apiRequests = this.counter('api_requests_total', 'API server requests by verb and status', ['verb', 'code']);
  readonly watchRestarts = this.counter('watch_restarts_total', 'Watch restarts by resource and reason', [
    'resource',
    'reason',
  ]);
  readonly leader = this.gauge('leader', '1 while this replica leads (or leader election is off)');

  constructor(options: { defaultMetrics?: boolean } = {}) {
    super('svc_operator_', options);
  }

  /** Sum of one counter's values whose labels match `labels` (for tests and the benchmark). */
  total(counter: 'reconciles' | 'apiRequests' | 'watchRestarts', labels: Record<string, string> = {}): Promise<number> {
    const values: { labels: Readonly<Record<string, string | number>>; value: number }[] = this[counter].values();
    const sum = values
      .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
      .reduce((n, v) => n + v.value, 0);
    return Promise.resolve(sum);
  }
}
