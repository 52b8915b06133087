import type { Readiness } from '../lib/health.ts';
import type { Informer } from '../lib/kube/informer.ts';
import type { Controller } from './controller.ts';

export interface LivenessOptions {
  readonly controllers: readonly Controller[];
  readonly informers: readonly Informer[];
  /** An informer that has not heard from the API server for longer is wedged. */
  readonly watchStallMs: number;
  /** A work queue with work and no reconcile finished for longer is wedged. */
  readonly reconcileStallMs: number;
}

/**
 * The operator's `/healthz`: failing (so the kubelet restarts the process) when its work loop is
 * wedged — a work queue holds keys or running reconciles but none finished within
 * `reconcileStallMs` (every API call has a deadline, so reconciles end even when the API server
 * does not answer), or an informer has had no answer from the API server (no list, no watch
 * opened, no event or bookmark) for `watchStallMs`, longer than a healthy watch is ever silent.
 */
export function liveness(options: LivenessOptions): () => Readiness {
  return () => {
    const now = Date.now();
    for (const c of options.controllers) {
      const stalled = c.queue.stalledForMs(now);
      if (stalled > options.reconcileStallMs)
        return {
          ok: false,
          detail: `wedged: the ${c.kind} work queue has ${c.queue.depth} keys waiting and ${c.queue.activeCount} running, and no reconcile finished for ${Math.round(stalled / 1000)} s`,
        };
    }
    for (const i of options.informers) {
      const silent = i.silentForMs(now);
      if (silent > options.watchStallMs)
        return {
          ok: false,
          detail: `wedged: the ${i.name} informer has had no answer from the API server for ${Math.round(silent / 1000)} s`,
        };
    }
    return { ok: true, detail: 'ok' };
  };
}
