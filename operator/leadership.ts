import type { Controller } from './controller.ts';
import type { OperatorMetrics } from './metrics.ts';
import { initialKeys } from './watches.ts';

/**
 * Runs the controllers only while this replica leads and its caches are synced. On becoming
 * leader every reconciler forgets what it remembered (another replica may have written since) and
 * every key it owns is queued once — level-based, so whatever changed meanwhile converges. On
 * losing the lease the queues pause and running reconciles are given until a deadline to finish
 * (the lease duration left before another replica may lead); the operator then exits.
 */
export class Leadership {
  private readonly controllers: readonly Controller[];
  private readonly synced: () => boolean;
  private readonly beforeStart: () => void;
  private readonly metrics: OperatorMetrics;
  private leading = false;
  /** Bumped on every change of leadership: a start still waiting for the caches sees it is stale. */
  private activation = 0;

  constructor(options: {
    controllers: readonly Controller[];
    synced: () => boolean;
    /** Runs once the caches are synced, before any key is queued. */
    beforeStart: () => void;
    metrics: OperatorMetrics;
  }) {
    this.controllers = options.controllers;
    this.synced = options.synced;
    this.beforeStart = options.beforeStart;
    this.metrics = options.metrics;
  }

  get isLeading(): boolean {
    return this.leading;
  }

  /** This replica leads (or leader election is off): start reconciling once the caches are synced. */
  started(): void {
    this.leading = true;
    void this.activate();
  }

  /**
   * Another replica leads: stop starting reconciles and wait for the running ones, at most
   * `timeoutMs`. Returns whether they all finished in time.
   */
  async stopped(timeoutMs?: number): Promise<boolean> {
    this.leading = false;
    return await this.deactivate(timeoutMs);
  }

  /**
   * Stops for good: pauses (leadership unchanged, as seen by isLeading), then drops every queue,
   * waiting at most `timeoutMs` for running reconciles. Returns whether they all finished in time.
   */
  async close(timeoutMs?: number): Promise<boolean> {
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const left = (): number | undefined => (deadline === undefined ? undefined : Math.max(0, deadline - Date.now()));
    const paused = await this.deactivate(left());
    const closed = await Promise.all(this.controllers.map((c) => c.queue.close(left())));
    return paused && closed.every(Boolean);
  }

  /** Reconciles running now, over all controllers. */
  get inFlight(): number {
    return this.controllers.reduce((n, c) => n + c.queue.activeCount, 0);
  }

  private async activate(): Promise<void> {
    const mine = ++this.activation;
    while (!this.synced()) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (mine !== this.activation) return;
    }
    if (mine !== this.activation || !this.leading) return;
    this.beforeStart();
    for (const c of this.controllers) {
      c.reconciler.reset?.();
      for (const key of initialKeys(c.reconciler.watches)) c.add(key);
    }
    this.metrics.leader.set(1);
    for (const c of this.controllers) c.queue.resume();
  }

  private async deactivate(timeoutMs?: number): Promise<boolean> {
    this.activation++;
    this.metrics.leader.set(0);
    for (const c of this.controllers) c.queue.pause();
    const idle = await Promise.all(this.controllers.map((c) => c.queue.idle(timeoutMs)));
    return idle.every(Boolean);
  }
}
