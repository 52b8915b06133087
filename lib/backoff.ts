/**
 * Exponential backoff with a cap and jitter: the delay doubles from `baseMs` with every consecutive
 * failure up to `maxMs`, and is then spread over [50%, 100%] of that value so that many keys, operators or
 * agents that failed together do not retry in lock-step (operator work queue and watches, the
 * agents' remoting connection and tunnel).
 */
export interface BackoffPolicy {
  readonly baseMs: number;
  readonly maxMs: number;
}

export function backoffDelay(policy: BackoffPolicy, failures: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, failures - 1);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(exponent, 30));
  return Math.round(ceiling * (0.5 + 0.5 * random()));
}
