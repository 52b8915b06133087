import type { Logger } from '../lib/logger.ts';
import { errorText } from '../lib/errors.ts';
import type { BackoffPolicy } from './backoff.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { Watches } from './watches.ts';
import { WorkQueue } from './workqueue.ts';

/** success: converged; invalid: terminal spec error reported in status (no retry); waiting: blocked on something whose watch will wake us. */
export type ReconcileResult = { result: 'success' | 'invalid' | 'waiting'; requeueAfterMs?: number };

export interface Reconciler {
  readonly kind: string;
  /** The watches that wake this reconciler (operator/watches.ts); the operator wires them. */
  readonly watches: Watches;
  /** At most this many reconciles at once (a singleton reconciler says 1); default the operator's concurrency. */
  readonly concurrency?: number;
  /** Called when this replica starts leading: forget anything remembered while another replica led. */
  reset?(): void;
  /** Level-based: looks at the current state of `key` (namespace/name) and converges it. Throws only retryable errors. */
  reconcile(key: string): Promise<ReconcileResult>;
}

/** A reconciler with its work queue: counts and times every reconcile, logs retries. */
export class Controller {
  readonly kind: string;
  readonly reconciler: Reconciler;
  readonly queue: WorkQueue;
  private readonly metrics: OperatorMetrics;

  constructor(
    reconciler: Reconciler,
    options: { metrics: OperatorMetrics; logger: Logger; concurrency: number; backoff: BackoffPolicy },
  ) {
    const { metrics, logger } = options;
    this.metrics = metrics;
    this.reconciler = reconciler;
    this.kind = reconciler.kind;
    const kind = reconciler.kind;
    this.queue = new WorkQueue({
      concurrency: options.concurrency,
      backoff: options.backoff,
      onRetry: (key, err, failures, delayMs) => {
        const log = failures <= 3 || failures % 10 === 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
        log({ kind, key, failures, retryInMs: delayMs }, `reconcile failed, will retry: ${errorText(err)}`);
      },
      handler: async (key) => {
        const end = metrics.reconcileDuration.startTimer({ kind });
        try {
          const outcome = await reconciler.reconcile(key);
          metrics.reconciles.inc({ kind, result: outcome.result });
          return outcome.requeueAfterMs !== undefined ? { requeueAfterMs: outcome.requeueAfterMs } : undefined;
        } catch (err) {
          metrics.reconciles.inc({ kind, result: 'error' });
          throw err;
        } finally {
          end();
          metrics.queueDepth.set({ kind }, this.queue.depth);
        }
      },
    });
  }

  add(key: string): void {
    this.queue.add(key);
    this.metrics.queueDepth.set({ kind: this.kind }, this.queue.depth);
  }

  addAfter(key: string, delayMs: number): void {
    this.queue.addAfter(key, delayMs);
  }
}
