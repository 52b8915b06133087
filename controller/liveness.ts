import type { Readiness } from '../lib/health.ts';
import { SvcError } from '../lib/errors.ts';
import type { ControllerStore } from './store.ts';

/** How long store calls may go unanswered (none answered, some asked) before `/healthz` fails. */
export const DEFAULT_STORE_STALL_MS = 5 * 60_000;

/**
 * The controller's `/healthz`: its work is answering requests from its store, so it is wedged when
 * the store has been asked (by requests or by `/readyz`) and has answered nothing for `stallMs` —
 * every call either still waiting or failed without reaching the store (`kube_unreachable`: a
 * timeout, a refused or black-holed connection). Any answer counts, a 404 or a conflict included.
 * `/readyz` takes the pod out of its Service at once; this restarts it when that lasts.
 */
export class StoreLiveness {
  readonly store: ControllerStore;
  private readonly stallMs: number;
  /** The last answer, or the first call after a quiet spell: the start of the current silence. */
  private silentSince = Date.now();
  private pending = 0;
  private askedSinceAnswer = 0;

  constructor(store: ControllerStore, stallMs = DEFAULT_STORE_STALL_MS) {
    this.stallMs = stallMs;
    this.store = new Proxy(store, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function' || prop === 'close') return value;
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (!(result instanceof Promise)) return result;
          if (this.askedSinceAnswer === 0) this.silentSince = Date.now();
          this.pending++;
          this.askedSinceAnswer++;
          return result.then(
            (answer: unknown) => {
              this.settled(true);
              return answer;
            },
            (err: unknown) => {
              this.settled(!unreachable(err));
              throw err;
            },
          );
        };
      },
    });
  }

  /** The `/healthz` verdict now. */
  readonly live = (): Readiness => {
    const silentMs = Date.now() - this.silentSince;
    if (this.askedSinceAnswer === 0 || silentMs <= this.stallMs) return { ok: true, detail: 'ok' };
    return {
      ok: false,
      detail: `wedged: the store answered none of ${this.askedSinceAnswer} calls for ${Math.round(silentMs / 1000)} s (${this.pending} still waiting)`,
    };
  };

  private settled(answered: boolean): void {
    this.pending--;
    if (!answered) return;
    this.silentSince = Date.now();
    this.askedSinceAnswer = 0;
  }
}

/** The error, or one it was translated from (the store wraps API errors), says the store was not reached. */
function unreachable(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof SvcError && e.code === 'kube_unreachable') return true;
  }
  return false;
}
