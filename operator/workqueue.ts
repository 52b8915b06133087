import { backoffDelay, type BackoffPolicy } from './backoff.ts';

/** What a handler may ask for besides success: to look at the key again after a while. */
export interface HandlerResult {
  readonly requeueAfterMs?: number;
}

export interface WorkQueueOptions {
  /** Handles one key; a thrown error retries the key with backoff, success resets its backoff. */
  readonly handler: (key: string) => Promise<HandlerResult | void>;
  readonly concurrency: number;
  readonly backoff: BackoffPolicy;
  readonly onRetry?: (key: string, err: unknown, failures: number, delayMs: number) => void;
  readonly random?: () => number;
}

/**
 * A per-object work queue in the manner of client-go's workqueue: a key is queued at most once;
 * a key added while its handler runs is handled exactly once more afterwards (never concurrently
 * with itself); failures are retried with per-key exponential backoff and jitter, reset on success;
 * at most `concurrency` handlers run at a time. The queue starts paused: reconcilers run only while
 * this replica leads, so leader election calls `resume()` and `pause()`.
 */
export class WorkQueue {
  private readonly options: WorkQueueOptions;
  private readonly ready: string[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { timer: NodeJS.Timeout; due: number }>();
  private readonly failures = new Map<string, number>();
  private readonly idleWaiters: (() => void)[] = [];
  private running = false;
  private closed = false;
  /** Last sign of progress: a handler finished, the queue resumed, or work arrived at an idle queue. */
  private lastProgress = Date.now();

  constructor(options: WorkQueueOptions) {
    this.options = options;
  }

  /** Queues a key now (cancelling a pending delayed retry: something changed, so look now). */
  add(key: string): void {
    if (this.closed) return;
    this.cancelDelayed(key);
    if (this.active.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    if (this.ready.length === 0 && this.active.size === 0) this.lastProgress = Date.now();
    this.queued.add(key);
    this.ready.push(key);
    this.pump();
  }

  /** Queues a key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.closed) return;
    const due = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.due <= due) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { timer, due });
  }

  resume(): void {
    this.running = true;
    this.lastProgress = Date.now();
    this.pump();
  }

  /** Stops starting handlers; the ones running finish (await `idle()` for them). */
  pause(): void {
    this.running = false;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Keys waiting to be handled now (not counting delayed retries or running handlers). */
  get depth(): number {
    return this.ready.length;
  }

  get activeCount(): number {
    return this.active.size;
  }

  get delayedCount(): number {
    return this.delayed.size;
  }

  /**
   * How long this queue has had work (keys waiting or handlers running) while running, without any
   * handler finishing; 0 when it is idle or paused. Handlers end in errors or timeouts, so a long
   * stall means handlers hang: the work loop is wedged.
   */
  stalledForMs(now = Date.now()): number {
    if (!this.running || (this.ready.length === 0 && this.active.size === 0)) return 0;
    return Math.max(0, now - this.lastProgress);
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /**
   * Resolves when no handler is running: true, or false when `timeoutMs` passed first (the
   * handlers still running are not stopped).
   */
  async idle(timeoutMs?: number): Promise<boolean> {
    if (this.active.size === 0) return true;
    const drained = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    if (timeoutMs === undefined) return await drained;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([drained, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Drops everything queued, cancels delayed retries and waits for running handlers (at most `timeoutMs`). */
  async close(timeoutMs?: number): Promise<boolean> {
    this.closed = true;
    this.running = false;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.ready.length = 0;
    this.queued.clear();
    this.dirty.clear();
    return await this.idle(timeoutMs);
  }

  private cancelDelayed(key: string): void {
    const pending = this.delayed.get(key);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.delayed.delete(key);
  }

  private pump(): void {
    while (this.running && this.active.size < this.options.concurrency && this.ready.length > 0) {
      const key = this.ready.shift() as string;
      this.queued.delete(key);
      this.active.add(key);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    try {
      const result = await this.options.handler(key);
      this.failures.delete(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      const delayMs = backoffDelay(this.options.backoff, failures, this.options.random);
      this.options.onRetry?.(key, err, failures, delayMs);
      this.addAfter(key, delayMs);
    } finally {
      this.lastProgress = Date.now();
      this.active.delete(key);
      if (this.dirty.delete(key)) this.add(key);
      if (this.active.size === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
      this.pump();
    }
  }
}
