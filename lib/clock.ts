/**
 * The time source of code whose behaviour depends on time passing (the frontend's sessions, login
 * state, logout set and re-check timing). Injected rather than read from `Date.now()`, so a test
 * moves time forward instead of sleeping through a lifetime or check interval.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
